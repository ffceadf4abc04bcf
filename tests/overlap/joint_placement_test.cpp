// SPDX-License-Identifier: Apache-2.0
// The joint placement against a token-level brute force over every subset of the block grid
// (tests/support/joint_reference.hpp), and small hand-computed cases.
#include <doctest/doctest.h>

#include <hybridcache/error.hpp>
#include <hybridcache/overlap/joint_placement.hpp>
#include <random>
#include <vector>

#include "support/joint_reference.hpp"

namespace hc = hybridcache;

namespace {
std::vector<std::size_t> to_blocks(const std::vector<std::size_t>& tokens, std::size_t b) {
  std::vector<std::size_t> out;
  for (std::size_t t : tokens) out.push_back(t / b);
  return out;
}
}  // namespace

TEST_CASE("joint placement: the exact optimum given the covered depths (brute force)") {
  std::mt19937 rng(13);
  std::size_t checked = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const std::size_t b = 1 + rng() % 4, n = 3 + rng() % 9, len = n * b + rng() % b;
    std::vector<double> w(len, 0.0);
    for (auto& x : w) x = rng() % 3 == 0 ? 0.0 : static_cast<double>(rng() % 50);
    w[rng() % len] += 1.0;
    std::vector<std::size_t> covered;  // tokens, on the grid; some beyond the entry
    for (std::size_t k = 1; k <= n + 2; ++k)
      if (rng() % 4 == 0) covered.push_back(k * b);
    const hc::depth_prefix_sums sums(w);
    const auto law = sums.block_law(hc::depth_anchor::head, len, b);
    REQUIRE(law.has_value());
    const auto blocks = to_blocks(covered, b);
    for (std::size_t m = 0; m <= 4; ++m) {
      const auto plan = hc::plan_entry_covered(*law, m, blocks);
      CHECK(plan.checkpoints.size() <= m);
      for (std::size_t i = 0; i < plan.checkpoints.size(); ++i) {
        CHECK(plan.checkpoints[i] % b == 0);
        CHECK(plan.checkpoints[i] >= b);
        CHECK(plan.checkpoints[i] <= len);
        if (i > 0) CHECK(plan.checkpoints[i] > plan.checkpoints[i - 1]);
      }
      const double best = joint_ref::brute_force_optimum(w, m, b, covered);
      CHECK(joint_ref::expected_recompute(w, plan.checkpoints, covered) ==
            doctest::Approx(best).epsilon(1e-9));
      CHECK(plan.expected_recompute == doctest::Approx(best).epsilon(1e-9));
      ++checked;
    }
  }
  CHECK(checked == 750);
}

TEST_CASE(
    "joint placement: two entries of different lengths sharing a prefix store different "
    "depths at M = 1") {
  // B = 64. Entry f (length 1000) is retained with one checkpoint at 640; the new entry e
  // (length 1300) shares its first 900 tokens with f. Hits on e stop at depth 700 (half) and
  // 1290 (half). Alone, e's best single checkpoint is 1280 (E[r] = (700 + 10)/2 = 355) —
  // 640 gives (60 + 650)/2 = 355 too; with f's 640 covering depth 700, only 1280 helps:
  // E[r] = (60 + 10)/2 = 35.
  std::vector<double> w(1300, 0.0);
  w[699] = 1.0;
  w[1289] = 1.0;
  const hc::depth_prefix_sums sums(w);
  const auto law = sums.block_law(hc::depth_anchor::head, 1300, 64);
  REQUIRE(law.has_value());
  const std::vector<std::size_t> covered{640 / 64};
  const auto plan = hc::plan_entry_covered(*law, 1, covered);
  CHECK(plan.checkpoints == std::vector<std::size_t>{1280});
  CHECK(plan.expected_recompute == doctest::Approx(35.0));
  // With the covered depth at the other hit instead (f holds 1280 and shares 1290 tokens), e
  // stores 640: E[r] = (60 + 10)/2 again.
  const std::vector<std::size_t> covered2{1280 / 64};
  const auto plan2 = hc::plan_entry_covered(*law, 1, covered2);
  CHECK(plan2.checkpoints == std::vector<std::size_t>{640});
  CHECK(plan2.expected_recompute == doctest::Approx(35.0));
  // Nothing covered: plan_entry itself.
  const auto plan3 = hc::plan_entry_covered(*law, 2, std::vector<std::size_t>{});
  CHECK(plan3.checkpoints == hc::plan_entry(*law, 2).checkpoints);
}

TEST_CASE("joint placement: bad covered lists are rejected by name") {
  std::vector<double> w(256, 1.0);
  const auto law = hc::depth_prefix_sums(w).block_law(hc::depth_anchor::head, 256, 64);
  REQUIRE(law.has_value());
  CHECK_THROWS_WITH_AS(hc::plan_entry_covered(*law, 1, std::vector<std::size_t>{2, 2}),
                       doctest::Contains("covered[1]"), hc::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::plan_entry_covered(*law, 1, std::vector<std::size_t>{0}),
                       doctest::Contains("covered[0]"), hc::invalid_argument);
}
