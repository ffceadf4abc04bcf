// SPDX-License-Identifier: Apache-2.0
// The exact planner: ns per DP cell of optimal_frontier (N × M cells), the single-budget solvers,
// and the plain O(N²M) DP (tests/support/placement_reference.hpp) as the same-binary baseline.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <hybridcache/placement.hpp>

#include "support/placement_reference.hpp"

namespace hc = hybridcache;

namespace {

/// A realistic mixture: a spike near the full length (document QA), mass at short depths (system
/// prompts), a bump in the middle and positive noise at every depth, so no depth is compressed
/// away (the hardest case for the solvers).
std::vector<double> workload(std::size_t n) {
  std::mt19937 rng(12345);
  std::lognormal_distribution<double> noise(0.0, 1.0);
  std::vector<double> w(n);
  const double nn = static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double t = static_cast<double>(i + 1) / nn;
    w[i] = 0.05 * noise(rng) + 30.0 * std::exp(-std::pow((t - 0.97) / 0.01, 2)) +
           10.0 * std::exp(-t / 0.05) + 4.0 * std::exp(-std::pow((t - 0.5) / 0.1, 2));
  }
  return w;
}

void frontier(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto w = workload(n);
  for (auto _ : state) benchmark::DoNotOptimize(hc::optimal_frontier(w, m));
  const double cells = static_cast<double>(n) * static_cast<double>(m);
  state.counters["ns_per_cell"] =
      benchmark::Counter(cells * static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void plain_dp(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto w = workload(n);
  for (auto _ : state) benchmark::DoNotOptimize(hybridcache_test::plain_dp(w, m));
  const double cells = static_cast<double>(n) * static_cast<double>(m);
  state.counters["ns_per_cell"] =
      benchmark::Counter(cells * static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

template <hc::placement_method Method>
void place(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto w = workload(n);
  for (auto _ : state) benchmark::DoNotOptimize(hc::place_optimal(w, m, {.method = Method}));
  const double cells = static_cast<double>(n) * static_cast<double>(m);
  state.counters["ns_per_cell"] =
      benchmark::Counter(cells * static_cast<double>(state.iterations()) * 1e-9,
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void frontier_args(benchmark::internal::Benchmark* b) {
  for (long n : {1000L, 10000L, 100000L, 1000000L}) {
    for (long m : {8L, 64L, 512L}) b->Args({n, m});
  }
}

// The plain DP is O(N²M): only where one run stays below a few seconds.
void plain_args(benchmark::internal::Benchmark* b) {
  for (long m : {8L, 64L, 512L}) b->Args({1000, m});
  b->Args({10000, 8});
}

void place_args(benchmark::internal::Benchmark* b) {
  for (long n : {10000L, 100000L, 1000000L}) {
    for (long m : {8L, 64L, 512L}) b->Args({n, m});
  }
}

}  // namespace

BENCHMARK(frontier)->Apply(frontier_args)->Unit(benchmark::kMillisecond);
BENCHMARK(plain_dp)->Apply(plain_args)->Unit(benchmark::kMillisecond);
BENCHMARK(place<hc::placement_method::lagrangian>)
    ->Apply(place_args)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(place<hc::placement_method::cht>)->Apply(place_args)->Unit(benchmark::kMillisecond);
BENCHMARK(place<hc::placement_method::automatic>)->Apply(place_args)->Unit(benchmark::kMillisecond);
