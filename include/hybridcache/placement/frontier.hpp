#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `optimal_frontier`: the optimal expected recompute V(M) for every budget M = 0..max_budget in
/// one pass of the layered DP (Theorem 2 of the sparse prefix caching paper), O(N·max_budget)
/// time and O(N + max_budget) memory: O(N) working memory (one DP layer and ≤ 8 hulls) plus the
/// returned max_budget + 1 values, which are checked against `max_allocation_bytes` first.
///
/// V is nonincreasing and convex in M (the edge cost is Monge, see detail/lagrangian.hpp), V(0) is
/// the no-cache recompute R_nc and V(M) = V(useful) for M ≥ useful, where useful is the number of
/// candidate blocks that carry mass (for B = 1: the depths with p_t > 0, so V(useful) = 0).
///
/// @code
///   std::vector<double> w = {0, 0, 5, 0, 1, 0, 0, 4};       // depths 1..8
///   auto v = hybridcache::optimal_frontier(w, 3);           // v[0] = R_nc, …, v[3] = 0
/// @endcode

#include <cstddef>
#include <span>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/frontier_kernel.hpp"
#include "hybridcache/placement/detail/problem.hpp"
#include "hybridcache/placement/options.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// E[r] of the best plan with at most M checkpoints (exactly min(M, useful) are needed), for
/// M = 0..max_budget; `opts.granularity` restricts candidates to multiples of B (`opts.method` is
/// ignored: the frontier is always the layered DP).
/// @returns a vector of max_budget + 1 values in tokens under the normalised weights.
/// @throws invalid_argument for empty, non-finite, negative or all-zero weights, for a
///         granularity of 0 or above N, and naming `max_budget + 1` when the output would not
///         fit in `max_allocation_bytes` (checked.hpp).
inline std::vector<double> optimal_frontier(std::span<const double> weights, std::size_t max_budget,
                                            placement_options opts = {}) {
  const auto pb = detail::make_problem(weights, opts.granularity);
  // The frontier has max_budget + 1 entries: checked before sizing it.
  (void)checked_count<double>(checked_add(max_budget, std::size_t{1}, "max_budget", "1"),
                              "max_budget + 1");
  std::vector<double> raw = detail::frontier_values(pb, max_budget);
  for (double& v : raw) v /= pb.total;
  return raw;
}

HYBRIDCACHE_NAMESPACE_END
