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
// Wide trees (issue #21 item 8): a star (the root's n children are weighted leaves, as a
// junction under which many conversations diverge) and a two-level broom (√n junctions of √n
// leaves each), where the plan's budget splits over very many children.
#include <benchmark/benchmark.h>

#include <algorithm>
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

/// Counters of one solve outside the timed loop: whether the Lagrangian certificate held
/// (1) or the exact DP ran (0), and the penalised passes it took.
void solve_counters(benchmark::State& state, const hc::tree_view& view, std::size_t m) {
  const auto pb = hc::detail::make_tree_problem(view);
  hc::detail::tree_solve_info info;
  (void)hc::detail::solve_tree_budget(pb, std::min(m, pb.parent.size()), true, &info);
  state.counters["certified"] = info.certified ? 1.0 : 0.0;
  state.counters["passes"] = static_cast<double>(info.passes);
  state.counters["slopes"] = info.slopes ? 1.0 : 0.0;
}

template <bool Dense>
void tree_place(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto t = make_radix_tree(n, Dense);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  for (auto _ : state) benchmark::DoNotOptimize(hc::place_optimal_tree(view, m));
  solve_counters(state, view, m);
  state.SetLabel("place_optimal_tree (values + positions)");
}

/// The previous single-budget path (the exact DP for every budget, then its positions), run
/// the way place_optimal_tree ran it before the Lagrangian fast path: the same-run baseline.
template <bool Dense>
void tree_place_dp(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto t = make_radix_tree(n, Dense);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  for (auto _ : state) {
    const auto pb = hc::detail::make_tree_problem(view);
    auto ks = hc::detail::solve_tree_budget(pb, std::min(m, n), /*lagrangian=*/false);
    benchmark::DoNotOptimize(hc::detail::tree_recompute(pb, ks));
  }
  state.SetLabel("exact DP positions (previous path, baseline)");
}

/// Root → `n` weighted leaves (two_level = false), or root → ⌈√n⌉ junctions each with leaves
/// (two_level = true), depths in blocks of 16 tokens, lognormal weights.
radix_tree make_wide_tree(std::size_t n, bool two_level) {
  std::mt19937_64 rng(20261125);
  std::lognormal_distribution<double> w(0.0, 1.5);
  radix_tree t;
  t.parent = {0};
  t.depth = {0.0};
  t.weight = {0.0};
  std::size_t fan = n;
  if (two_level) {
    fan = 1;
    while (fan * fan < n) ++fan;
    for (std::size_t j = 0; j < fan; ++j) {
      t.parent.push_back(0);
      t.depth.push_back(static_cast<double>(16 * (1 + rng() % 64)));
      t.weight.push_back(0.0);
    }
  }
  for (std::size_t i = 0; t.parent.size() < n + 1; ++i) {
    const std::size_t p = two_level ? 1 + i % fan : 0;
    t.parent.push_back(p);
    t.depth.push_back(t.depth[p] + static_cast<double>(16 * (1 + rng() % 256)));
    t.weight.push_back(w(rng));
  }
  return t;
}

template <bool TwoLevel>
void tree_place_wide(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto t = make_wide_tree(n, TwoLevel);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  for (auto _ : state) benchmark::DoNotOptimize(hc::place_optimal_tree(view, m));
  solve_counters(state, view, m);
  state.SetLabel(TwoLevel ? "place_optimal_tree, broom (sqrt(n) x sqrt(n))"
                          : "place_optimal_tree, star (n leaves)");
}

template <bool TwoLevel>
void tree_place_wide_dp(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto t = make_wide_tree(n, TwoLevel);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  for (auto _ : state) {
    const auto pb = hc::detail::make_tree_problem(view);
    auto ks = hc::detail::solve_tree_budget(pb, std::min(m, pb.parent.size()), false);
    benchmark::DoNotOptimize(hc::detail::tree_recompute(pb, ks));
  }
  state.SetLabel(TwoLevel ? "exact DP positions, broom (baseline)"
                          : "exact DP positions, star (baseline)");
}

template <bool TwoLevel>
void tree_frontier_wide(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto t = make_wide_tree(n, TwoLevel);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  for (auto _ : state) benchmark::DoNotOptimize(hc::optimal_tree_frontier(view, m));
  state.SetLabel(TwoLevel ? "optimal_tree_frontier, broom" : "optimal_tree_frontier, star");
}

/// How often the Lagrangian certificate holds on the bench trees: the price search alone (no
/// fallback DP) for budgets M = step, 2·step, …, max; counters: budgets tried, certified, mean
/// passes. One iteration (the time is the whole sweep's).
template <int Shape>  // 0 sparse radix, 1 dense radix, 2 star, 3 broom
void tree_certificate_sweep(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto max_m = static_cast<std::size_t>(state.range(1));
  const auto step = static_cast<std::size_t>(state.range(2));
  const auto t = Shape <= 1 ? make_radix_tree(n, Shape == 1) : make_wide_tree(n, Shape == 3);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  const auto pb = hc::detail::make_tree_problem(view);
  const auto rt = hc::detail::reduce_tree(pb, true);
  std::size_t tried = 0, certified = 0, passes = 0;
  for (auto _ : state) {
    tried = certified = passes = 0;
    for (std::size_t m = step; m <= max_m && m < rt.cnt[0]; m += step) {
      hc::detail::tree_solve_info info;
      benchmark::DoNotOptimize(hc::detail::tree_lagrangian(rt, m, &info));
      ++tried;
      certified += info.certified ? 1 : 0;
      passes += info.passes;
    }
  }
  state.counters["budgets"] = static_cast<double>(tried);
  state.counters["certified"] = static_cast<double>(certified);
  state.counters["mean_passes"] = static_cast<double>(passes) / static_cast<double>(tried);
}

}  // namespace

#define HC_TREE_SIZES ->Args({10000, 256})->Args({100000, 1024})->Unit(benchmark::kMillisecond)
BENCHMARK(tree_frontier<true, false>) HC_TREE_SIZES;
BENCHMARK(tree_frontier<false, false>) HC_TREE_SIZES;
BENCHMARK(tree_place<false>) HC_TREE_SIZES;
BENCHMARK(tree_place_dp<false>) HC_TREE_SIZES;
BENCHMARK(tree_frontier<true, true>) HC_TREE_SIZES;
BENCHMARK(tree_frontier<false, true>) HC_TREE_SIZES;
BENCHMARK(tree_place<true>) HC_TREE_SIZES;
BENCHMARK(tree_place_dp<true>) HC_TREE_SIZES;
#define HC_WIDE_SIZES ->Args({10000, 256})->Args({100000, 1024})->Unit(benchmark::kMillisecond)
BENCHMARK(tree_place_wide<false>) HC_WIDE_SIZES;
BENCHMARK(tree_place_wide_dp<false>) HC_WIDE_SIZES;
BENCHMARK(tree_frontier_wide<false>) HC_WIDE_SIZES;
BENCHMARK(tree_place_wide<true>) HC_WIDE_SIZES;
BENCHMARK(tree_place_wide_dp<true>) HC_WIDE_SIZES;
BENCHMARK(tree_frontier_wide<true>) HC_WIDE_SIZES;
#define HC_SWEEP \
  ->Args({10000, 256, 1})->Args({100000, 1024, 16})->Iterations(1)->Unit(benchmark::kMillisecond)
BENCHMARK(tree_certificate_sweep<0>) HC_SWEEP;
BENCHMARK(tree_certificate_sweep<1>) HC_SWEEP;
BENCHMARK(tree_certificate_sweep<2>) HC_SWEEP;
BENCHMARK(tree_certificate_sweep<3>) HC_SWEEP;
