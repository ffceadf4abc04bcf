// SPDX-License-Identifier: Apache-2.0
// Tree placement (placement/tree.hpp) against the brute force over every subset
// (tests/support/tree_reference.hpp), against place_optimal on chains, and its typed errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <hybridcache/placement.hpp>
#include <hybridcache/placement/tree.hpp>

#include "support/tree_reference.hpp"

namespace hc = hybridcache;
namespace ht = hybridcache_test;

namespace {
hc::tree_view view(const ht::tree_case& t) { return {t.parent, t.depth, t.weight}; }
constexpr ht::tree_shape all_shapes[] = {ht::tree_shape::chain, ht::tree_shape::star,
                                         ht::tree_shape::binary, ht::tree_shape::caterpillar,
                                         ht::tree_shape::random};

/// Root → `junctions` nodes → `leaves` children shared round-robin among them (a broom of
/// fan-outs; junctions = 0 gives a star of `leaves`). Integer depth steps and small integer
/// weights, so ties are common.
ht::tree_case broom(std::mt19937& rng, std::size_t junctions, std::size_t leaves) {
  ht::tree_case t{{0}, {0.0}, {0.0}};
  for (std::size_t j = 0; j < junctions; ++j) {
    t.parent.push_back(0);
    t.depth.push_back(static_cast<double>(1 + rng() % 4));
    t.weight.push_back(rng() % 2 == 0 ? 0.0 : static_cast<double>(rng() % 3));
  }
  for (std::size_t i = 0; i < leaves; ++i) {
    const std::size_t p = junctions == 0 ? 0 : 1 + i % junctions;
    t.parent.push_back(p);
    t.depth.push_back(t.depth[p] + static_cast<double>(1 + rng() % 4));
    t.weight.push_back(rng() % 4 == 0 ? 0.0 : static_cast<double>(rng() % 4));
  }
  t.weight.back() += 1.0;  // never all zero
  return t;
}
}  // namespace

TEST_CASE("tree placement equals the brute force for every budget on every shape") {
  std::mt19937 rng(14);
  int checked = 0;
  for (auto shape : all_shapes) {
    for (int trial = 0; trial < 30; ++trial) {
      const std::size_t n = 1 + rng() % 12;
      const bool frac = trial % 2 == 1;
      const auto t = ht::random_tree(rng, n, shape, frac);
      const auto ref = ht::tree_brute_force(t);
      const auto v = hc::optimal_tree_frontier(view(t), n + 1);
      REQUIRE(v.size() == n + 2);
      for (std::size_t m = 0; m <= n + 1; ++m) {
        const double best = static_cast<double>(ref[std::min(m, n - 1)]);
        CHECK(v[m] == doctest::Approx(best).epsilon(1e-12).scale(1.0));
        const auto plan = hc::place_optimal_tree(view(t), m);
        CHECK(plan.checkpoints.size() <= m);
        for (std::size_t i = 0; i < plan.checkpoints.size(); ++i) {
          CHECK(plan.checkpoints[i] >= 1);
          CHECK(plan.checkpoints[i] < n);
          if (i > 0) CHECK(plan.checkpoints[i - 1] < plan.checkpoints[i]);
        }
        // The positions achieve the optimum, measured by the independent evaluator.
        CHECK(static_cast<double>(ht::tree_recompute(t, plan.checkpoints)) ==
              doctest::Approx(best).epsilon(1e-12).scale(1.0));
        CHECK(plan.expected_recompute == doctest::Approx(best).epsilon(1e-12).scale(1.0));
        ++checked;
      }
    }
  }
  CHECK(checked > 500);
}

TEST_CASE("tree placement equals the unreduced reference DP on larger trees") {
  // Sparse weights (most nodes 0, as engine statistics are) exercise the reduction.
  std::mt19937 rng(41);
  for (auto shape : all_shapes) {
    for (int trial = 0; trial < 6; ++trial) {
      auto t = ht::random_tree(rng, 20 + rng() % 50, shape, trial % 2 == 0);
      if (trial % 3 != 2) {  // every third tree keeps its dense weights (long chains survive)
        for (auto& w : t.weight)
          if (rng() % 4 != 0) w = 0.0;
      }
      t.weight.back() += 1.0;
      const std::size_t max_m = 8;
      const auto ref = ht::tree_reference_dp(t, max_m);
      const auto v = hc::optimal_tree_frontier(view(t), max_m);
      for (std::size_t m = 0; m <= max_m; ++m) {
        CHECK(v[m] == doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-12).scale(1.0));
        const auto plan = hc::place_optimal_tree(view(t), m);
        CHECK(static_cast<double>(ht::tree_recompute(t, plan.checkpoints)) ==
              doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-12).scale(1.0));
      }
    }
  }
}

TEST_CASE("wide trees (stars, brooms, caterpillars) equal the brute force for every budget") {
  // Positions split a node's budget over its children from checkpointed prefix merges in blocks
  // of ceil(sqrt(children)) (detail::tree_dp::split_children): up to 15 children = 4 blocks.
  std::mt19937 rng(2121);
  int checked = 0;
  for (int trial = 0; trial < 60; ++trial) {
    ht::tree_case t;
    switch (trial % 3) {
      case 0:
        t = broom(rng, 0, 1 + rng() % 14);  // star
        break;
      case 1:
        t = broom(rng, 1 + rng() % 3, 4 + rng() % 10);
        break;
      default:
        t = ht::random_tree(rng, 2 + rng() % 14, ht::tree_shape::caterpillar, trial % 2 == 0);
    }
    const std::size_t n = t.parent.size();
    const auto ref = ht::tree_brute_force(t);
    const auto v = hc::optimal_tree_frontier(view(t), n);
    for (std::size_t m = 0; m <= n; ++m) {
      const double best = static_cast<double>(ref[std::min(m, n - 1)]);
      CHECK(v[m] == doctest::Approx(best).epsilon(1e-12).scale(1.0));
      const auto plan = hc::place_optimal_tree(view(t), m);
      CHECK(plan.checkpoints.size() <= m);
      CHECK(static_cast<double>(ht::tree_recompute(t, plan.checkpoints)) ==
            doctest::Approx(best).epsilon(1e-12).scale(1.0));
      ++checked;
    }
  }
  CHECK(checked > 400);
}

TEST_CASE("wide stars and brooms equal the unreduced reference DP") {
  // 30..330 children per node: many blocks in the checkpointed split, budgets past the block size.
  std::mt19937 rng(2122);
  for (int trial = 0; trial < 8; ++trial) {
    const auto t = trial % 2 == 0 ? broom(rng, 0, 30 + rng() % 300)
                                  : broom(rng, 2 + rng() % 3, 60 + rng() % 200);
    const std::size_t max_m = 24;
    const auto ref = ht::tree_reference_dp(t, max_m);
    const auto v = hc::optimal_tree_frontier(view(t), max_m);
    for (std::size_t m = 0; m <= max_m; ++m) {
      CHECK(v[m] == doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-12).scale(1.0));
      const auto plan = hc::place_optimal_tree(view(t), m);
      CHECK(plan.checkpoints.size() <= m);
      CHECK(static_cast<double>(ht::tree_recompute(t, plan.checkpoints)) ==
            doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-12).scale(1.0));
    }
  }
}

TEST_CASE("weights whose sum overflows are normalised as place_optimal normalises them") {
  // Issue #21 item 10: 1e308 + 1e308 = inf; both planners scale by an exact power of two first.
  const std::vector<double> w{0.0, 1e308, 1e308};  // depths 1, 2, 3
  const std::vector<std::size_t> parent{0, 0, 1, 2};
  const std::vector<double> depth{0, 1, 2, 3};
  const std::vector<double> weight{0, 0.0, 1e308, 1e308};
  const hc::tree_view t{parent, depth, weight};
  const auto chain = hc::place_optimal(w, 1);
  CHECK(chain.expected_recompute ==
        0.5);  // a checkpoint at 2 (or 3) leaves 1 token (or 2) half the time
  const auto tree = hc::place_optimal_tree(t, 1);
  CHECK(tree.expected_recompute == chain.expected_recompute);
  CHECK(tree.checkpoints == chain.checkpoints);
  const auto fc = hc::optimal_frontier(w, 3);
  const auto ft = hc::optimal_tree_frontier(t, 3);
  CHECK(ft == fc);  // {2.5, 0.5, 0, 0}
  CHECK(hc::expected_recompute_tree(t, std::vector<std::size_t>{}) == 2.5);
  // Subnormal weights: exactly the plans and values of their normal multiples.
  const double tiny = std::numeric_limits<double>::denorm_min();
  std::mt19937 rng(10);
  for (int trial = 0; trial < 10; ++trial) {
    auto big = ht::random_tree(rng, 12, ht::tree_shape::random, trial % 2 == 0);
    auto small = big;
    for (auto& x : small.weight) x *= tiny;
    for (std::size_t m = 0; m <= 4; ++m) {
      const auto a = hc::place_optimal_tree(view(big), m);
      const auto b = hc::place_optimal_tree(view(small), m);
      CHECK(a.checkpoints == b.checkpoints);
      CHECK(a.expected_recompute == b.expected_recompute);
    }
  }
}

TEST_CASE("optimal_tree_frontier rejects an output too large to allocate, naming max_budget") {
  // Issue #21 item 9: 2^50 budgets (8 PiB of output) ended in std::bad_alloc.
  const ht::tree_case t{{0, 0, 1}, {0, 1, 2}, {0, 1, 1}};
  for (const std::size_t huge :
       {std::size_t{1} << 50, std::size_t{1} << 44, std::numeric_limits<std::size_t>::max()}) {
    try {
      (void)hc::optimal_tree_frontier(view(t), huge);
      FAIL("no throw for max_budget " << huge);
    } catch (const hc::invalid_argument& e) {
      CHECK(e.argument() == "max_budget + 1");
      const std::string what = e.what();
      const std::string shown = huge == std::numeric_limits<std::size_t>::max()
                                    ? std::to_string(huge)
                                    : std::to_string(huge + 1);
      CHECK(what.find(shown) != std::string::npos);
    }
  }
  // The largest output that may be allocated is not rejected by the check itself.
  CHECK(hc::optimal_tree_frontier(view(t), 1000).size() == 1001);
}

TEST_CASE("ties, zero weights and weight only at the root") {
  // Two identical branches: either junction or leaf choice ties; the value must still be optimal.
  ht::tree_case t{{0, 0, 1, 1, 0, 4, 4}, {0, 2, 4, 4, 2, 4, 4}, {0, 0, 1, 1, 0, 1, 1}};
  const auto ref = ht::tree_brute_force(t);
  for (std::size_t m = 0; m <= 7; ++m) {
    const auto plan = hc::place_optimal_tree(view(t), m);
    CHECK(plan.expected_recompute ==
          doctest::Approx(static_cast<double>(ref[std::min<std::size_t>(m, 6)])));
  }
  // All mass at the root: E[r] = 0 with no checkpoints.
  ht::tree_case r{{0, 0, 1}, {0, 1, 2}, {3, 0, 0}};
  const auto p = hc::place_optimal_tree(view(r), 2);
  CHECK(p.checkpoints.empty());
  CHECK(p.expected_recompute == 0.0);
  CHECK(hc::optimal_tree_frontier(view(r), 3) == std::vector<double>(4, 0.0));
  // A single node tree.
  ht::tree_case one{{0}, {0}, {1}};
  CHECK(hc::place_optimal_tree(view(one), 5).checkpoints.empty());
}

TEST_CASE("the junction serves both branches (the documented example)") {
  std::vector<std::size_t> parent{0, 0, 1, 1};
  std::vector<double> depth{0, 100, 110, 120};
  std::vector<double> weight{0, 0, 1, 1};
  const auto plan = hc::place_optimal_tree({parent, depth, weight}, 1);
  CHECK(plan.checkpoints == std::vector<std::size_t>{1});
  CHECK(plan.expected_recompute == doctest::Approx(15.0));
}

TEST_CASE("on a chain the tree planner equals place_optimal") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 20 + rng() % 200;
    std::vector<double> w(n);
    std::lognormal_distribution<double> d(0.0, 1.5);
    for (auto& x : w) x = rng() % 3 == 0 ? 0.0 : d(rng);
    w[n - 1] += 1.0;
    // Chain: node v at depth v (v = 1..n), weight w[v-1].
    std::vector<std::size_t> parent(n + 1);
    std::vector<double> depth(n + 1), weight(n + 1, 0.0);
    for (std::size_t v = 1; v <= n; ++v) {
      parent[v] = v - 1;
      depth[v] = static_cast<double>(v);
      weight[v] = w[v - 1];
    }
    const std::size_t max_m = 12;
    const auto chain = hc::optimal_frontier(w, max_m);
    const auto tree = hc::optimal_tree_frontier({parent, depth, weight}, max_m);
    for (std::size_t m = 0; m <= max_m; ++m) {
      CHECK(tree[m] == doctest::Approx(chain[m]).epsilon(1e-10));
      const auto a = hc::place_optimal(w, m);
      const auto b = hc::place_optimal_tree({parent, depth, weight}, m);
      CHECK(b.expected_recompute == doctest::Approx(a.expected_recompute).epsilon(1e-10));
    }
  }
}

TEST_CASE("frontier equals the per-budget optimum and is nonincreasing") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 10; ++trial) {
    const auto t = ht::random_tree(rng, 300, ht::tree_shape::random, trial % 2 == 0);
    const auto v = hc::optimal_tree_frontier(view(t), 40);
    CHECK(v[0] == doctest::Approx(static_cast<double>(ht::tree_recompute(t, {}))));
    for (std::size_t m = 0; m <= 40; m += 3) {
      const auto plan = hc::place_optimal_tree(view(t), m);
      CHECK(plan.expected_recompute == doctest::Approx(v[m]).epsilon(1e-10));
      CHECK(static_cast<double>(ht::tree_recompute(t, plan.checkpoints)) ==
            doctest::Approx(v[m]).epsilon(1e-10));
      if (m > 0) CHECK(v[m] <= v[m - 1] + 1e-12);
    }
  }
}

TEST_CASE("expected_recompute_tree matches the reference and ignores duplicates and the root") {
  std::mt19937 rng(5);
  const auto t = ht::random_tree(rng, 40, ht::tree_shape::random, true);
  std::vector<std::size_t> cps{0, 3, 3, 17, 25};
  CHECK(hc::expected_recompute_tree(view(t), cps) ==
        doctest::Approx(static_cast<double>(ht::tree_recompute(t, {3, 17, 25}))));
}

TEST_CASE("bad trees throw invalid_argument naming the argument") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  auto throws_on = [](ht::tree_case t, const char* arg) {
    try {
      (void)hc::place_optimal_tree({t.parent, t.depth, t.weight}, 2);
      FAIL("no throw for " << arg);
    } catch (const hc::invalid_argument& e) {
      CHECK(e.argument() == arg);
    }
  };
  const ht::tree_case ok{{0, 0, 1}, {0, 1, 2}, {0, 1, 1}};
  auto t = ok;
  t.depth.push_back(3);
  throws_on(t, "tree.depth.size()");
  t = ok;
  t.weight.pop_back();
  throws_on(t, "tree.weight.size()");
  throws_on({{}, {}, {}}, "tree.parent.size()");
  t = ok;
  t.parent[2] = 2;
  throws_on(t, "tree.parent[2]");
  t.parent[2] = 5;
  throws_on(t, "tree.parent[2]");
  t = ok;
  t.depth[0] = 1;
  throws_on(t, "tree.depth[0]");
  t = ok;
  t.depth[2] = 1;
  throws_on(t, "tree.depth[2]");
  t.depth[2] = nan;
  throws_on(t, "tree.depth[2]");
  t.depth[2] = inf;
  throws_on(t, "tree.depth[2]");
  t = ok;
  t.weight[1] = nan;
  throws_on(t, "tree.weight[1]");
  t.weight[1] = -1;
  throws_on(t, "tree.weight[1]");
  t.weight[1] = inf;
  throws_on(t, "tree.weight[1]");
  t = ok;
  t.weight = {0, 0, 0};
  throws_on(t, "tree.weight");
  std::vector<std::size_t> bad{1, 3};
  CHECK_THROWS_AS((void)hc::expected_recompute_tree({ok.parent, ok.depth, ok.weight}, bad),
                  hc::invalid_argument);
  CHECK_THROWS_AS((void)hc::optimal_tree_frontier({t.parent, t.depth, t.weight}, 3),
                  hc::invalid_argument);
}
