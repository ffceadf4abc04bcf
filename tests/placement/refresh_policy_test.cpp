// SPDX-License-Identifier: Apache-2.0
// The refresh policy re-plans every R observations from the EW histogram; its plans equal
// place_optimal on the reference law computed from the definition.
#include <doctest/doctest.h>

#include <cstddef>
#include <random>
#include <vector>

#include <hybridcache/overlap.hpp>
#include <hybridcache/placement.hpp>

namespace hc = hybridcache;

TEST_CASE("refresh_policy re-plans every interval and hands the plan to the callback") {
  std::vector<hc::placement> seen;
  // The paper's loop: pooled law, no safeguard.
  hc::refresh_policy policy(256, 3, [&](const hc::placement& p) { seen.push_back(p); },
                            {.law = hc::law_kind::pooled, .safeguard = false});
  CHECK(policy.options().interval == 10);
  CHECK(policy.options().gamma == 0.99);
  std::mt19937 rng(4);
  std::vector<std::size_t> depths;
  for (int i = 1; i <= 95; ++i) {
    const std::size_t d = rng() % 4 == 0 ? 250 + rng() % 7 : 20 + rng() % 30;
    depths.push_back(d);
    CHECK(policy.observe(d) == (i % 10 == 0));
  }
  REQUIRE(seen.size() == 9);
  CHECK(policy.plans() == 9);
  // The last plan is the optimum for the EW law of the first 90 observations (definition).
  std::vector<double> law(256, 0.0);
  double g = 1.0;
  for (std::size_t s = 90; s-- > 0;) {
    law[depths[s] - 1] += g;
    g *= 0.99;
  }
  const auto want = hc::place_optimal(law, 3);
  CHECK(seen.back().checkpoints == want.checkpoints);
  CHECK(seen.back().expected_recompute == doctest::Approx(want.expected_recompute));
  CHECK(policy.current().checkpoints == want.checkpoints);
}

TEST_CASE("refresh_policy waits for a hit, honours granularity and rejects bad options") {
  int calls = 0;
  hc::refresh_policy policy(64, 2, [&](const hc::placement&) { ++calls; },
                            {.gamma = 0.9, .interval = 2, .placement = {.granularity = 16}});
  CHECK_FALSE(policy.observe(0));
  CHECK_FALSE(policy.observe(0));  // interval reached, but only misses: no plan
  CHECK(calls == 0);
  CHECK(policy.current().checkpoints.empty());
  policy.observe(40);
  CHECK(policy.observe(63));
  CHECK(calls == 1);
  for (std::size_t c : policy.current().checkpoints) CHECK(c % 16 == 0);
  CHECK_THROWS_AS(policy.observe(65), hc::invalid_argument);
  CHECK_THROWS_AS(hc::refresh_policy(64, 2, {}, {.interval = 0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::refresh_policy(64, 2, {}, {.placement = {.granularity = 65}}),
                  hc::invalid_argument);
  CHECK_THROWS_AS(hc::refresh_policy(64, 2, {}, {.gamma = -1}), hc::invalid_argument);
}
