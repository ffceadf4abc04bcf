#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Independent references for dispatch tests: a textbook LPT (linear scan for the least-loaded
/// worker, selection of the largest remaining job by scanning), brute-force minimum makespan over
/// all m^n assignments, and brute-force two-stage flow-shop order over all permutations.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <vector>

namespace hcref {

/// LPT written the slow obvious way: repeatedly take the largest unassigned job (lowest index on
/// ties), give it to the least-loaded worker (lowest index on ties). Returns worker_of.
inline std::vector<std::size_t> naive_lpt(const std::vector<double>& costs, std::size_t m,
                                          std::vector<double>* loads = nullptr,
                                          const std::vector<double>* speeds = nullptr) {
  const std::size_t n = costs.size();
  std::vector<bool> done(n, false);
  std::vector<double> load(m, 0.0);
  std::vector<std::size_t> worker_of(n, 0);
  for (std::size_t step = 0; step < n; ++step) {
    std::size_t pick = n;
    for (std::size_t i = 0; i < n; ++i)
      if (!done[i] && (pick == n || costs[i] > costs[pick])) pick = i;
    done[pick] = true;
    std::size_t best = 0;
    double best_finish = std::numeric_limits<double>::infinity();
    for (std::size_t w = 0; w < m; ++w) {
      const double f = load[w] + (speeds ? costs[pick] / (*speeds)[w] : costs[pick]);
      if (f < best_finish) {
        best_finish = f;
        best = w;
      }
    }
    worker_of[pick] = best;
    load[best] = best_finish;
  }
  if (loads) *loads = load;
  return worker_of;
}

/// Makespan of an assignment, recomputed from scratch.
inline double makespan_of(const std::vector<double>& costs, const std::vector<std::size_t>& worker_of,
                          std::size_t m, const std::vector<double>* speeds = nullptr) {
  std::vector<double> load(m, 0.0);
  for (std::size_t i = 0; i < costs.size(); ++i)
    load[worker_of[i]] += speeds ? costs[i] / (*speeds)[worker_of[i]] : costs[i];
  return load.empty() ? 0.0 : *std::max_element(load.begin(), load.end());
}

/// Minimum makespan by enumerating all m^n assignments (n·log m small!).
inline double brute_force_makespan(const std::vector<double>& costs, std::size_t m,
                                   const std::vector<double>* speeds = nullptr) {
  const std::size_t n = costs.size();
  std::vector<std::size_t> a(n, 0);
  double best = std::numeric_limits<double>::infinity();
  while (true) {
    best = std::min(best, makespan_of(costs, a, m, speeds));
    std::size_t k = 0;
    while (k < n && ++a[k] == m) a[k++] = 0;
    if (k == n) break;
  }
  return n == 0 ? 0.0 : best;
}

/// Last arrival of a two-stage pipeline (compute a, then transfer b on one link) in `order`,
/// simulated event by event.
inline double flow_shop_finish(const std::vector<double>& a, const std::vector<double>& b,
                               const std::vector<std::size_t>& order) {
  double compute_free = 0.0, link_free = 0.0;
  for (std::size_t i : order) {
    const double compute_end = compute_free + a[i];
    compute_free = compute_end;
    const double start = std::max(link_free, compute_end);
    link_free = start + b[i];
  }
  return link_free;
}

/// Best last arrival over all permutations of `jobs`.
inline double flow_shop_best(const std::vector<double>& a, const std::vector<double>& b,
                             std::vector<std::size_t> jobs) {
  std::sort(jobs.begin(), jobs.end());
  double best = std::numeric_limits<double>::infinity();
  do best = std::min(best, flow_shop_finish(a, b, jobs));
  while (std::next_permutation(jobs.begin(), jobs.end()));
  return best;
}

}  // namespace hcref
