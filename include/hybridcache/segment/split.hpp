#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Segmentation of a request into cacheable pieces (HYPIC §5 "Serving interfaces", §4.3;
/// SparseX §5 "Entrypoints").
///
/// A request is PIC-enabled when it contains the separator token (HYPIC's PIC_SEPARATOR). The
/// k separators cut the token sequence into k+1 pieces p_0, …, p_k; separators themselves are
/// dropped. Roles:
/// - p_0 is the **leading** segment (e.g. the system prompt): it always sits at position 0, so
///   it is cached whole, without seam exclusion (HYPIC §4.3), under an *anchored* key;
/// - p_1 … p_{k−1} are **reusable** position-independent segments;
/// - p_k is the trailing **query**: its prefix varies per request, so it is never cached.
/// A request without separators is one query segment (`pic_enabled == false`). Empty pieces
/// (two adjacent separators, or a separator at either end) produce no segment.
///
/// Layout of the spliced sequence: leading and reusable segments are padded at their end to a
/// multiple of `block_size` with `pad_token` (SparseX pads reuse segments so their boundaries
/// align with the engine's block size); the query is not padded. `position` is a segment's
/// start in that spliced sequence — the p_i of HYPIC's RoPE re-rotation R(p_i).
///
/// Seams (HYPIC §4.3, Fig. 7–8): each reusable segment keeps its first h and last w tokens out of
/// the cached state (they are recomputed at splice time together with the neighbour's), with
/// h = max(w, k − 1) when a causal conv of kernel k precedes the layer (HYPIC §4.3: w ≥ k − 1
/// warms the conv state). Short segments: head = min(h, n), tail = min(w, n − head), so the
/// interior is [h, n − w) when h + w < n and empty otherwise — the same interior as
/// `cached_interior` with the same w and k. Default w = 8, HYPIC's default.

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Options of `split_request`.
struct split_options {
  token_id separator = 0;      ///< the PIC_SEPARATOR token id (required to be set by callers)
  std::size_t block_size = 1;  ///< pad leading and reusable segments to a multiple of this
  token_id pad_token = 0;      ///< token id written into padding by `splice_request`
  std::size_t seam_width = 8;  ///< HYPIC seam window w (0 disables seam exclusion)
  std::size_t conv_kernel = 0; ///< k of a causal conv before QKV (0/1: none); head seam >= k−1
};

/// One piece of a request.
struct segment_range {
  segment_role role = segment_role::query;
  std::size_t begin = 0;          ///< first token, index into the input sequence
  std::size_t end = 0;            ///< one past the last token (input index)
  std::size_t position = 0;       ///< start position in the spliced (padded) sequence
  std::size_t padded_length = 0;  ///< length in the spliced sequence (>= length())
  std::size_t head_seam = 0;      ///< leading tokens recomputed at splice time
  std::size_t tail_seam = 0;      ///< trailing tokens recomputed at splice time

  [[nodiscard]] std::size_t length() const noexcept { return end - begin; }
  [[nodiscard]] std::size_t padding() const noexcept { return padded_length - length(); }
  /// The cached interior [interior_begin, interior_end) in input indices.
  [[nodiscard]] std::size_t interior_begin() const noexcept { return begin + head_seam; }
  [[nodiscard]] std::size_t interior_end() const noexcept { return end - tail_seam; }
  /// True for the roles whose content may be stored (leading, reusable).
  [[nodiscard]] bool cacheable() const noexcept { return role != segment_role::query; }

  friend bool operator==(const segment_range&, const segment_range&) = default;
};

/// The result of `split_request`.
struct segmentation {
  std::vector<segment_range> segments;  ///< in request order
  std::size_t separators = 0;           ///< number of separator tokens found
  std::size_t spliced_length = 0;       ///< length of the padded spliced sequence
  [[nodiscard]] bool pic_enabled() const noexcept { return separators > 0; }
};

/// Splits `tokens` at `opts.separator` (file comment).
/// @throws invalid_argument if `opts.block_size == 0`, or `opts.pad_token == opts.separator`
/// (padding would read back as a separator), or a padded length ⌈n/B⌉·B or the spliced total
/// overflows `std::size_t` (`checked.hpp`).
[[nodiscard]] inline segmentation split_request(std::span<const token_id> tokens,
                                                const split_options& opts) {
  if (opts.block_size == 0)
    hybridcache::detail::throw_invalid("opts.block_size", opts.block_size, "must be >= 1");
  if (opts.pad_token == opts.separator && opts.block_size > 1)
    hybridcache::detail::throw_invalid("opts.pad_token", opts.pad_token,
                                       "must differ from the separator token id");
  segmentation out;
  std::vector<std::size_t> cuts;  // indices of separators
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i] == opts.separator) cuts.push_back(i);
  out.separators = cuts.size();

  std::size_t pos = 0;
  auto emit = [&](segment_role role, std::size_t b, std::size_t e) {
    if (b == e) return;  // empty piece: no segment
    segment_range s;
    s.role = role;
    s.begin = b;
    s.end = e;
    s.position = pos;
    const std::size_t n = e - b;
    if (role == segment_role::query) {
      s.padded_length = n;
    } else {
      s.padded_length = checked_round_up(n, opts.block_size, "segment length", "opts.block_size");
    }
    if (role == segment_role::reusable) {
      const std::size_t warm = opts.conv_kernel > 1 ? opts.conv_kernel - 1 : 0;
      const std::size_t head = opts.seam_width > warm ? opts.seam_width : warm;
      s.head_seam = n < head ? n : head;
      const std::size_t rest = n - s.head_seam;
      s.tail_seam = rest < opts.seam_width ? rest : opts.seam_width;
    }
    pos = checked_add(pos, s.padded_length, "spliced_length", "padded_length");
    out.segments.push_back(s);
  };

  if (cuts.empty()) {
    emit(segment_role::query, 0, tokens.size());
  } else {
    emit(segment_role::leading, 0, cuts.front());
    for (std::size_t c = 0; c + 1 < cuts.size(); ++c)
      emit(segment_role::reusable, cuts[c] + 1, cuts[c + 1]);
    emit(segment_role::query, cuts.back() + 1, tokens.size());
  }
  out.spliced_length = pos;
  return out;
}

/// The spliced sequence: each segment's tokens followed by its padding (`pad_token`),
/// separators removed. `result.size() == seg.spliced_length`.
/// @throws invalid_argument if `seg` does not describe `tokens` (a range out of bounds), or its
///         padded total is not representable or allocatable.
[[nodiscard]] inline std::vector<token_id> splice_request(std::span<const token_id> tokens,
                                                          const segmentation& seg,
                                                          token_id pad_token) {
  // `seg` is caller data: validate every range and the padded total before allocating.
  std::size_t total = 0;
  for (std::size_t i = 0; i < seg.segments.size(); ++i) {
    const auto& s = seg.segments[i];
    if (s.begin > s.end || s.end > tokens.size() || s.padded_length < s.length())
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed("seg.segments", i), s.end,
                                         "segment range does not fit the token sequence");
    total = checked_add(total, s.padded_length, "spliced_length",
                        hybridcache::detail::indexed("seg.segments", i) + ".padded_length");
  }
  std::vector<token_id> out;
  out.reserve(checked_count<token_id>(total, "spliced_length"));
  for (std::size_t i = 0; i < seg.segments.size(); ++i) {
    const auto& s = seg.segments[i];
    out.insert(out.end(), tokens.begin() + static_cast<std::ptrdiff_t>(s.begin),
               tokens.begin() + static_cast<std::ptrdiff_t>(s.end));
    out.insert(out.end(), s.padding(), pad_token);
  }
  return out;
}

HYBRIDCACHE_NAMESPACE_END
