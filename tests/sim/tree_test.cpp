// SPDX-License-Identifier: Apache-2.0
// The tree scenario: traces, the replay engine and every engine policy on hand-built traces whose
// behaviour is worked out by hand in the comments; the usable match against a brute-force
// longest-common-prefix reference; budget and namespace invariants on the synthetic workload.
#include <doctest/doctest.h>

#include <algorithm>
#include <hybridcache/sim/tree.hpp>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace sim = hybridcache::sim;

namespace {

using tokens = std::vector<sim::token_id>;

tokens iota_tokens(sim::token_id first, std::size_t n) {
  tokens t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}
tokens cat(tokens a, const tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

struct run_result {
  std::vector<std::size_t> resumes;
  std::vector<std::vector<bool>> held;  // per request: held[j] = state at path[j] after it
  sim::tree_metrics metrics;
};

run_result run(const sim::tree_trace& t, sim::tree_policy& p, std::size_t budget) {
  const auto usable = sim::usable_matches(t);
  sim::tree_replayer r(t, p, budget, usable);
  run_result out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    REQUIRE(r.step());
    out.resumes.push_back(r.last_resume());
    std::vector<bool> h;
    for (auto v : t.requests()[i].path) h.push_back(r.pool().holds(v));
    out.held.push_back(h);
  }
  CHECK_FALSE(r.step());
  out.metrics = r.metrics();
  return out;
}

// Independent reference: the usable match of every request by brute force over token vectors
// (longest common prefix with any earlier request of the same namespace, full blocks only,
// capped at ⌊(P − 1)/B⌋).
std::vector<std::size_t> brute_usable(const std::vector<tokens>& reqs,
                                      const std::vector<std::size_t>& prompt,
                                      const std::vector<std::string>& ns, std::size_t B) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    std::size_t best = 0;
    for (std::size_t j = 0; j < i; ++j) {
      if (ns[j] != ns[i]) continue;
      std::size_t l = 0;
      const std::size_t full_j = reqs[j].size() / B * B;  // only full blocks are nodes
      while (l < reqs[i].size() && l < full_j && reqs[i][l] == reqs[j][l]) ++l;
      best = std::max(best, l / B);
    }
    out.push_back(std::min(best, (prompt[i] - 1) / B));
  }
  return out;
}

}  // namespace

TEST_CASE("tree trace: block trie, partial blocks, namespaces never share nodes") {
  sim::tree_trace_builder b("t", 4);
  const tokens x = iota_tokens(1, 10);  // blocks [1..4] [5..8] + partial [9 10]
  b.add_tokens(x, 10, std::string("a"));
  b.add_tokens(x, 10, std::string("b"));
  b.add_tokens(x, 10, std::string("a"));
  b.add_tokens(x, 10);  // default namespace, distinct from every named one
  const auto& t = b.trace();
  REQUIRE(t.size() == 4);
  CHECK(t.requests()[0].path.size() == 2);
  CHECK(t.requests()[0].path == t.requests()[2].path);
  for (auto v : t.requests()[0].path) {
    for (auto w : t.requests()[1].path) CHECK(v != w);
    for (auto w : t.requests()[3].path) CHECK(v != w);
  }
  CHECK(t.namespace_count() == 3);
  CHECK(t.node_count() == 3 + 3 * 2);
  CHECK(t.depth(t.requests()[0].path[1]) == 2);
  const auto u = sim::usable_matches(t);
  CHECK(u == std::vector<std::size_t>{0, 0, 2, 0});
}

TEST_CASE("tree trace: bad input is a typed error") {
  CHECK_THROWS_AS(sim::tree_trace("t", 0), hybridcache::invalid_argument);
  sim::tree_trace_builder b("t", 4);
  const tokens x = iota_tokens(1, 8);
  CHECK_THROWS_AS(b.add_tokens(x, 0), hybridcache::invalid_argument);
  CHECK_THROWS_AS(b.add_tokens(x, 9), hybridcache::invalid_argument);
  const std::vector<std::uint64_t> ids{7, 8};
  CHECK_THROWS_AS(b.add_block_ids(ids, 4), hybridcache::invalid_argument);  // 2 ids need > 4 tokens
  CHECK_THROWS_AS(b.add_block_ids(ids, 9), hybridcache::invalid_argument);
  CHECK_THROWS_AS(b.add_block_ids({}, 1), hybridcache::invalid_argument);
  sim::tree_request r;
  r.prompt_tokens = 4;
  r.root = 5;  // no such node
  CHECK_THROWS_AS(b.trace().add_request(r), hybridcache::invalid_argument);
  CHECK(b.trace().size() == 0);
  sim::multi_turn_options o;
  o.sessions = 0;
  CHECK_THROWS_AS(sim::synthetic_multi_turn(o), hybridcache::invalid_argument);
}

TEST_CASE("tree trace: block ids share leading ids only") {
  sim::tree_trace_builder b("ids", 512);
  b.add_block_ids(std::vector<std::uint64_t>{1, 2, 3}, 1500);  // 2 full blocks + partial
  b.add_block_ids(std::vector<std::uint64_t>{1, 2, 9}, 1536);  // 3 full blocks
  b.add_block_ids(std::vector<std::uint64_t>{5, 2}, 1024);     // id 2 under another parent
  const auto& t = b.trace();
  CHECK(t.requests()[0].path.size() == 2);
  CHECK(t.requests()[1].path.size() == 3);
  CHECK(t.requests()[1].path[1] == t.requests()[0].path[1]);
  CHECK(t.requests()[2].path[1] != t.requests()[0].path[1]);
  CHECK(sim::usable_matches(t) == std::vector<std::size_t>{0, 2, 0});
}

TEST_CASE("tree trace: block-id nodes equal a brute-force prefix set, for colliding ids (#21)") {
  // Ids from a small set (so one id recurs under many parents) and a few multiples of a large
  // power of two (what collided in the old table): node identity must still be exactly "same
  // leading ids", checked against the set of distinct id prefixes.
  std::mt19937_64 rng(21);
  const std::vector<std::uint64_t> alphabet{1, 2, 3, 1ull << 40, 2ull << 40, 3ull << 40};
  std::vector<std::vector<std::uint64_t>> reqs;
  for (int r = 0; r < 300; ++r) {
    std::vector<std::uint64_t> ids(1 + rng() % 6);
    for (auto& x : ids) x = alphabet[rng() % (r % 3 == 0 ? 2 : alphabet.size())];
    reqs.push_back(ids);
  }
  sim::tree_trace_builder b("ids", 4);
  for (const auto& ids : reqs) b.add_block_ids(ids, ids.size() * 4);
  const auto& t = b.trace();
  std::set<std::vector<std::uint64_t>> prefixes;
  for (const auto& ids : reqs)
    for (std::size_t d = 1; d <= ids.size(); ++d)
      prefixes.emplace(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(d));
  CHECK(t.node_count() == 1 + prefixes.size());  // + the root
  for (std::size_t r = 0; r < reqs.size(); ++r)
    for (std::size_t s = 0; s < reqs.size(); s += 7)
      for (std::size_t d = 0; d < std::min(reqs[r].size(), reqs[s].size()); ++d) {
        const bool same_prefix = std::equal(
            reqs[r].begin(), reqs[r].begin() + static_cast<std::ptrdiff_t>(d + 1), reqs[s].begin());
        CHECK((t.requests()[r].path[d] == t.requests()[s].path[d]) == same_prefix);
      }
}

TEST_CASE("usable match equals a brute-force longest common prefix") {
  // Random requests over two bases with random tails, prompts and namespaces.
  std::vector<tokens> reqs;
  std::vector<std::size_t> prompt;
  std::vector<std::string> ns;
  sim::detail::rng rng(3);
  std::vector<tokens> bases{iota_tokens(1, 40), iota_tokens(1000, 25)};
  for (int i = 0; i < 60; ++i) {
    tokens r = bases[rng.below(2)];
    r.resize(rng.between(1, r.size()));
    const std::size_t extra = rng.below(12);
    for (std::size_t k = 0; k < extra; ++k) r.push_back(static_cast<sim::token_id>(rng.below(3)));
    if (r.empty()) r.push_back(1);
    reqs.push_back(r);
    prompt.push_back(rng.between(1, r.size()));
    ns.push_back(rng.below(4) == 0 ? "x" : "y");
  }
  for (std::size_t B : {1, 3, 8}) {
    sim::tree_trace_builder b("lcp", B);
    for (std::size_t i = 0; i < reqs.size(); ++i) b.add_tokens(reqs[i], prompt[i], ns[i]);
    CHECK(sim::usable_matches(b.trace()) == brute_usable(reqs, prompt, ns, B));
    // With states at every block and a budget above the node count, vLLM `all` resumes at the
    // usable match whenever the matched blocks were prompt blocks of an earlier request.
    sim::vllm_all_policy all;
    const auto res = run(b.trace(), all, b.trace().node_count());
    CHECK(res.metrics.recomputed_tokens <= res.metrics.usable_tokens);
  }
}

TEST_CASE("vllm align keeps only the replay boundary and the junction") {
  // B = 4. R1: tokens 1..12, prompt 12 (pb = 3). R2: 1..8 ++ 100..107, prompt 16 (pb = 4).
  sim::tree_trace_builder b("align", 4);
  b.add_tokens(iota_tokens(1, 12), 12);
  b.add_tokens(cat(iota_tokens(1, 8), iota_tokens(100, 8)), 16);
  b.add_tokens(cat(iota_tokens(1, 8), iota_tokens(100, 8)), 16);
  sim::vllm_align_policy p;
  const auto r = run(b.trace(), p, 10);
  // R1: nothing cached; snapshot only at j = pb = 3.
  CHECK(r.resumes[0] == 0);
  CHECK(r.held[0] == std::vector<bool>{false, false, true});
  // R2: match m = 2 but no state on blocks 1..2 → resume 0, 8 tokens replayed; snapshots at
  // the junction j = 2 and the boundary j = 4.
  CHECK(r.resumes[1] == 0);
  CHECK(r.held[1] == std::vector<bool>{false, true, false, true});
  // R3 = R2: usable ⌊15/4⌋ = 3 but the deepest state on blocks 1..3 is the junction.
  CHECK(r.resumes[2] == 2);
  CHECK(r.metrics.recomputed_tokens == doctest::Approx(8 + 4));
  CHECK(r.metrics.resumed_tokens == doctest::Approx(8));
  CHECK(r.metrics.hit_rate == doctest::Approx(8.0 / (12 + 16 + 16)));
}

TEST_CASE("sglang no_buffer snapshots at chunk ends and the request end; LRU eviction") {
  // B = 4, chunk C = 8 tokens. R1: prompt 20, output 2 → path of ⌊22/4⌋ = 5 blocks. Chunk ends
  // at 8 and 16 tokens (j = 2, 4), request end j = 5.
  sim::tree_trace_builder b("nobuf", 4);
  b.add_tokens(iota_tokens(1, 22), 20);
  sim::sglang_no_buffer_policy p(8);
  auto r = run(b.trace(), p, 10);
  CHECK(r.held[0] == std::vector<bool>{false, true, false, true, true});
  // Budget 2: the oldest of the three snapshots (j = 2) is evicted when j = 5 arrives.
  sim::sglang_no_buffer_policy q(8);
  r = run(b.trace(), q, 2);
  CHECK(r.held[0] == std::vector<bool>{false, false, false, true, true});
  CHECK(r.metrics.states_peak == 2);
}

TEST_CASE("sglang extra_buffer: branch point, request end, per-path cap drops the shallowest") {
  // R1: 1..16 prompt 16 (4 blocks) → j = pb = 4 = n. R2: 1..8 ++ 50..57, prompt 16: m = 2 → j = 2
  // (branch), j = 4 (extend end = request end).
  sim::tree_trace_builder b("extra", 4);
  b.add_tokens(iota_tokens(1, 16), 16);
  b.add_tokens(cat(iota_tokens(1, 8), iota_tokens(50, 8)), 16);
  b.add_tokens(cat(iota_tokens(1, 8), iota_tokens(50, 16)), 24);  // extends R2 → 6 blocks
  sim::sglang_extra_buffer_policy p;
  const auto r = run(b.trace(), p, 10);
  CHECK(r.held[0] == std::vector<bool>{false, false, false, true});
  CHECK(r.held[1] == std::vector<bool>{false, true, false, true});
  CHECK(r.resumes[2] == 4);
  CHECK(r.held[2] == std::vector<bool>{false, true, false, true, false, true});
  // Cap 2 per path: R3's path would hold j = 2, 4, 6 → the shallowest (j = 2) goes.
  sim::sglang_extra_buffer_policy c(2);
  const auto rc = run(b.trace(), c, 10);
  CHECK(rc.held[2] == std::vector<bool>{false, false, false, true, false, true});
  CHECK(c.name() == "sglang_extra_buffer_cap2");
}

TEST_CASE("llama.cpp: a FIFO of 32 checkpoints, hits do not refresh") {
  // B = 4, prompt 8 tokens: P − 4 − 512 < 0, so one checkpoint at ⌊(8 − 4)/4⌋ = j = 1.
  sim::tree_trace_builder b("llama", 4);
  for (sim::token_id i = 0; i < 40; ++i) b.add_tokens(iota_tokens(1000 * (i + 1), 8), 8);
  b.add_tokens(iota_tokens(1000 * 6, 8), 8);  // request 5 again: evicted already (FIFO)
  sim::llamacpp_policy p(32, 512);
  const auto r = run(b.trace(), p, 100);
  CHECK(r.metrics.states_peak == 32);
  CHECK(r.resumes[40] == 0);  // usable is ⌊7/4⌋ = 1 but request 5 lost its checkpoint at request 37
  // Requests 8..39 hold their checkpoint at the end of request 39; 0..7 do not.
  const auto usable = sim::usable_matches(b.trace());
  sim::llamacpp_policy q(32, 512);
  sim::tree_replayer rep(b.trace(), q, 100, usable);
  rep.run(40);
  for (std::size_t i = 0; i < 40; ++i)
    CHECK(rep.pool().holds(b.trace().requests()[i].path[0]) == (i >= 8));
  // A hit does not move a checkpoint to the back: request 8 (oldest held) is hit, then one new
  // request evicts it anyway.
  sim::tree_trace_builder b2("llama2", 4);
  for (sim::token_id i = 0; i < 33; ++i) b2.add_tokens(iota_tokens(1000 * (i + 1), 8), 8);
  b2.add_tokens(iota_tokens(1000 * 2, 8), 8);  // hits request 1's checkpoint (the oldest held)
  b2.add_tokens(iota_tokens(99000, 8), 8);     // evicts it
  b2.add_tokens(iota_tokens(1000 * 2, 8), 8);
  sim::llamacpp_policy q2(32, 512);
  const auto r2 = run(b2.trace(), q2, 100);
  CHECK(r2.resumes[33] == 1);
  CHECK(r2.resumes[35] == 0);
}

TEST_CASE("marconi keeps at most the leaf and the branch-off point") {
  sim::tree_trace_builder b("marconi", 4);
  b.add_tokens(iota_tokens(1, 20), 12);                           // 5 blocks, output 8
  b.add_tokens(cat(iota_tokens(1, 8), iota_tokens(70, 12)), 16);  // branches off at m = 2
  sim::marconi_policy p(1.0);
  const auto r = run(b.trace(), p, 10);
  CHECK(r.held[0] == std::vector<bool>{false, false, false, false, true});
  CHECK(r.held[1] == std::vector<bool>{false, true, false, false, true});
  CHECK_THROWS_AS(sim::marconi_policy(-1.0), hybridcache::invalid_argument);
}

TEST_CASE(
    "marconi eviction: α = 0 is LRU among ≤1-child nodes, large α keeps the expensive state") {
  // B = 4. R1: 40 tokens (10 blocks) → leaf state at j = 10. R2: another 8-token sequence → leaf
  // j = 2. R3: a third 8-token sequence; budget 2 forces an eviction. R1's state saves FLOPs of
  // 40 tokens, R2's of 8: α = 0 evicts the least recent (R1), α = 2 evicts R2's.
  sim::tree_trace_builder b("evict", 4);
  b.add_tokens(iota_tokens(1, 40), 40);
  b.add_tokens(iota_tokens(500, 8), 8);
  b.add_tokens(iota_tokens(900, 8), 8);
  sim::marconi_policy lru(0.0);
  auto r = run(b.trace(), lru, 2);
  CHECK_FALSE(r.held[2].empty());
  const auto& t = b.trace();
  const auto usable = sim::usable_matches(t);
  {
    sim::marconi_policy p(0.0);
    sim::tree_replayer rep(t, p, 2, usable);
    rep.run();
    CHECK_FALSE(rep.pool().holds(t.requests()[0].path.back()));
    CHECK(rep.pool().holds(t.requests()[1].path.back()));
  }
  {
    sim::marconi_policy p(2.0);
    sim::tree_replayer rep(t, p, 2, usable);
    rep.run();
    CHECK(rep.pool().holds(t.requests()[0].path.back()));
    CHECK_FALSE(rep.pool().holds(t.requests()[1].path.back()));
  }
}

TEST_CASE("oracle: admits only states a later request can use, evicts the furthest next use") {
  // B = 4, budget 1. A (8 tokens) then B (8 tokens) then A' (A ++ 4) then B' (B ++ 4), then A'
  // again.
  sim::tree_trace_builder b("oracle", 4);
  const tokens A = iota_tokens(1, 8), Bt = iota_tokens(100, 8);
  b.add_tokens(A, 8);
  b.add_tokens(Bt, 8);
  b.add_tokens(cat(A, iota_tokens(200, 4)), 12);
  b.add_tokens(cat(Bt, iota_tokens(300, 4)), 12);
  sim::oracle_policy p;
  const auto r = run(b.trace(), p, 1);
  // Request 0 snapshots A's block 2 (blocks 1 and 2 are next used by request 2: the deeper one
  // is kept). Request 1's block 2 is next used at
  // request 3, later than 2 → not admitted. Request 2 resumes at 2; request 3 finds nothing.
  CHECK(r.resumes == std::vector<std::size_t>{0, 0, 2, 0});
  CHECK(r.held[0] == std::vector<bool>{false, true});
  CHECK(r.held[1] == std::vector<bool>{false, false});
}

TEST_CASE("the engine rejects a policy that cheats") {
  sim::tree_trace_builder b("cheat", 4);
  b.add_tokens(iota_tokens(1, 12), 12);
  b.add_tokens(iota_tokens(1, 12), 12);
  const auto usable = sim::usable_matches(b.trace());
  struct resume_without_state final : sim::tree_policy {
    std::string name() const override { return "x"; }
    void reset(const sim::tree_context&) override {}
    std::size_t resume(const sim::tree_step& s) override { return s.usable; }
    void finish(const sim::tree_step&) override {}
  } a;
  CHECK_THROWS_AS(sim::replay_tree(b.trace(), a, 4, usable), hybridcache::invalid_argument);
  struct snapshot_uncomputed final : sim::tree_policy {
    sim::tree_context c;
    std::string name() const override { return "y"; }
    void reset(const sim::tree_context& ctx) override { c = ctx; }
    std::size_t resume(const sim::tree_step&) override { return 0; }
    void finish(const sim::tree_step& s) override {
      if (s.index == 1) c.pool->add(c.trace->requests()[0].path[0] + 100);
    }
  } y;
  CHECK_THROWS_AS(sim::replay_tree(b.trace(), y, 4, usable), hybridcache::invalid_argument);
  struct overfill final : sim::tree_policy {
    sim::tree_context c;
    std::string name() const override { return "z"; }
    void reset(const sim::tree_context& ctx) override { c = ctx; }
    std::size_t resume(const sim::tree_step&) override { return 0; }
    void finish(const sim::tree_step& s) override {
      for (auto v : s.path()) c.pool->add(v);
    }
  } z;
  CHECK_THROWS_AS(sim::replay_tree(b.trace(), z, 2, usable), hybridcache::capacity_error);
}

TEST_CASE("every policy stays within budget on the synthetic workload; namespaces stay apart") {
  sim::multi_turn_options o;
  o.sessions = 40;
  o.block = 32;
  o.system_tokens = 256;
  o.max_turns = 6;
  o.user_max = 120;
  o.output_max = 160;
  const auto t = sim::synthetic_multi_turn(o);
  CHECK(sim::synthetic_multi_turn(o).node_count() == t.node_count());  // deterministic
  sim::tree_options so;
  so.budgets = {0, 1, 3, 17};
  so.marconi_alphas = {0.0, 1.0};
  const auto res = sim::simulate_tree(t, so);
  // + the static optimum per budget when the tree placement is built in
  REQUIRE(res.rows.size() ==
          (so.policies.size() + (HYBRIDCACHE_SIM_HAS_TREE_POLICY ? 1 : 0)) * so.budgets.size());
  for (const auto& m : res.rows) {
    CAPTURE(m.policy);
    CAPTURE(m.budget);
    CHECK(m.states_peak <= m.budget);
    CHECK(m.recomputed_tokens >= 0.0);
    CHECK(m.resumed_tokens + m.recomputed_tokens == doctest::Approx(m.usable_tokens));
    CHECK(m.prefill_tokens == doctest::Approx(m.prompt_tokens - m.resumed_tokens));
    if (m.budget == 0) CHECK(m.resumed_tokens == 0.0);
  }
  // Two namespaces with identical tokens: the second never matches the first.
  sim::tree_trace_builder b("ns", 4);
  b.add_tokens(iota_tokens(1, 16), 16, std::string("t1"));
  b.add_tokens(iota_tokens(1, 16), 16, std::string("t2"));
  b.add_tokens(iota_tokens(1, 16), 16, std::string("t1"));
  for (std::string_view name : sim::tree_policy_names) {
    auto p = sim::make_tree_policy(name, so);
    const auto r = run(b.trace(), *p, 8);
    CAPTURE(name);
    CHECK(r.resumes[1] == 0);
  }
  CHECK_THROWS_AS(sim::make_tree_policy("lru", so), hybridcache::invalid_argument);
}

TEST_CASE("synthetic multi-turn: turn t+1 extends turn t's input and output") {
  sim::multi_turn_options o;
  o.sessions = 1;
  o.max_turns = 10;
  o.block = 8;
  o.agent_fraction = 0.0;
  o.branch_probability = 0.0;
  o.seed = 11;
  const auto t = sim::synthetic_multi_turn(o);
  for (std::size_t i = 1; i < t.size(); ++i) {
    const auto& a = t.requests()[i - 1];
    const auto& r = t.requests()[i];
    CHECK(r.prompt_tokens > a.prompt_tokens + a.output_tokens);
    REQUIRE(r.path.size() >= a.path.size());
    CHECK(std::equal(a.path.begin(), a.path.end(), r.path.begin()));
  }
}

TEST_CASE("modelled TTFT and FLOPs follow the cost model for one request") {
  sim::tree_trace_builder b("cost", 64);
  b.add_tokens(iota_tokens(1, 1000), 1000);
  b.add_tokens(iota_tokens(1, 1000), 1000);
  sim::vllm_align_policy p;
  const auto r = run(b.trace(), p, 4);
  // R2 resumes at ⌊999/64⌋ = 15 blocks (R1 snapshotted j = ⌊1000/64⌋ = 15): n = 40, p = 960.
  CHECK(r.resumes[1] == 15);
  const sim::tree_cost_model c;
  const double t1 = c.time.cost(1000, 0), t2 = c.time.cost(40, 960);
  CHECK(r.metrics.ttft_ms == doctest::Approx((t1 + t2) / 2));
  const double f = 1.6e9 * 1000 + 49152.0 * (1000.0 * 1001 / 2) + 1.6e9 * 40 +
                   49152.0 * (40.0 * 960 + 40.0 * 41 / 2);
  CHECK(r.metrics.prefill_flops == doctest::Approx(f));
}

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
TEST_CASE("the library's policy through its public API: tail snapshot, budget, namespaces") {
  // B = 4. R1 = 1..16 (prompt 12, output 4): the policy snapshots the tail (j = n = 4). R2 extends
  // R1's prompt and output: it resumes from R1's tail (usable ⌊23/4⌋ = 5 > 4).
  sim::tree_trace_builder b("lib", 4);
  b.add_tokens(iota_tokens(1, 16), 12, std::string("t1"));
  b.add_tokens(cat(iota_tokens(1, 16), iota_tokens(40, 8)), 24, std::string("t1"));
  b.add_tokens(cat(iota_tokens(1, 16), iota_tokens(40, 8)), 24, std::string("t2"));
  sim::library_policy p;
  const auto r = run(b.trace(), p, 2);
  CHECK(r.resumes[0] == 0);
  CHECK(r.held[0].back());
  CHECK(r.resumes[1] == 4);
  CHECK(r.resumes[2] == 0);  // another namespace
  CHECK(r.metrics.states_peak <= 2);
  sim::library_policy none;
  CHECK(run(b.trace(), none, 0).metrics.resumed_tokens == 0.0);
}

TEST_CASE("the library's policy with the prefill end offered: a re-ask resumes at the prompt") {
  // B = 4. R1 = 1..16 (prompt 12 = 3 blocks, output 4): the tail (j = 4) is snapshotted, and with
  // `prefill_end` also the prompt's end (j = 3; the pool of 2 has room). R2 re-asks R1's prompt
  // with another answer (1..12 ++ 50..57, prompt 20): usable min(3, ⌊19/4⌋) = 3, so it resumes
  // at 3 with the offer and from the root without it (R1's tail is not on its path).
  sim::tree_trace_builder b("reask", 4);
  b.add_tokens(iota_tokens(1, 16), 12);
  b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(50, 8)), 20);
  for (bool offer : {true, false}) {
    CAPTURE(offer);
    hybridcache::tree::policy_options o;
    o.fill_free = false;  // free room would hold j = 3 anyway (see the fill_free test below)
    sim::library_policy p(o, "hybridcache", offer);
    const auto r = run(b.trace(), p, 2);
    CHECK(r.resumes[1] == (offer ? 3u : 0u));
    CHECK(r.metrics.states_peak <= 2);
  }
}

TEST_CASE("the prefill-end prior lets a full pool take the prompt's end over a fresh tail") {
  // The trace above with a pool of 1: R1's tail a4 is admitted first (fresh-end prior 1/3 of
  // an observation). The prompt's end a3 is then offered to a full pool: without a prior its
  // weight is 0, so ΔE[r](a3) = 0 and it is refused; with `prefill_prior` it gets
  // π_P = (0 + 1)/(1 + 2) = 1/3, so ΔE[r](a3) = 12 · 1/3 > ΔE[r](a4) = 4 · 1/3 and a4 goes.
  // R2 re-asks the prompt: it resumes at 3 only with the prior.
  sim::tree_trace_builder b("reask1", 4);
  b.add_tokens(iota_tokens(1, 16), 12);
  b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(50, 8)), 20);
  for (bool prior : {true, false}) {
    CAPTURE(prior);
    hybridcache::tree::policy_options o;
    o.prefill_prior = prior;
    sim::library_policy p(o, "hybridcache_prefill_prior", true);
    const auto r = run(b.trace(), p, 1);
    CHECK(r.resumes[1] == (prior ? 3u : 0u));
    CHECK(r.metrics.states_peak <= 1);
  }
}

TEST_CASE("the library's policy filling free memory: a later branch resumes at a filled state") {
  // B = 4, a pool of 4. R1 = 1..24 (prompt 20, output 4: 6 blocks) on an empty pool: the plan is
  // the tail j = 6 and, with `fill_free`, F = 4 − 1 = 3 of the other 5 grid positions, the
  // ⌈i·5/3⌉-th for i = 1..3: j = 2, 4, 5. R2 = 1..8 ++ 60..71 (prompt 20) leaves R1 after block
  // 2 (usable 2): it resumes at 2 with the filled states, from the root without them.
  sim::tree_trace_builder b("branch", 4);
  b.add_tokens(iota_tokens(1, 24), 20);
  b.add_tokens(cat(iota_tokens(1, 8), iota_tokens(60, 12)), 20);
  for (bool fill : {true, false}) {
    CAPTURE(fill);
    hybridcache::tree::policy_options o;
    o.fill_free = fill;
    sim::library_policy p(o, "hybridcache_fill");
    const auto r = run(b.trace(), p, 4);
    CHECK(r.held[0] == (fill ? std::vector<bool>{false, true, false, true, true, true}
                             : std::vector<bool>{false, false, false, false, false, true}));
    CHECK(r.resumes[1] == (fill ? 2u : 0u));
    CHECK(r.metrics.states_peak <= 4);
  }
}

TEST_CASE("static optimum: the best fixed set for the realised matches") {
  // B = 4, document D = 1..12 under three questions of 4 tokens: requests 1 and 2 match D's three
  // blocks (usable ⌊15/4⌋ = 3). One state at D's end serves both: 0 recomputed; none: 2 · 12.
  sim::tree_trace_builder b("static", 4);
  for (sim::token_id q : {100, 200, 300})
    b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(q, 4)), 16);
  const auto usable = sim::usable_matches(b.trace());
  const auto one = sim::static_optimum(b.trace(), 1, usable);
  CHECK(one.recomputed_tokens == 0.0);
  CHECK(one.resumed_tokens == 24.0);
  CHECK(sim::static_optimum(b.trace(), 0, usable).recomputed_tokens == 24.0);
}
#endif
