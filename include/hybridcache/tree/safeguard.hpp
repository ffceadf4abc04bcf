#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `leader_safeguard`: follow the *lazy leader* among candidate state policies run in
/// shadow (docs/design/tree_safeguard.md derives the rule and its regret bound).
///
/// Each candidate c (the library's exact ΔE[r] policy and the engines' policies) runs on metadata
/// alone, beside the pool the engine really has. Per served request t it is scored with the
/// tokens it would have recomputed, ℓ_c(t) = (u_t − k_c(t))·B (u_t the usable match, k_c(t) the
/// deepest state c's own held set offered), and L_c(t) = Σ_{s ≤ t} ℓ_c(s). The leader λ(t) whose
/// snapshots and keeps the real pool follows is
///
///     b(t) = argmin_c L_c(t)                     (ties: the current leader, then the lowest c)
///     λ(t) = b(t)  if L_{λ(t−1)}(t) − L_{b(t)}(t) > δ(t),  else λ(t−1);     λ(0) = `initial`
///     δ(t) = max( (1/|D(t)|) Σ_{s ∈ D(t)} u_s·B,  H(t)/S(t) ),   D(t) = { s ≤ t : u_s > 0 }
///
/// with H(t) the hand-over loss measured so far (`note_handover`: the real pool's recompute
/// beyond its leader's) and S(t) ≥ 1 the switches so far (the second term is 0 before the first
/// switch; the first is 0 before the first request with u > 0). The margin is not tuned: it is
/// the larger of one request's worth of tokens — a lead of less than one request is the outcome
/// of a single decision — and the measured price of a switch (the states the new leader holds
/// that the pool lacks, each re-created by recomputation). A switch is made only when the lead
/// pays for it. "One request" is a mean over the requests that were decisions, D(t): a request
/// with u = 0 (nothing cached could serve it) scores 0 for every candidate, so it moves no lead,
/// and counting it would make the margin shrink with the share of cold requests, which says
/// nothing about what one decision can cost.
///
/// With S switches, ℓ_max the largest single loss and δ* = max_t δ(t), the leaders' own losses
/// satisfy (docs/design/tree_safeguard.md, Theorem 1)
///
///     Σ_t ℓ_{λ(t)}(t) ≤ min_c L_c(T) + S·(δ* + ℓ_max) + δ*,
///
/// and the real pool's recompute adds the measured hand-over term (`handover_loss`).
///
/// Scores use the requests' own counterfactual hits, known at match time (no future input): the
/// request that is scored is also served by the leader chosen with its score, which is causal.
///
/// Not thread-safe; O(C) per request for C candidates.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Follow-the-lazy-leader over candidates' recompute losses (see the file comment).
class leader_safeguard {
 public:
  /// `candidates` ≥ 1 shadows; `initial` < candidates is the leader before any request.
  /// @throws invalid_argument for no candidates or an initial leader out of range.
  explicit leader_safeguard(std::size_t candidates = 1, std::size_t initial = 0)
      : scores_(candidates, 0.0), led_(candidates, 0), leader_(initial) {
    if (candidates == 0) hybridcache::detail::throw_invalid("candidates", 0, "must be >= 1");
    if (initial >= candidates)
      hybridcache::detail::throw_invalid("initial", initial, "must be < candidates");
  }

  /// Scores one request: `losses[c]` = ℓ_c(t), tokens candidate c would have recomputed;
  /// `usable` = u_t·B, the request's usable tokens (for δ). @returns λ(t), the leader the
  /// request's snapshots and keeps follow.
  /// @throws invalid_argument for a wrong number of losses, or a loss or `usable` that is
  ///         negative or not finite (nothing is changed then).
  std::size_t observe(std::span<const double> losses, double usable) {
    if (losses.size() != scores_.size())
      hybridcache::detail::throw_invalid("losses.size()", losses.size(),
                                         "must equal the number of candidates");
    if (!(usable >= 0.0 && std::isfinite(usable)))
      hybridcache::detail::throw_invalid("usable", usable, "must be finite and >= 0");
    for (std::size_t c = 0; c < losses.size(); ++c) {
      if (!(losses[c] >= 0.0 && std::isfinite(losses[c])))
        hybridcache::detail::throw_invalid("losses[" + std::to_string(c) + "]", losses[c],
                                           "must be finite and >= 0");
    }
    for (std::size_t c = 0; c < losses.size(); ++c) scores_[c] += losses[c];
    ++requests_;
    usable_ += usable;
    if (usable > 0.0) ++decisions_;
    const double delta = margin();
    max_margin_ = std::max(max_margin_, delta);
    for (double l : losses) max_loss_ = std::max(max_loss_, l);
    std::size_t best = leader_;
    for (std::size_t c = 0; c < scores_.size(); ++c) {
      if (scores_[c] < scores_[best]) best = c;
    }
    if (best != leader_ && scores_[leader_] - scores_[best] > delta) {
      leader_ = best;
      ++switches_;
    }
    leader_loss_ += losses[leader_];
    ++led_[leader_];
    return leader_;
  }

  /// The real pool recomputed `tokens` more than its leader's shadow on the last request (the
  /// hand-over's price, see the file comment). @throws invalid_argument when negative or not
  /// finite.
  void note_handover(double tokens) {
    if (!(tokens >= 0.0 && std::isfinite(tokens)))
      hybridcache::detail::throw_invalid("tokens", tokens, "must be finite and >= 0");
    handover_ += tokens;
  }
  /// H(t): the hand-over loss noted so far.
  [[nodiscard]] double handover() const noexcept { return handover_; }
  /// λ(t) of the last request (`initial` before any).
  [[nodiscard]] std::size_t leader() const noexcept { return leader_; }
  /// δ(t): the larger of the mean usable tokens of a request with `usable` > 0 so far (0 before
  /// any) and the hand-over loss per switch so far.
  [[nodiscard]] double margin() const noexcept {
    const double mean = decisions_ ? usable_ / static_cast<double>(decisions_) : 0.0;
    return switches_ ? std::max(mean, handover_ / static_cast<double>(switches_)) : mean;
  }
  /// L_c(t) of every candidate.
  [[nodiscard]] std::span<const double> scores() const noexcept { return scores_; }
  /// min_c L_c(t).
  [[nodiscard]] double best_score() const noexcept {
    double b = std::numeric_limits<double>::infinity();
    for (double s : scores_) b = std::min(b, s);
    return scores_.empty() ? 0.0 : b;
  }
  /// Σ_t ℓ_{λ(t)}(t): the losses of the leaders that were followed.
  [[nodiscard]] double leader_loss() const noexcept { return leader_loss_; }
  /// S: the number of leader changes.
  [[nodiscard]] std::size_t switches() const noexcept { return switches_; }
  /// Requests each candidate led.
  [[nodiscard]] std::span<const std::size_t> led() const noexcept { return led_; }
  /// Requests scored.
  [[nodiscard]] std::size_t requests() const noexcept { return requests_; }
  /// |D(t)|: requests scored with `usable` > 0 (the ones δ's first term averages over).
  [[nodiscard]] std::size_t decisions() const noexcept { return decisions_; }
  /// The bound of Theorem 1 on `leader_loss() − best_score()`: S·(δ* + ℓ_max) + δ*.
  [[nodiscard]] double regret_bound() const noexcept {
    return static_cast<double>(switches_) * (max_margin_ + max_loss_) + max_margin_;
  }

 private:
  std::vector<double> scores_;
  std::vector<std::size_t> led_;
  std::size_t leader_ = 0, switches_ = 0, requests_ = 0, decisions_ = 0;
  double usable_ = 0.0, handover_ = 0.0, leader_loss_ = 0.0, max_margin_ = 0.0, max_loss_ = 0.0;
};

HYBRIDCACHE_NAMESPACE_END
