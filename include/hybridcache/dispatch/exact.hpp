#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Exact minimum-makespan assignment for small instances (branch and bound), the yardstick for
/// LPT's gap (HYPIC eq. 9 solved to optimality).
///
/// Depth-first search over segments in descending cost, placing each on every worker in turn.
/// Pruning:
///  - incumbent: starts at the LPT makespan; a placement whose finish time reaches the incumbent
///    is skipped (we only look for strictly better solutions);
///  - capacity: the remaining work R must fit under the incumbent, Σ_w speed_w·(best − load_w)⁺ ≥ R;
///  - symmetry: among workers with equal speed and equal current load only the first is tried;
///  - optimality: the search stops once the incumbent meets the lower bound
///    max(max_i cost_i / max_w speed_w, Σ cost / Σ speed).
/// Worst case exponential in n, so `n <= exact_assign_max_segments` is enforced.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/dispatch/lpt.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Largest instance `exact_assign` accepts.
inline constexpr std::size_t exact_assign_max_segments = 24;

namespace detail {

class exact_search {
 public:
  exact_search(std::span<const double> costs, std::span<const double> speeds)
      : costs_(costs), speeds_(speeds), order_(descending_order(costs)) {
    const std::size_t n = costs.size();
    suffix_.assign(n + 1, 0.0);
    for (std::size_t k = n; k-- > 0;) suffix_[k] = suffix_[k + 1] + costs[order_[k]];
    double max_speed = 0.0, sum_speed = 0.0;
    for (double s : speeds) {
      max_speed = std::max(max_speed, s);
      sum_speed += s;
    }
    lower_bound_ = n == 0 ? 0.0 : std::max(costs[order_[0]] / max_speed, suffix_[0] / sum_speed);
  }

  assignment run(assignment incumbent) {
    best_ = std::move(incumbent);
    current_.assign(costs_.size(), 0);
    load_.assign(speeds_.size(), 0.0);
    if (best_.makespan > lower_bound_) dfs(0, 0.0);
    return std::move(best_);
  }

 private:
  // Returns true when the incumbent has met the lower bound (stop everything).
  bool dfs(std::size_t k, double current_max) {
    if (k == order_.size()) {
      if (current_max < best_.makespan) {
        best_.makespan = current_max;
        best_.load = load_;
        best_.worker_of = current_;
      }
      return best_.makespan <= lower_bound_;
    }
    // Capacity bound: the remaining work must fit strictly under the incumbent.
    double capacity = 0.0;
    for (std::size_t w = 0; w < load_.size(); ++w)
      capacity += speeds_[w] * std::max(0.0, best_.makespan - load_[w]);
    if (suffix_[k] > capacity) return false;
    const std::size_t i = order_[k];
    for (std::size_t w = 0; w < load_.size(); ++w) {
      bool duplicate = false;
      for (std::size_t v = 0; v < w && !duplicate; ++v)
        duplicate = speeds_[v] == speeds_[w] && load_[v] == load_[w];
      if (duplicate) continue;
      const double finish = load_[w] + costs_[i] / speeds_[w];
      if (finish >= best_.makespan) continue;
      const double saved = load_[w];
      load_[w] = finish;
      current_[i] = w;
      const bool done = dfs(k + 1, std::max(current_max, finish));
      load_[w] = saved;
      if (done) return true;
    }
    return false;
  }

  std::span<const double> costs_;
  std::span<const double> speeds_;
  std::vector<std::size_t> order_;
  std::vector<double> suffix_;
  double lower_bound_ = 0.0;
  assignment best_;
  std::vector<std::size_t> current_;
  std::vector<double> load_;
};

inline void check_exact_size(std::size_t n) {
  if (n > exact_assign_max_segments) {
    throw_invalid("costs.size()", n,
                  "exact_assign is exponential; at most " +
                      std::to_string(exact_assign_max_segments) + " segments");
  }
}

}  // namespace detail

/// The minimum-makespan assignment of `costs` to `workers` identical workers.
/// @throws invalid_argument when `workers == 0`, a cost is negative/NaN/Inf, or
///         `costs.size() > exact_assign_max_segments`.
inline assignment exact_assign(std::span<const double> costs, std::size_t workers) {
  auto start = lpt_assign(costs, workers);  // validates
  detail::check_exact_size(costs.size());
  const std::vector<double> speeds(workers, 1.0);
  return detail::exact_search(costs, speeds).run(std::move(start));
}

/// The minimum-makespan assignment on uniformly related workers (`speeds[w]` cost units per time
/// unit); loads are in time units, like `lpt_assign(costs, speeds)`.
/// @throws invalid_argument as the identical-worker overload, and for a bad speed.
inline assignment exact_assign(std::span<const double> costs, std::span<const double> speeds) {
  auto start = lpt_assign(costs, speeds);  // validates
  detail::check_exact_size(costs.size());
  return detail::exact_search(costs, speeds).run(std::move(start));
}

HYBRIDCACHE_NAMESPACE_END
