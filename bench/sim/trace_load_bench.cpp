// SPDX-License-Identifier: Apache-2.0
// Loading block-hash (Mooncake `hash_ids`) traces whose ids are crafted to collide under the
// identity std::hash of libstdc++ (issue #21 item 2), against random ids, n ids per load.
//
//   BM_block_hash_trace/{crafted,random}   build_block_hash_trace (sim/builders.hpp), its id table
//                                          keyed by keyed_hash; one record of n ids, 16-token
//                                          blocks
//   BM_tree_block_ids/{crafted,random}     tree_trace_builder::add_block_ids (sim/tree/trace.hpp),
//                                          one chain of n ids
// Same-binary baselines — the tables these loaders used before #21, same keys, same operations:
//   BM_legacy_block_hash_table/...         std::unordered_map<uint64_t, uint32_t> (identity hash)
//                                          find + emplace per id
//   BM_legacy_tree_id_table/...            the old (parent << 32) ^ id·φ key, identity hash,
//                                          vector buckets scanned for (id, parent)
// Crafted ids: for the block table, multiples of the bucket count a table of n ids ends with; for
// the tree table, ids whose old key is such a multiple at every parent of the chain.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <hybridcache/sim/builders.hpp>
#include <hybridcache/sim/tree/trace.hpp>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

namespace hc = hybridcache;

namespace {

constexpr std::uint64_t phi = 0x9E3779B97F4A7C15ULL;
constexpr std::uint64_t inverse_odd(std::uint64_t a) {
  std::uint64_t x = a;
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}
constexpr std::uint64_t phi_inv = inverse_odd(phi);
static_assert(phi * phi_inv == 1);

// The bucket count an unreserved std::unordered_map settles on after n distinct inserts.
std::uint64_t final_buckets(std::size_t n) {
  std::unordered_map<std::uint64_t, std::uint32_t> m;
  for (std::size_t i = 0; i < n; ++i) m.emplace(i, 0u);
  return m.bucket_count();
}

std::vector<std::uint64_t> block_ids(std::size_t n, bool crafted) {
  std::vector<std::uint64_t> ids(n);
  const std::uint64_t b = final_buckets(n);
  std::mt19937_64 rng(7);
  for (std::size_t i = 0; i < n; ++i) ids[i] = crafted ? (i + 1) * b : rng();
  return ids;
}

// Chain ids for tree_trace_builder: node i+1 is the child of node i (node 0 the root), and the old
// key (parent << 32) ^ id·φ of every step is a multiple of the final bucket count.
std::vector<std::uint64_t> chain_ids(std::size_t n, bool crafted) {
  if (!crafted) return block_ids(n, false);
  std::vector<std::uint64_t> ids(n);
  const std::uint64_t b = final_buckets(n);
  for (std::size_t i = 0; i < n; ++i)
    ids[i] = (((i + 1) * b) ^ (static_cast<std::uint64_t>(i) << 32)) * phi_inv;
  return ids;
}

constexpr std::size_t block = 16;

void BM_block_hash_trace(benchmark::State& state, bool crafted) {
  const auto n = static_cast<std::size_t>(state.range(0));
  std::vector<hc::block_hash_record> rec(1);
  rec[0].hash_ids = block_ids(n, crafted);
  for (auto _ : state) {
    auto t = hc::build_block_hash_trace("bench", rec, block);
    benchmark::DoNotOptimize(t.requests().size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void BM_tree_block_ids(benchmark::State& state, bool crafted) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto ids = chain_ids(n, crafted);
  for (auto _ : state) {
    hc::tree_trace_builder b("bench", block);
    b.add_block_ids(ids, n * block);
    benchmark::DoNotOptimize(b.trace().requests().size());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void BM_legacy_block_hash_table(benchmark::State& state, bool crafted) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto ids = block_ids(n, crafted);
  for (auto _ : state) {
    std::unordered_map<std::uint64_t, std::uint32_t> full;
    std::uint32_t next = 0;
    for (const auto h : ids) {
      auto it = full.find(h);
      if (it == full.end()) it = full.emplace(h, next++).first;
      benchmark::DoNotOptimize(it->second);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

void BM_legacy_tree_id_table(benchmark::State& state, bool crafted) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const auto ids = chain_ids(n, crafted);
  for (auto _ : state) {
    std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::uint32_t>>> by_id;
    std::vector<std::uint32_t> parent{0xFFFFFFFFu};  // node 0: the root
    std::uint32_t prev = 0;
    for (const auto id : ids) {
      const auto key = (static_cast<std::uint64_t>(prev) << 32) ^ (id * phi);
      auto& bucket = by_id[key];
      std::uint32_t found = 0xFFFFFFFFu;
      for (auto [i, node] : bucket)
        if (i == id && parent[node] == prev) found = node;
      if (found == 0xFFFFFFFFu) {
        found = static_cast<std::uint32_t>(parent.size());
        parent.push_back(prev);
        bucket.emplace_back(id, found);
      }
      prev = found;
    }
    benchmark::DoNotOptimize(prev);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
}

}  // namespace

BENCHMARK_CAPTURE(BM_block_hash_trace, crafted, true)
    ->RangeMultiplier(10)
    ->Range(100000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_block_hash_trace, random, false)
    ->RangeMultiplier(10)
    ->Range(100000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_tree_block_ids, crafted, true)
    ->RangeMultiplier(10)
    ->Range(100000, 1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_tree_block_ids, random, false)
    ->RangeMultiplier(10)
    ->Range(100000, 1000000)
    ->Unit(benchmark::kMillisecond);
// The legacy tables are quadratic on crafted ids: 10⁵ and 2·10⁵ only (10⁶ takes minutes).
BENCHMARK_CAPTURE(BM_legacy_block_hash_table, crafted, true)
    ->Arg(100000)
    ->Arg(200000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_legacy_block_hash_table, random, false)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_legacy_tree_id_table, crafted, true)
    ->Arg(100000)
    ->Arg(200000)
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_legacy_tree_id_table, random, false)
    ->Arg(100000)
    ->Arg(1000000)
    ->Unit(benchmark::kMillisecond);
