#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The two key kinds (docs/design/key_format.md gives every byte):
///
/// - **Segment keys**, position-independent: K(ns, x) = H("HCK1" ‖ kind ‖ len(ns) ‖ ns ‖ n ‖ x),
///   SparseX's virtual hash h_virt = H(B, e) (SparseX §4.3) with the namespace encoded
///   injectively, and HYPIC's per-segment `match()` (HYPIC §5, "hashes each segment by its token
///   ids"). `kind` separates position-independent segments ('P') from the leading segment that
///   is only valid at position 0 ('A', anchored).
/// - **Chained prefix block keys**: h_0 = H("HCK1" ‖ 'R' ‖ len(ns) ‖ ns) and
///   h_i = H("HCK1" ‖ 'B' ‖ h_{i−1} ‖ n_i ‖ block_i). The namespace is in the root, so it
///   reaches every block — unlike a salt mixed into the first block only — and h_i identifies
///   the whole prefix up to block i (two requests that differ anywhere before block i get
///   different h_i).
///
/// len(ns) is a little-endian uint32, n (token count) a little-endian uint32 for blocks and
/// uint64 for segments, token ids little-endian uint32. The domain tags 'R', 'B', 'P', 'A' make
/// the four message families disjoint. Block keys are given for full blocks only: a trailing
/// partial block has no key (as in vLLM's prefix cache), so a shifted block boundary always
/// changes every later key.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {
// Helpers of segment/keys.hpp.

inline constexpr char segment_key_magic[4] = {'H', 'C', 'K', '1'};

inline void put_u32(std::byte* p, std::uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}
inline void put_u64(std::byte* p, std::uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::byte>((v >> (8 * i)) & 0xffu);
}

/// Calls `f(body_bytes)` with the token ids as little-endian uint32 bytes: in place on a
/// little-endian host, through a byte-swapped copy otherwise.
template <class F>
decltype(auto) with_token_bytes(std::span<const token_id> tokens, F&& f) {
  if constexpr (std::endian::native == std::endian::little) {
    return f(std::as_bytes(tokens));
  } else {
    std::vector<std::byte> buf(tokens.size() * 4);
    for (std::size_t i = 0; i < tokens.size(); ++i) put_u32(buf.data() + 4 * i, tokens[i]);
    return f(std::span<const std::byte>(buf));
  }
}

/// A small-buffer byte builder for message heads (namespace encodings are usually < 100 bytes).
class head_buffer {
 public:
  explicit head_buffer(std::size_t n) : size_(n) {
    if (n > sizeof(small_)) {
      large_.resize(n);
      data_ = large_.data();
    } else {
      data_ = small_;
    }
  }
  head_buffer(const head_buffer&) = delete;
  head_buffer& operator=(const head_buffer&) = delete;
  [[nodiscard]] std::byte* data() noexcept { return data_; }
  [[nodiscard]] std::span<const std::byte> span() const noexcept { return {data_, size_}; }

 private:
  std::byte small_[256];
  std::vector<std::byte> large_;
  std::byte* data_;
  std::size_t size_;
};

}  // namespace detail

/// What a segment key may be reused as.
enum class segment_kind : std::uint8_t {
  position_independent = 'P',  ///< reusable at any position (HYPIC PIC segment, COMB chunk)
  anchored = 'A',              ///< the leading segment, valid only at position 0
};

/// The root of a namespace's block chain, h_0 = H("HCK1" ‖ 'R' ‖ len(ns) ‖ ns).
template <hash_policy H>
[[nodiscard]] digest root_key(const H& hash, const namespace_key& ns) {
  const std::string_view nsb = ns.bytes();
  hybridcache::detail::head_buffer head(4 + 1 + 4 + nsb.size());
  std::byte* p = head.data();
  std::memcpy(p, hybridcache::detail::segment_key_magic, 4);
  p[4] = static_cast<std::byte>('R');
  hybridcache::detail::put_u32(p + 5, static_cast<std::uint32_t>(nsb.size()));
  std::memcpy(p + 9, nsb.data(), nsb.size());
  return hash(head.span(), {});
}

/// One chain step, h_i = H("HCK1" ‖ 'B' ‖ h_{i−1} ‖ n ‖ block). Noexcept hot path.
/// Precondition: `block.size() < 2^32`.
template <hash_policy H>
[[nodiscard]] digest chain_key(const H& hash, const digest& prev,
                               std::span<const token_id> block) noexcept {
  constexpr std::size_t head_bytes = 4 + 1 + 16 + 4;
  constexpr std::size_t max_inline_tokens = 256;
  auto write_head = [&](std::byte* head) {
    std::memcpy(head, hybridcache::detail::segment_key_magic, 4);
    head[4] = static_cast<std::byte>('B');
    hybridcache::detail::put_u64(head + 5, prev.lo);
    hybridcache::detail::put_u64(head + 13, prev.hi);
    hybridcache::detail::put_u32(head + 21, static_cast<std::uint32_t>(block.size()));
  };
  if constexpr (std::endian::native == std::endian::little) {
    // Hot path: one contiguous message on the stack, so the policy hashes it without a copy.
    if (block.size() <= max_inline_tokens) {
      std::byte buf[head_bytes + max_inline_tokens * sizeof(token_id)];
      write_head(buf);
      if (!block.empty()) std::memcpy(buf + head_bytes, block.data(), block.size_bytes());
      return hash(std::span<const std::byte>(buf, head_bytes + block.size_bytes()), {});
    }
  }
  std::byte head[head_bytes];
  write_head(head);
  return hybridcache::detail::with_token_bytes(block, [&](std::span<const std::byte> body) {
    return hash(std::span<const std::byte>(head, head_bytes), body);
  });
}

/// Segment key K(ns, tokens) = H("HCK1" ‖ kind ‖ len(ns) ‖ ns ‖ n ‖ tokens), independent of the
/// segment's position in a request (SparseX §4.3, HYPIC §5 `match`).
template <hash_policy H>
[[nodiscard]] digest segment_key(const H& hash, const namespace_key& ns,
                                 std::span<const token_id> tokens,
                                 segment_kind kind = segment_kind::position_independent) {
  const std::string_view nsb = ns.bytes();
  hybridcache::detail::head_buffer head(4 + 1 + 4 + nsb.size() + 8);
  std::byte* p = head.data();
  std::memcpy(p, hybridcache::detail::segment_key_magic, 4);
  p[4] = static_cast<std::byte>(kind);
  hybridcache::detail::put_u32(p + 5, static_cast<std::uint32_t>(nsb.size()));
  std::memcpy(p + 9, nsb.data(), nsb.size());
  hybridcache::detail::put_u64(p + 9 + nsb.size(), tokens.size());
  return hybridcache::detail::with_token_bytes(tokens, [&](std::span<const std::byte> body) {
    return hash(head.span(), body);
  });
}

/// Writes the chained keys h_1..h_m of the m = tokens.size() / block_size full blocks into
/// `out` (which must hold at least m digests) and returns m.
/// @throws invalid_argument if `block_size == 0` or `out` is too small.
template <hash_policy H>
std::size_t block_keys_into(const H& hash, const namespace_key& ns,
                            std::span<const token_id> tokens, std::size_t block_size,
                            std::span<digest> out) {
  if (block_size == 0)
    hybridcache::detail::throw_invalid("block_size", block_size, "must be >= 1");
  const std::size_t m = tokens.size() / block_size;
  if (out.size() < m)
    hybridcache::detail::throw_invalid("out.size()", out.size(),
                                       "smaller than the number of full blocks");
  digest h = root_key(hash, ns);
  for (std::size_t i = 0; i < m; ++i) {
    h = chain_key(hash, h, tokens.subspan(i * block_size, block_size));
    out[i] = h;
  }
  return m;
}

/// The chained prefix block keys h_1..h_m of the full blocks of `tokens`, rooted at
/// h_0 = root_key(ns). `result[i]` identifies (ns, tokens[0, (i+1)·block_size)).
/// @throws invalid_argument if `block_size == 0`.
template <hash_policy H>
[[nodiscard]] std::vector<digest> block_keys(const H& hash, const namespace_key& ns,
                                             std::span<const token_id> tokens,
                                             std::size_t block_size) {
  if (block_size == 0)
    hybridcache::detail::throw_invalid("block_size", block_size, "must be >= 1");
  std::vector<digest> out(tokens.size() / block_size);
  block_keys_into(hash, ns, tokens, block_size, std::span<digest>(out));
  return out;
}

HYBRIDCACHE_NAMESPACE_END
