#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Runs the layered DP of `cht.hpp` for budgets 0..max_m and returns the raw (unnormalised)
/// optimal costs V(0..max_m), keeping one layer (plus ≤ 8 small hulls) in memory. The layers run
/// eight at a time (`cht_layers<8>`, then 4, 2, 1 for the rest).

#include <cstddef>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/cht.hpp"
#include "hybridcache/placement/detail/problem.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

inline std::vector<double> frontier_values(const placement_problem& pb, std::size_t max_m) {
  const std::size_t K = pb.candidates;
  std::vector<double> out(max_m + 1);
  out[0] = pb.moment[K];
  const std::size_t layers = max_m < K ? max_m : K;  // beyond K nothing improves
  if (layers > 0) {
    // shift[j] = a_j P̃_{j−1} − T̃_{j−1}: the part of every layer's intercept b_j that does not
    // depend on the layer.
    std::vector<double> shift(K + 1, 0.0);
    for (std::size_t j = 1; j <= K; ++j) {
      shift[j] = pb.slope[j] * pb.mass[j - 1] - pb.moment[j - 1];
    }
    std::vector<double> dp(pb.moment.begin(), pb.moment.end());  // dp_0[j] = T̃_j
    hull_set hulls;
    std::size_t m = 1;
    while (m <= layers) {
      const std::size_t left = layers - m + 1;
      double* v = out.data() + m;
      if (left >= 8) {
        cht_layers<8>(pb, dp.data(), dp.data(), v, hulls, shift.data());
        m += 8;
      } else if (left >= 4) {
        cht_layers<4>(pb, dp.data(), dp.data(), v, hulls, shift.data());
        m += 4;
      } else if (left >= 2) {
        cht_layers<2>(pb, dp.data(), dp.data(), v, hulls, shift.data());
        m += 2;
      } else {
        cht_layers<1>(pb, dp.data(), dp.data(), v, hulls, shift.data());
        m += 1;
      }
    }
  }
  // Beyond K (= useful) checkpoints nothing improves: V(m) = V(K).
  for (std::size_t m = layers + 1; m <= max_m; ++m) out[m] = out[m - 1];
  return out;
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
