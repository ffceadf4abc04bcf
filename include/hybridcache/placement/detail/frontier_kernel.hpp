#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Runs the layered DP of `cht.hpp` for budgets 0..max_m and returns the raw (unnormalised)
/// optimal costs V(0..max_m), keeping only two layers in memory.

#include <cstddef>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/cht.hpp"
#include "hybridcache/placement/detail/problem.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

inline std::vector<double> frontier_values(const placement_problem& pb, std::size_t max_m) {
  const std::size_t K = pb.candidates;
  const std::size_t useful = pb.useful();
  std::vector<double> out(max_m + 1);
  std::vector<double> prev(pb.moment.begin(), pb.moment.end());  // dp_0[j] = T̃_j
  std::vector<double> cur(K + 1);
  cht_workspace ws;
  out[0] = prev[K];
  std::size_t m = 1;
  for (; m <= max_m && m <= useful; ++m) {
    cht_layer(pb, prev.data(), cur.data(), ws);
    out[m] = cur[K];
    prev.swap(cur);
  }
  // Beyond `useful` checkpoints nothing improves: V(m) = V(useful).
  for (; m <= max_m; ++m) out[m] = out[m - 1];
  return out;
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
