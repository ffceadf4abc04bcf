#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Longest-common-prefix of a request against retained cache entries, in O(log(L/16) + 16) per
/// entry instead of O(L).
///
/// Each sequence gets chained hashes of its 16-token blocks, h_k = mix(h_{k−1}, block_k), so
/// h_k equal for two sequences means (up to a 64-bit collision, probability ~2^-64 per compare)
/// that their first 16·(k+1) tokens are equal; equality is monotone in k, which lets a binary
/// search find the number of shared whole blocks. The remaining < 16 shared tokens are compared
/// directly. The simulation tests hold the result to a token-by-token reference.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/sim/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace sim::detail {

inline constexpr std::size_t match_block = 16;

/// Appends the chained hashes of the whole 16-token blocks of `tokens` to `out` (cleared first).
inline void chained_block_hashes(std::span<const token_id> tokens, std::vector<std::uint64_t>& out) {
  out.clear();
  const std::size_t blocks = tokens.size() / match_block;
  out.reserve(blocks);
  std::uint64_t h = 0x243F6A8885A308D3ULL;
  for (std::size_t b = 0; b < blocks; ++b) {
    const token_id* p = tokens.data() + b * match_block;
    std::uint64_t a = h;
    for (std::size_t i = 0; i < match_block; ++i) a = (a ^ p[i]) * 0x100000001B3ULL;
    a ^= a >> 29;
    a *= 0xBF58476D1CE4E5B9ULL;
    a ^= a >> 32;
    h = a;
    out.push_back(h);
  }
}

/// Length of the longest common prefix of `a` and `b`, given their chained block hashes.
inline std::size_t common_prefix(std::span<const token_id> a, std::span<const std::uint64_t> ha,
                                 std::span<const token_id> b, std::span<const std::uint64_t> hb) noexcept {
  // Largest j with ha[j-1] == hb[j-1] (0 if none): equality holds for a prefix of indices.
  std::size_t lo = 0, hi = std::min(ha.size(), hb.size());
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo + 1) / 2;
    if (ha[mid - 1] == hb[mid - 1]) lo = mid;
    else hi = mid - 1;
  }
  std::size_t t = lo * match_block;
  const std::size_t n = std::min(a.size(), b.size());
  while (t < n && a[t] == b[t]) ++t;
  return t;
}

}  // namespace sim::detail
HYBRIDCACHE_NAMESPACE_END
