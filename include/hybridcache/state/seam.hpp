#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Seam windows and conv warm-up as bookkeeping, and the splice that assembles a request's
/// running state from cached interior summaries plus recomputed seams (HYPIC §4.2–4.3, Fig. 7–8).
///
/// A request is a sequence of segments. Each cached segment stores (T_C, S_C|0) over its
/// *interior* only: the first h = max(w, k − 1) and the last w tokens are left out (w: seam
/// width, default 8; k: causal-conv kernel size), because at splice time they are recomputed
/// jointly with the neighbouring segment's edge — the seam window — so the full-attention layers
/// above get per-token inputs there and the conv state is warmed by the previous segment's
/// trailing tokens (w ≥ k − 1 makes the seam recompute do both). The leading segment (system
/// prompt, always at position 0) is cached whole; the trailing one (the user query) is recomputed
/// end to end. A segment too short to have an interior is recomputed whole.
///
/// `plan_seams` lays out, in request order, which token ranges are applied from the cache and
/// which are recomputed; `splice` executes a plan: cached steps apply their summary (eq. 6), with
/// the RoPE shift of eq. 7 when the layer rotates keys, and recompute steps run the recurrence
/// token by token. Since both are exact, the result equals the full recurrence over the request.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/compose.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/rope.hpp"
#include "hybridcache/state/summary.hpp"
#include "hybridcache/state/token_inputs.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

// The library-wide vocabulary (types.hpp); `token_range` and `segment_role` stay
// valid spellings.

/// Seam and conv parameters.
struct seam_options {
  std::size_t width = 8;        ///< w: tokens excluded at each seam-facing end (HYPIC default 8)
  std::size_t conv_kernel = 0;  ///< k of the causal conv1d before QKV; 0 or 1: none
  bool anchor_first = true;     ///< the leading segment is cached whole (it always starts at 0)
  bool recompute_last = true;   ///< the trailing segment (the query) is recomputed end to end
};

/// The cached interior of a segment, in segment-local positions (empty: nothing cached).
/// leading (with anchor_first): [0, n); query (with recompute_last): empty;
/// otherwise [h, n − w) with h = max(w, k − 1), empty when h + w ≥ n.
[[nodiscard]] constexpr token_range cached_interior(std::size_t length, segment_role role,
                                                    const seam_options& o = {}) noexcept {
  if (role == segment_role::leading && o.anchor_first) return {0, length};
  if (role == segment_role::query && o.recompute_last) return {0, 0};
  const std::size_t warm = o.conv_kernel > 1 ? o.conv_kernel - 1 : 0;
  const std::size_t head = std::max(o.width, warm);
  if (head + o.width >= length) return {0, 0};
  return {head, length - o.width};
}

/// The role of segment i of n: leading (i = 0, n > 1), query (i = n − 1), reusable otherwise.
[[nodiscard]] constexpr segment_role role_of(std::size_t i, std::size_t n) noexcept {
  if (i == 0 && n > 1) return segment_role::leading;
  if (i + 1 == n) return segment_role::query;
  return segment_role::reusable;
}

/// One step of a splice, in request order.
struct splice_step {
  enum class kind : std::uint8_t { cached = 0, recompute = 1 };
  kind what = kind::recompute;
  std::size_t segment = 0;    ///< cached: its segment; recompute: the segment of tokens.begin
  token_range tokens;         ///< request-global positions
  std::size_t local_begin = 0;  ///< cached: segment-local position of tokens.begin
  /// recompute: the k − 1 positions before tokens.begin whose conv inputs warm the conv state
  /// (from the previous segment's cached trailing conv state); empty without a conv.
  token_range conv_context;
};

/// A request's splice layout.
struct seam_plan {
  std::vector<std::size_t> segment_begin;  ///< global start of each segment, plus the total
  std::vector<token_range> interiors;      ///< per segment, segment-local (empty: none)
  std::vector<splice_step> steps;          ///< covers [0, total) once, in order
  std::size_t total_tokens = 0;
  std::size_t cached_tokens = 0;
  std::size_t recomputed_tokens = 0;
  /// Number of cached steps (= summaries `splice` expects).
  [[nodiscard]] std::size_t cached_steps() const noexcept {
    return static_cast<std::size_t>(std::count_if(steps.begin(), steps.end(), [](const auto& s) {
      return s.what == splice_step::kind::cached;
    }));
  }
};

/// Plans the splice of a request made of segments with the given lengths.
/// @throws invalid_argument if a segment length is 0.
inline seam_plan plan_seams(std::span<const std::size_t> segment_lengths,
                            const seam_options& o = {}) {
  seam_plan p;
  const std::size_t n = segment_lengths.size();
  p.segment_begin.reserve(n + 1);
  const std::size_t warm = o.conv_kernel > 1 ? o.conv_kernel - 1 : 0;
  std::size_t pos = 0;
  auto push_recompute = [&](std::size_t seg, std::size_t b, std::size_t e) {
    if (b == e) return;
    if (!p.steps.empty() && p.steps.back().what == splice_step::kind::recompute &&
        p.steps.back().tokens.end == b) {
      p.steps.back().tokens.end = e;  // a seam window spans the boundary: one joint recompute
      return;
    }
    splice_step s;
    s.what = splice_step::kind::recompute;
    s.segment = seg;
    s.tokens = {b, e};
    s.conv_context = {b >= warm ? b - warm : 0, b};
    p.steps.push_back(s);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t len = segment_lengths[i];
    if (len == 0) detail::throw_invalid(detail::indexed("segment_lengths", i), len, "must be >= 1");
    // The running total must not wrap: every step below is an index range into the request.
    (void)checked_add(pos, len, "total_tokens", detail::indexed("segment_lengths", i));
    p.segment_begin.push_back(pos);
    const token_range in = cached_interior(len, role_of(i, n), o);
    p.interiors.push_back(in);
    if (in.empty()) {
      push_recompute(i, pos, pos + len);
    } else {
      push_recompute(i, pos, pos + in.begin);
      splice_step s;
      s.what = splice_step::kind::cached;
      s.segment = i;
      s.tokens = {pos + in.begin, pos + in.end};
      s.local_begin = in.begin;
      p.steps.push_back(s);
      p.cached_tokens += in.size();
      push_recompute(i, pos + in.end, pos + len);
    }
    pos += len;
  }
  p.segment_begin.push_back(pos);
  p.total_tokens = pos;
  p.recomputed_tokens = pos - p.cached_tokens;
  return p;
}

inline seam_plan plan_seams(const std::vector<std::size_t>& segment_lengths,
                            const seam_options& o = {}) {
  return plan_seams(std::span<const std::size_t>(segment_lengths), o);
}

/// Splice options.
struct splice_options {
  /// Set when the layer rotates K inside (scalar family only): each cached summary, computed at
  /// its segment-local positions, is moved to its request position by R(global − local) (eq. 7).
  std::optional<rope_params> rope;
};

/// Executes `plan`: builds the request's running state from `prefix_state` by applying the
/// cached interior summaries and recomputing every other token.
///
/// @param plan         from plan_seams.
/// @param cached       one summary per cached step, in step order, each over that step's tokens.
/// @param request      per-token inputs of the whole request (request-global positions; keys
///                     already rotated to those positions when the layer uses RoPE).
/// @param r            the write rule.
/// @param prefix_state dk·dv running state before the request's first token (zeros for a fresh
///                     request, a private-pool prefix hit otherwise).
/// @returns the running state after the request's last token.
/// @throws invalid_argument on a count, length or shape mismatch, or bad inputs.
template <class Real>
std::vector<Real> splice(const seam_plan& plan, std::span<const segment_summary<Real>> cached,
                         const token_inputs<Real>& request, transition_rule r,
                         std::span<const std::type_identity_t<Real>> prefix_state,
                         const splice_options& opts = {}) {
  detail::validate(request, r);
  detail::check_initial_state(prefix_state, request.dk, request.dv, "prefix_state");
  if (request.length != plan.total_tokens)
    detail::throw_invalid("request.length", request.length,
                          "must equal the plan's total tokens " +
                              std::to_string(plan.total_tokens));
  if (cached.size() != plan.cached_steps())
    detail::throw_invalid("cached.size()", cached.size(),
                          "the plan has " + std::to_string(plan.cached_steps()) + " cached steps");
  // The plan is caller data: its steps must tile [0, total_tokens) in order, or `advance` would
  // read past the request's arrays.
  std::size_t covered = 0;
  for (std::size_t i = 0; i < plan.steps.size(); ++i) {
    const token_range t = plan.steps[i].tokens;
    if (t.begin != covered || t.end < t.begin || t.end > plan.total_tokens)
      detail::throw_invalid(
          detail::indexed("plan.steps", i), std::to_string(t.begin) + ".." + std::to_string(t.end),
          "steps must tile [0, " + std::to_string(plan.total_tokens) + ") in order");
    covered = t.end;
  }
  if (covered != plan.total_tokens)
    detail::throw_invalid("plan.steps", covered,
                          "steps must cover total_tokens = " + std::to_string(plan.total_tokens));
  std::vector<Real> cur(prefix_state.begin(), prefix_state.end()), next(cur.size()),
      x(request.dv), f(request.dk);
  std::size_t c = 0;
  for (const splice_step& step : plan.steps) {
    if (step.what == splice_step::kind::recompute) {
      detail::advance(request, r, step.tokens.begin, step.tokens.end, cur.data(), x.data(),
                      f.data());
      continue;
    }
    const segment_summary<Real>& s = cached[c];
    const std::string name = detail::indexed("cached", c);
    ++c;
    if (s.dk() != request.dk || s.dv() != request.dv)
      detail::throw_invalid(name + ".shape", std::to_string(s.dk()) + "x" + std::to_string(s.dv()),
                            "must match the request's dk x dv");
    if (s.length() != step.tokens.size())
      detail::throw_invalid(name + ".length()", s.length(),
                            "the plan's cached step has " + std::to_string(step.tokens.size()) +
                                " tokens");
    if (opts.rope) {
      const auto shift = static_cast<std::int64_t>(step.tokens.begin) -
                         static_cast<std::int64_t>(step.local_begin);
      const segment_summary<Real> moved = rerotate(s, shift, *opts.rope);
      detail::apply_to(moved, cur.data(), next.data());
    } else {
      detail::apply_to(s, cur.data(), next.data());
    }
    cur.swap(next);
  }
  return cur;
}

template <class Real>
std::vector<Real> splice(const seam_plan& plan, const std::vector<segment_summary<Real>>& cached,
                         const token_inputs<Real>& request, transition_rule r,
                         std::span<const std::type_identity_t<Real>> prefix_state,
                         const splice_options& opts = {}) {
  return splice(plan, std::span<const segment_summary<Real>>(cached), request, r, prefix_state,
                opts);
}

HYBRIDCACHE_NAMESPACE_END
