#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The online loop (sparse prefix caching, §4.2 and §5 "Our method", made safe): feed every
/// request's overlap depth — and the length of the entry it matched — into a depth-law estimator
/// and re-plan every R requests (default γ = 0.99, R = 10), handing each new plan to a callback,
/// e.g. the engine hook that moves its checkpoint slots.
///
/// Defaults (docs/design/conditioned_law.md):
/// - the law is conditioned on the entry length (`law_kind::conditioned`: head- and
///   tail-anchored histograms and a uniform prior, weights set online);
/// - a safeguard scores every hit, before the estimate sees it, against the DP's placement and
///   the fixed candidates at the same budget (`placement_safeguard`), and each re-plan keeps the
///   best. `plan_for(L)` is the placement of an entry of length L under that choice.
/// `{.law = law_kind::pooled, .safeguard = false}` is the paper's loop: the plan is
/// `place_optimal` on the EW histogram of the depths.
///
/// @code
///   hybridcache::refresh_policy policy(4096, /*budget=*/8,
///       [&](const hybridcache::placement& p) { engine.set_checkpoints(p.checkpoints); });
///   policy.observe(depth_of_this_request);   // re-plans on every 10th call
/// @endcode

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/overlap/conditioned_law.hpp"
#include "hybridcache/overlap/ew_histogram.hpp"
#include "hybridcache/overlap/safeguard.hpp"
#include "hybridcache/placement/block_planner.hpp"
#include "hybridcache/placement/metrics.hpp"
#include "hybridcache/placement/optimal.hpp"
#include "hybridcache/placement/options.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Settings of `refresh_policy`.
struct refresh_options {
  double gamma = 0.99;               ///< histogram decay per observation, in (0, 1]
  std::size_t interval = 10;         ///< re-plan after every `interval` observations (≥ 1)
  placement_options placement = {};  ///< granularity and method of the planner
  /// Whether a miss (depth 0) is recorded in a pooled histogram (where it ages older depths).
  /// With false a miss only advances the re-plan clock: the sparse prefix caching paper's
  /// simulator, whose histogram sees hits only. The other laws record hits only.
  bool record_misses = true;
  law_kind law = law_kind::conditioned;  ///< which depth law is estimated
  bool safeguard = true;                 ///< keep the best of DP and the fixed candidates
  double safeguard_gamma = 0.995;        ///< decay of the safeguard's held-out scores per hit
};

/// Depth-law estimate + periodic exact re-planning with a safeguard (file comment).
class refresh_policy {
 public:
  using callback_type = std::function<void(const placement&)>;

  /// @param max_depth the longest cached entry N (largest observable depth).
  /// @param budget checkpoints per plan (at most min(budget, useful) are used, see place_optimal);
  ///        0 disables planning (the policy then only keeps the law).
  /// @param on_plan called with every new plan (may be empty).
  /// @throws invalid_argument for max_depth == 0, a gamma outside (0, 1], interval == 0, or a
  ///         granularity of 0 or above max_depth.
  refresh_policy(std::size_t max_depth, std::size_t budget, callback_type on_plan = {},
                 refresh_options opts = {})
      : law_(max_depth,
             {.kind = opts.law,
              .gamma = opts.gamma,
              .weight_gamma = 0.99,
              .granularity = opts.placement.granularity == 0 ? 1 : opts.placement.granularity,
              .record_misses = opts.record_misses}),
        max_depth_(max_depth),
        budget_(budget),
        opts_(opts),
        on_plan_(std::move(on_plan)) {
    if (opts.interval == 0) detail::throw_invalid("interval", opts.interval, "must be >= 1");
    detail::validate_granularity(opts.placement.granularity, max_depth);
    if (opts.safeguard && budget > 0) {
      guard_.emplace(budget, opts.placement.granularity,
                     safeguard_options{.gamma = opts.safeguard_gamma});
    }
  }

  /// Records one request's overlap depth (0 = miss) against the single cached prefix of length
  /// N = max_depth; see the two-argument form.
  bool observe(std::size_t depth) { return observe(depth, depth == 0 ? 0 : max_depth_); }

  /// Records one request that overlapped an entry of `entry_length` tokens to `depth` (0 = miss):
  /// the safeguard scores it first (held out), then the law records it; every `interval`-th call
  /// re-plans (once a hit was seen) and returns true when it did.
  /// @throws invalid_argument unless depth ≤ entry_length ≤ max_depth.
  bool observe(std::size_t depth, std::size_t entry_length) {
    if (depth > max_depth_)
      detail::throw_invalid("depth", depth, "exceeds max_depth = " + std::to_string(max_depth_));
    if (depth > 0 && guard_ && snapshots_ > 0) {
      if (dp_length_ != entry_length || dp_snapshot_ != snapshots_) {
        const auto law = law_.snapshot().block_law(entry_length, opts_.placement.granularity);
        dp_plan_ = law ? plan_entry(*law, budget_).checkpoints : std::vector<std::size_t>{};
        dp_length_ = entry_length;
        dp_snapshot_ = snapshots_;
      }
      guard_->score(depth, entry_length, dp_plan_);
    }
    law_.observe(depth, entry_length);
    if (++since_plan_ < opts_.interval) return false;
    since_plan_ = 0;
    return replan();
  }

  /// Snapshots the law (`law()`), lets the safeguard choose and re-plans the entry of length
  /// max_depth; false (and no callback) before the first hit or with budget 0.
  bool replan() {
    law_.refresh();
    ++snapshots_;
    if (guard_) guard_->choose();
    if (!law_.any_hit() || budget_ == 0) return false;
    if (opts_.law == law_kind::pooled && !guard_) {
      const auto p = law_.head_histogram().pmf();  // the paper's plan, bit for bit
      current_ = place_optimal(p, budget_, opts_.placement);
    } else {
      current_ = plan_for(max_depth_);
    }
    ++plans_;
    if (on_plan_) on_plan_(current_);
    return true;
  }

  /// The placement of an entry of `length` tokens under the latest snapshot and the safeguard's
  /// choice, with its E[r] under the law (no checkpoints before the first hit).
  /// @throws invalid_argument for length 0 or above max_depth.
  [[nodiscard]] placement plan_for(std::size_t length) {
    if (length == 0 || length > max_depth_)
      detail::throw_invalid("length", length, "must lie in 1..max_depth");
    const auto law = law_.snapshot().block_law(length, opts_.placement.granularity);
    placement out;
    if (!law) return out;
    if (guard_ && guard_->choice() != placement_strategy::dp) {
      out.checkpoints = guard_->place(guard_->choice(), length);
      // E[r] = R_nc − Σ_k P_k ℓ(kB): every depth of block k resumes from the deepest c ≤ kB.
      double served = 0.0;
      std::size_t j = 0, last = 0;
      for (std::size_t k = 1; k <= law->mass.size(); ++k) {
        while (j < out.checkpoints.size() && out.checkpoints[j] <= k * law->granularity)
          last = out.checkpoints[j++];
        served += law->mass[k - 1] * static_cast<double>(last);
      }
      out.expected_recompute = law->no_cache - served;
      return out;
    }
    return plan_entry(*law, budget_);
  }

  /// The latest plan (no checkpoints and E[r] = 0 before the first one; see `plans()`).
  [[nodiscard]] const placement& current() const noexcept { return current_; }
  /// Number of plans made so far.
  [[nodiscard]] std::size_t plans() const noexcept { return plans_; }
  /// Number of law snapshots taken so far (one per `replan`, with or without a plan).
  [[nodiscard]] std::size_t snapshots() const noexcept { return snapshots_; }
  /// The law estimator (its `snapshot()` is the law of the latest re-plan).
  [[nodiscard]] const depth_law_estimator& law() const noexcept { return law_; }
  /// The pooled (head-anchored) histogram of the depths.
  [[nodiscard]] const ew_histogram& histogram() const noexcept { return law_.head_histogram(); }
  /// The safeguard's choice at the latest re-plan (`dp` when the safeguard is off).
  [[nodiscard]] placement_strategy choice() const noexcept {
    return guard_ ? guard_->choice() : placement_strategy::dp;
  }
  [[nodiscard]] std::size_t budget() const noexcept { return budget_; }
  [[nodiscard]] const refresh_options& options() const noexcept { return opts_; }

 private:
  depth_law_estimator law_;
  std::size_t max_depth_;
  std::size_t budget_;
  refresh_options opts_;
  callback_type on_plan_;
  std::optional<placement_safeguard> guard_;
  placement current_;
  std::size_t since_plan_ = 0;
  std::size_t plans_ = 0;
  std::size_t snapshots_ = 0;
  std::vector<std::size_t> dp_plan_;  // the DP's plan for dp_length_ under snapshot dp_snapshot_
  std::size_t dp_length_ = 0, dp_snapshot_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
