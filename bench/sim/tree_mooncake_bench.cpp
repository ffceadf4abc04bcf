// SPDX-License-Identifier: Apache-2.0
// The request-path target of issue #24 on the trace where it is tightest: the library's row
// (`hybridcache`: both exact candidates and every faithful engine row in shadow, re-plans on, as
// in the tables of record) replayed over the public Mooncake conversation trace (12,031
// requests of 512-token blocks, docs/tree_simulation.md), at M = 64 and 1024 states, under
// unlimited, separate and joint KV (4 GiB, as the tables of record).
//
// Counters, per path block, from the replay's own clocks (`tree_metrics`, as `simulate` reports
// them): `decision_ns` is the time inside the row's calls, `replan_ns` the exact re-plans among
// them, and `request_path_ns` = decision − re-plans, the figure the target (≤ 1 µs per block)
// is about. Same-binary baselines in the same run:
//   BM_mooncake_noop      the replay with a policy that stores nothing: the simulator's own
//                         engine work per block (the wall time of every other row includes it);
//   BM_mooncake_exact     the exact policy alone (`hybridcache_exact`), re-plans on.
// BM_mooncake_row_shadows is the row again with `portfolio_policy::set_profile` on: one counter
// per candidate, `<name>_ns`, the time inside its shadow's calls per block, its re-plans and
// tuning taken out (`portfolio_stats::shadow_ns` − `replan_ns`), and `shadows_ns`, their sum. The
// profile's own clock reads make this row's `request_path_ns` a little higher than
// BM_mooncake_row's. BM_mooncake_row_nolru is the row without its third library candidate (the
// base-memory exact policy on LRU KV order, joint KV only: docs/design/tree_safeguard.md §22),
// the row before 2026-12-03, under the joint pool where the two differ.
// BM_mooncake_row_noprefill_base is the row without its unlimited-KV third candidate (the
// base-memory exact policy with the prefill-end prior: design note §23), the row before
// 2026-12-03 evening, under unlimited KV where the two differ.
// The trace is read from $HYBRIDCACHE_DATA_DIR/mooncake/conversation_trace.jsonl (else
// ../shared/data beside the source tree); each benchmark is skipped, with a message, when the
// file is absent. Build with the `bench` preset; run e.g.
//   build/bench/bench/sim/bench_sim_mooncake --benchmark_repetitions=3
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <hybridcache/sim/tree.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace hc = hybridcache;
namespace fs = std::filesystem;

namespace {

fs::path trace_path() {
  if (const char* d = std::getenv("HYBRIDCACHE_DATA_DIR"); d && *d)
    return fs::path(d) / "mooncake" / "conversation_trace.jsonl";
  return fs::path(HYBRIDCACHE_SOURCE_DIR) / ".." / "shared" / "data" / "mooncake" /
         "conversation_trace.jsonl";
}

/// The Mooncake trace as `simulate --tree mooncake` builds it: one request per record, its
/// `hash_ids` the blocks, `input_length` the prompt (all blocks when 0), the timestamp its
/// arrival. nullopt when the file is absent.
const std::optional<hc::tree_trace>& mooncake() {
  static const std::optional<hc::tree_trace> t = []() -> std::optional<hc::tree_trace> {
    std::ifstream in(trace_path());
    if (!in) return std::nullopt;
    hc::tree_trace_builder b("mooncake", 512);
    std::string line;
    std::vector<std::uint64_t> ids;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      const auto j = nlohmann::json::parse(line);
      ids = j.at("hash_ids").get<std::vector<std::uint64_t>>();
      const auto len = j.value("input_length", std::size_t{0});
      b.add_block_ids(ids, len == 0 ? ids.size() * 512 : len, std::nullopt,
                      j.value("timestamp", 0.0) / 1000.0);
    }
    return b.take();
  }();
  return t;
}

double blocks(const hc::tree_trace& t) {
  double b = 0;
  for (const auto& r : t.requests()) b += static_cast<double>(r.path.size());
  return b;
}

struct noop final : hc::tree_policy {
  std::string name() const override { return "noop"; }
  void reset(const hc::tree_context&) override {}
  std::size_t resume(const hc::tree_step&) override { return 0; }
  void finish(const hc::tree_step&) override {}
};

hc::tree_cost_model cost_of(std::int64_t mode) {
  hc::tree_cost_model c;
  c.kv.mode =
      mode == 0 ? hc::kv_mode::unlimited : (mode == 1 ? hc::kv_mode::separate : hc::kv_mode::joint);
  if (mode != 0) c.kv.bytes = 4.0 * 1024 * 1024 * 1024;
  return c;
}

/// One replay per iteration of `make()`'s policy at M = range(1) under KV mode range(0) (0
/// unlimited, 1 separate, 2 joint); the counters are the last replay's, per block.
/// Called with the last replay's policy after the loop (extra counters).
template <class Make, class After = void (*)(benchmark::State&, hc::tree_policy&, double)>
void replay(
    benchmark::State& st, Make make,
    After after = [](benchmark::State&, hc::tree_policy&, double) {}) {
  const auto& t = mooncake();
  if (!t) {
    st.SkipWithError(("Mooncake trace absent: " + trace_path().string()).c_str());
    return;
  }
  const auto cost = cost_of(st.range(0));
  const auto budget = static_cast<std::size_t>(st.range(1));
  const auto usable = hc::usable_matches(*t, cost);
  hc::tree_metrics m;
  std::unique_ptr<hc::tree_policy> p;
  for (auto _ : st) {
    p = make(cost);
    m = hc::replay_tree(*t, *p, budget, usable, cost);
    benchmark::DoNotOptimize(m);
  }
  after(st, *p, blocks(*t));
  st.counters["decision_ns"] = m.decision_ns_per_block;
  st.counters["replan_ns"] = m.replan_ns_per_block;
  st.counters["request_path_ns"] = m.decision_ns_per_block - m.replan_ns_per_block;
  st.SetItemsProcessed(
      static_cast<std::int64_t>(static_cast<double>(st.iterations()) * blocks(*t)));
}

void BM_mooncake_noop(benchmark::State& st) {
  replay(st, [](const hc::tree_cost_model&) { return std::make_unique<noop>(); });
}

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY

/// `replay` of the simulator's policy called `name` (`make_tree_policy`).
void replay_named(benchmark::State& st, const char* name) {
  replay(st, [name](const hc::tree_cost_model& c) {
    hc::tree_options o;
    o.cost = c;
    return hc::make_tree_policy(name, o);
  });
}

void BM_mooncake_exact(benchmark::State& st) { replay_named(st, "hybridcache_exact"); }
void BM_mooncake_row(benchmark::State& st) { replay_named(st, "hybridcache"); }
void BM_mooncake_row_nolru(benchmark::State& st) { replay_named(st, "hybridcache_nolru"); }
void BM_mooncake_row_noprefill_base(benchmark::State& st) {
  replay_named(st, "hybridcache_noprefill_base");
}

void BM_mooncake_row_shadows(benchmark::State& st) {
  replay(
      st,
      [](const hc::tree_cost_model& c) {
        hc::tree_options o;
        o.cost = c;
        auto p = hc::make_tree_policy("hybridcache", o);
        dynamic_cast<hc::portfolio_policy&>(*p).set_profile(true);
        return p;
      },
      [](benchmark::State& s, hc::tree_policy& p, double n) {
        const auto stats = dynamic_cast<const hc::portfolio_policy&>(p).stats();
        double sum = 0.0;
        for (std::size_t c = 0; c < stats.candidates.size(); ++c) {
          const double ns = (stats.shadow_ns[c] - stats.replan_ns[c]) / n;
          s.counters[stats.candidates[c] + "_ns"] = ns;
          sum += ns;
        }
        s.counters["shadows_ns"] = sum;
      });
}
#endif

void args(benchmark::internal::Benchmark* b) {
  b->ArgNames({"kv", "M"});
  for (std::int64_t mode : {0, 1, 2})
    for (std::int64_t m : {64, 1024}) b->Args({mode, m});
  b->Unit(benchmark::kMillisecond);
}

BENCHMARK(BM_mooncake_noop)->Apply(args);
#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
BENCHMARK(BM_mooncake_exact)->Apply(args);
BENCHMARK(BM_mooncake_row)->Apply(args);
BENCHMARK(BM_mooncake_row_nolru)
    ->ArgNames({"kv", "M"})
    ->Args({2, 64})
    ->Args({2, 1024})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mooncake_row_noprefill_base)
    ->ArgNames({"kv", "M"})
    ->Args({0, 64})
    ->Args({0, 1024})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mooncake_row_shadows)
    ->ArgNames({"kv", "M"})
    ->Args({0, 1024})
    ->Args({2, 1024})
    ->Unit(benchmark::kMillisecond);
#endif

}  // namespace
