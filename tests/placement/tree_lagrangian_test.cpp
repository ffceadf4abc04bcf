// SPDX-License-Identifier: Apache-2.0
// The single-budget fast path of place_optimal_tree (placement/detail/tree_lagrangian.hpp: a
// Lagrangian price with a certificate, the exact DP where it fails) against the exact DP it
// replaces (kept as the reference path, lagrangian = false) and against the independent
// long-double reference DP of tests/support/tree_reference.hpp, on thousands of random trees
// and on trees built so that the certificate fails (V not convex at the budget).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <hybridcache/placement/tree.hpp>

#include "support/tree_reference.hpp"

namespace hc = hybridcache;
namespace ht = hybridcache_test;

namespace {
hc::tree_view view(const ht::tree_case& t) { return {t.parent, t.depth, t.weight}; }

struct tally {
  int certified = 0, fallback = 0, trivial = 0;
};

/// Checks every budget 0..n of `t`, with each penalised pass: the fast path's plan has ≤ m
/// checkpoints (exactly m when certified) and its E[r] equals the exact DP's and the reference's.
void check_all_budgets(const ht::tree_case& t, tally& tl) {
  const std::size_t n = t.parent.size();
  const auto pb = hc::detail::make_tree_problem(view(t));
  const auto ref = ht::tree_reference_dp(t, n);
  for (std::size_t m = 0; m <= n; ++m) {
    const auto exact = hc::detail::solve_tree_budget(pb, m, false);
    for (auto pass : {hc::detail::tree_pass::anchors, hc::detail::tree_pass::slopes}) {
      hc::detail::tree_solve_info info;
      const auto fast = hc::detail::solve_tree_budget(pb, m, true, &info, pass);
      REQUIRE(fast.size() <= m);
      for (std::size_t i = 0; i < fast.size(); ++i) {
        REQUIRE(fast[i] >= 1);
        REQUIRE(fast[i] < n);
        if (i > 0) REQUIRE(fast[i - 1] < fast[i]);
      }
      if (info.trivial)
        ++tl.trivial;
      else if (info.certified)
        ++tl.certified;
      else
        ++tl.fallback;
      if (info.certified && !info.trivial) CHECK(fast.size() == m);
      const double e_fast = static_cast<double>(ht::tree_recompute(t, fast));
      const double e_exact = static_cast<double>(ht::tree_recompute(t, exact));
      const double e_ref = static_cast<double>(ref[m]);
      CHECK(e_fast == doctest::Approx(e_exact).epsilon(1e-12).scale(1.0));
      CHECK(e_fast == doctest::Approx(e_ref).epsilon(1e-12).scale(1.0));
    }
  }
}

/// Root → `junctions` → leaves, integer depths and weights: V is often not convex (a junction
/// serves several leaves, the best larger plans drop it), so the certificate often fails.
ht::tree_case broom(std::mt19937& rng, std::size_t junctions, std::size_t leaves) {
  ht::tree_case t{{0}, {0.0}, {0.0}};
  for (std::size_t j = 0; j < junctions; ++j) {
    t.parent.push_back(0);
    t.depth.push_back(static_cast<double>(1 + rng() % 8));
    t.weight.push_back(rng() % 3 == 0 ? static_cast<double>(rng() % 2) : 0.0);
  }
  for (std::size_t i = 0; i < leaves; ++i) {
    const std::size_t p = junctions == 0 ? 0 : 1 + rng() % junctions;
    t.parent.push_back(p);
    t.depth.push_back(t.depth[p] + static_cast<double>(1 + rng() % 4));
    t.weight.push_back(static_cast<double>(1 + rng() % 3));
  }
  return t;
}
}  // namespace

TEST_CASE("tree fast path equals the exact DP and the reference on thousands of random trees") {
  std::mt19937 rng(2402);
  constexpr ht::tree_shape shapes[] = {ht::tree_shape::chain, ht::tree_shape::star,
                                       ht::tree_shape::binary, ht::tree_shape::caterpillar,
                                       ht::tree_shape::random};
  tally tl;
  int trees = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    const auto shape = shapes[trial % 5];
    auto t = ht::random_tree(rng, 2 + rng() % 24, shape, trial % 2 == 1);
    if (trial % 4 == 3) {  // sparse weights: the reduction leaves branch points of weight 0
      for (auto& w : t.weight)
        if (rng() % 3 != 0) w = 0.0;
      t.weight.back() += 1.0;
    }
    if (trial % 7 == 0) {  // lognormal weights: ties are rare
      std::lognormal_distribution<double> ln(0.0, 1.5);
      for (auto& w : t.weight) w = ln(rng);
    }
    check_all_budgets(t, tl);
    ++trees;
  }
  MESSAGE("random trees: ", trees, ", budget solves (x2 passes) certified ", tl.certified,
          ", fallback ", tl.fallback, ", trivial ", tl.trivial);
  CHECK(trees == 2000);
  CHECK(tl.certified > tl.fallback);  // the fast path is the common case
  CHECK(tl.fallback > 0);             // and the fallback was exercised
}

TEST_CASE("tree fast path on adversarial brooms where the certificate fails") {
  std::mt19937 rng(1717);
  tally tl;
  for (int trial = 0; trial < 1500; ++trial) {
    const auto t = broom(rng, 1 + rng() % 5, 2 + rng() % 14);
    check_all_budgets(t, tl);
  }
  MESSAGE("brooms: budget solves (x2 passes) certified ", tl.certified, ", fallback ", tl.fallback,
          ", trivial ", tl.trivial);
  CHECK(tl.fallback > 100);
}

TEST_CASE(
    "the non-convex tree of docs/design/tree_dp.md falls back exactly where V is not convex") {
  // V(1) = 4.75/8 ({2}), V(2) = 2.75/8 ({2, 5}), V(3) = 0: V(2) lies above the chord from V(1)
  // to V(3), so no price has a minimiser with 2 checkpoints.
  ht::tree_case t{{0, 0, 1, 2, 2, 2}, {0, 2.125, 3.875, 4.875, 4.125, 5.875}, {2, 0, 0, 2, 3, 1}};
  const auto pb = hc::detail::make_tree_problem(view(t));
  const auto ref = ht::tree_brute_force(t);
  for (std::size_t m = 1; m <= 2; ++m) {
    hc::detail::tree_solve_info info;
    const auto ks = hc::detail::solve_tree_budget(pb, m, true, &info);
    CHECK_FALSE(info.trivial);
    CHECK(info.certified == (m == 1));
    CHECK(static_cast<double>(ht::tree_recompute(t, ks)) ==
          doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-12).scale(1.0));
  }
  CHECK(hc::place_optimal_tree(view(t), 2).expected_recompute ==
        doctest::Approx(2.75 / 8.0).epsilon(1e-12));
}

TEST_CASE("the penalised pass's minimiser has the value and count the pass reports") {
  // positions() re-runs the anchor passes top-down: its plan must be the pass's minimiser.
  std::mt19937 rng(99);
  for (int trial = 0; trial < 300; ++trial) {
    const auto t = ht::random_tree(rng, 2 + rng() % 30, ht::tree_shape::random, trial % 2 == 0);
    const auto pb = hc::detail::make_tree_problem(view(t));
    const auto rt = hc::detail::reduce_tree(pb, true);
    hc::detail::tree_priced pr(rt);
    const double lambda = std::ldexp(1.0, -static_cast<int>(rng() % 12));
    const auto r = pr.solve(lambda);
    const auto ks = pr.positions();
    CHECK(ks.size() == r.count);
    const double cost = hc::detail::tree_recompute(pb, ks);
    CHECK(cost + lambda * static_cast<double>(ks.size()) ==
          doctest::Approx(r.value).epsilon(1e-12).scale(1.0));
  }
}

TEST_CASE("the slope-trick pass finds a minimiser of the anchor-by-anchor penalised pass") {
  // tree_slopes (O(m log m) per price) against tree_priced (every anchor, O(Σ depth)): the plan
  // of the former has the penalised cost the latter computes as the minimum, at many prices.
  std::mt19937 rng(4242);
  constexpr ht::tree_shape shapes[] = {ht::tree_shape::chain, ht::tree_shape::binary,
                                       ht::tree_shape::caterpillar, ht::tree_shape::random};
  int checked = 0;
  for (int trial = 0; trial < 600; ++trial) {
    auto t = ht::random_tree(rng, 2 + rng() % 60, shapes[trial % 4], trial % 2 == 0);
    if (trial % 3 == 0) {
      std::lognormal_distribution<double> ln(0.0, 1.5);
      for (auto& w : t.weight) w = ln(rng);
    }
    const auto pb = hc::detail::make_tree_problem(view(t));
    const auto rt = hc::detail::reduce_tree(pb, true);
    hc::detail::tree_priced ref(rt);
    hc::detail::tree_slopes fast(rt);
    for (int k = 0; k < 6; ++k) {
      const double lambda =
          std::ldexp(1.0 + static_cast<double>(rng() % 64) / 64.0, -static_cast<int>(rng() % 14));
      const double best = ref.solve(lambda).value;
      const auto p = fast.solve(lambda);
      const auto ks = fast.positions();
      CHECK(ks.size() == p.count);
      const double cost = hc::detail::tree_recompute(pb, ks);
      CHECK(cost == doctest::Approx(p.cost).epsilon(1e-12).scale(1.0));
      CHECK(cost + lambda * static_cast<double>(ks.size()) ==
            doctest::Approx(best).epsilon(1e-12).scale(1.0));
      CHECK(fast.value() == doctest::Approx(best).epsilon(1e-12).scale(1.0));
      ++checked;
    }
  }
  CHECK(checked == 3600);
}

TEST_CASE("tree fast path equals the exact DP on mid-size dense radix-like trees") {
  // Every node weighted (lognormal), long unary runs off random branch points, as the dense
  // benchmark trees but small enough for the exact DP in a test: the certificate's arithmetic
  // (heaps, slope sums) over hundreds of nodes and many breakpoints.
  std::mt19937 rng(31337);
  std::lognormal_distribution<double> ln(0.0, 1.5);
  tally tl;
  for (int trial = 0; trial < 40; ++trial) {
    ht::tree_case t{{0}, {0.0}, {0.0}};
    const std::size_t n = 100 + rng() % 300;
    while (t.parent.size() < n) {
      std::size_t p = rng() % t.parent.size();
      const std::size_t len = 1 + rng() % 24;
      for (std::size_t i = 0; i < len && t.parent.size() < n; ++i) {
        t.parent.push_back(p);
        t.depth.push_back(t.depth[p] + 16.0);
        t.weight.push_back(ln(rng));
        p = t.parent.size() - 1;
      }
    }
    const auto pb = hc::detail::make_tree_problem(view(t));
    for (std::size_t m : {1, 2, 3, 5, 8, 13, 21, 34, 55}) {
      const auto exact = hc::detail::solve_tree_budget(pb, m, false);
      for (auto pass : {hc::detail::tree_pass::anchors, hc::detail::tree_pass::slopes}) {
        hc::detail::tree_solve_info info;
        const auto fast = hc::detail::solve_tree_budget(pb, m, true, &info, pass);
        CHECK(fast.size() <= m);
        tl.certified += info.certified ? 1 : 0;
        tl.fallback += info.certified ? 0 : 1;
        CHECK(hc::detail::tree_recompute(pb, fast) ==
              doctest::Approx(hc::detail::tree_recompute(pb, exact)).epsilon(1e-12).scale(1.0));
      }
    }
  }
  MESSAGE("dense radix-like trees: budget solves (x2 passes) certified ", tl.certified,
          ", fallback ", tl.fallback);
  CHECK(tl.certified > 0);
}
