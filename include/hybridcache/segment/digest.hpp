#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `digest`: a 128-bit key produced by a hash policy (see hash.hpp). A digest is an
/// *address*, never a proof of equality: every structure that finds an entry by digest still
/// compares the stored namespace and token ids before reporting a hit (segment_index, the
/// store pools). Two 64-bit halves; the byte form (`to_bytes`) is little-endian `lo` then `hi`.

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A 128-bit digest. Value type; ordered and hashable.
struct digest {
  std::uint64_t lo = 0;
  std::uint64_t hi = 0;

  friend constexpr bool operator==(const digest&, const digest&) = default;
  friend constexpr auto operator<=>(const digest&, const digest&) = default;

  /// The 16 bytes: `lo` little-endian, then `hi` little-endian.
  [[nodiscard]] constexpr std::array<std::byte, 16> to_bytes() const noexcept {
    std::array<std::byte, 16> out{};
    for (int i = 0; i < 8; ++i) {
      out[static_cast<std::size_t>(i)] = static_cast<std::byte>((lo >> (8 * i)) & 0xffu);
      out[static_cast<std::size_t>(8 + i)] = static_cast<std::byte>((hi >> (8 * i)) & 0xffu);
    }
    return out;
  }

  /// 32 lowercase hex digits of `to_bytes()` (for logs and cross-node indexes).
  [[nodiscard]] std::string to_hex() const {
    static constexpr char digits[] = "0123456789abcdef";
    std::string s;
    s.reserve(32);
    for (std::byte b : to_bytes()) {
      const auto v = static_cast<unsigned>(b);
      s.push_back(digits[v >> 4]);
      s.push_back(digits[v & 0xfu]);
    }
    return s;
  }
};

/// `std::hash`-style functor over a digest: the low word, already uniformly mixed by the policy.
/// (With the constant-output test policy every digest is equal and every structure keyed by it
/// degrades to a linear scan — still correct, because hits are verified.)
struct digest_hasher {
  [[nodiscard]] std::size_t operator()(const digest& d) const noexcept {
    return static_cast<std::size_t>(d.lo ^ (d.hi * 0x9e3779b97f4a7c15ull));
  }
};

HYBRIDCACHE_NAMESPACE_END
