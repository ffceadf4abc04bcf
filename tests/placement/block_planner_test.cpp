// SPDX-License-Identifier: Apache-2.0
// The block-compressed planner against a brute-force optimum over every subset of block positions
// of the token-level law, written out from its definition (tests/support/sim_reference.hpp).
#include <doctest/doctest.h>

#include <cmath>
#include <hybridcache/placement/block_planner.hpp>
#include <random>
#include <vector>

#include "support/sim_reference.hpp"

namespace hc = hybridcache;

namespace {
// p_t on 1..len (index t − 1) of the anchored, truncated, smoothed law, from the definition.
std::vector<double> reference_law(const std::vector<double>& w, hc::depth_anchor a, std::size_t len,
                                  double eps) {
  std::vector<double> p(len, 0.0);
  double sum = 0;
  for (std::size_t t = 1; t <= len; ++t) {
    p[t - 1] = a == hc::depth_anchor::head ? w[t - 1] : w[len - t];
    sum += p[t - 1];
  }
  for (auto& x : p) x = (1 - eps) * (sum > 0 ? x / sum : 0.0) + eps / static_cast<double>(len);
  return p;
}
}  // namespace

TEST_CASE("plan_entry is the brute-force optimum of the truncated law, head and tail anchored") {
  std::mt19937 rng(3);
  std::size_t checked = 0;
  for (int rep = 0; rep < 6; ++rep) {
    std::vector<double> w(220);
    for (auto& x : w) x = rng() % 4 == 0 ? static_cast<double>(rng() % 100) : 0.0;
    const hc::depth_prefix_sums sums(w);
    for (auto anchor : {hc::depth_anchor::head, hc::depth_anchor::tail}) {
      for (std::size_t len : {17u, 100u, 181u, 220u}) {
        for (std::size_t b : {16u, 20u}) {
          for (double eps : {0.0, 0.25}) {
            const auto law = sums.block_law(anchor, len, b, eps);
            const auto p = reference_law(w, anchor, len, eps);
            REQUIRE(law.has_value());
            double nc = 0;
            for (std::size_t t = 1; t <= len; ++t) nc += static_cast<double>(t) * p[t - 1];
            CHECK(law->no_cache == doctest::Approx(nc).epsilon(1e-12));
            for (std::size_t m : {0u, 1u, 2u, 3u, 20u}) {
              const auto plan = hc::plan_entry(*law, m);
              CHECK(plan.checkpoints.size() <= m);
              for (auto c : plan.checkpoints) CHECK((c % b == 0 && c >= b && c <= len));
              const double got = sim_ref::expected_recompute(p, len, plan.checkpoints);
              CHECK(plan.expected_recompute == doctest::Approx(got).epsilon(1e-9));
              CHECK(got ==
                    doctest::Approx(sim_ref::brute_force_optimum(p, len, m, b)).epsilon(1e-9));
              ++checked;
            }
            // frontier_budget: the fewest m within the tolerance of the budget-5 optimum.
            const double target = 1.1 * sim_ref::brute_force_optimum(p, len, 5, b);
            const std::size_t k = hc::frontier_budget(*law, 5, 0.1);
            CHECK(sim_ref::brute_force_optimum(p, len, k, b) <= target * (1 + 1e-9) + 1e-12);
            if (k > 0) CHECK(sim_ref::brute_force_optimum(p, len, k - 1, b) > target * (1 - 1e-9));
          }
        }
      }
    }
  }
  CHECK(checked > 900);
}

TEST_CASE("block_law: no mass on 1..L is no law, bad arguments are named") {
  std::vector<double> w(100, 0.0);
  w[79] = 1.0;  // depth 80 only
  const hc::depth_prefix_sums sums(w);
  CHECK_FALSE(sums.block_law(hc::depth_anchor::head, 50, 8).has_value());
  CHECK_FALSE(sums.block_law(hc::depth_anchor::head, 50, 8, 0.5).has_value());
  CHECK(sums.block_law(hc::depth_anchor::head, 50, 8, 1.0).has_value());  // uniform alone
  const auto law = sums.block_law(hc::depth_anchor::head, 100, 8);
  REQUIRE(law.has_value());
  CHECK(hc::plan_entry(*law, 1).checkpoints == std::vector<std::size_t>{80});
  CHECK(hc::plan_entry(*law, 1).expected_recompute == 0.0);
  // Tail-anchored, an entry of length 85 puts depth 85 − 79 = 6 below B: nothing to serve.
  const auto tail = sums.block_law(hc::depth_anchor::tail, 85, 8);
  REQUIRE(tail.has_value());
  CHECK(tail->total == 0.0);
  CHECK(hc::plan_entry(*tail, 3).checkpoints.empty());
  CHECK(hc::plan_entry(*tail, 3).expected_recompute == doctest::Approx(6.0));
  CHECK_THROWS_WITH_AS(sums.block_law(hc::depth_anchor::head, 10, 0),
                       doctest::Contains("granularity"), hc::invalid_argument);
  CHECK_THROWS_WITH_AS(sums.block_law(hc::depth_anchor::head, 0, 4), doctest::Contains("length"),
                       hc::invalid_argument);
  CHECK_THROWS_AS(sums.block_law(hc::depth_anchor::head, 10, 4, 1.5), hc::invalid_argument);
  const std::vector<double> bad{1.0, -1.0};
  CHECK_THROWS_WITH_AS(hc::depth_prefix_sums{bad}, doctest::Contains("weights[1]"),
                       hc::invalid_argument);
  CHECK_THROWS_AS(hc::frontier_budget(*law, 2, -1.0), hc::invalid_argument);
}
