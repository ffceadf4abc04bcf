// SPDX-License-Identifier: Apache-2.0
// store/redis_index.hpp over loopback against a redis-server this program starts (the test
// fixture, tests/support/redis_server.hpp; skipped with a message if the binary is absent).
//
// - BM_redis_chain_pipelined: a 64-block chain (16 tokens a block) looked up with find_chain —
//   one pipelined round trip — back to back from one thread. requests/s = iterations per second;
//   p50_us / p99_us from per-request wall times.
// - BM_redis_one_by_one: the baseline in the same run, the same 64 lookups as 64 find calls
//   (one round trip each); one iteration = one 64-lookup request.
// - BM_redis_chain_keys_only: the local part of a chain lookup (64 chained HMAC-SHA-256 keys), to
//   show how much of a request is hashing rather than Redis.
#include <benchmark/benchmark.h>

#include <hybridcache/store/redis_index.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "support/redis_server.hpp"

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {

constexpr std::size_t blocks = 64, block_size = 16;

struct world {
  std::unique_ptr<hc_test::redis_server> server;
  std::unique_ptr<hc::redis_segment_index> index;
  hc::namespace_key ns = hc::namespace_key{}.with_tenant("bench").with_model("m");
  std::vector<token_id> request;
  std::vector<std::vector<token_id>> singles;  // 64 separate 16-token segments
};

world* the_world() {
  static std::unique_ptr<world> w = [] {
    auto x = std::make_unique<world>();
    if (!hc_test::redis_server::available()) return std::unique_ptr<world>();
    x->server = std::make_unique<hc_test::redis_server>();
    hc::redis_options o;
    o.port = x->server->port();
    o.password = hc_test::redis_server::admin_password;
    const std::string secret = "benchmark-deployment-secret-0001";
    x->index = std::make_unique<hc::redis_segment_index>(
        o, std::span<const std::byte>(reinterpret_cast<const std::byte*>(secret.data()),
                                      secret.size()));
    x->request.resize(blocks * block_size);
    for (std::size_t i = 0; i < x->request.size(); ++i)
      x->request[i] = static_cast<token_id>(i * 2654435761u);
    std::vector<hc::segment_location> locs;
    for (std::size_t b = 0; b < blocks; ++b) {
      locs.push_back({1, 0, b * 65536, 65536, static_cast<std::uint32_t>(block_size)});
      x->singles.emplace_back(
          x->request.begin() + static_cast<std::ptrdiff_t>(b * block_size),
          x->request.begin() + static_cast<std::ptrdiff_t>((b + 1) * block_size));
      x->index->insert(x->ns, x->singles.back(), locs.back());
    }
    x->index->insert_chain(x->ns, x->request, block_size, locs);
    return x;
  }();
  return w.get();
}

// Runs `request(world&) -> hits` back to back, timing each call; reports p50/p99 latency,
// requests/s and lookups/s, and fails the run if any of the 64 lookups per request missed.
template <class Request>
void timed_requests(benchmark::State& state, Request request) {
  world* w = the_world();
  if (w == nullptr) {
    state.SkipWithError("redis-server not found on PATH");
    return;
  }
  std::vector<double> us;
  std::size_t hits = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    hits += request(*w);
    const auto t1 = std::chrono::steady_clock::now();
    us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
  }
  if (hits != static_cast<std::size_t>(state.iterations()) * blocks)
    state.SkipWithError("a lookup missed");
  if (!us.empty()) {
    std::sort(us.begin(), us.end());
    state.counters["p50_us"] = us[us.size() / 2];
    state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
    state.counters["requests_per_s"] =
        benchmark::Counter(static_cast<double>(us.size()), benchmark::Counter::kIsRate);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * blocks));
}

void BM_redis_chain_pipelined(benchmark::State& state) {
  timed_requests(state, [](world& w) {
    return hc::redis_segment_index::leading_hits(w.index->find_chain(w.ns, w.request, block_size));
  });
}

void BM_redis_one_by_one(benchmark::State& state) {
  timed_requests(state, [](world& w) {
    std::size_t hits = 0;
    for (const auto& s : w.singles) hits += w.index->find(w.ns, s).has_value() ? 1 : 0;
    return hits;
  });
}

void BM_redis_chain_keys_only(benchmark::State& state) {
  world* w = the_world();
  if (w == nullptr) {
    state.SkipWithError("redis-server not found on PATH");
    return;
  }
  for (auto _ : state) {
    auto keys = w->index->chain_keys(w->ns, w->request, block_size);
    benchmark::DoNotOptimize(keys.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * blocks));
}

}  // namespace

BENCHMARK(BM_redis_chain_pipelined)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_redis_one_by_one)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_redis_chain_keys_only)->UseRealTime()->Unit(benchmark::kMicrosecond);
