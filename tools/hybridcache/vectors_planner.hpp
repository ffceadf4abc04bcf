// SPDX-License-Identifier: Apache-2.0
// Planner golden vectors: checkpoint-placement instances (integer overlap weights over n depths,
// budgets 1..4) with their optimal E[r] found by brute force over every checkpoint set — never by
// the DP under test. E[r] = Σ_t w_t (t − ℓ(t)) / Σ_t w_t (docs/placement.md), ℓ(t) the largest
// checkpoint ≤ t (0 if none): integer sums, exact in double, then one correctly rounded division.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <hybridcache/placement/optimal.hpp>

#include "hybridcache/vectors_common.hpp"

namespace hybridcache_cli::vectors {

/// min over sets of ≤ budget checkpoints in {1..n} of Σ_t w_t (t − ℓ(t)) (unnormalised, exact).
inline double brute_force_recompute(const std::vector<double>& w, std::size_t budget) {
  const std::size_t n = w.size();
  double best = -1;
  for (std::uint32_t mask = 0; mask < (1u << n); ++mask) {
    if (static_cast<std::size_t>(__builtin_popcount(mask)) > budget) continue;
    double cost = 0;
    std::size_t last = 0;
    for (std::size_t t = 1; t <= n; ++t) {
      if (mask & (1u << (t - 1))) last = t;
      cost += w[t - 1] * static_cast<double>(t - last);
    }
    if (best < 0 || cost < best) best = cost;
  }
  return best;
}

/// Instances of sizes 8, 12 and 16 with budgets 1..4; candidate: place_optimal's E[r].
inline void planner_cases(writer& wr, prng& rng, const std::filesystem::path* cand) {
  for (std::size_t n : {8, 12, 16}) {
    const std::string name = "placement/optimal/n" + std::to_string(n);
    const std::size_t count = 16;
    std::vector<double> weights(count * n), budgets(count), optimal(count), bound(count),
        got(count);
    for (std::size_t i = 0; i < count; ++i) {
      double total = 0, r_nc = 0;
      for (std::size_t t = 0; t < n; ++t) {
        // Sparse, skewed integer masses (some zero), at least one positive.
        const auto x = rng.between(-4, 12);
        weights[i * n + t] = x < 0 ? 0.0 : static_cast<double>(x * x);
        total += weights[i * n + t];
        r_nc += weights[i * n + t] * static_cast<double>(t + 1);
      }
      if (total == 0) {
        weights[i * n + n - 1] = 1;
        total = 1;
        r_nc = static_cast<double>(n);
      }
      budgets[i] = static_cast<double>(1 + i % 4);
      const std::vector<double> w(weights.begin() + static_cast<std::ptrdiff_t>(i * n),
                                  weights.begin() + static_cast<std::ptrdiff_t>((i + 1) * n));
      optimal[i] = brute_force_recompute(w, 1 + i % 4) / total;
      bound[i] = r_nc / total;  // every term of E[r] is ≤ its no-cache term
      if (cand) got[i] = hybridcache::place_optimal(w, 1 + i % 4).expected_recompute;
    }
    nlohmann::json inputs = {{"weights", wr.input<double>(name, "weights", weights, {count, n})},
                             {"budget", wr.input<std::int64_t>(name, "budget", budgets, {count})}};
    nlohmann::json expected = nlohmann::json::object();
    expected["expected_recompute"] =
        expected_entry(wr.reference<double>(name, "expected_recompute", optimal, {count}),
                       wr.bound(name, "expected_recompute", bound, {count}), {count},
                       2.0 * static_cast<double>(n), 1.0, -1, 1);
    wr.cases.push_back({{"name", name},
                        {"kind", "placement_optimal"},
                        {"params", {{"n", n}, {"instances", count}}},
                        {"conventions",
                         "weights[i][t] is the overlap mass at depth t+1 (unnormalised integers); "
                         "expected_recompute = min over <= budget checkpoints of E[r] = "
                         "sum_t p_t (t - l(t)), brute force over all 2^n checkpoint sets"},
                        {"inputs", inputs},
                        {"expected", expected}});
    if (cand) {
      save_below<double>(*cand, candidate_path(*cand, name, "expected_recompute"), got, {count},
                         "--candidate-out");
    }
  }
}

}  // namespace hybridcache_cli::vectors
