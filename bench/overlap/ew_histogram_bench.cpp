// SPDX-License-Identifier: Apache-2.0
// ew_histogram::observe (amortised ns per observation, renormalisation included) beside the
// plain counting histogram as the same-binary baseline.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <vector>

#include <hybridcache/overlap.hpp>

namespace hc = hybridcache;

namespace {

std::vector<std::size_t> depths(std::size_t max_depth) {
  std::mt19937 rng(7);
  std::vector<std::size_t> d(1 << 16);
  for (auto& x : d) x = rng() % 8 == 0 ? 0 : 1 + rng() % max_depth;
  return d;
}

template <class Histogram>
void observe(benchmark::State& state, Histogram h) {
  const auto d = depths(h.max_depth());
  std::size_t i = 0;
  for (auto _ : state) {
    h.observe(d[i++ & (d.size() - 1)]);
  }
  benchmark::DoNotOptimize(h.pmf());
  state.SetItemsProcessed(state.iterations());
}

void ew(benchmark::State& state) {
  observe(state, hc::ew_histogram(static_cast<std::size_t>(state.range(0)), 0.99));
}
void ew_fast_decay(benchmark::State& state) {
  observe(state, hc::ew_histogram(static_cast<std::size_t>(state.range(0)), 0.5));
}
void empirical(benchmark::State& state) {
  observe(state, hc::empirical_histogram(static_cast<std::size_t>(state.range(0))));
}

}  // namespace

BENCHMARK(ew)->Arg(4096)->Arg(1 << 20);
BENCHMARK(ew_fast_decay)->Arg(4096)->Arg(1 << 20);
BENCHMARK(empirical)->Arg(4096)->Arg(1 << 20);
