// SPDX-License-Identifier: Apache-2.0
// exact_assign at its documented maximum (24 segments, 5 workers) under the default work limit,
// beside LPT on the same instances (the baseline it starts from). Instances: passage-like
// lognormal lengths (the dispatch data), and real-valued uniform costs, whose optimum is rarely
// provable before the limit (the adversarial case: without a limit it ran for minutes). Counters:
// nodes explored per solve, and the share of solves proved optimal.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <hybridcache/dispatch.hpp>
#include <random>
#include <vector>

namespace hc = hybridcache;

namespace {

std::vector<std::vector<double>> instances(int kind, std::size_t n, int count) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> len(6.0, 0.9);
  std::uniform_real_distribution<double> uni(1.0, 100.0);
  std::vector<std::vector<double>> out(static_cast<std::size_t>(count), std::vector<double>(n));
  for (auto& c : out)
    for (auto& x : c) x = kind == 0 ? std::round(len(rng)) : uni(rng);
  return out;
}

void exact_max(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto set = instances(kind, hc::exact_assign_max_segments, 8);
  std::size_t i = 0;
  double nodes = 0, proved = 0, solves = 0;
  for (auto _ : state) {
    const auto r = hc::exact_assign(set[i++ % set.size()], m);
    benchmark::DoNotOptimize(r.makespan);
    nodes += static_cast<double>(r.nodes);
    proved += r.optimal ? 1.0 : 0.0;
    solves += 1.0;
  }
  state.counters["nodes"] = nodes / solves;
  state.counters["proved"] = proved / solves;
}

void baseline_lpt(benchmark::State& state) {
  const int kind = static_cast<int>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto set = instances(kind, hc::exact_assign_max_segments, 8);
  std::size_t i = 0;
  for (auto _ : state) benchmark::DoNotOptimize(hc::lpt_assign(set[i++ % set.size()], m).makespan);
}

}  // namespace

BENCHMARK(exact_max)->Args({0, 5})->Args({1, 5})->Unit(benchmark::kMillisecond);
BENCHMARK(baseline_lpt)->Args({0, 5})->Args({1, 5})->Unit(benchmark::kMicrosecond);
