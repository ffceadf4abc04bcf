#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// SparseX token selection: which reused tokens to recompute (SparseX §3.2–3.3, Algorithm 1
/// lines 13–17).
///
/// The prompt of T tokens is a sequence of reused segments (given as half-open token ranges) and
/// non-reuse tokens I_nr (everything else). From the sparse-Q scores s_j:
///  - key tokens S_key: the `top_k` reused tokens with the largest s_j (eq. 3 restricted to reused
///    tokens, since non-reuse tokens are recomputed anyway; ties go to the lower index);
///  - overflow S_ov (§3.3): every maximal interval of I_nr grows by one block of `block_size`
///    tokens on each side (clipped to the prompt). With block-aligned segments, as SparseX pads
///    them, that is the last block of the previous reused segment and the first block of the next;
///  - tail fallback S_tail (§3.2, last paragraph): when the prompt ends in a reused segment (no
///    sparse-Q token at the tail), the last `fallback_tokens` (64) tokens of that final reused
///    segment;
///  - the recompute set R = I_nr ∪ S_key ∪ S_ov ∪ S_tail.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Selection parameters (SparseX's k, block size b, and the 64-token fallback).
struct selection_options {
  std::size_t top_k = 0;             ///< key-token budget; clamped to the number of reused tokens
  std::size_t block_size = 16;       ///< overflow block b (vLLM's default block size)
  std::size_t fallback_tokens = 64;  ///< tail fallback length (SparseX uses 64)
};

/// The sets of one selection, each ascending except `key` (descending score). `recompute_mask[j]`
/// is 1 when token j is in R.
struct token_selection {
  std::vector<std::size_t> non_reuse;  ///< I_nr
  std::vector<std::size_t> key;        ///< S_key, best first
  std::vector<std::size_t> overflow;   ///< S_ov minus I_nr (the reused tokens overflow adds)
  std::vector<std::size_t> tail;       ///< S_tail
  std::vector<std::size_t> recompute;  ///< R
  std::vector<std::uint8_t> recompute_mask;
};

namespace detail {
/// Validates reused ranges against a prompt of `t_len` tokens: non-empty, ascending,
/// non-overlapping (adjacent is fine: two cached segments back to back), inside the prompt.
inline void check_ranges(std::span<const token_range> reused, std::size_t t_len) {
  for (std::size_t s = 0; s < reused.size(); ++s) {
    const auto& r = reused[s];
    const std::string name = indexed("reused", s);
    if (r.begin >= r.end)
      throw_invalid(name + ".end", r.end, "ranges must be non-empty (end > begin = " +
                                              std::to_string(r.begin) + ")");
    if (r.end > t_len)
      throw_invalid(name + ".end", r.end, "exceeds the prompt length " + std::to_string(t_len));
    if (s > 0 && r.begin < reused[s - 1].end)
      throw_invalid(name + ".begin", r.begin,
                    "ranges must be ascending and disjoint (previous end " +
                        std::to_string(reused[s - 1].end) + ")");
  }
}
}  // namespace detail

/// Non-reuse positions I_nr of a prompt of `t_len` tokens with the given reused ranges.
/// @throws invalid_argument for ranges that are empty, unordered, overlapping or out of range.
inline std::vector<std::size_t> non_reuse_positions(std::span<const token_range> reused,
                                                    std::size_t t_len) {
  detail::check_ranges(reused, t_len);
  (void)checked_count<std::size_t>(t_len, "t_len");  // up to t_len positions are stored
  std::vector<std::size_t> out;
  std::size_t next = 0;
  for (const auto& r : reused) {
    for (std::size_t j = next; j < r.begin; ++j) out.push_back(j);
    next = r.end;
  }
  for (std::size_t j = next; j < t_len; ++j) out.push_back(j);
  return out;
}

/// Applies SparseX's selection to scores `s` (length T, e.g. from `sparse_q_scores`).
/// @throws invalid_argument for bad ranges, a score that is negative or not finite,
///         `block_size == 0`.
inline token_selection select_tokens(std::span<const double> scores,
                                     std::span<const token_range> reused,
                                     const selection_options& opt) {
  const std::size_t t_len = scores.size();
  detail::check_ranges(reused, t_len);
  if (opt.block_size == 0) detail::throw_invalid("options.block_size", opt.block_size, "must be > 0");
  for (std::size_t j = 0; j < t_len; ++j) {
    if (!std::isfinite(scores[j]) || scores[j] < 0.0)
      detail::throw_invalid(detail::indexed("scores", j), scores[j], "must be finite and >= 0");
  }
  token_selection out;
  out.non_reuse = non_reuse_positions(reused, t_len);
  std::vector<std::uint8_t> is_reused(t_len, 0);
  for (const auto& r : reused) std::fill(is_reused.begin() + r.begin, is_reused.begin() + r.end, 1);
  out.recompute_mask.assign(t_len, 0);
  for (std::size_t j : out.non_reuse) out.recompute_mask[j] = 1;

  // S_key: top-k reused tokens by score, ties to the lower index.
  std::vector<std::size_t> candidates;
  candidates.reserve(t_len - out.non_reuse.size());
  for (std::size_t j = 0; j < t_len; ++j)
    if (is_reused[j]) candidates.push_back(j);
  const std::size_t k = std::min(opt.top_k, candidates.size());
  const auto better = [&](std::size_t a, std::size_t b) {
    return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
  };
  std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(k),
                    candidates.end(), better);
  out.key.assign(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(k));
  for (std::size_t j : out.key) out.recompute_mask[j] = 1;

  // S_ov: one block on each side of every maximal non-reuse interval.
  auto add_overflow = [&](std::size_t lo, std::size_t hi) {  // [lo, hi)
    for (std::size_t j = lo; j < hi; ++j) {
      if (is_reused[j] && out.recompute_mask[j] != 2) {
        out.overflow.push_back(j);
        out.recompute_mask[j] = 2;  // provisional mark: in S_ov (deduplicates)
      }
    }
  };
  for (std::size_t i = 0; i < out.non_reuse.size();) {
    std::size_t e = i;
    while (e + 1 < out.non_reuse.size() && out.non_reuse[e + 1] == out.non_reuse[e] + 1) ++e;
    const std::size_t a = out.non_reuse[i], b = out.non_reuse[e] + 1;  // interval [a, b)
    add_overflow(a - std::min(a, opt.block_size), a);
    add_overflow(b, b + std::min(opt.block_size, t_len - b));  // b ≤ t_len: no b + B to wrap
    i = e + 1;
  }
  std::sort(out.overflow.begin(), out.overflow.end());

  // S_tail: the prompt ends inside a reused segment -> its last `fallback_tokens` tokens.
  if (!reused.empty() && reused.back().end == t_len) {
    const auto& last = reused.back();
    for (std::size_t j = last.end - std::min(last.size(), opt.fallback_tokens); j < last.end; ++j)
      out.tail.push_back(j);
  }
  for (std::size_t j : out.tail) out.recompute_mask[j] = 1;
  for (auto& m : out.recompute_mask) m = m != 0 ? 1 : 0;
  for (std::size_t j = 0; j < t_len; ++j)
    if (out.recompute_mask[j]) out.recompute.push_back(j);
  return out;
}

HYBRIDCACHE_NAMESPACE_END
