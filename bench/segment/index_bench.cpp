// SPDX-License-Identifier: Apache-2.0
// segment_index verified find / insert throughput on a warm index of 10^6 entries (16-token
// segments over 64 tenants), single- and two-threaded, beside std::unordered_map keyed by the
// same digests WITHOUT verification or locking (the unsafe floor). Counter: items/s.
// Target (issue 4): verified find >= 10 M ops/s single-threaded.
#include <benchmark/benchmark.h>

#include <hybridcache/segment/index.hpp>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <random>
#include <unordered_map>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
constexpr std::size_t seg_len = 16;

template <std::size_t entries>
struct fixture {
  std::vector<hc::namespace_key> tenants;
  std::vector<token_id> tokens;   // entries * seg_len
  std::vector<std::uint32_t> tenant_of;
  hc::segment_index<std::uint64_t> index;
  std::unordered_map<hc::digest, std::uint64_t, hc::digest_hasher> raw;
  // Queries: copies of 4096 random stored keys in a compact (cache-resident) buffer, as a
  // server has the request's tokens at hand; the index entries themselves are cold (random).
  static constexpr std::size_t n_queries = 4096;
  std::vector<token_id> query_tokens;
  std::vector<std::uint32_t> query_tenant;

  fixture() {
    for (int i = 0; i < 64; ++i)
      tenants.push_back(hc::namespace_key{}.with_tenant("tenant-" + std::to_string(i)));
    std::mt19937_64 rng(42);
    tokens.resize(entries * seg_len);
    for (auto& t : tokens) t = static_cast<token_id>(rng() % 151936);
    tenant_of.resize(entries);
    for (auto& x : tenant_of) x = static_cast<std::uint32_t>(rng() % 64);
    raw.reserve(entries);
    for (std::size_t i = 0; i < entries; ++i) {
      index.insert(tenants[tenant_of[i]], segment(i), i);
      raw.emplace(index.key_of(tenants[tenant_of[i]], segment(i)), i);
    }
    for (std::size_t q = 0; q < n_queries; ++q) {
      const std::size_t i = rng() % entries;
      const auto seg = segment(i);
      query_tokens.insert(query_tokens.end(), seg.begin(), seg.end());
      query_tenant.push_back(tenant_of[i]);
    }
  }
  [[nodiscard]] std::span<const token_id> query(std::size_t q) const {
    return {query_tokens.data() + q * seg_len, seg_len};
  }
  [[nodiscard]] std::span<const token_id> segment(std::size_t i) const {
    return {tokens.data() + i * seg_len, seg_len};
  }
};

template <std::size_t N = 1'000'000>
fixture<N>& warm() {
  static fixture<N> f;
  return f;
}
using big = fixture<1'000'000>;

void BM_index_find(benchmark::State& state) {
  auto& f = warm();
  std::size_t j = static_cast<std::size_t>(state.thread_index()) * 1999;
  std::uint64_t sum = 0;
  for (auto _ : state) {
    const std::size_t q = j++ & (big::n_queries - 1);
    const auto v = f.index.find(f.tenants[f.query_tenant[q]], f.query(q));
    sum += *v;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

// The same find on a 16 Ki-entry index that fits in cache: the cost without DRAM misses.
void BM_index_find_cache_resident(benchmark::State& state) {
  auto& f = warm<16384>();
  std::size_t j = 0;
  std::uint64_t sum = 0;
  for (auto _ : state) {
    const std::size_t q = j++ & (big::n_queries - 1);
    sum += *f.index.find(f.tenants[f.query_tenant[q]], f.query(q));
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_unordered_map_unverified_find(benchmark::State& state) {
  auto& f = warm();
  std::size_t j = 0;
  std::uint64_t sum = 0;
  for (auto _ : state) {
    const std::size_t q = j++ & (big::n_queries - 1);
    const auto d = f.index.key_of(f.tenants[f.query_tenant[q]], f.query(q));
    sum += f.raw.find(d)->second;
  }
  benchmark::DoNotOptimize(sum);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_index_key_only(benchmark::State& state) {  // the hashing part of a find
  auto& f = warm();
  std::size_t j = 0;
  for (auto _ : state) {
    const std::size_t q = j++ & (big::n_queries - 1);
    benchmark::DoNotOptimize(f.index.key_of(f.tenants[f.query_tenant[q]], f.query(q)));
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
}

void BM_index_insert_erase(benchmark::State& state) {
  // Insert a fresh entry and erase it again (index stays at 10^6): 2 ops per iteration.
  auto& f = warm();
  const auto& ns = f.tenants[static_cast<std::size_t>(state.thread_index())];
  std::vector<token_id> t(seg_len);
  std::uint32_t c = 0x9000'0000u + static_cast<std::uint32_t>(state.thread_index()) * 0x100'0000u;
  for (auto _ : state) {
    t[0] = c++;
    f.index.insert(ns, t, 1);
    f.index.erase(ns, t);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 2);
}
}  // namespace

BENCHMARK(BM_index_key_only);
BENCHMARK(BM_unordered_map_unverified_find);
BENCHMARK(BM_index_find_cache_resident);
BENCHMARK(BM_index_find)->Threads(1)->Threads(2)->UseRealTime();
BENCHMARK(BM_index_insert_erase)->Threads(1)->Threads(2)->UseRealTime();
