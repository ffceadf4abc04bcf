// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <hybridcache/sim/detail/random.hpp>
#include <hybridcache/sim/sparse_prefix.hpp>
#include <hybridcache/sim/synthetic.hpp>
#include <hybridcache/store/last_k_cache.hpp>
#include <vector>

#include "support/sim_reference.hpp"

namespace hc = hybridcache;
using hc::placement_strategy;

namespace {

hc::trace make_trace(const std::vector<std::vector<std::uint32_t>>& reqs) {
  hc::trace t("hand");
  for (const auto& r : reqs) t.add_request({.pieces = {t.add_piece(r)}});
  return t;
}

std::vector<std::vector<std::uint32_t>> tokens_of(const hc::trace& t) {
  std::vector<std::vector<std::uint32_t>> out;
  std::vector<std::uint32_t> buf;
  for (const auto& r : t.requests()) {
    t.materialize(r, buf);
    out.push_back(buf);
  }
  return out;
}

}  // namespace

TEST_CASE("hand-computed four-request trace: depths, recompute, savings, reduction") {
  // A = 1..10, B = 1..6 99 98, C = A, D = 1 2 3 50; K = 2, B = 1 (token granularity).
  const std::vector<std::uint32_t> a{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  const auto t = make_trace({a, {1, 2, 3, 4, 5, 6, 99, 98}, a, {1, 2, 3, 50}});
  hc::sparse_prefix_options o;
  o.cache_entries = 2;
  o.granularity = 1;
  o.budgets = {1, 2};
  o.strategies = {placement_strategy::kv_only, placement_strategy::last,
                  placement_strategy::balanced, placement_strategy::block};
  const auto r = hc::simulate_sparse_prefix(t, o);
  // Worked by hand (see docs/simulate.md): depths 0, 6, 10, 3.
  CHECK(r.depths == std::vector<std::uint32_t>{0, 6, 10, 3});
  CHECK(r.hits == 3);
  CHECK(r.depth_tokens == 19.0);
  // last: {10},{8},{10} -> r = 6, 0, 3.
  CHECK(r.find(placement_strategy::last)->recomputed_tokens == 9.0);
  // balanced M=1: A {5}, B {4} -> r = 1, 5, 3.   M=2: A {3,7}, B {3,6} -> r = 3, 3, 0.
  CHECK(r.find(placement_strategy::balanced, 1)->recomputed_tokens == 9.0);
  CHECK(r.find(placement_strategy::balanced, 2)->recomputed_tokens == 6.0);
  CHECK(r.find(placement_strategy::balanced, 2)->reduction == doctest::Approx(19.0 / 6.0));
  CHECK(r.find(placement_strategy::balanced, 2)->savings == doctest::Approx(1.0 - 6.0 / 19.0));
  CHECK(r.find(placement_strategy::kv_only)->recomputed_tokens == 19.0);
  CHECK(r.find(placement_strategy::kv_only)->reduction == 1.0);
  // Every token stored: nothing to recompute, reduction +inf.
  CHECK(r.find(placement_strategy::block)->recomputed_tokens == 0.0);
  CHECK(std::isinf(r.find(placement_strategy::block)->reduction));
  // Mean checkpoints per entry: balanced M=2 stores 2 in each of the 4 entries.
  CHECK(r.find(placement_strategy::balanced, 2)->mean_checkpoints == 2.0);
  CHECK(r.find(placement_strategy::last)->mean_checkpoints == 1.0);
}

TEST_CASE("fixed strategies match the token-by-token reference on random traces") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    for (std::size_t b : {1u, 16u, 64u}) {
      const auto t = hc::synthetic_document_qa({.requests = 300, .length = 256, .seed = seed});
      const auto toks = tokens_of(t);
      hc::sparse_prefix_options o;
      o.cache_entries = 5;
      o.granularity = b;
      o.budgets = {1, 3, 8};
      o.strategies = {placement_strategy::last, placement_strategy::block, placement_strategy::sqrt,
                      placement_strategy::balanced};
      const auto r = hc::simulate_sparse_prefix(t, o);
      const auto last = sim_ref::replay_fixed(toks, 5, "last", 0, b);
      CHECK(std::vector<std::size_t>(r.depths.begin(), r.depths.end()) == last.depths);
      CHECK(r.find(placement_strategy::last)->recomputed_tokens == last.recomputed);
      CHECK(r.find(placement_strategy::block)->recomputed_tokens ==
            sim_ref::replay_fixed(toks, 5, "block", 0, b).recomputed);
      CHECK(r.find(placement_strategy::sqrt)->recomputed_tokens ==
            sim_ref::replay_fixed(toks, 5, "sqrt", 0, b).recomputed);
      for (std::size_t m : {1u, 3u, 8u}) {
        CHECK(r.find(placement_strategy::balanced, m)->recomputed_tokens ==
              sim_ref::replay_fixed(toks, 5, "balanced", m, b).recomputed);
      }
    }
  }
}

TEST_CASE("overlap depths agree with store::last_k_cache") {
  const auto t = hc::synthetic_system_prompt({.requests = 400, .length = 512, .seed = 7});
  const auto toks = tokens_of(t);
  hc::sparse_prefix_options o;
  o.cache_entries = 20;
  o.strategies = {placement_strategy::kv_only};
  const auto r = hc::simulate_sparse_prefix(t, o);
  hybridcache::last_k_cache cache(20);
  for (std::size_t i = 0; i < toks.size(); ++i) {
    CHECK(cache.observe(toks[i]).depth == r.depths[i]);
  }
}

TEST_CASE("namespaces: entries of another namespace never give depth") {
  hc::trace t("ns");
  const auto p = t.add_piece(std::vector<std::uint32_t>{5, 6, 7, 8});
  t.add_request({.pieces = {p}, .ns = "a"});
  t.add_request({.pieces = {p}, .ns = "b"});
  t.add_request({.pieces = {p}});
  t.add_request({.pieces = {p}, .ns = "a"});
  hc::sparse_prefix_options o;
  o.granularity = 1;
  o.strategies = {placement_strategy::kv_only};
  const auto r = hc::simulate_sparse_prefix(t, o);
  CHECK(r.depths == std::vector<std::uint32_t>{0, 0, 0, 4});
}

TEST_CASE("DP on a point-mass workload: hand-computed recompute and the fallback") {
  // Every request = the same 128-token document + its own 64 tokens; B = 64, R = 1.
  hc::trace t("spike");
  std::vector<std::uint32_t> doc(128);
  for (std::uint32_t i = 0; i < 128; ++i) doc[i] = i;
  const auto d = t.add_piece(doc);
  const std::size_t n = 20;
  for (std::uint32_t i = 0; i < n; ++i) {
    std::vector<std::uint32_t> tail(64, 1000 + i);
    t.add_request({.pieces = {d, t.add_piece(tail)}});
  }
  hc::sparse_prefix_options o;
  o.cache_entries = 4;
  o.replan_every = 1;
  o.budgets = {1};
  o.strategies = {placement_strategy::balanced, placement_strategy::dp};
  o.law = hybridcache::law_kind::pooled;  // the paper's setting
  o.safeguard = false;
  const auto r = hc::simulate_sparse_prefix(t, o);
  // Request 1 misses; every later one overlaps to depth 128.
  CHECK(r.depth_tokens == 128.0 * (n - 1));
  // Entry 1 was placed before any hit: balanced fallback ⌊193/2⌋ = 96 -> block 64, so request 2
  // recomputes 64; every later entry has the DP checkpoint at 128 and later requests recompute 0.
  CHECK(r.find(placement_strategy::dp, 1)->recomputed_tokens == 64.0);
  CHECK(r.dp_fallbacks == 1);
  // Balanced M=1 always stores 64: 64 per hit.
  CHECK(r.find(placement_strategy::balanced, 1)->recomputed_tokens == 64.0 * (n - 1));
  // Oracle: the law (all mass at 128) is known before the first entry is placed.
  o.oracle = true;
  const auto oracle = hc::simulate_sparse_prefix(t, o);
  CHECK(oracle.find(placement_strategy::dp, 1)->recomputed_tokens == 0.0);
  CHECK(oracle.dp_fallbacks == 0);
  CHECK(oracle.depths == r.depths);
}

TEST_CASE("tail law: each request reads its predecessor up to 5 tokens before its end") {
  // Request i = doc[0, c_i) ++ 5 tokens of its own, c_i = 20, 30, 40, ...: it overlaps entry i−1
  // at depth c_{i−1} = L_{i−1} − 5, a depth no earlier request had. B = 1, M = 1, R = 1.
  hc::trace t("tail");
  std::vector<std::uint32_t> doc(400);
  for (std::uint32_t i = 0; i < 400; ++i) doc[i] = i;
  const std::size_t n = 30;
  std::vector<std::vector<std::uint32_t>> reqs;
  for (std::size_t i = 0; i < n; ++i) {
    std::vector<std::uint32_t> q(doc.begin(), doc.begin() + static_cast<long>(20 + 10 * i));
    for (std::uint32_t k = 0; k < 5; ++k) q.push_back(10000 + static_cast<std::uint32_t>(10 * i) + k);
    reqs.push_back(q);
  }
  const auto tr = make_trace(reqs);
  hc::sparse_prefix_options o;
  o.granularity = 1;
  o.replan_every = 1;
  o.budgets = {1};
  o.strategies = {placement_strategy::dp};
  o.safeguard = false;
  o.law = hc::sparse_prefix_options::depth_law::tail;
  const auto r = hc::simulate_sparse_prefix(tr, o);
  // Entry 1 (L = 25) is placed before any hit: balanced ⌊26/2⌋ = 13; request 2 hits it at 20 and
  // recomputes 7. From then on the law is u = 5: entry i gets {L_i − 5} = {c_i}; recompute 0.
  CHECK(r.find(placement_strategy::dp, 1)->recomputed_tokens == 7.0);
  // The pooled law never saw the depth the next request will have.
  o.law = hc::sparse_prefix_options::depth_law::pooled;
  const auto pooled = hc::simulate_sparse_prefix(tr, o);
  CHECK(pooled.find(placement_strategy::dp, 1)->recomputed_tokens > 7.0 * 10);
}

TEST_CASE("DP placements are optimal for the re-solved EW histogram (brute force)") {
  // Three 96-token documents read up to a random multiple of 8, then 8–48 tokens of one's own:
  // requests of <= 144 tokens, so <= 9 block candidates (B = 16) and 2^9 subsets to enumerate.
  hybridcache::detail::rng g(5);
  std::vector<std::vector<std::uint32_t>> docs(3, std::vector<std::uint32_t>(96));
  for (auto& d : docs) {
    for (auto& x : d) x = static_cast<std::uint32_t>(g.below(50));
  }
  std::vector<std::vector<std::uint32_t>> reqs;
  for (int i = 0; i < 150; ++i) {
    const auto& d = docs[g.below(3)];
    std::vector<std::uint32_t> q(d.begin(), d.begin() + static_cast<long>(8 * g.between(1, 12)));
    for (auto k = g.between(8, 48); k > 0; --k) q.push_back(static_cast<std::uint32_t>(100 + g.below(1000)));
    reqs.push_back(q);
  }
  const auto t = make_trace(reqs);
  const auto toks = tokens_of(t);
  hc::sparse_prefix_options o;
  o.cache_entries = 6;
  o.granularity = 16;
  o.replan_every = 3;
  o.gamma = 0.9;
  o.budgets = {1, 2, 4};
  o.strategies = {placement_strategy::dp};
  o.law = hybridcache::law_kind::pooled;  // the reference below is the pooled EW law
  o.safeguard = false;
  o.joint_placement = false;  // each entry's own optimum (the joint one is tested below)
  hc::sparse_prefix_simulator s(o, t.max_length());
  sim_ref::ew_reference ref{0.9, {}};
  std::vector<double> snapshot;  // the reference pmf at the last re-solve
  std::size_t checked = 0;
  for (std::size_t i = 0; i < toks.size(); ++i) {
    const auto depth = s.step(toks[i]);
    if (depth > 0) ref.obs.push_back(depth);
    if ((i + 1) % 3 == 0) snapshot = ref.pmf(t.max_length());
    double mass = 0;
    for (std::size_t x = 0; x < toks[i].size() && x < snapshot.size(); ++x) mass += snapshot[x];
    if (mass <= 0) continue;  // fallback placement, covered elsewhere
    for (std::size_t m : {1u, 2u, 4u}) {
      const auto c32 = s.newest_checkpoints(placement_strategy::dp, m);
      const std::vector<std::size_t> c(c32.begin(), c32.end());
      CHECK(c.size() <= m);
      const double got = sim_ref::expected_recompute(snapshot, toks[i].size(), c);
      const double best = sim_ref::brute_force_optimum(snapshot, toks[i].size(), m, 16);
      CHECK(got == doctest::Approx(best).epsilon(1e-9));
      ++checked;
    }
  }
  CHECK(checked > 200);
}

TEST_CASE("dp_frontier keeps all but the tolerance of the achievable savings") {
  const auto t = hc::synthetic_document_qa({.requests = 600, .length = 512, .seed = 3});
  hc::sparse_prefix_options o;
  o.cache_entries = 10;
  o.budgets = {2, 8};
  o.strategies = {placement_strategy::dp, placement_strategy::dp_frontier};
  const auto r = hc::simulate_sparse_prefix(t, o);
  for (std::size_t m : {2u, 8u}) {
    CHECK(r.find(placement_strategy::dp_frontier, m)->mean_checkpoints <=
          r.find(placement_strategy::dp, m)->mean_checkpoints + 1e-12);
    CHECK(r.find(placement_strategy::dp, m)->mean_checkpoints <= static_cast<double>(m));
  }
}

TEST_CASE("a seed names the result, another seed gives another trace") {
  hc::sparse_prefix_options o;
  o.cache_entries = 35;
  const auto a = hc::simulate_sparse_prefix(
      hc::synthetic_document_qa({.requests = 500, .length = 512, .seed = 11}), o);
  const auto b = hc::simulate_sparse_prefix(
      hc::synthetic_document_qa({.requests = 500, .length = 512, .seed = 11}), o);
  const auto c = hc::simulate_sparse_prefix(
      hc::synthetic_document_qa({.requests = 500, .length = 512, .seed = 12}), o);
  CHECK(a.depths == b.depths);
  REQUIRE(a.rows.size() == b.rows.size());
  for (std::size_t i = 0; i < a.rows.size(); ++i) {
    CHECK(a.rows[i].recomputed_tokens == b.rows[i].recomputed_tokens);
    CHECK(a.rows[i].mean_checkpoints == b.rows[i].mean_checkpoints);
  }
  CHECK(a.depths != c.depths);
}

TEST_CASE("dominance checks compare like with like") {
  const auto t = hc::synthetic_document_qa({.requests = 400, .length = 512, .seed = 2});
  hc::sparse_prefix_options o;
  o.budgets = {1, 4, 64};
  const auto r = hc::simulate_sparse_prefix(t, o);
  CHECK(r.find(placement_strategy::block)->max_checkpoints ==
        t.max_length() / 64);  // every block of the longest request
  const auto checks = hc::check_dominance(r);
  for (const auto& c : checks) {
    if (hc::uses_budget(c.baseline)) {
      CHECK(c.baseline_reduction == r.find(c.baseline, c.budget)->reduction);
    } else if (c.status == hc::dominance_status::not_comparable) {
      CHECK(r.find(c.baseline)->max_checkpoints > c.budget);  // listed, not compared
    } else {
      CHECK(c.baseline_max_checkpoints <= c.budget);
      CHECK(r.find(c.baseline)->max_checkpoints <= c.budget);
    }
  }
  CHECK(!checks.empty());
}

TEST_CASE("state bytes follow the model shape") {
  const auto t = make_trace({{1, 2, 3, 4}, {1, 2, 3, 4}});
  hc::sparse_prefix_options o;
  o.granularity = 1;
  o.budgets = {2};
  o.strategies = {placement_strategy::no_cache, placement_strategy::balanced};
  o.model = hc::qwen3_next_80b_a3b;
  const auto r = hc::simulate_sparse_prefix(t, o);
  const auto* bal = r.find(placement_strategy::balanced, 2);
  CHECK(bal->checkpoint_bytes == 2.0 * 36 * 32 * 128 * 128 * 2);
  CHECK(bal->kv_bytes == 4.0 * 12 * 2 * 2 * 256 * 2);
  CHECK(bal->cache_bytes == 35.0 * (bal->checkpoint_bytes + bal->kv_bytes));
  CHECK(r.find(placement_strategy::no_cache)->kv_bytes == 0.0);
}

TEST_CASE("bad options and over-long requests are rejected") {
  hc::sparse_prefix_options o;
  o.cache_entries = 0;
  CHECK_THROWS_AS(hc::sparse_prefix_simulator(o, 10), hybridcache::invalid_argument);
  o = {};
  o.gamma = 1.5;
  CHECK_THROWS_AS(hc::sparse_prefix_simulator(o, 10), hybridcache::invalid_argument);
  o = {};
  o.budgets = {};
  CHECK_THROWS_AS(hc::sparse_prefix_simulator(o, 10), hybridcache::invalid_argument);
  o = {};
  o.oracle = true;
  o.oracle_weights = {1.0, 2.0};
  CHECK_THROWS_AS(hc::sparse_prefix_simulator(o, 10), hybridcache::invalid_argument);
  o = {};
  o.budgets = {4, 0};
  CHECK_THROWS_WITH_AS(hc::sparse_prefix_simulator(o, 10), doctest::Contains("budgets[1]"),
                       hybridcache::invalid_argument);
  o = {};
  CHECK_THROWS_AS(hc::sparse_prefix_simulator(o, 0), hybridcache::invalid_argument);
  hc::sparse_prefix_simulator s({}, 3);
  const std::vector<std::uint32_t> four{1, 2, 3, 4};
  CHECK_THROWS_AS(s.step(four), hybridcache::invalid_argument);
  CHECK_THROWS_AS(hc::simulate_sparse_prefix(hc::trace{}, {}), hybridcache::invalid_argument);
  CHECK_THROWS_AS((void)s.newest_checkpoints(placement_strategy::dp, 3),
                  hybridcache::not_found_error);
}

TEST_CASE("prefix matching verifies tokens: requests differing at token 0 never hit") {
  // Identical long tails (every 16-token block but the first equal), different first token.
  std::vector<std::uint32_t> a(640, 3), b(640, 3), c(640, 3);
  b[0] = 4;
  c[600] = 9;  // shares 600 tokens with a
  const auto t = make_trace({a, b, c});
  hc::sparse_prefix_options o;
  o.strategies = {placement_strategy::kv_only, placement_strategy::block};
  const auto r = hc::simulate_sparse_prefix(t, o);
  CHECK(r.depths == std::vector<std::uint32_t>{0, 0, 600});
  // block stores 64, 128, …, 640 in a: c resumes from 576.
  CHECK(r.find(placement_strategy::block)->recomputed_tokens == 24.0);
}

TEST_CASE("safeguard: documents with short questions switch the DP's entries to `last` (hand-computed)") {
  // Documents of 640, 1280, 1920 tokens (distinct first tokens), each request = a document ++ 10
  // tokens of its own question, documents in turn 0, 1, 2, 0, 1, 2, …; K = 10, B = 64, R = 1,
  // M = 1. A hit on document d overlaps the previous request on d to exactly L_d, and `last`
  // stores ⌊(L_d + 10)/64⌋·64 = L_d: nothing to recompute.
  const std::size_t lens[3] = {640, 1280, 1920};
  std::vector<std::vector<std::uint32_t>> reqs;
  for (std::uint32_t i = 0; i < 30; ++i) {
    const std::size_t d = i % 3;
    std::vector<std::uint32_t> q(lens[d]);
    for (std::size_t k = 0; k < lens[d]; ++k) q[k] = static_cast<std::uint32_t>(10000 * (d + 1) + k);
    for (std::uint32_t k = 0; k < 10; ++k) q.push_back(500000 + 10 * i + k);
    reqs.push_back(q);
  }
  const auto t = make_trace(reqs);
  hc::sparse_prefix_options o;
  o.cache_entries = 10;
  o.replan_every = 1;
  o.budgets = {1};
  o.strategies = {placement_strategy::last, placement_strategy::dp};
  o.law = hybridcache::law_kind::pooled;
  o.safeguard = true;
  const auto r = hc::simulate_sparse_prefix(t, o);
  CHECK(r.find(placement_strategy::last)->recomputed_tokens == 0.0);
  // Entries 0, 1, 2 are placed before any hit (pooled law empty: balanced fallback
  // ⌊651/2⌋ → 320, ⌊1291/2⌋ → 640, ⌊1931/2⌋ → 960). Request 3 hits entry 0 at 640 and is scored
  // (held out): DP (= the fallback) 320, last 0, balanced 320, block (deepest 1) 0, sqrt 0,
  // logarithmic ⌊651^{1/2}⌋ = 25 → nothing on the grid, 640. The re-plan picks `last`, which
  // never scores worse afterwards. Requests 3, 4, 5 recompute 640 − 320, 1280 − 640, 1920 − 960;
  // every later request hits an entry placed by `last`.
  CHECK(r.find(placement_strategy::dp, 1)->recomputed_tokens == 320.0 + 640.0 + 960.0);
  CHECK(r.find(placement_strategy::dp, 1)->placed_by ==
        std::array<std::size_t, 6>{3, 27, 0, 0, 0, 0});
  // Without the safeguard the pooled DP keeps recomputing on documents 1 and 2 at M = 1.
  o.safeguard = false;
  const auto plain = hc::simulate_sparse_prefix(t, o);
  CHECK(plain.find(placement_strategy::dp, 1)->recomputed_tokens > 1920.0 + 1000.0);
}

TEST_CASE("dominance: nothing to save is reported as such, not as a pass") {
  const auto t = make_trace({{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});  // no overlap at all
  hc::sparse_prefix_options o;
  o.granularity = 1;
  o.budgets = {1};
  const auto r = hc::simulate_sparse_prefix(t, o);
  const auto checks = hc::check_dominance(r);
  REQUIRE(!checks.empty());
  for (const auto& c : checks) {
    CHECK(c.status == hc::dominance_status::nothing_to_save);
    CHECK_FALSE(c.holds());
    CHECK_FALSE(c.compared());
  }
}

TEST_CASE("joint placement: entries sharing a prefix store different depths (hand-computed)") {
  // B = 64, M = 1, K = 50, the law known in advance (oracle): 2/3 of the hits at depth 640, 1/3
  // at 1280. Requests alternate a_i = P ++ Q ++ u_i and b_i = P ++ v_i (P, Q: 640 shared tokens; u_i:
  // 10, v_i: 650 tokens of their own), every entry 1290 tokens long. So b hits at 640 (P), a hits
  // the previous a at 1280 (P ++ Q).
  std::vector<std::vector<std::uint32_t>> reqs;
  for (std::uint32_t i = 0; i < 12; ++i) {
    std::vector<std::uint32_t> q;
    for (std::uint32_t k = 0; k < 640; ++k) q.push_back(1 + k);
    const std::uint32_t own = 100000 * (i + 1);
    if (i % 2 == 0) {
      for (std::uint32_t k = 0; k < 640; ++k) q.push_back(2000 + k);
      for (std::uint32_t k = 0; k < 10; ++k) q.push_back(own + k);
    } else {
      for (std::uint32_t k = 0; k < 650; ++k) q.push_back(own + k);
    }
    reqs.push_back(q);
  }
  const auto t = make_trace(reqs);
  hc::sparse_prefix_options o;
  o.cache_entries = 50;
  o.replan_every = 1;
  o.budgets = {1};
  o.strategies = {placement_strategy::dp};
  o.safeguard = false;
  o.oracle = true;
  o.oracle_weights.assign(1290, 0.0);
  o.oracle_weights[639] = 2.0;
  o.oracle_weights[1279] = 1.0;
  // Per entry, E[r] = 640/3 for a checkpoint at 640 and 2·640/3 at 1280: every entry stores 640,
  // and each of a_2, a_4, …, a_10 recomputes 1280 − 640.
  o.joint_placement = false;
  const auto alone = hc::simulate_sparse_prefix(t, o);
  CHECK(alone.find(placement_strategy::dp, 1)->recomputed_tokens == 5 * 640.0);
  // Joint, in shadow: a_0 stores 640 (nothing covered); b_1 and a_2 see 640 covered by a_0 and
  // store 1280; from a_4 on an a entry sees 640 and 1280 covered (a_0, a_2 share 1280 tokens
  // with it) and stores nothing, a b entry sees 640 covered (a b entry's 1280 lies beyond the
  // 640 tokens it shares with anyone) and stores 1280. Only a_2 recomputes: 640 in all.
  // The realised cache starts per-entry (every entry 640); after a_4 the shadows stand at 1280
  // (per-entry) vs 640 (joint), so from the entry a_4 on it places jointly against its own
  // coverage: a_4 sees only 640 covered and stores 1280, b_5, b_7, … store 1280, a_6, a_8, a_10
  // nothing. a_2 and a_4 recompute 640 (their matched a entry holds 640), a_6 … a_10 nothing.
  o.joint_placement = true;
  const auto joint = hc::simulate_sparse_prefix(t, o);
  CHECK(joint.find(placement_strategy::dp, 1)->recomputed_tokens == 2 * 640.0);
  CHECK(joint.find(placement_strategy::dp, 1)->joint_placed == 8);  // entries a_4 … b_11
  CHECK(joint.find(placement_strategy::dp, 1)->mean_checkpoints == 9.0 / 12.0);
}

TEST_CASE(
    "hand-over: an entry takes over the evicted entry's state on their shared prefix "
    "(hand-computed)") {
  // B = 64, M = 1, K = 3, per-entry DP on the oracle law: mass 1 at depth 640, 2 at 1280.
  // P, Q: 640 tokens each. f = P ++ 60 own (700 tokens: only 640 lies in it, f stores 640);
  // g = P ++ Q ++ 10 own and e = P ++ Q ++ 10 own (1290 tokens: 1280 costs 640·1, 640 costs
  // 640·2, both store 1280); x (unrelated) evicts f; y = P ++ 60 own hits e and g at 640.
  //   f: miss; g: depth 640, f's 640 serves it, r = 0; e: depth 1280, g's 1280, r = 0; x: miss.
  //   x's insertion evicts f, which offers 640 to g and e (LCP 640 with both). Whichever is
  //   offered first compares {640} (cost 0: the other still covers 1280) with {1280} (cost
  //   640·1) and takes 640 over its 1280; the second then sees 640 covered by the first and
  //   keeps 1280. y: depth 640, served by the entry holding 640: r = 0.
  // Without the hand-over g and e hold only 1280, so y recomputes 640.
  std::vector<std::uint32_t> p, q;
  for (std::uint32_t k = 0; k < 640; ++k) p.push_back(1 + k), q.push_back(5000 + k);
  const auto own = [](std::uint32_t base, std::uint32_t n) {
    std::vector<std::uint32_t> v;
    for (std::uint32_t k = 0; k < n; ++k) v.push_back(base + k);
    return v;
  };
  const auto cat = [](std::vector<std::vector<std::uint32_t>> parts) {
    std::vector<std::uint32_t> v;
    for (const auto& x : parts) v.insert(v.end(), x.begin(), x.end());
    return v;
  };
  const std::vector<std::vector<std::uint32_t>> reqs{
      cat({p, own(100000, 60)}), cat({p, q, own(200000, 10)}), cat({p, q, own(300000, 10)}),
      own(900000, 100), cat({p, own(400000, 60)})};
  hc::sparse_prefix_options o;
  o.cache_entries = 3;
  o.replan_every = 1;
  o.budgets = {1};
  o.strategies = {placement_strategy::dp, placement_strategy::balanced};
  o.safeguard = false;
  o.joint_placement = false;
  o.oracle = true;
  o.oracle_weights.assign(1290, 0.0);
  o.oracle_weights[639] = 1.0;
  o.oracle_weights[1279] = 2.0;
  for (const bool handover : {false, true}) {
    CAPTURE(handover);
    o.handover = handover;
    hc::sparse_prefix_simulator s(o, 1290);
    const std::array<std::size_t, 5> depths{0, 640, 1280, 0, 640};
    for (std::size_t i = 0; i < 4; ++i) CHECK(s.step(reqs[i]) == depths[i]);
    CHECK(s.result().find(placement_strategy::dp, 1)->recomputed_tokens == 0.0);
    CHECK(s.result().find(placement_strategy::dp, 1)->handed_over == (handover ? 1U : 0U));
    CHECK(s.step(reqs[4]) == 640);
    const auto r = s.result();
    CHECK(r.find(placement_strategy::dp, 1)->depth_tokens == 2560.0);
    CHECK(r.find(placement_strategy::dp, 1)->recomputed_tokens == (handover ? 0.0 : 640.0));
    CHECK(r.find(placement_strategy::dp, 1)->max_checkpoints == 1);  // never more than M
    CHECK(r.find(placement_strategy::balanced, 1)->handed_over ==
          0);  // fixed baselines never hand over
  }
}

TEST_CASE("hand-over: no entry ever holds more than M, and fixed baselines are untouched") {
  const auto t = hc::synthetic_document_qa({.requests = 400, .seed = 5});
  hc::sparse_prefix_options o;
  o.cache_entries = 6;
  o.budgets = {1, 2, 3, 5};
  o.strategies = {placement_strategy::dp, placement_strategy::dp_frontier,
                  placement_strategy::balanced, placement_strategy::last};
  const auto on = hc::simulate_sparse_prefix(t, o);
  o.handover = false;
  const auto off = hc::simulate_sparse_prefix(t, o);
  std::size_t taken = 0;
  for (const auto& row : on.rows) {
    CHECK(row.max_checkpoints <= std::max<std::size_t>(row.budget, 1));
    taken += row.handed_over;
    const auto* twin = off.find(row.kind, row.budget);
    REQUIRE(twin != nullptr);
    CHECK(twin->handed_over == 0);
    CHECK(row.depth_tokens == twin->depth_tokens);
    if (row.kind == placement_strategy::balanced || row.kind == placement_strategy::last)
      CHECK(row.recomputed_tokens == twin->recomputed_tokens);
  }
  CHECK(taken > 0);  // the trace shares prefixes across evictions: something was offered
}
