// SPDX-License-Identifier: Apache-2.0
// Tree scenario replay cost: one full replay of the embedded synthetic multi-turn trace (400
// sessions, 2250 requests, 17.5k nodes of 64 tokens) per iteration, per policy, budget M = 64.
// Items processed = path blocks, so items/s is the per-block decision rate of engine + policy.
//
// Same-binary baselines:
//   BM_tree_match_only  the engine's match/insert walk alone (usable_matches): what every
//                       policy pays before deciding anything;
//   BM_tree_noop        the replay with a policy that never stores a state (engine overhead).
// BM_tree_library_no_replan is the library's policy with automatic re-plans off (its request-path
// cost), BM_tree_row_no_replan the library's row of 0.2.0 with re-plans off (two exact
// candidates with default options and the shadows; the row has changed since:
// BM_tree_row_request_path times the row as the tables run it, its request path apart from its
// re-plans); BM_tree_policy/hybridcache_base is the policy before the fresh-end prior and
// work-bounded re-plans (re-plan every 10 observations), BM_tree_policy/hybridcache_prev the
// previous default (before the junction prior, repeat discount, pool-scaled window and admission
// by value); the other hybridcache_* rows drop one option each (sim/tree/simulate.hpp).
// Since issue #24 BM_tree_policy/hybridcache is the library's row with every faithful engine row
// in shadow (sim/tree/portfolio.hpp); /hybridcache_exact is the exact policy alone. After 0.2.0
// the row also runs the exact policy with the pool-scaled memory (/hybridcache_pool_memory
// alone); /hybridcache_one_memory is the row without it.
#include <benchmark/benchmark.h>

#include <cstddef>
#include <hybridcache/sim/tree.hpp>
#include <hybridcache/sim/tree/families.hpp>
#include <hybridcache/sim/tree/lanes.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace hc = hybridcache;

namespace {

const hc::tree_trace& trace() {
  static const auto t = hc::synthetic_multi_turn();
  return t;
}

double blocks() {
  double b = 0;
  for (const auto& r : trace().requests()) b += static_cast<double>(r.path.size());
  return b;
}

void BM_tree_match_only(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(hc::usable_matches(trace()));
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}
BENCHMARK(BM_tree_match_only)->Unit(benchmark::kMillisecond);

struct noop final : hc::tree_policy {
  std::string name() const override { return "noop"; }
  void reset(const hc::tree_context&) override {}
  std::size_t resume(const hc::tree_step&) override { return 0; }
  void finish(const hc::tree_step&) override {}
};

void BM_tree_noop(benchmark::State& st) {
  const auto usable = hc::usable_matches(trace());
  for (auto _ : st) {
    noop p;
    benchmark::DoNotOptimize(hc::replay_tree(trace(), p, 64, usable));
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}
BENCHMARK(BM_tree_noop)->Unit(benchmark::kMillisecond);

void BM_tree_policy(benchmark::State& st, std::string name, std::size_t budget) {
  const auto usable = hc::usable_matches(trace());
  const hc::tree_options o;
  for (auto _ : st) {
    auto p = hc::make_tree_policy(name, o, 1.0);
    benchmark::DoNotOptimize(hc::replay_tree(trace(), *p, budget, usable));
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
// The library's policy with automatic re-plans off: its request-path cost alone (the issue's
// "≤ 1 µs per block, excluding re-plans"), at M = 64 and M = 1024 states.
void BM_tree_library_no_replan(benchmark::State& st) {
  const auto budget = static_cast<std::size_t>(st.range(0));
  const auto usable = hc::usable_matches(trace());
  hybridcache::policy_options o;
  o.replan_every = 0;
  for (auto _ : st) {
    hc::library_policy p(o);
    benchmark::DoNotOptimize(hc::replay_tree(trace(), p, budget, usable));
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}
BENCHMARK(BM_tree_library_no_replan)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

using candidates = std::vector<std::unique_ptr<hybridcache::tree_policy>>;

// One replay per iteration of a portfolio over `make()`'s candidates, at M = st.range(0).
template <class Make>
void replay_portfolio(benchmark::State& st, Make make) {
  const auto budget = static_cast<std::size_t>(st.range(0));
  const auto usable = hc::usable_matches(trace());
  for (auto _ : st) {
    hybridcache::portfolio_policy p(make());
    benchmark::DoNotOptimize(hc::replay_tree(trace(), p, budget, usable));
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}

// The row's candidates of 0.2.0 with automatic re-plans off in both exact candidates (default
// options in both; today's row hedges its options between three library candidates:
// BM_tree_row_request_path). Kept so that figures quoted before stay comparable.
candidates row_no_replan(const hc::tree_options& o) {
  hybridcache::policy_options lib;
  lib.replan_every = 0;
  candidates c;
  c.push_back(std::make_unique<hybridcache::library_policy>(lib));
  c.push_back(std::make_unique<hybridcache::library_policy>(lib, "hybridcache_pool_memory", true));
  for (auto f : hybridcache::faithful_tree_policy_names) c.push_back(hc::make_tree_policy(f, o));
  return c;
}

// The library's row (issue #24) with automatic re-plans off in both exact candidates: the
// request path with every engine row in shadow, in one figure (the issue's "≤ 1 µs per block
// amortised with the shadows included, re-plans counted separately"), at M = 64 and 1024.
void BM_tree_row_no_replan(benchmark::State& st) {
  const hc::tree_options o;
  replay_portfolio(st, [&] { return row_no_replan(o); });
}
BENCHMARK(BM_tree_row_no_replan)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

// The row with re-plans off under a KV budget of a quarter of the trace's blocks, in `mode`.
void replay_row_kv(benchmark::State& st, hc::kv_mode mode) {
  hc::tree_options o;
  o.cost.kv.mode = mode;
  o.cost.kv.bytes = 0.25 * static_cast<double>(trace().node_count() * trace().block()) *
                    o.cost.model.kv_bytes_per_token();
  const auto budget = static_cast<std::size_t>(st.range(0));
  const auto usable = hc::usable_matches(trace(), o.cost);
  for (auto _ : st) {
    hybridcache::portfolio_policy p(row_no_replan(o));
    benchmark::DoNotOptimize(hc::replay_tree(trace(), p, budget, usable, o.cost));
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}

// The same under a separate KV budget of a quarter of the trace's blocks (it binds: every
// shadow's KV bookkeeping evicts), at M = 64 and 1024.
void BM_tree_row_no_replan_separate(benchmark::State& st) {
  replay_row_kv(st, hc::kv_mode::separate);
}
BENCHMARK(BM_tree_row_no_replan_separate)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

// The same under a joint budget (one pool for that KV and the M states): the states decide what
// KV fits, so every shadow keeps its own KV bookkeeping (no shared_kv), at M = 64 and 1024.
void BM_tree_row_no_replan_joint(benchmark::State& st) { replay_row_kv(st, hc::kv_mode::joint); }
BENCHMARK(BM_tree_row_no_replan_joint)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

// The row's simulator harness alone: the portfolio with as many candidates as the row, each a
// policy that decides nothing (`noop`). What remains is what the simulator does per shadow
// whatever the candidates decide (each shadow's replayer and its copy of the KV bookkeeping) and
// the portfolio's scoring; BM_tree_row_no_replan minus this is the candidates' decisions and the
// real pool's hand-over.
void BM_tree_row_harness(benchmark::State& st) {
  replay_portfolio(st, [] {
    candidates c;
    for (std::size_t i = 0; i < 2 + hybridcache::faithful_tree_policy_names.size(); ++i)
      c.push_back(std::make_unique<noop>());
    return c;
  });
}
BENCHMARK(BM_tree_row_harness)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

// The library's row exactly as the tables run it (`make_tree_policy`: every candidate of the KV
// mode, re-plans on), unlimited KV, M = range(0), with the replay's own clocks as counters per
// path block (as `simulate` reports them): `decision_ns` inside the row's calls, `replan_ns` the
// exact re-plans among them, `request_path_ns` = decision − re-plans, the figure of issue #24's
// ≤ 1 µs target. BM_tree_row_request_path/hybridcache_noprefill_base is the row without its
// unlimited-KV third candidate (the base-memory exact policy with the prefill-end prior,
// docs/design/tree_safeguard.md §23), the row before 2026-12-03, in the same binary.
// (BM_tree_row_no_replan above keeps an older composition of two library candidates.)
void BM_tree_row_request_path(benchmark::State& st, std::string name) {
  const auto budget = static_cast<std::size_t>(st.range(0));
  const auto usable = hc::usable_matches(trace());
  const hc::tree_options o;
  hc::tree_metrics m;
  for (auto _ : st) {
    auto p = hc::make_tree_policy(name, o);
    m = hc::replay_tree(trace(), *p, budget, usable);
    benchmark::DoNotOptimize(m);
  }
  st.counters["decision_ns"] = m.decision_ns_per_block;
  st.counters["replan_ns"] = m.replan_ns_per_block;
  st.counters["request_path_ns"] = m.decision_ns_per_block - m.replan_ns_per_block;
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}
BENCHMARK_CAPTURE(BM_tree_row_request_path, hybridcache, std::string("hybridcache"))
    ->Arg(64)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_tree_row_request_path, hybridcache_noprefill_base,
                  std::string("hybridcache_noprefill_base"))
    ->Arg(64)
    ->Arg(1024)
    ->Unit(benchmark::kMillisecond);

// The library's row (issue #24) without the Marconi candidate: the cost of the shadows when the
// one expensive engine row (its alpha-tuning replays and min-max scans) is left out. Compare with
// BM_tree_policy/hybridcache (all eleven engine rows in shadow) and /hybridcache_exact (none).
// (It keeps the 0.2.0 composition, one library candidate.)
void BM_tree_portfolio_no_marconi(benchmark::State& st) {
  const auto usable = hc::usable_matches(trace());
  const hc::tree_options o;
  for (auto _ : st) {
    std::vector<std::unique_ptr<hybridcache::tree_policy>> c;
    c.push_back(std::make_unique<hybridcache::library_policy>());
    for (auto f : hybridcache::faithful_tree_policy_names)
      if (f != "marconi") c.push_back(hybridcache::make_tree_policy(f, o));
    hybridcache::portfolio_policy p(std::move(c));
    benchmark::DoNotOptimize(hc::replay_tree(trace(), p, 64, usable));
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations() * blocks()));
}
BENCHMARK(BM_tree_portfolio_no_marconi)->Unit(benchmark::kMillisecond);
#endif

// llama.cpp's prompt cache (`--cache-ram`) at scale: the prompt-library family (hundreds of
// applications' system prompts, conversations under them) under a separate 4 GiB KV budget and
// M states, where the `llamacpp_cache_ram` row's cache holds thousands of entries sharing their
// leading blocks and KV evictions drop states those entries list. Its indexes (save, load,
// on_dropped, the oldest checkpoint) replaced scans of every entry in 2026-11.
void BM_tree_prompt_cache(benchmark::State& st) {
  static const auto t = hc::tree_family("prompt-library", 64, {.sessions = 0, .seed = 7});
  const auto budget = static_cast<std::size_t>(st.range(0));
  hc::tree_cost_model cost;
  cost.kv.mode = hc::kv_mode::separate;
  cost.kv.bytes = 4.0 * 1024 * 1024 * 1024;
  const auto usable = hc::usable_matches(t, cost);
  hc::tree_options o;
  o.cost = cost;
  double b = 0;
  for (const auto& r : t.requests()) b += static_cast<double>(r.path.size());
  for (auto _ : st) {
    auto p = hc::make_tree_policy("llamacpp_cache_ram", o);
    benchmark::DoNotOptimize(hc::replay_tree(t, *p, budget, usable, cost));
  }
  st.SetItemsProcessed(static_cast<std::int64_t>(static_cast<double>(st.iterations()) * b));
}
BENCHMARK(BM_tree_prompt_cache)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

// The KV bookkeeping of the row's shadows under a joint budget, at scale: eight replayers'
// block trees (the LRU shadows: vLLM's three rows, TRT-LLM, SGLang without buffer, Marconi, the
// two llama.cpp rows) on the rag family (3,000 sessions, 16-token blocks: about a million
// nodes), each trimmed after every allocation to its own budget of about 5,461 blocks (the
// count 4 GiB holds in the tables of record) less a share that moves as its states would.
// Arg 0: a block tree per replayer (leaf heap, child counts); arg 1: lanes of one shared order
// (`lru_lanes`, sim/tree/lanes.hpp). Both evict the same blocks (`evicted_per_tree`). Items =
// blocks allocated, all trees.
void BM_joint_kv_trees(benchmark::State& st) {
  static const auto t = hc::tree_family("rag", 16, {.sessions = 3000, .seed = 7});
  const bool lanes = st.range(0) != 0;
  constexpr std::size_t trees = 8, base = 5461;
  double b = 0;
  for (const auto& r : t.requests()) b += static_cast<double>(r.path.size());
  for (auto _ : st) {
    std::unique_ptr<hc::lru_lanes> shared;
    if (lanes) shared = std::make_unique<hc::lru_lanes>(t);
    std::vector<hc::block_tree> tr(trees);
    for (auto& x : tr) {
      x.reset(t.node_count(), true);
      if (lanes) x.join(*shared);
    }
    std::size_t evicted = 0, step = 0;
    for (const auto& r : t.requests()) {
      ++step;
      for (std::size_t i = 0; i < trees; ++i) {
        const auto guard = tr[i].insert(t, r.path);
        const std::size_t cap = base - (i * 37 + step * 13) % 400;
        while (tr[i].blocks() > cap && tr[i].evict_lru_leaf(t, guard) != hc::tree_trace::no_parent)
          ++evicted;
      }
    }
    benchmark::DoNotOptimize(evicted);
    st.counters["evicted_per_tree"] = static_cast<double>(evicted) / trees;
  }
  st.counters["nodes"] = static_cast<double>(t.node_count());
  st.SetItemsProcessed(static_cast<std::int64_t>(static_cast<double>(st.iterations()) * b *
                                                 static_cast<double>(trees)));
}
BENCHMARK(BM_joint_kv_trees)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

const int registered = [] {
  for (auto name : hc::tree_policy_names) {
    benchmark::RegisterBenchmark(("BM_tree_policy/" + std::string(name)).c_str(), BM_tree_policy,
                                 std::string(name), std::size_t{64})
        ->Unit(benchmark::kMillisecond);
  }
  for (auto name : hc::tree_policy_variants) {  // the library's ablations (same binary)
    benchmark::RegisterBenchmark(("BM_tree_policy/" + std::string(name)).c_str(), BM_tree_policy,
                                 std::string(name), std::size_t{64})
        ->Unit(benchmark::kMillisecond);
  }
#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
  // M = 1024: the pool is mostly free for a long time, so fill_free admits the most there.
  // hybridcache_exact, hybridcache_pool_memory and hybridcache_shadows split the row: the exact
  // policy at its two memories (with re-plans; BM_tree_library_no_replan/1024 without) and the
  // eleven engine rows in shadow; hybridcache_one_memory is the 0.2.0 row (no long memory).
  for (std::string_view name :
       {"hybridcache", "hybridcache_one_memory", "hybridcache_exact", "hybridcache_pool_memory",
        "hybridcache_shadows", "hybridcache_nofill", "sglang_extra_buffer"}) {
    benchmark::RegisterBenchmark(("BM_tree_policy_M1024/" + std::string(name)).c_str(),
                                 BM_tree_policy, std::string(name), std::size_t{1024})
        ->Unit(benchmark::kMillisecond);
  }
#endif
  return 0;
}();

}  // namespace
