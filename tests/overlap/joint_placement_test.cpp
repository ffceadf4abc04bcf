// SPDX-License-Identifier: Apache-2.0
// The joint placement against a token-level brute force over every subset of the block grid
// (tests/support/joint_reference.hpp), and small hand-computed cases.
#include <doctest/doctest.h>

#include <algorithm>
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

TEST_CASE(
    "hand-over: the exact best subset of the candidates given the covered depths (brute force)") {
  std::mt19937 rng(31);
  std::size_t checked = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t b = 1 + rng() % 4, n = 3 + rng() % 10, len = n * b + rng() % b;
    std::vector<double> w(len, 0.0);
    for (auto& x : w) x = rng() % 3 == 0 ? 0.0 : static_cast<double>(rng() % 50);
    w[rng() % len] += 1.0;
    std::vector<std::size_t> covered, candidates;  // tokens, on the grid
    for (std::size_t k = 1; k <= n + 2; ++k) {
      if (rng() % 4 == 0) covered.push_back(k * b);
      if (k <= n && rng() % 2 == 0) candidates.push_back(k * b);
    }
    const auto law = hc::depth_prefix_sums(w).block_law(hc::depth_anchor::head, len, b);
    REQUIRE(law.has_value());
    const auto cand_blocks = to_blocks(candidates, b), cov_blocks = to_blocks(covered, b);
    for (std::size_t m = 0; m <= 5; ++m) {
      const auto chosen = hc::select_covered(*law, cand_blocks, m, cov_blocks);
      CHECK(chosen.size() <= m);
      std::vector<std::size_t> tokens;
      for (std::size_t i = 0; i < chosen.size(); ++i) {
        CHECK(std::find(cand_blocks.begin(), cand_blocks.end(), chosen[i]) != cand_blocks.end());
        if (i > 0) CHECK(chosen[i] > chosen[i - 1]);
        tokens.push_back(chosen[i] * b);
      }
      const double best = joint_ref::brute_force_subset(w, m, candidates, covered);
      CHECK(joint_ref::expected_recompute(w, tokens, covered) ==
            doctest::Approx(best).epsilon(1e-9));
      ++checked;
    }
  }
  CHECK(checked == 1200);
}

TEST_CASE(
    "hand-over: an offered state replaces the entry's own only where it serves more "
    "(hand-computed)") {
  // B = 64, entry e of length 1300, hits at depth 700 (mass 1) and 1290 (mass 2): E[r] of a
  // checkpoint set C is (700 − ℓ_C(700)) + 2 (1290 − ℓ_C(1290)) (unnormalised). e holds 1280
  // (placed jointly while f's 640 covered 700); f leaves and offers 640. M = 1: keep 1280
  // (cost 700 + 20 = 720) over 640 (60 + 1300 = 1360). M = 2: both (60 + 20 = 80). If another
  // retained entry still covers 640, the offer is worth nothing at M = 1 and 1280 stays.
  std::vector<double> w(1300, 0.0);
  w[699] = 1.0;
  w[1289] = 2.0;
  const auto law = hc::depth_prefix_sums(w).block_law(hc::depth_anchor::head, 1300, 64);
  REQUIRE(law.has_value());
  const std::vector<std::size_t> cand{10, 20}, none{};
  CHECK(hc::select_covered(*law, cand, 1, none) == std::vector<std::size_t>{20});
  CHECK(hc::select_covered(*law, cand, 2, none) == cand);
  CHECK(hc::select_covered(*law, cand, 0, none).empty());
  // Hits only at 700: 640 wins at M = 1 (cost 60 against 700), unless 640 is covered.
  std::vector<double> w2(1300, 0.0);
  w2[699] = 1.0;
  const auto law2 = hc::depth_prefix_sums(w2).block_law(hc::depth_anchor::head, 1300, 64);
  REQUIRE(law2.has_value());
  CHECK(hc::select_covered(*law2, cand, 1, none) == std::vector<std::size_t>{10});
  const std::vector<std::size_t> cov{10};
  const auto kept = hc::select_covered(*law2, cand, 1, cov);
  CHECK(kept.size() == 1);  // either: both leave E'[r] at 60
  CHECK_THROWS_WITH_AS(hc::select_covered(*law, std::vector<std::size_t>{20, 10}, 1, none),
                       doctest::Contains("candidates[1]"), hc::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::select_covered(*law, std::vector<std::size_t>{21}, 1, none),
                       doctest::Contains("candidates[0]"), hc::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::select_covered(*law, cand, 1, std::vector<std::size_t>{0}),
                       doctest::Contains("covered[0]"), hc::invalid_argument);
}
