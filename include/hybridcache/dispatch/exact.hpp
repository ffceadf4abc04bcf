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
/// Worst case exponential in n, so `n <= exact_assign_max_segments` is enforced and the search
/// takes a work limit: `exact_options::max_nodes` search nodes (calls of the depth-first step).
/// When the limit stops it, the best assignment found so far is returned (never worse than LPT)
/// with `optimal == false`; `optimal == true` means the search finished, so the makespan is
/// proved minimal. The default limit (`exact_assign_default_max_nodes`, 2·10⁶ nodes) keeps
/// n = 24 on 5 workers well under a second (bench/dispatch/exact_bench.cpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/dispatch/lpt.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Largest instance `exact_assign` accepts.
inline constexpr std::size_t exact_assign_max_segments = 24;

/// Default work limit of `exact_assign`, in search nodes (file comment).
inline constexpr std::uint64_t exact_assign_default_max_nodes = 2'000'000;

/// Options of `exact_assign`.
struct exact_options {
  /// Work limit: search nodes explored before the search stops with the best assignment found
  /// (≥ 1; `optimal` then says whether the optimum was proved first).
  std::uint64_t max_nodes = exact_assign_default_max_nodes;
};

/// Result of `exact_assign`: the assignment, whether it is proved optimal, and the work done.
struct exact_result : assignment {
  bool optimal = false;     ///< true iff the search finished (the makespan is the minimum)
  std::uint64_t nodes = 0;  ///< search nodes explored (≤ max_nodes)
};

namespace detail {

class exact_search {
 public:
  exact_search(std::span<const double> costs, std::span<const double> speeds,
               std::uint64_t max_nodes)
      : costs_(costs), speeds_(speeds), order_(descending_order(costs)), max_nodes_(max_nodes) {
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

  exact_result run(assignment incumbent) {
    best_ = std::move(incumbent);
    current_.assign(costs_.size(), 0);
    load_.assign(speeds_.size(), 0.0);
    if (best_.makespan > lower_bound_) dfs(0, 0.0);
    exact_result out;
    static_cast<assignment&>(out) = std::move(best_);
    out.optimal = !stopped_;
    out.nodes = nodes_;
    return out;
  }

 private:
  // Returns true when the search must stop: the incumbent met the lower bound, or the work
  // limit was reached (`stopped_`).
  bool dfs(std::size_t k, double current_max) {
    if (nodes_ >= max_nodes_) {
      stopped_ = true;
      return true;
    }
    ++nodes_;
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
  std::uint64_t max_nodes_;
  std::uint64_t nodes_ = 0;
  bool stopped_ = false;
  assignment best_;
  std::vector<std::size_t> current_;
  std::vector<double> load_;
};

inline void check_exact_args(std::size_t n, const exact_options& opts) {
  if (n > exact_assign_max_segments) {
    throw_invalid("costs.size()", n,
                  "exact_assign is exponential; at most " +
                      std::to_string(exact_assign_max_segments) + " segments");
  }
  if (opts.max_nodes == 0) throw_invalid("opts.max_nodes", opts.max_nodes, "must be >= 1");
}

}  // namespace detail

/// The minimum-makespan assignment of `costs` to `workers` identical workers, searched for at
/// most `opts.max_nodes` nodes (file comment); `result.optimal` says whether it is proved.
/// @throws invalid_argument when `workers == 0`, a cost is negative/NaN/Inf,
///         `costs.size() > exact_assign_max_segments` or `opts.max_nodes == 0`.
inline exact_result exact_assign(std::span<const double> costs, std::size_t workers,
                                 const exact_options& opts = {}) {
  detail::check_exact_args(costs.size(), opts);  // before LPT: no work on rejected input
  auto start = lpt_assign(costs, workers);       // validates
  const std::vector<double> speeds(workers, 1.0);
  return detail::exact_search(costs, speeds, opts.max_nodes).run(std::move(start));
}

/// The minimum-makespan assignment on uniformly related workers (`speeds[w]` cost units per time
/// unit); loads are in time units, like `lpt_assign(costs, speeds)`.
/// @throws invalid_argument as the identical-worker overload, and for a bad speed.
inline exact_result exact_assign(std::span<const double> costs, std::span<const double> speeds,
                                 const exact_options& opts = {}) {
  detail::check_exact_args(costs.size(), opts);
  auto start = lpt_assign(costs, speeds);  // validates
  return detail::exact_search(costs, speeds, opts.max_nodes).run(std::move(start));
}

HYBRIDCACHE_NAMESPACE_END
