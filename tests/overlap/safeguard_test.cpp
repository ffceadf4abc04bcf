// SPDX-License-Identifier: Apache-2.0
// The safeguard's held-out scores on hits worked out by hand.
#include <doctest/doctest.h>

#include <hybridcache/overlap/safeguard.hpp>
#include <hybridcache/placement/refresh_policy.hpp>
#include <vector>

namespace hc = hybridcache;
using hc::placement_strategy;

TEST_CASE("safeguard scores every candidate and keeps the least recompute") {
  // Budget 1, B = 10, entry length 100, the DP's plan {50}. Candidates for L = 100:
  // last {100}; balanced ⌊101/2⌋ = 50; block capped to its deepest {100}; sqrt (stride 10) capped
  // {100}; logarithmic ⌊101^{1/2}⌋ = 10.
  hc::placement_safeguard g(1, 10, {.gamma = 1.0});
  const std::vector<std::size_t> dp{50};
  CHECK(g.place(placement_strategy::last, 100) == std::vector<std::size_t>{100});
  CHECK(g.place(placement_strategy::balanced, 100) == std::vector<std::size_t>{50});
  CHECK(g.place(placement_strategy::block, 100) == std::vector<std::size_t>{100});
  CHECK(g.place(placement_strategy::sqrt, 100) == std::vector<std::size_t>{100});
  CHECK(g.place(placement_strategy::logarithmic, 100) == std::vector<std::size_t>{10});
  g.score(95, 100, dp);                         // r = 45, 95, 45, 95, 95, 85
  CHECK(g.choose() == placement_strategy::dp);  // tie with balanced: the DP first
  g.score(100, 100, dp);  // r = 50, 0, 50, 0, 0, 90 -> totals 95 each but logarithmic 175
  CHECK(g.choose() == placement_strategy::dp);
  g.score(100, 100, dp);  // totals 145, 95, 145, 95, 95, 265
  CHECK(g.choose() == placement_strategy::last);
  const auto s = g.scores();
  CHECK(std::vector<double>(s.begin(), s.end()) == std::vector<double>{145, 95, 145, 95, 95, 265});
  // Decay: with γ = 0.5 the latest hit weighs as much as all earlier ones together.
  hc::placement_safeguard h(1, 10, {.gamma = 0.5});
  h.score(100, 100, dp);  // dp 50, last 0
  h.score(50, 100, dp);   // dp 0, last 50 -> dp 25, last 50
  CHECK(h.choose() == placement_strategy::dp);
  CHECK_THROWS_AS(hc::placement_safeguard(0, 10), hc::invalid_argument);
  CHECK_THROWS_AS(g.score(101, 100, dp), hc::invalid_argument);
  CHECK_THROWS_AS(g.score(0, 100, dp), hc::invalid_argument);
}

TEST_CASE(
    "refresh_policy with the safeguard: every depth at the prefix end picks a 1-slot plan there") {
  // N = 1000, B = 100, budget 1; hits at 1000 (whole prefix) 90% and at 150 10%: the DP and last
  // both put the checkpoint at 1000; balanced ⌊1001/2⌋ = 500 loses. Defaults: conditioned law.
  hc::refresh_policy p(1000, 1, {},
                       {.interval = 5,
                        .placement = {.granularity = 100},
                        .law = hc::law_kind::conditioned,
                        .safeguard = true});
  for (int i = 0; i < 200; ++i) p.observe(i % 10 == 0 ? 150 : 1000);
  CHECK((p.choice() == placement_strategy::dp || p.choice() == placement_strategy::last));
  CHECK(p.current().checkpoints == std::vector<std::size_t>{1000});
  CHECK(p.plan_for(1000).checkpoints == std::vector<std::size_t>{1000});
}
