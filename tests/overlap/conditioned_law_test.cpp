// SPDX-License-Identifier: Apache-2.0
// The conditioned depth law against its definition (tests/support/law_reference.hpp) and the DP
// on it against a brute-force optimum (tests/support/sim_reference.hpp).
#include <doctest/doctest.h>

#include <hybridcache/overlap/conditioned_law.hpp>
#include <random>
#include <vector>

#include "support/law_reference.hpp"
#include "support/sim_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("conditioned law: weights, block masses and the DP match the definition") {
  std::mt19937 rng(9);
  const std::size_t n = 160, b = 16;
  hc::depth_law_estimator est(
      n, {.kind = hc::law_kind::conditioned, .gamma = 0.97, .weight_gamma = 0.9, .granularity = b});
  law_ref::conditioned ref{.gamma = 0.97, .weight_gamma = 0.9, .block = b, .max_depth = n};
  std::size_t checked = 0;
  for (int i = 0; i < 300; ++i) {
    // Half the hits stop 3..9 tokens before the end of their entry, half at a head depth ~ 40.
    const std::size_t len = 20 + rng() % (n - 19);
    const std::size_t t =
        rng() % 2 ? len - (3 + rng() % 7) : std::min<std::size_t>(len, 35 + rng() % 10);
    est.observe(t, len);
    ref.observe(t, len);
    if (i % 7 == 6) {
      est.refresh();
      ref.refresh();
      for (std::size_t c = 0; c < 3; ++c)
        CHECK(est.snapshot().weights[c] == doctest::Approx(ref.pi_snap[c]).epsilon(1e-9));
      for (std::size_t len2 : {40u, 97u, 160u}) {
        const auto law = est.snapshot().block_law(len2, b);
        REQUIRE(law.has_value());
        const auto p = ref.law(len2);
        for (std::size_t k = 1; k <= len2 / b; ++k) {
          double pk = 0;
          for (std::size_t d = k * b; d <= std::min((k + 1) * b - 1, len2); ++d) pk += p[d - 1];
          CHECK(law->mass[k - 1] == doctest::Approx(pk).epsilon(1e-9));
        }
        for (std::size_t m : {1u, 2u, 3u}) {
          const auto plan = hc::plan_entry(*law, m);
          CHECK(sim_ref::expected_recompute(p, len2, plan.checkpoints) ==
                doctest::Approx(sim_ref::brute_force_optimum(p, len2, m, b)).epsilon(1e-9));
          ++checked;
        }
      }
    }
  }
  CHECK(checked > 300);
}

TEST_CASE("conditioned law: a tail-anchored workload moves the weight to the tail component") {
  // Every hit stops 5 tokens before the end of an entry of random length.
  std::mt19937 rng(2);
  hc::depth_law_estimator est(4096, {.granularity = 64});
  for (int i = 0; i < 2000; ++i) {
    const std::size_t len = 256 + rng() % 3800;
    est.observe(len - 5, len);
    if (i % 10 == 9) est.refresh();
  }
  CHECK(est.weights()[1] > 0.9);
  // The law of a new 1000-token entry: (almost) all its mass in the block of depth 995.
  const auto law = est.snapshot().block_law(1000, 64);
  REQUIRE(law.has_value());
  CHECK(hc::plan_entry(*law, 1).checkpoints == std::vector<std::size_t>{960});
}

TEST_CASE("pooled and tail laws are the single histograms, bad input is named") {
  hc::depth_law_estimator pooled(100, {.kind = hc::law_kind::pooled});
  pooled.observe(30, 100);
  pooled.observe(0, 0);
  pooled.refresh();
  CHECK(pooled.snapshot().weights == std::array<double, 3>{1, 0, 0});
  CHECK(pooled.head_histogram().observations() == 2);  // the miss ages the histogram
  const auto law = pooled.snapshot().block_law(50, 10);
  REQUIRE(law.has_value());
  CHECK(law->mass[2] == 1.0);                                    // depth 30 is in block 3
  CHECK_FALSE(pooled.snapshot().block_law(20, 10).has_value());  // no mass on 1..20
  hc::depth_law_estimator tail(100, {.kind = hc::law_kind::tail});
  tail.observe(30, 40);  // u = 10
  tail.refresh();
  const auto tl = tail.snapshot().block_law(90, 10);
  REQUIRE(tl.has_value());
  CHECK(tl->mass[8 - 1] == 1.0);  // depth 90 − 10 = 80
  CHECK_THROWS_WITH_AS(tail.observe(30, 20), doctest::Contains("entry_length"),
                       hc::invalid_argument);
  CHECK_THROWS_WITH_AS(tail.observe(30, 101), doctest::Contains("entry_length"),
                       hc::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::depth_law_estimator(10, {.weight_gamma = 1.0}),
                       doctest::Contains("weight_gamma"), hc::invalid_argument);
  CHECK(hc::parse_law_kind("tail") == hc::law_kind::tail);
  CHECK_FALSE(hc::parse_law_kind("mixed").has_value());
}
