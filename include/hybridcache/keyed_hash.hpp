#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `keyed_hash` and `keyed_map`: the hasher of every hash table keyed by input that a caller or a
/// file controls (trace block ids, namespace names, words of a text, request lengths).
///
/// libstdc++'s `std::hash` of an integer is the identity and a bucket is `hash mod bucket_count`,
/// so keys that are multiples of the bucket count share one chain and n inserts cost O(n²): 10⁶
/// crafted Mooncake `hash_ids` took minutes to load (issue #21). `std::hash<std::string>` is
/// MurmurHash2 with a fixed, public seed, open to the same attack. `keyed_hash` is XXH3-64 keyed by
/// a 192-byte secret drawn once per process from `std::random_device`
/// (`XXH3_64bits_withSecret`): without the secret nobody can choose keys that share a bucket, and
/// a table of n random or crafted keys has buckets of O(log n / log log n) entries at worst with
/// high probability.
///
/// The secret differs between processes, so the iteration order of a `keyed_map` does too: a table
/// whose order can reach a result (a sum, an output file) must not use it, or must sort first.
/// Keys that the library itself assigns (dense node ids) keep `std::hash`; digests made by a keyed
/// `hash_policy` (segment/hash.hpp) are already unpredictable and use `digest_hasher`.
///
/// xxHash is used header-only (`XXH_INLINE_ALL`), so it adds no link dependency.

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "hybridcache/config.hpp"

// GCC 12 with AVX-512 (-march=native) reports -Wmaybe-uninitialized inside its own intrinsics
// once XXH3 is inlined; the warning is spurious and would break -Werror users.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define HYBRIDCACHE_DETAIL_KEYED_DIAG_PUSHED
#endif
#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#define HYBRIDCACHE_DETAIL_UNDEF_XXH_INLINE_ALL
#endif
#include <xxhash.h>
#ifdef HYBRIDCACHE_DETAIL_UNDEF_XXH_INLINE_ALL
#undef XXH_INLINE_ALL
#undef HYBRIDCACHE_DETAIL_UNDEF_XXH_INLINE_ALL
#endif

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Bytes of the `keyed_hash` secret (XXH3's default secret size; the minimum is 136).
inline constexpr std::size_t keyed_hash_secret_bytes = 192;

/// The per-process `keyed_hash` secret: random bytes from `std::random_device`, drawn on first
/// use (thread-safe). Should the device fail, the clock and ASLR addresses are mixed instead, so a
/// process without an entropy source still works (with a weaker, but still unpublished, key).
inline const unsigned char* keyed_hash_secret() noexcept {
  static const std::array<unsigned char, keyed_hash_secret_bytes> secret = [] {
    std::array<unsigned char, keyed_hash_secret_bytes> s{};
    try {
      std::random_device rd;
      for (std::size_t i = 0; i < s.size(); i += 4) {
        const std::uint32_t w = rd();
        std::memcpy(s.data() + i, &w, 4);
      }
    } catch (...) {
      static int anchor = 0;
      std::uint64_t z =
          static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^
          reinterpret_cast<std::uintptr_t>(&anchor) ^ reinterpret_cast<std::uintptr_t>(&s);
      for (std::size_t i = 0; i < s.size(); i += 8) {  // splitmix64
        z += 0x9E3779B97F4A7C15ull;
        std::uint64_t w = z;
        w = (w ^ (w >> 30)) * 0xBF58476D1CE4E5B9ull;
        w = (w ^ (w >> 27)) * 0x94D049BB133111EBull;
        w ^= w >> 31;
        std::memcpy(s.data() + i, &w, 8);
      }
    }
    return s;
  }();
  return secret.data();
}

}  // namespace detail

/// `std::hash`-style functor keyed by the per-process secret (see the file comment). Hashes
/// integers (as their 64-bit value), strings, and pairs of integers (as two 64-bit words).
struct keyed_hash {
  /// XXH3-64 of `n` bytes at `p` under the process secret.
  [[nodiscard]] static std::size_t bytes(const void* p, std::size_t n) noexcept {
    return static_cast<std::size_t>(
        XXH3_64bits_withSecret(p, n, detail::keyed_hash_secret(), detail::keyed_hash_secret_bytes));
  }
  template <std::integral T>
  [[nodiscard]] std::size_t operator()(T v) const noexcept {
    const auto u = static_cast<std::uint64_t>(v);
    return bytes(&u, sizeof u);
  }
  template <std::integral A, std::integral B>
  [[nodiscard]] std::size_t operator()(const std::pair<A, B>& v) const noexcept {
    const std::uint64_t w[2] = {static_cast<std::uint64_t>(v.first),
                                static_cast<std::uint64_t>(v.second)};
    return bytes(w, sizeof w);
  }
  [[nodiscard]] std::size_t operator()(std::string_view s) const noexcept {
    return bytes(s.data(), s.size());
  }
  [[nodiscard]] std::size_t operator()(const std::string& s) const noexcept {
    return bytes(s.data(), s.size());
  }
};

/// A hash table keyed by caller- or file-controlled keys (see the file comment).
template <class Key, class Value>
using keyed_map = std::unordered_map<Key, Value, keyed_hash>;

HYBRIDCACHE_NAMESPACE_END

#ifdef HYBRIDCACHE_DETAIL_KEYED_DIAG_PUSHED
#pragma GCC diagnostic pop
#undef HYBRIDCACHE_DETAIL_KEYED_DIAG_PUSHED
#endif
