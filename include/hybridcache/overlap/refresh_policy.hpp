#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The paper's online loop (sparse prefix caching, §4.2 and §5 "Our method"): feed every request's
/// overlap depth into an exponentially weighted histogram and re-solve the optimal placement every
/// R observations (default γ = 0.99, R = 10), handing each new plan to a callback — e.g. the engine
/// hook that moves its checkpoint slots.
///
/// @code
///   hybridcache::refresh_policy policy(4096, /*budget=*/8,
///       [&](const hybridcache::placement& p) { engine.set_checkpoints(p.checkpoints); });
///   policy.observe(depth_of_this_request);   // re-plans on every 10th call
/// @endcode

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/overlap/ew_histogram.hpp"
#include "hybridcache/placement/optimal.hpp"
#include "hybridcache/placement/options.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Settings of `refresh_policy`.
struct refresh_options {
  double gamma = 0.99;               ///< histogram decay per observation, in (0, 1]
  std::size_t interval = 10;         ///< re-plan after every `interval` observations (≥ 1)
  placement_options placement = {};  ///< granularity and method of the planner
};

/// Exponentially weighted histogram + periodic exact re-planning.
class refresh_policy {
 public:
  using callback_type = std::function<void(const placement&)>;

  /// @param max_depth the cached prefix length N (largest observable depth).
  /// @param budget checkpoints per plan (at most min(budget, useful) are used, see place_optimal).
  /// @param on_plan called with every new plan (may be empty).
  /// @throws invalid_argument for max_depth == 0, a gamma outside (0, 1], interval == 0, or a
  ///         granularity of 0 or above max_depth.
  refresh_policy(std::size_t max_depth, std::size_t budget, callback_type on_plan = {},
                 refresh_options opts = {})
      : histogram_(max_depth, opts.gamma),
        budget_(budget),
        opts_(opts),
        on_plan_(std::move(on_plan)) {
    if (opts.interval == 0) detail::throw_invalid("interval", opts.interval, "must be >= 1");
    detail::validate_granularity(opts.placement.granularity, max_depth);
  }

  /// Records one request's overlap depth (0 = miss); every `interval`-th call re-plans (once the
  /// histogram has seen a hit) and returns true when it did.
  /// @throws invalid_argument if depth > max_depth.
  bool observe(std::size_t depth) {
    histogram_.observe(depth);
    if (++since_plan_ < opts_.interval) return false;
    since_plan_ = 0;
    return replan();
  }

  /// Re-plans now from the current histogram; false (and no callback) before the first hit.
  bool replan() {
    const auto p = histogram_.pmf();
    bool any = false;
    for (double x : p) any = any || x > 0.0;
    if (!any) return false;
    current_ = place_optimal(p, budget_, opts_.placement);
    ++plans_;
    if (on_plan_) on_plan_(current_);
    return true;
  }

  /// The latest plan (no checkpoints and E[r] = 0 before the first one; see `plans()`).
  [[nodiscard]] const placement& current() const noexcept { return current_; }
  /// Number of plans made so far.
  [[nodiscard]] std::size_t plans() const noexcept { return plans_; }
  [[nodiscard]] const ew_histogram& histogram() const noexcept { return histogram_; }
  [[nodiscard]] std::size_t budget() const noexcept { return budget_; }
  [[nodiscard]] const refresh_options& options() const noexcept { return opts_; }

 private:
  ew_histogram histogram_;
  std::size_t budget_;
  refresh_options opts_;
  callback_type on_plan_;
  placement current_;
  std::size_t since_plan_ = 0;
  std::size_t plans_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
