// SPDX-License-Identifier: Apache-2.0
// The exact tree planner (placement/tree.hpp) on radix-shaped trees, beside the plain exact DP
// over (node, nearest checkpointed ancestor, budget) with capped knapsack merging — the same DP
// without the exact reduction of the tree (detail::tree_dp with compress = false), measured in
// this binary.
//
// Trees: sequences are added one at a time; each branches off a random existing node (deep ones
// preferred, as in multi-turn and agent traces) and runs for a random number of blocks, so that
// no root-to-leaf path exceeds 256 blocks. Weights (where matches end):
//   sparse — at leaves and branch points only (what an engine's match-end statistics give);
//   dense  — at every node (the hardest case: nothing reduces).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <vector>

#include <hybridcache/placement/tree.hpp>

namespace hc = hybridcache;

namespace {

struct radix_tree {
  std::vector<std::size_t> parent;
  std::vector<double> depth, weight;
};

radix_tree make_radix_tree(std::size_t n, bool dense, std::size_t block = 16) {
  std::mt19937_64 rng(20261123);
  radix_tree t;
  t.parent = {0};
  t.depth = {0.0};
  std::vector<std::size_t> blocks{0}, children{0};
  while (t.parent.size() < n) {
    // Branch off a node: half the time a random one, half the time a deep one.
    std::size_t at = rng() % t.parent.size();
    if (rng() % 2) {
      const std::size_t other = rng() % t.parent.size();
      if (blocks[other] > blocks[at]) at = other;
    }
    if (blocks[at] >= 256) at = t.parent[at];
    const std::size_t room = 256 - blocks[at];
    std::size_t len = 1 + rng() % std::min<std::size_t>(room, 64);
    std::size_t p = at;
    for (std::size_t i = 0; i < len && t.parent.size() < n; ++i) {
      t.parent.push_back(p);
      blocks.push_back(blocks[p] + 1);
      t.depth.push_back(static_cast<double>(blocks.back() * block));
      children.push_back(0);
      ++children[p];
      p = t.parent.size() - 1;
    }
  }
  std::lognormal_distribution<double> w(0.0, 1.5);
  t.weight.assign(n, 0.0);
  for (std::size_t v = 1; v < n; ++v)
    if (dense || children[v] != 1) t.weight[v] = w(rng);
  return t;
}

template <bool Reduced, bool Dense>
void tree_frontier(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto t = make_radix_tree(n, Dense);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  const auto pb = hc::detail::make_tree_problem(view);
  for (auto _ : state) {
    hc::detail::tree_dp dp(pb, m, Reduced);
    benchmark::DoNotOptimize(dp.frontier());
  }
  state.counters["nodes"] = static_cast<double>(n);
  state.SetLabel(Reduced ? "reduced (library)" : "plain DP (baseline)");
}

template <bool Dense>
void tree_place(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto t = make_radix_tree(n, Dense);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  for (auto _ : state) benchmark::DoNotOptimize(hc::place_optimal_tree(view, m));
  state.SetLabel("place_optimal_tree (values + positions)");
}

}  // namespace

#define HC_TREE_SIZES ->Args({10000, 256})->Args({100000, 1024})->Unit(benchmark::kMillisecond)
BENCHMARK(tree_frontier<true, false>) HC_TREE_SIZES;
BENCHMARK(tree_frontier<false, false>) HC_TREE_SIZES;
BENCHMARK(tree_place<false>) HC_TREE_SIZES;
BENCHMARK(tree_frontier<true, true>) HC_TREE_SIZES;
BENCHMARK(tree_frontier<false, true>) HC_TREE_SIZES;
BENCHMARK(tree_place<true>) HC_TREE_SIZES;
