// SPDX-License-Identifier: Apache-2.0
// Sparse-prefix simulation throughput (issue target: >= 1M simulated requests per minute with the
// DP re-solved every 10 requests, N ≈ 8k tokens, B = 64). Workload: 24 documents of 8192 tokens,
// 12 questions each (8–64 tokens), Zipf(1) popularity, a last-35 cache; a pool of 512 requests is
// replayed cyclically through one long-lived simulator.
//
// Same-binary baselines:
//   BM_depth_only       the simulator charging only kv_only: overlap matching + histogram, no placement;
//   BM_naive_lcp        what a straightforward simulator does for the overlap depth: token-by-token
//                       LCP against each of the K retained requests;
//   BM_dp_solve_only    one place_optimal per request on the 8k-token histogram (the placement cost
//                       a simulator pays when it does not memoise).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <deque>
#include <hybridcache/overlap.hpp>
#include <hybridcache/placement.hpp>
#include <hybridcache/sim/detail/random.hpp>
#include <hybridcache/sim/sparse_prefix.hpp>
#include <vector>

namespace hc = hybridcache;

namespace {

constexpr std::size_t doc_len = 8192;

const std::vector<std::vector<std::uint32_t>>& pool() {
  static const auto p = [] {
    hc::detail::rng r(42);
    std::vector<std::vector<std::uint32_t>> docs(24, std::vector<std::uint32_t>(doc_len));
    for (auto& d : docs) {
      for (auto& x : d) x = static_cast<std::uint32_t>(r.below(32000));
    }
    std::vector<std::vector<std::vector<std::uint32_t>>> qs(24);
    for (auto& q : qs) {
      for (int i = 0; i < 12; ++i) {
        std::vector<std::uint32_t> v(r.between(8, 64));
        for (auto& x : v) x = static_cast<std::uint32_t>(r.below(32000));
        q.push_back(v);
      }
    }
    const hc::detail::zipf z(24, 1.0);
    std::vector<std::vector<std::uint32_t>> reqs;
    for (int i = 0; i < 512; ++i) {
      const auto d = z(r);
      auto q = docs[d];
      const auto& s = qs[d][r.below(12)];
      q.insert(q.end(), s.begin(), s.end());
      reqs.push_back(std::move(q));
    }
    return reqs;
  }();
  return p;
}

void run(benchmark::State& state, hc::sparse_prefix_options o) {
  const auto& reqs = pool();
  o.cache_entries = 35;
  o.granularity = 64;
  o.replan_every = 10;
  hc::sparse_prefix_simulator s(o, doc_len + 64);
  std::size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(s.step(reqs[i]));
    i = (i + 1) % reqs.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["requests_per_minute"] =
      benchmark::Counter(60.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_dp_budget16(benchmark::State& state) {
  hc::sparse_prefix_options o;
  o.strategies = {hc::placement_strategy::dp};
  o.budgets = {16};
  run(state, o);
}
BENCHMARK(BM_dp_budget16)->Unit(benchmark::kMicrosecond);

void BM_dp_and_frontier_budget16(benchmark::State& state) {
  hc::sparse_prefix_options o;
  o.strategies = {hc::placement_strategy::dp, hc::placement_strategy::dp_frontier};
  o.budgets = {16};
  run(state, o);
}
BENCHMARK(BM_dp_and_frontier_budget16)->Unit(benchmark::kMicrosecond);

void BM_full_sweep(benchmark::State& state) {  // 9 strategies, 7 budgets = 33 configurations
  run(state, {});
}
BENCHMARK(BM_full_sweep)->Unit(benchmark::kMicrosecond);

void BM_depth_only(benchmark::State& state) {
  hc::sparse_prefix_options o;
  o.strategies = {hc::placement_strategy::kv_only};
  run(state, o);
}
BENCHMARK(BM_depth_only)->Unit(benchmark::kMicrosecond);

void BM_naive_lcp(benchmark::State& state) {
  const auto& reqs = pool();
  std::deque<const std::vector<std::uint32_t>*> cache;
  std::size_t i = 0;
  for (auto _ : state) {
    const auto& x = reqs[i];
    std::size_t depth = 0;
    for (const auto* e : cache) {
      std::size_t t = 0;
      const std::size_t n = std::min(x.size(), e->size());
      while (t < n && x[t] == (*e)[t]) ++t;
      depth = std::max(depth, t);
    }
    benchmark::DoNotOptimize(depth);
    cache.push_back(&x);
    if (cache.size() > 35) cache.pop_front();
    i = (i + 1) % reqs.size();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.counters["requests_per_minute"] =
      benchmark::Counter(60.0 * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_naive_lcp)->Unit(benchmark::kMicrosecond);

void BM_dp_solve_only(benchmark::State& state) {
  hybridcache::ew_histogram h(doc_len + 64);
  hc::detail::rng r(1);
  for (int i = 0; i < 2000; ++i) h.observe(doc_len + r.between(1, 60));
  for (int i = 0; i < 500; ++i) h.observe(r.between(1, doc_len));
  const auto w = h.pmf();
  for (auto _ : state) {
    benchmark::DoNotOptimize(hybridcache::place_optimal(w, 16, {.granularity = 64}));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
BENCHMARK(BM_dp_solve_only)->Unit(benchmark::kMicrosecond);

}  // namespace
