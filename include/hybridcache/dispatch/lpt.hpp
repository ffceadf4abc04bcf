#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Longest-Processing-Time-first (LPT) assignment of cold segments to prefill workers.
///
/// HYPIC §4.4 ("Load-balance policy", eq. 9) dispatches the cold segments C_1..C_n of one request
/// to m workers and minimises the heaviest worker's load,
///
///     min_a  max_w  Σ_{i : a(i) = w} cost_i,
///
/// with the LPT greedy: visit segments in descending cost and give each to the worker whose
/// accumulated load is smallest. Graham (1969) bounds the result by (4/3 − 1/(3m))·OPT on
/// identical workers; `exact_assign` (dispatch/exact.hpp) gives OPT for small n.
///
/// Determinism: ties in cost keep the lower segment index first (stable order); ties in load go to
/// the lower worker index. The same input therefore always yields the same assignment, on every
/// platform (no floating-point reassociation: loads are accumulated in visiting order).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <functional>
#include <numeric>
#include <queue>
#include <span>
#include <utility>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Result of a dispatch: `worker_of[i]` is the worker of segment i, `load[w]` the total busy time
/// of worker w (cost units, or cost/speed with per-worker speeds), `makespan` = max_w load[w]
/// (0 with no segments).
struct assignment {
  std::vector<std::size_t> worker_of;
  std::vector<double> load;
  double makespan = 0.0;
};

namespace detail {

/// Throws `invalid_argument` unless every `values[i]` is finite and >= 0.
inline void check_costs(std::span<const double> values, const char* name) {
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i]) || values[i] < 0.0) {
      throw_invalid(indexed(name, i), values[i], "must be finite and >= 0");
    }
  }
}

/// Throws unless every speed is finite and > 0, and there is at least one.
inline void check_speeds(std::span<const double> speeds) {
  if (speeds.empty()) throw_invalid("speeds.size()", std::size_t{0}, "need at least one worker");
  for (std::size_t w = 0; w < speeds.size(); ++w) {
    if (!std::isfinite(speeds[w]) || !(speeds[w] > 0.0)) {
      throw_invalid(indexed("speeds", w), speeds[w], "worker speeds must be finite and > 0");
    }
  }
}

/// Segment indices in descending cost; equal costs keep ascending index (deterministic).
inline std::vector<std::size_t> descending_order(std::span<const double> costs) {
  std::vector<std::size_t> order(costs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return costs[a] > costs[b]; });
  return order;
}

inline double max_load(const std::vector<double>& load) {
  double m = 0.0;
  for (double l : load) m = std::max(m, l);
  return m;
}

}  // namespace detail

/// LPT on `workers` identical workers (HYPIC eq. 9 and its LPT greedy).
///
/// @param costs   processing cost of each segment (token count, or `prefill_cost_model::cost`).
/// @param workers number of workers m >= 1.
/// @returns the assignment; O(n log n + n log m).
/// @throws invalid_argument when `workers == 0` or a cost is negative, NaN or infinite.
///
/// ```cpp
/// std::vector<double> c{7, 5, 4, 3, 3};
/// auto a = hybridcache::lpt_assign(c, 2);   // loads {10, 12}, makespan 12 (OPT = 11)
/// ```
inline assignment lpt_assign(std::span<const double> costs, std::size_t workers) {
  if (workers == 0) detail::throw_invalid("workers", workers, "need at least one worker");
  (void)checked_count<std::pair<double, std::size_t>>(workers, "workers");  // heap of workers
  detail::check_costs(costs, "costs");
  assignment out;
  out.worker_of.assign(costs.size(), 0);
  out.load.assign(workers, 0.0);
  // Min-heap on (load, worker): the lexicographic order makes ties go to the lower index.
  using entry = std::pair<double, std::size_t>;
  std::vector<entry> heap;
  heap.reserve(workers);
  for (std::size_t w = 0; w < workers; ++w) heap.emplace_back(0.0, w);
  const auto cmp = std::greater<entry>{};  // already a valid min-heap: all loads 0, ascending w
  for (std::size_t i : detail::descending_order(costs)) {
    std::pop_heap(heap.begin(), heap.end(), cmp);
    entry& e = heap.back();
    out.worker_of[i] = e.second;
    e.first += costs[i];
    out.load[e.second] = e.first;
    std::push_heap(heap.begin(), heap.end(), cmp);
  }
  out.makespan = detail::max_load(out.load);
  return out;
}

/// LPT on uniformly related workers: worker w runs `speeds[w]` cost units per time unit. Segments
/// are visited in descending cost and each goes to the worker on which it would *finish* first
/// (load_w + cost_i / speed_w; ties to the lower index) — the natural extension of LPT (Gonzalez,
/// Ibarra & Sahni 1977). With all speeds equal this is exactly `lpt_assign(costs, m)`.
/// `load[w]` is in time units. O(n log n + n·m).
/// @throws invalid_argument for an empty `speeds`, a speed that is not finite and > 0, or a bad cost.
inline assignment lpt_assign(std::span<const double> costs, std::span<const double> speeds) {
  detail::check_speeds(speeds);
  detail::check_costs(costs, "costs");
  assignment out;
  out.worker_of.assign(costs.size(), 0);
  out.load.assign(speeds.size(), 0.0);
  for (std::size_t i : detail::descending_order(costs)) {
    std::size_t best = 0;
    double best_finish = out.load[0] + costs[i] / speeds[0];
    for (std::size_t w = 1; w < speeds.size(); ++w) {
      const double finish = out.load[w] + costs[i] / speeds[w];
      if (finish < best_finish) {
        best_finish = finish;
        best = w;
      }
    }
    out.worker_of[i] = best;
    out.load[best] = best_finish;
  }
  out.makespan = detail::max_load(out.load);
  return out;
}

/// Graham's worst-case ratio of LPT to the optimum on m identical workers: 4/3 − 1/(3m).
/// @throws invalid_argument when `workers == 0`.
inline double lpt_ratio_bound(std::size_t workers) {
  if (workers == 0) detail::throw_invalid("workers", workers, "need at least one worker");
  return 4.0 / 3.0 - 1.0 / (3.0 * static_cast<double>(workers));
}

HYBRIDCACHE_NAMESPACE_END
