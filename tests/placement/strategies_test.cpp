// SPDX-License-Identifier: Apache-2.0
// place_fixed against Table 1 written out from the paper's formulas (tests/support/sim_reference).
#include <doctest/doctest.h>

#include <hybridcache/placement/strategies.hpp>
#include <string>
#include <vector>

#include "support/sim_reference.hpp"

namespace hc = hybridcache;
using hc::placement_strategy;

TEST_CASE("place_fixed matches the Table 1 formulas on the block grid") {
  const std::pair<placement_strategy, std::string> kinds[] = {
      {placement_strategy::last, "last"},
      {placement_strategy::block, "block"},
      {placement_strategy::sqrt, "sqrt"},
      {placement_strategy::balanced, "balanced"}};
  for (std::size_t b : {1u, 7u, 64u}) {
    for (std::size_t len : {1u, 6u, 63u, 64u, 65u, 200u, 1000u, 4097u}) {
      for (std::size_t m : {1u, 2u, 5u, 64u}) {
        for (const auto& [s, name] : kinds) {
          CHECK(hc::place_fixed(s, len, m, {.granularity = b}) ==
                sim_ref::positions(name, len, m, b));
        }
        CHECK(hc::place_fixed(placement_strategy::dp, len, m, {.granularity = b}).empty());
        CHECK(hc::place_fixed(placement_strategy::kv_only, len, m, {.granularity = b}).empty());
      }
    }
  }
  // A block stride other than B: positions S, 2S, … moved down to multiples of B.
  CHECK(hc::place_fixed(placement_strategy::block, 250, 0,
                        {.granularity = 16, .block_stride = 100}) ==
        std::vector<std::size_t>{96, 192});
  CHECK_THROWS_AS(hc::place_fixed(placement_strategy::last, 10, 1, {.granularity = 0}),
                  hc::invalid_argument);
}

TEST_CASE("strategy names round-trip and budgets are declared") {
  for (auto s : hc::all_placement_strategies)
    CHECK(hc::parse_placement_strategy(hc::to_string(s)) == s);
  CHECK_FALSE(hc::parse_placement_strategy("optimal").has_value());
  CHECK(hc::uses_budget(placement_strategy::balanced));
  CHECK_FALSE(hc::uses_budget(placement_strategy::block));
  CHECK(hc::is_fixed_baseline(placement_strategy::sqrt));
  CHECK_FALSE(hc::is_fixed_baseline(placement_strategy::kv_only));
  for (auto s : hc::fixed_placement_strategies) CHECK(hc::is_fixed_baseline(s));
}
