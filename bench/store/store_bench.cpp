// SPDX-License-Identifier: Apache-2.0
// Store throughput: lru_pool find+unpin and insert-with-eviction (one and two threads) beside
// a bare std::unordered_map under a mutex (same keys); last_k_cache observe at N = 8192 tokens,
// K = 50 beside the brute-force scan of all K entries. Counter: items/s.
#include <benchmark/benchmark.h>

#include <hybridcache/store/last_k_cache.hpp>
#include <hybridcache/store/lru_pool.hpp>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
constexpr std::uint64_t keys = 1 << 16;

hc::lru_pool<std::uint64_t, std::uint64_t>& warm_pool() {
  static hc::lru_pool<std::uint64_t, std::uint64_t> pool(keys * 64);
  static const bool filled = [] {
    for (std::uint64_t k = 0; k < keys; ++k) pool.insert(k, k, 64);
    return true;
  }();
  (void)filled;
  return pool;
}

void BM_lru_find_unpin(benchmark::State& state) {
  auto& pool = warm_pool();
  std::uint64_t k = static_cast<std::uint64_t>(state.thread_index()) * 12345, sum = 0;
  for (auto _ : state) {
    auto h = pool.find((k = k * 6364136223846793005ull + 1) % keys);
    sum += *h;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_mutex_unordered_map_find(benchmark::State& state) {
  static std::mutex m;
  static std::unordered_map<std::uint64_t, std::uint64_t> map = [] {
    std::unordered_map<std::uint64_t, std::uint64_t> x;
    for (std::uint64_t k = 0; k < keys; ++k) x.emplace(k, k);
    return x;
  }();
  std::uint64_t k = static_cast<std::uint64_t>(state.thread_index()) * 12345, sum = 0;
  for (auto _ : state) {
    std::lock_guard lock(m);
    sum += map.find((k = k * 6364136223846793005ull + 1) % keys)->second;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_lru_insert_evict(benchmark::State& state) {
  // A full pool: every insert evicts the LRU entry.
  static hc::lru_pool<std::uint64_t, std::uint64_t> pool(1024 * 64);
  std::uint64_t k = (static_cast<std::uint64_t>(state.thread_index()) + 1) << 40;
  for (auto _ : state) pool.insert(k++, 0, 64);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// Document-QA-like trace: 20 documents of 8192 tokens, each request = a document prefix of
// random depth + a fresh question.
std::vector<std::vector<token_id>> make_trace(std::size_t n) {
  std::mt19937 rng(3);
  std::vector<std::vector<token_id>> docs(20, std::vector<token_id>(8192));
  for (auto& d : docs)
    for (auto& t : d) t = rng() % 50000;
  std::vector<std::vector<token_id>> trace(n);
  for (auto& r : trace) {
    const auto& d = docs[rng() % docs.size()];
    r.assign(d.begin(), d.begin() + static_cast<long>(4096 + rng() % 4096));
    for (int q = 0; q < 32; ++q) r.push_back(50000 + rng() % 1000);
  }
  return trace;
}

void BM_last_k_observe(benchmark::State& state) {
  static const auto trace = make_trace(4096);
  hc::last_k_cache cache(static_cast<std::size_t>(state.range(0)));
  std::size_t i = 0, sum = 0;
  for (auto _ : state) sum += cache.observe(trace[i++ % trace.size()]).depth;
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_last_k_brute_force(benchmark::State& state) {
  static const auto trace = make_trace(4096);
  const auto k = static_cast<std::size_t>(state.range(0));
  std::deque<std::vector<token_id>> q;
  std::size_t i = 0, sum = 0;
  for (auto _ : state) {
    const auto& r = trace[i++ % trace.size()];
    std::size_t best = 0;
    for (const auto& e : q) {
      const std::size_t n = std::min(e.size(), r.size());
      const auto m = std::mismatch(e.begin(), e.begin() + static_cast<long>(n), r.begin());
      best = std::max(best, static_cast<std::size_t>(m.first - e.begin()));
    }
    q.push_back(r);
    if (q.size() > k) q.pop_front();
    sum += best;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}
}  // namespace

BENCHMARK(BM_lru_find_unpin)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_mutex_unordered_map_find)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_lru_insert_evict)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_last_k_observe)->Arg(35)->Arg(50)->Arg(100);
BENCHMARK(BM_last_k_brute_force)->Arg(35)->Arg(50)->Arg(100);
