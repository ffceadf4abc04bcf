// SPDX-License-Identifier: Apache-2.0
// state_policy on the request path: ns per block of one request's calls (match,
// prefill_plan, insert, admit of the planned snapshots, unpin), re-plans excluded, beside the
// chained block hashing alone (block_keys over the same tokens) as the same-binary
// baseline — the work any engine does to find its cached prefix. Also: bookkeeping bytes per
// node, and one re-plan on the grown tree.
//
// Workload: 64 sessions of multi-turn chat over 4 shared system prompts; turn t+1 extends turn
// t's input + output; block size 16; a pool of 256 states, so eviction runs on most requests.
// `policy_per_block_fresh`: prompts that are mostly new blocks, a tree of about a million nodes.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <random>
#include <span>
#include <vector>

#include <hybridcache/segment/keys.hpp>
#include <hybridcache/tree.hpp>

namespace hc = hybridcache;

namespace {

constexpr std::size_t block = 16;

struct workload {
  std::vector<std::vector<hc::token_id>> requests;
  std::vector<std::vector<std::size_t>> user_starts;  ///< per request (make_workload only)
  std::size_t blocks = 0;
};

workload make_workload(std::size_t n_requests) {
  std::mt19937 rng(7);
  std::vector<std::vector<hc::token_id>> system(4), sessions(64);
  std::vector<std::vector<std::size_t>> starts(64);
  for (auto& s : system)
    for (int i = 0; i < 512; ++i) s.push_back(static_cast<hc::token_id>(rng() % 50000));
  workload w;
  for (std::size_t r = 0; r < n_requests; ++r) {
    const std::size_t k = rng() % sessions.size();
    auto& s = sessions[k];
    if (s.empty() || s.size() > 6000) {
      s = system[rng() % system.size()];
      starts[k].clear();
    }
    starts[k].push_back(s.size());             // this turn's user message starts here
    const std::size_t add = 64 + rng() % 512;  // user turn + previous answer
    for (std::size_t i = 0; i < add; ++i) s.push_back(static_cast<hc::token_id>(rng() % 50000));
    w.requests.push_back(s);
    w.user_starts.push_back(starts[k]);
    w.blocks += s.size() / block;
  }
  return w;
}

void one_request(hc::state_policy& pol, const hc::namespace_key& ns,
                 const std::vector<hc::token_id>& prompt, std::vector<std::size_t>& chunks) {
  auto m = pol.match(ns, prompt);
  chunks.clear();
  for (std::size_t p = m.resume_tokens + 2048; p < prompt.size(); p += 2048) chunks.push_back(p);
  chunks.push_back(prompt.size() / block * block);
  const auto snaps = pol.prefill_plan(m, prompt.size(), chunks);
  const auto path = pol.insert(ns, prompt);
  for (std::size_t p : snaps) (void)pol.admit(path[p / block - 1], 1);
  pol.unpin(m.resume_node);
}

// One timed replay of `w` per iteration on a fresh policy of `capacity` states, reserved for the
// nodes a dry run grows, so the timed runs never grow the index: ns per block, nodes, bytes.
void replay_per_block(benchmark::State& state, const workload& w, std::size_t capacity) {
  const hc::namespace_key ns{};
  std::vector<std::size_t> chunks;
  double nodes = 0, bytes = 0;
  std::size_t grown = 0;
  {  // dry run: how many nodes the workload grows, so the timed runs reserve exactly that
    hc::state_policy pol({.block_size = block, .capacity_bytes = capacity, .replan_every = 0});
    for (const auto& r : w.requests) one_request(pol, ns, r, chunks);
    grown = pol.node_count();
  }
  for (auto _ : state) {
    hc::state_policy pol(
        {.block_size = block, .state_bytes = 1, .capacity_bytes = capacity, .replan_every = 0});
    pol.reserve(grown);
    for (const auto& r : w.requests) one_request(pol, ns, r, chunks);
    nodes = static_cast<double>(pol.node_count());
    bytes = static_cast<double>(pol.bookkeeping_bytes());
  }
  state.counters["ns_per_block"] = benchmark::Counter(
      static_cast<double>(w.blocks) * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["nodes"] = nodes;
  state.counters["bytes_per_node"] = bytes / nodes;
}

void policy_per_block(benchmark::State& state) {
  replay_per_block(state, make_workload(2000), static_cast<std::size_t>(state.range(0)));
  state.SetLabel("match+plan+insert+admit/evict+unpin");
}

// A large tree of mostly new blocks (a production-style trace, as Mooncake's, where most of a
// prompt is new): 16 shared system prompts of 512 tokens, each request one of them plus 2,048
// new tokens, 8,000 requests, about a million nodes, far beyond the caches. The walk that creates
// a prompt's new blocks dominates, so this is where the index's memory traffic shows; the pool
// holds 1,024 states.
workload make_fresh_workload(std::size_t n_requests) {
  std::mt19937 rng(13);
  std::vector<std::vector<hc::token_id>> system(16);
  for (auto& s : system)
    for (int i = 0; i < 512; ++i) s.push_back(static_cast<hc::token_id>(rng() % 50000));
  workload w;
  for (std::size_t r = 0; r < n_requests; ++r) {
    auto s = system[rng() % system.size()];
    for (int i = 0; i < 2048; ++i) s.push_back(static_cast<hc::token_id>(rng() % 50000));
    w.blocks += s.size() / block;
    w.requests.push_back(std::move(s));
  }
  return w;
}

void policy_per_block_fresh(benchmark::State& state) {
  replay_per_block(state, make_fresh_workload(8000), 1024);
  state.SetLabel("mostly new blocks, ~1M nodes");
}

void hashing_per_block(benchmark::State& state) {
  const auto w = make_workload(2000);
  const hc::namespace_key ns{};
  const hc::xxh3_hash hash;
  for (auto _ : state)
    for (const auto& r : w.requests) benchmark::DoNotOptimize(hc::block_keys(hash, ns, r, block));
  state.counters["ns_per_block"] = benchmark::Counter(
      static_cast<double>(w.blocks) * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetLabel("baseline: chained block keys only");
}

// A pool of 256 states (full) after the workload's requests, re-plans off: the policy the
// re-plan and branch-point benchmarks time.
hc::state_policy taught(const workload& w) {
  std::vector<std::size_t> chunks;
  hc::state_policy pol(
      {.block_size = block, .state_bytes = 1, .capacity_bytes = 256, .replan_every = 0});
  for (const auto& r : w.requests) one_request(pol, hc::namespace_key{}, r, chunks);
  return pol;
}

void replan(benchmark::State& state) {
  auto pol = taught(make_workload(2000));
  for (auto _ : state) benchmark::DoNotOptimize(pol.replan());
  state.counters["nodes"] = static_cast<double>(pol.node_count());
}

// The branch point of each request, after the workload has taught the policy where requests
// leave cached paths (a pool of 256 states, full): the learned one (`branch_point`, over every
// block-grid chunk end past the resume, with its victim search when the pool is full) beside the
// one from the request's user-message starts (`message_branch_point`, one pass over the starts).
// ns per request; the matches are taken once, before timing.
void branch_point_per_request(benchmark::State& state) {
  const bool messages = state.range(0) == 1;
  const auto w = make_workload(2000);
  const hc::namespace_key ns{};
  auto pol = taught(w);
  std::vector<hc::match_result> ms;
  std::vector<std::vector<std::size_t>> grids;
  for (const auto& r : w.requests) {
    ms.push_back(pol.match(ns, std::span<const hc::token_id>(r).first(r.size() - 1)));
    pol.unpin(ms.back().resume_node);
    auto& g = grids.emplace_back();
    for (std::size_t p = (ms.back().resume_tokens / block + 1) * block; p <= r.size(); p += block)
      g.push_back(p);
  }
  std::size_t found = 0;
  for (auto _ : state) {
    found = 0;
    for (std::size_t i = 0; i < ms.size(); ++i) {
      const std::size_t P = w.requests[i].size();
      const auto q = messages ? pol.message_branch_point(ms[i], P, w.user_starts[i])
                              : pol.branch_point(ms[i], P, grids[i]);
      found += q.has_value();
      benchmark::DoNotOptimize(q);
    }
  }
  state.counters["ns_per_request"] = benchmark::Counter(
      static_cast<double>(ms.size()) * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["found"] = static_cast<double>(found);
  state.SetLabel(messages ? "message_branch_point (user starts)"
                          : "branch_point (learned, every grid end)");
}

}  // namespace

BENCHMARK(branch_point_per_request)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);
BENCHMARK(policy_per_block)->Arg(256)->Arg(1 << 20)->Unit(benchmark::kMillisecond);
BENCHMARK(policy_per_block_fresh)->Unit(benchmark::kMillisecond);
BENCHMARK(hashing_per_block)->Unit(benchmark::kMillisecond);
BENCHMARK(replan)->Unit(benchmark::kMillisecond);
