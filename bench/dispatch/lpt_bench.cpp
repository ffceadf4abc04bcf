// SPDX-License-Identifier: Apache-2.0
// LPT decisions (segment placements) per second for 10 … 10⁴ segments, beside two baselines
// measured in the same binary: the textbook LPT that scans all workers for the least loaded one
// (O(n·m)), and a bare std::stable_sort of the costs (the floor any LPT pays).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <hybridcache/dispatch.hpp>
#include <numeric>
#include <random>
#include <vector>

namespace hc = hybridcache;

namespace {
std::vector<double> costs(std::size_t n) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> len(6.0, 0.9);  // passage-like lengths
  std::vector<double> c(n);
  for (auto& x : c) x = std::round(len(rng));
  return c;
}

void report(benchmark::State& state, std::size_t n) {
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * n));
  state.counters["decisions/s"] = benchmark::Counter(
      static_cast<double>(state.iterations() * n), benchmark::Counter::kIsRate);
}

void lpt_heap(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto c = costs(n);
  for (auto _ : state) benchmark::DoNotOptimize(hc::lpt_assign(c, m).makespan);
  report(state, n);
}

void baseline_lpt_linear_scan(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto c = costs(n);
  for (auto _ : state) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return c[a] > c[b]; });
    std::vector<double> load(m, 0.0);
    std::vector<std::size_t> w(n);
    for (auto i : order) {
      const auto best = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
      load[best] += c[i];
      w[i] = best;
    }
    benchmark::DoNotOptimize(w.data());
  }
  report(state, n);
}

void baseline_sort_only(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto c = costs(n);
  for (auto _ : state) {
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return c[a] > c[b]; });
    benchmark::DoNotOptimize(order.data());
  }
  report(state, n);
}

void dispatch_cost_model(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto m = static_cast<std::size_t>(state.range(1));
  const auto c = costs(n);
  std::vector<hc::segment_job> jobs(n);
  for (std::size_t i = 0; i < n; ++i) jobs[i] = {static_cast<std::size_t>(c[i]), i % 7 == 0 ? i % m : hc::no_worker};
  const std::vector<double> speeds(m, 1.0);
  const hc::prefill_cost_model model{.per_token = 1.0, .per_token_sq = 1e-4, .overhead = 20.0,
                                     .transfer_per_token = 0.05};
  for (auto _ : state) {
    auto d = hc::dispatch_segments(jobs, speeds, model);
    benchmark::DoNotOptimize(hc::pipeline_schedule(d).combine_wait);
  }
  report(state, n);
}

void exact_n20(benchmark::State& state) {
  const auto m = static_cast<std::size_t>(state.range(0));
  const auto c = costs(20);
  for (auto _ : state) benchmark::DoNotOptimize(hc::exact_assign(c, m).makespan);
  state.counters["solves/s"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate);
}

void sizes(benchmark::internal::Benchmark* b) {
  for (std::int64_t m : {8, 64})
    for (std::int64_t n : {10, 100, 1000, 10000}) b->Args({n, m});
}
}  // namespace

BENCHMARK(lpt_heap)->Apply(sizes);
BENCHMARK(baseline_lpt_linear_scan)->Apply(sizes);
BENCHMARK(baseline_sort_only)->Apply(sizes);
BENCHMARK(dispatch_cost_model)->Apply(sizes);
BENCHMARK(exact_n20)->Arg(2)->Arg(4)->Arg(8);
