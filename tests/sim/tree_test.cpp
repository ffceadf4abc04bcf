// SPDX-License-Identifier: Apache-2.0
// The tree scenario: traces, the replay engine and every engine policy on hand-built traces whose
// behaviour is worked out by hand in the comments; the usable match against a brute-force
// longest-common-prefix reference; budget and namespace invariants on the synthetic workload.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <hybridcache/sim/tree.hpp>
#include <hybridcache/sim/tree/portfolio.hpp>
#include <initializer_list>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace hc = hybridcache;

namespace {

using tokens = std::vector<hc::token_id>;

tokens iota_tokens(hc::token_id first, std::size_t n) {
  tokens t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}
tokens cat(tokens a, const tokens& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The small synthetic multi-turn workload of the sweep-level tests: 32-token blocks, a
/// 256-token system prompt, up to 5 turns of at most 120 user and 160 output tokens.
hc::tree_trace small_multi_turn(std::size_t sessions) {
  hc::multi_turn_options o;
  o.sessions = sessions;
  o.block = 32;
  o.system_tokens = 256;
  o.max_turns = 5;
  o.user_max = 120;
  o.output_max = 160;
  return hc::synthetic_multi_turn(o);
}

struct run_result {
  std::vector<std::size_t> resumes;
  std::vector<std::vector<bool>> held;  // per request: held[j] = state at path[j] after it
  hc::tree_metrics metrics;
};

run_result run(const hc::tree_trace& t, hc::tree_policy& p, std::size_t budget) {
  const auto usable = hc::usable_matches(t);
  hc::tree_replayer r(t, p, budget, usable);
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

// The toy model of the hand-worked KV cases: a state is 8 bytes and KV 2 bytes a token, so a
// block of B = 4 tokens is 8 bytes too; a KV pool (or the joint pool's KV share) of `kv_bytes`.
hc::tree_cost_model toy_cost(hc::kv_mode mode, double kv_bytes) {
  hc::tree_cost_model c;
  c.model = hc::model_shape{"toy", 1, 1, 1, 1, 8, 1, 1, 1};
  c.kv = {mode, kv_bytes};
  return c;
}

// A trace of B = 4 for the hand-worked KV cases: one request per (first id, length) run of
// consecutive token ids, the whole run its prompt.
hc::tree_trace toy_trace(const char* name,
                         std::initializer_list<std::pair<hc::token_id, std::size_t>> runs) {
  hc::tree_trace_builder b(name, 4);
  for (const auto& [first, n] : runs) b.add_tokens(iota_tokens(first, n), n);
  return b.trace();
}

// A row for the hand-worked KV cases: the first `takers` requests take the state at their first
// block; it resumes at the deepest held state, asks for KV order `order` and sheds `shed` (or
// nothing) when the engine asks.
struct first_block_states final : hc::tree_policy {
  explicit first_block_states(hc::kv_order o, std::size_t n,
                              std::uint32_t shed_node = hc::tree_trace::no_parent)
      : order(o), takers(n), shed(shed_node) {}
  hc::kv_order order;
  std::size_t takers;
  std::uint32_t shed;
  hc::tree_context ctx{};
  std::string name() const override { return "first_block_states"; }
  void reset(const hc::tree_context& c) override { ctx = c; }
  std::size_t resume(const hc::tree_step& s) override {
    return hc::deepest_held(*ctx.pool, s.path(), s.usable);
  }
  void plan_prefill(const hc::tree_step& s, std::vector<std::size_t>& pos) override {
    if (s.index < takers) pos.push_back(1);
  }
  void after_prefill(const hc::tree_step& s) override {
    if (s.index < takers) ctx.pool->add(s.path()[0]);
  }
  hc::kv_order kv_eviction() const override { return order; }
  std::uint32_t shed_state() override { return shed; }
};

// A random trie of `n` block nodes under one root, each the child of a random earlier node.
struct random_trie {
  hc::tree_trace t{"t", 4};
  std::uint32_t root;
  std::vector<std::uint32_t> nodes;
  random_trie(std::mt19937_64& rng, int n) : root(t.root_of(std::nullopt)), nodes{root} {
    for (int i = 0; i < n; ++i) {
      const auto parent =
          nodes[std::uniform_int_distribution<std::size_t>(0, nodes.size() - 1)(rng)];
      nodes.push_back(t.new_node(parent, 0));
    }
  }
  // A node other than the root, uniformly.
  [[nodiscard]] std::uint32_t random_node(std::mt19937_64& rng) const {
    return nodes[std::uniform_int_distribution<std::size_t>(1, nodes.size() - 1)(rng)];
  }
  // The nodes from the root's child down to v.
  [[nodiscard]] std::vector<std::uint32_t> path_to(std::uint32_t v) const {
    std::vector<std::uint32_t> p;
    for (; v != root; v = t.parent(v)) p.push_back(v);
    std::reverse(p.begin(), p.end());
    return p;
  }
};

}  // namespace

TEST_CASE("tree trace: block trie, partial blocks, namespaces never share nodes") {
  hc::tree_trace_builder b("t", 4);
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
  const auto u = hc::usable_matches(t);
  CHECK(u == std::vector<std::size_t>{0, 0, 2, 0});
}

TEST_CASE("tree trace: bad input is a typed error") {
  CHECK_THROWS_AS(hc::tree_trace("t", 0), hybridcache::invalid_argument);
  hc::tree_trace_builder b("t", 4);
  const tokens x = iota_tokens(1, 8);
  CHECK_THROWS_AS(b.add_tokens(x, 0), hybridcache::invalid_argument);
  CHECK_THROWS_AS(b.add_tokens(x, 9), hybridcache::invalid_argument);
  const std::vector<std::uint64_t> ids{7, 8};
  CHECK_THROWS_AS(b.add_block_ids(ids, 4), hybridcache::invalid_argument);  // 2 ids need > 4 tokens
  CHECK_THROWS_AS(b.add_block_ids(ids, 9), hybridcache::invalid_argument);
  CHECK_THROWS_AS(b.add_block_ids({}, 1), hybridcache::invalid_argument);
  hc::tree_request r;
  r.prompt_tokens = 4;
  r.root = 5;  // no such node
  CHECK_THROWS_AS(b.trace().add_request(r), hybridcache::invalid_argument);
  CHECK(b.trace().size() == 0);
  hc::multi_turn_options o;
  o.sessions = 0;
  CHECK_THROWS_AS(hc::synthetic_multi_turn(o), hybridcache::invalid_argument);
  // User starts: strictly ascending, inside the prompt; nothing is added on a bad one, not even
  // a node of its blocks.
  const std::vector<std::size_t> late{8}, same{2, 2}, down{5, 3}, good{0, 3};
  const std::size_t nodes = b.trace().node_count();
  CHECK_THROWS_AS(b.add_tokens(x, 8, std::nullopt, 0.0, late), hybridcache::invalid_argument);
  CHECK_THROWS_AS(b.add_tokens(x, 8, std::nullopt, 0.0, same), hybridcache::invalid_argument);
  CHECK_THROWS_AS(b.add_tokens(x, 8, std::nullopt, 0.0, down), hybridcache::invalid_argument);
  CHECK(b.trace().size() == 0);
  CHECK(b.trace().node_count() == nodes);
  hc::tree_request bad;
  bad.root = b.trace().root_of(std::nullopt);
  bad.prompt_tokens = 4;
  bad.user_starts = {3, 1};
  CHECK_THROWS_WITH_AS(b.trace().add_request(bad), doctest::Contains("request.user_starts[1]"),
                       hybridcache::invalid_argument);
  b.add_tokens(x, 8, std::nullopt, 0.0, good);
  REQUIRE(b.trace().size() == 1);
  CHECK(b.trace().requests()[0].user_starts == good);
}

TEST_CASE("tree trace: a text trace's query starts a user message") {
  // System prompt (5 tokens) ++ query (3): one user start, at 5. A request that does not end
  // with a query (no suffix) has none.
  hc::trace text("t");
  const auto sys = text.add_piece(iota_tokens(1, 5));
  const auto q = text.add_piece(iota_tokens(100, 3));
  text.add_request({.pieces = {sys, q}, .ends_with_query = true});
  text.add_request({.pieces = {sys, q}});
  text.add_request({.pieces = {q}, .ends_with_query = true});  // alone: no start past 0
  const auto t = hc::from_trace(text, 4);
  REQUIRE(t.size() == 3);
  CHECK(t.requests()[0].user_starts == std::vector<std::size_t>{5});
  CHECK(t.requests()[1].user_starts.empty());
  CHECK(t.requests()[2].user_starts.empty());
}

TEST_CASE("tree trace: block ids share leading ids only") {
  hc::tree_trace_builder b("ids", 512);
  b.add_block_ids(std::vector<std::uint64_t>{1, 2, 3}, 1500);  // 2 full blocks + partial
  b.add_block_ids(std::vector<std::uint64_t>{1, 2, 9}, 1536);  // 3 full blocks
  b.add_block_ids(std::vector<std::uint64_t>{5, 2}, 1024);     // id 2 under another parent
  const auto& t = b.trace();
  CHECK(t.requests()[0].path.size() == 2);
  CHECK(t.requests()[1].path.size() == 3);
  CHECK(t.requests()[1].path[1] == t.requests()[0].path[1]);
  CHECK(t.requests()[2].path[1] != t.requests()[0].path[1]);
  CHECK(hc::usable_matches(t) == std::vector<std::size_t>{0, 2, 0});
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
  hc::tree_trace_builder b("ids", 4);
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
  hc::detail::rng rng(3);
  std::vector<tokens> bases{iota_tokens(1, 40), iota_tokens(1000, 25)};
  for (int i = 0; i < 60; ++i) {
    tokens r = bases[rng.below(2)];
    r.resize(rng.between(1, r.size()));
    const std::size_t extra = rng.below(12);
    for (std::size_t k = 0; k < extra; ++k) r.push_back(static_cast<hc::token_id>(rng.below(3)));
    if (r.empty()) r.push_back(1);
    reqs.push_back(r);
    prompt.push_back(rng.between(1, r.size()));
    ns.push_back(rng.below(4) == 0 ? "x" : "y");
  }
  for (std::size_t B : {1, 3, 8}) {
    hc::tree_trace_builder b("lcp", B);
    for (std::size_t i = 0; i < reqs.size(); ++i) b.add_tokens(reqs[i], prompt[i], ns[i]);
    CHECK(hc::usable_matches(b.trace()) == brute_usable(reqs, prompt, ns, B));
    // With states at every block and a budget above the node count, vLLM `all` resumes at the
    // usable match whenever the matched blocks were prompt blocks of an earlier request.
    hc::vllm_all_policy all;
    const auto res = run(b.trace(), all, b.trace().node_count());
    CHECK(res.metrics.recomputed_tokens <= res.metrics.usable_tokens);
  }
}

// The engine rows' own rules (vLLM, SGLang, TensorRT-LLM, Marconi, llama.cpp), one hand-worked
// case per rule, are pinned in tree_engines_test.cpp.

TEST_CASE("block_tree: match and insert equal a node-by-node walk, with and without LRU leaves") {
  // A random trie of chains; requests are random root-to-node paths. The reference keeps its own
  // present set and counts the present prefix one node at a time.
  std::mt19937_64 rng(41);
  for (const bool track : {false, true}) {
    const random_trie trie(rng, 600);
    const auto& t = trie.t;
    hc::block_tree tree;
    tree.reset(t.node_count(), track);
    std::vector<std::uint8_t> ref(t.node_count(), 0);
    std::size_t checked = 0;
    for (int step = 0; step < 3000; ++step) {
      const auto v = trie.random_node(rng);
      const auto path = trie.path_to(v);
      std::size_t want = 0;
      while (want < path.size() && ref[path[want]]) ++want;
      CHECK(tree.match(path) == want);
      ++checked;
      if (step % 3 != 2) {
        const auto guard = tree.insert(t, path);
        for (auto u : path) ref[u] = 1;
        if (track && step % 5 == 0) {
          // Evict a few LRU leaves off the running path (they stay closed under parents).
          for (int e = 0; e < 3; ++e) {
            const auto gone = tree.evict_lru_leaf(t, guard);
            if (gone == hc::tree_trace::no_parent) break;
            CHECK(ref[gone] == 1);
            ref[gone] = 0;
          }
        }
      }
      CHECK(tree.blocks() ==
            static_cast<std::size_t>(std::count(ref.begin(), ref.end(), std::uint8_t{1})));
    }
    CHECK(checked == 3000);
  }
}

TEST_CASE("block_tree: stateless-first eviction equals a brute-force scan of the leaves") {
  // A random trie; random insertions (each stamps its path root to leaf, the reference keeps its
  // own clock), a pool observed by the tree adding and removing random states, and evictions in
  // both orders. Reference: among present nodes with no present child stamped before the
  // insertion's guard, the least stamp among those holding no state, else the least stamp.
  std::mt19937_64 rng(43);
  const random_trie trie(rng, 400);
  const auto& t = trie.t;
  hc::block_tree tree;
  tree.reset(t.node_count(), true);
  hc::state_pool pool;
  pool.reset(t.node_count(), t.node_count());
  tree.watch(pool);
  std::vector<std::uint8_t> present(t.node_count(), 0);
  std::vector<std::uint64_t> stamp(t.node_count(), 0);
  std::uint64_t clock = 0;
  auto reference = [&](std::uint64_t guard, bool stateless_first) {
    std::uint32_t best = hc::tree_trace::no_parent, bare = hc::tree_trace::no_parent;
    for (std::uint32_t v = 0; v < t.node_count(); ++v) {
      if (!present[v] || stamp[v] >= guard) continue;
      bool leaf = true;
      for (std::uint32_t c = 0; c < t.node_count() && leaf; ++c)
        leaf = !(present[c] && t.parent(c) == v);
      if (!leaf) continue;
      if (best == hc::tree_trace::no_parent || stamp[v] < stamp[best]) best = v;
      if (!pool.holds(v) && (bare == hc::tree_trace::no_parent || stamp[v] < stamp[bare])) bare = v;
    }
    return stateless_first && bare != hc::tree_trace::no_parent ? bare : best;
  };
  std::size_t evicted = 0, bare_taken = 0;
  for (int step = 0; step < 1500; ++step) {
    const auto v = trie.random_node(rng);
    const auto path = trie.path_to(v);
    const auto guard = tree.insert(t, path);
    REQUIRE(guard == clock + 1);
    for (auto u : path) {
      present[u] = 1;
      stamp[u] = ++clock;
    }
    // States come and go at random present nodes (the pool may hold one at any node).
    pool.open(path);
    for (auto u : path)
      if (!pool.holds(u) && rng() % 4 == 0) pool.add(u);
    for (int k = 0; k < 3; ++k) {
      const auto u = trie.random_node(rng);
      if (pool.holds(u) && rng() % 2 == 0) pool.remove(u);
    }
    pool.close();
    const bool order = step % 2 == 0;
    for (int e = 0; e < 4; ++e) {
      const auto want = reference(guard, order);
      const auto got = order ? tree.evict_stateless_leaf(t, guard) : tree.evict_lru_leaf(t, guard);
      REQUIRE(got == want);
      if (got == hc::tree_trace::no_parent) break;
      ++evicted;
      if (order && !pool.holds(got)) ++bare_taken;
      if (pool.holds(got)) pool.remove(got);  // the engine drops a state with its KV
      present[got] = 0;
    }
  }
  CHECK(evicted > 2000);
  CHECK(bare_taken > 500);  // the orders differ often enough to be tested
}

TEST_CASE("KV budget: stateless-first eviction keeps a state an LRU engine loses, hand-worked") {
  // Toy model: a block of B = 4 tokens and a state are 8 bytes each; KV pool 32 bytes (4 blocks).
  // R1 = 1..4 (a1): the row takes the state at a1. R2 = 100..107 (b1 b2): no state. R3 = 200..207
  // (c1 c2): 5 blocks > 4, one goes.
  //   LRU: a1 (the oldest leaf; its state dropped) → R4 = 1..8 matches nothing, resumes at 0.
  //   stateless first: b2 (the oldest leaf without a state) → a1 and its state stay; R4 resumes
  //   at 1 (usable ⌊(8 − 1)/4⌋ = 1), and its allocation evicts b1, a stateless leaf now.
  const auto t = toy_trace("bare", {{1, 4}, {100, 8}, {200, 8}, {1, 8}});
  const auto c = toy_cost(hc::kv_mode::separate, 32.0);
  const auto usable = hc::usable_matches(t, c);
  for (auto order : {hc::kv_order::lru, hc::kv_order::stateless_first}) {
    const bool bare = order == hc::kv_order::stateless_first;
    CAPTURE(bare);
    first_block_states p(order, 1);
    hc::tree_replayer r(t, p, 4, usable, c);
    std::vector<std::size_t> resumes;
    for (int i = 0; i < 3; ++i) {
      REQUIRE(r.step());
      resumes.push_back(r.last_resume());
    }
    CHECK(r.tree().present(t.requests()[0].path[0]) == bare);
    CHECK(r.tree().present(t.requests()[1].path[1]) == !bare);
    CHECK(r.pool().holds(t.requests()[0].path[0]) == bare);
    REQUIRE(r.step());
    resumes.push_back(r.last_resume());
    CHECK(resumes == std::vector<std::size_t>{0, 0, 0, bare ? 1u : 0u});
    const auto m = r.metrics();
    CHECK(m.states_dropped == (bare ? 0.0 : 1.0));
    // The library's row evicts KV in the order of the candidate it follows: with this policy
    // as its one candidate, the real pool resumes as the candidate does.
    std::vector<std::unique_ptr<hc::tree_policy>> cand;
    cand.push_back(std::make_unique<first_block_states>(order, 1));
    hc::portfolio_policy row(std::move(cand));
    CHECK(row.kv_eviction() == order);
    const auto rm = hc::replay_tree(t, row, 4, usable, c);
    CHECK(rm.resumed_tokens == (bare ? 4.0 : 0.0));
  }
}

TEST_CASE("KV budget: a joint pool sheds the row's least valuable state, not the LRU leaf's") {
  // Toy model (8-byte states and blocks), a joint pool of 24 bytes of KV share + M = 1 state =
  // 32 bytes. R1 = 1..4 (a1) and R2 = 100..103 (b1) each take the state at their block: KV 16 +
  // states 16 = 32. R3 = 200..203 (c1) allocates one block: 40 > 32, and both evictable leaves
  // (a1, b1) hold a state, so no stateless leaf can go.
  //   no shed: the least recently used leaf a1 goes with its state (24 bytes).
  //   shed: the row names b1's state (its least valuable, here by fiat); it is dropped, its
  //   block stays (32 bytes), and a1 keeps its state, so R4 = 1..8 resumes at 1.
  const auto t = toy_trace("shed", {{1, 4}, {100, 4}, {200, 4}, {1, 8}});
  const auto c = toy_cost(hc::kv_mode::joint, 24.0);
  const auto usable = hc::usable_matches(t, c);
  const auto a1 = t.requests()[0].path[0], b1 = t.requests()[1].path[0];
  for (const bool shed : {false, true}) {
    CAPTURE(shed);
    first_block_states p(hc::kv_order::stateless_first, 2,
                         shed ? t.requests()[1].path[0] : hc::tree_trace::no_parent);
    hc::tree_replayer r(t, p, 1, usable, c);
    for (int i = 0; i < 3; ++i) REQUIRE(r.step());
    CHECK(r.pool().holds(a1) == shed);
    CHECK(r.pool().holds(b1) == !shed);
    CHECK(r.tree().present(a1) == shed);
    CHECK(r.tree().present(b1));
    CHECK(r.kv_bytes() == (shed ? 24.0 : 16.0));
    REQUIRE(r.step());
    CHECK(r.last_resume() == (shed ? 1u : 0u));
    CHECK(r.metrics().states_dropped >= 1.0);
  }
}

TEST_CASE("sglang no_buffer snapshots at chunk ends and the request end, LRU eviction") {
  // B = 4, chunk C = 8 tokens. R1: prompt 20, output 2 → path of ⌊22/4⌋ = 5 blocks. Chunk ends
  // at 8 and 16 tokens (j = 2, 4), request end j = 5.
  hc::tree_trace_builder b("nobuf", 4);
  b.add_tokens(iota_tokens(1, 22), 20);
  hc::sglang_no_buffer_policy p(8);
  auto r = run(b.trace(), p, 10);
  CHECK(r.held[0] == std::vector<bool>{false, true, false, true, true});
  // Budget 2: the oldest of the three snapshots (j = 2) is evicted when j = 5 arrives.
  hc::sglang_no_buffer_policy q(8);
  r = run(b.trace(), q, 2);
  CHECK(r.held[0] == std::vector<bool>{false, false, false, true, true});
  CHECK(r.metrics.states_peak == 2);
}

TEST_CASE("marconi keeps at most the leaf and the branch-off point") {
  hc::tree_trace_builder b("marconi", 4);
  b.add_tokens(iota_tokens(1, 20), 12);                           // 5 blocks, output 8
  b.add_tokens(cat(iota_tokens(1, 8), iota_tokens(70, 12)), 16);  // branches off at m = 2
  hc::marconi_policy p(1.0, false);
  const auto r = run(b.trace(), p, 10);
  CHECK(r.held[0] == std::vector<bool>{false, false, false, false, true});
  CHECK(r.held[1] == std::vector<bool>{false, true, false, false, true});
  CHECK_THROWS_AS(hc::marconi_policy(-1.0), hybridcache::invalid_argument);
}

TEST_CASE(
    "marconi eviction: α = 0 is LRU among ≤1-child nodes, large α keeps the expensive state") {
  // B = 4. R1: 40 tokens (10 blocks) → leaf state at j = 10. R2: another 8-token sequence → leaf
  // j = 2. R3: a third 8-token sequence; budget 2 forces an eviction. R1's state saves FLOPs of
  // 40 tokens, R2's of 8: α = 0 evicts the least recent (R1), α = 2 evicts R2's.
  hc::tree_trace_builder b("evict", 4);
  b.add_tokens(iota_tokens(1, 40), 40);
  b.add_tokens(iota_tokens(500, 8), 8);
  b.add_tokens(iota_tokens(900, 8), 8);
  hc::marconi_policy lru(0.0, false);
  auto r = run(b.trace(), lru, 2);
  CHECK_FALSE(r.held[2].empty());
  const auto& t = b.trace();
  const auto usable = hc::usable_matches(t);
  {
    hc::marconi_policy p(0.0, false);
    hc::tree_replayer rep(t, p, 2, usable);
    rep.run();
    CHECK_FALSE(rep.pool().holds(t.requests()[0].path.back()));
    CHECK(rep.pool().holds(t.requests()[1].path.back()));
  }
  {
    hc::marconi_policy p(2.0, false);
    hc::tree_replayer rep(t, p, 2, usable);
    rep.run();
    CHECK(rep.pool().holds(t.requests()[0].path.back()));
    CHECK_FALSE(rep.pool().holds(t.requests()[1].path.back()));
  }
}

TEST_CASE("oracle: admits only states a later request can use, evicts the furthest next use") {
  // B = 4, budget 1. A (8 tokens) then B (8 tokens) then A' (A ++ 4) then B' (B ++ 4), then A'
  // again.
  hc::tree_trace_builder b("oracle", 4);
  const tokens A = iota_tokens(1, 8), Bt = iota_tokens(100, 8);
  b.add_tokens(A, 8);
  b.add_tokens(Bt, 8);
  b.add_tokens(cat(A, iota_tokens(200, 4)), 12);
  b.add_tokens(cat(Bt, iota_tokens(300, 4)), 12);
  hc::oracle_policy p;
  const auto r = run(b.trace(), p, 1);
  // Request 0 snapshots A's block 2 (blocks 1 and 2 are next used by request 2: the deeper one
  // is kept). Request 1's block 2 is next used at
  // request 3, later than 2 → not admitted. Request 2 resumes at 2; request 3 finds nothing.
  CHECK(r.resumes == std::vector<std::size_t>{0, 0, 2, 0});
  CHECK(r.held[0] == std::vector<bool>{false, true});
  CHECK(r.held[1] == std::vector<bool>{false, false});
}

TEST_CASE("the engine rejects a policy that cheats") {
  hc::tree_trace_builder b("cheat", 4);
  b.add_tokens(iota_tokens(1, 12), 12);
  b.add_tokens(iota_tokens(1, 12), 12);
  const auto usable = hc::usable_matches(b.trace());
  struct resume_without_state final : hc::tree_policy {
    std::string name() const override { return "x"; }
    void reset(const hc::tree_context&) override {}
    std::size_t resume(const hc::tree_step& s) override { return s.usable; }
    void finish(const hc::tree_step&) override {}
  } a;
  CHECK_THROWS_AS(hc::replay_tree(b.trace(), a, 4, usable), hybridcache::invalid_argument);
  struct snapshot_uncomputed final : hc::tree_policy {
    hc::tree_context c;
    std::string name() const override { return "y"; }
    void reset(const hc::tree_context& ctx) override { c = ctx; }
    std::size_t resume(const hc::tree_step&) override { return 0; }
    void finish(const hc::tree_step& s) override {
      if (s.index == 1) c.pool->add(c.trace->requests()[0].path[0] + 100);
    }
  } y;
  CHECK_THROWS_AS(hc::replay_tree(b.trace(), y, 4, usable), hybridcache::invalid_argument);
  struct overfill final : hc::tree_policy {
    hc::tree_context c;
    std::string name() const override { return "z"; }
    void reset(const hc::tree_context& ctx) override { c = ctx; }
    std::size_t resume(const hc::tree_step&) override { return 0; }
    void plan_prefill(const hc::tree_step& s, std::vector<std::size_t>& pos) override {
      for (std::size_t j = 1; j <= s.prompt_blocks; ++j) pos.push_back(j);
    }
    void after_prefill(const hc::tree_step& s) override {
      for (auto v : s.path()) c.pool->add(v);
    }
  } z;
  CHECK_THROWS_AS(hc::replay_tree(b.trace(), z, 2, usable), hybridcache::capacity_error);
}

TEST_CASE("every policy stays within budget on the synthetic workload, namespaces stay apart") {
  hc::multi_turn_options o;
  o.sessions = 40;
  o.block = 32;
  o.system_tokens = 256;
  o.max_turns = 6;
  o.user_max = 120;
  o.output_max = 160;
  const auto t = hc::synthetic_multi_turn(o);
  CHECK(hc::synthetic_multi_turn(o).node_count() == t.node_count());  // deterministic
  hc::tree_options so;
  so.budgets = {0, 1, 3, 17};
  so.marconi_alphas = {0.0, 1.0};
  const auto res = hc::simulate_tree(t, so);
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
  hc::tree_trace_builder b("ns", 4);
  b.add_tokens(iota_tokens(1, 16), 16, std::string("t1"));
  b.add_tokens(iota_tokens(1, 16), 16, std::string("t2"));
  b.add_tokens(iota_tokens(1, 16), 16, std::string("t1"));
  for (std::string_view name : hc::tree_policy_names) {
    auto p = hc::make_tree_policy(name, so);
    const auto r = run(b.trace(), *p, 8);
    CAPTURE(name);
    CHECK(r.resumes[1] == 0);
  }
  CHECK_THROWS_AS(hc::make_tree_policy("lru", so), hybridcache::invalid_argument);
}

TEST_CASE("synthetic multi-turn: turn t+1 extends turn t's input and output") {
  hc::multi_turn_options o;
  o.sessions = 1;
  o.max_turns = 10;
  o.block = 8;
  o.agent_fraction = 0.0;
  o.branch_probability = 0.0;
  o.seed = 11;
  const auto t = hc::synthetic_multi_turn(o);
  for (std::size_t i = 1; i < t.size(); ++i) {
    const auto& a = t.requests()[i - 1];
    const auto& r = t.requests()[i];
    CHECK(r.prompt_tokens > a.prompt_tokens + a.output_tokens);
    REQUIRE(r.path.size() >= a.path.size());
    CHECK(std::equal(a.path.begin(), a.path.end(), r.path.begin()));
    // Its user messages: turn t's, then one where turn t's output ended.
    auto expect = a.user_starts;
    expect.push_back(a.prompt_tokens + a.output_tokens);
    CHECK(r.user_starts == expect);
  }
  REQUIRE(t.size() > 1);
  CHECK(t.requests()[0].user_starts == std::vector<std::size_t>{o.system_tokens});
}

TEST_CASE("synthetic multi-turn: user starts with branches and compactions") {
  // Every prompt's first user message follows the system prompt (a compaction's summary is a
  // message of its own there), and its last one has at least user_min tokens: a branch edits the
  // message it cuts into, so the edit's tokens follow that message's start.
  hc::multi_turn_options o;
  o.sessions = 60;
  o.agent_fraction = 0.5;
  o.branch_probability = 0.3;
  const auto t = hc::synthetic_multi_turn(o);
  std::size_t edits = 0;
  for (const auto& r : t.requests()) {
    REQUIRE_FALSE(r.user_starts.empty());
    CHECK(r.user_starts.front() == o.system_tokens);
    CHECK(r.prompt_tokens - r.user_starts.back() >= o.user_min);
    if (r.prompt_tokens - r.user_starts.back() > o.user_max) ++edits;
  }
  CHECK(edits > 0);  // some branch kept more of the message it edits than one message can hold
}

TEST_CASE("modelled TTFT and FLOPs follow the cost model for one request") {
  hc::tree_trace_builder b("cost", 64);
  b.add_tokens(iota_tokens(1, 1000), 1000);
  b.add_tokens(iota_tokens(1, 1000), 1000);
  hc::vllm_align_policy p;
  const auto r = run(b.trace(), p, 4);
  // R2 resumes at ⌊999/64⌋ = 15 blocks (R1 snapshotted j = ⌊1000/64⌋ = 15): n = 40, p = 960.
  CHECK(r.resumes[1] == 15);
  const hc::tree_cost_model c;
  const double t1 = c.time.cost(1000, 0), t2 = c.time.cost(40, 960);
  CHECK(r.metrics.ttft_ms == doctest::Approx((t1 + t2) / 2));
  const double f = 1.6e9 * 1000 + 49152.0 * (1000.0 * 1001 / 2) + 1.6e9 * 40 +
                   49152.0 * (40.0 * 960 + 40.0 * 41 / 2);
  CHECK(r.metrics.prefill_flops == doctest::Approx(f));
}

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
TEST_CASE("the library's policy through its public API: tail snapshot, budget, namespaces") {
  // B = 4. R1 = 1..16 (prompt 13, output 3): the policy snapshots the tail (j = n = 4). R2 extends
  // R1's prompt and output: it resumes from R1's tail (usable ⌊23/4⌋ = 5 > 4). (A prompt of 13
  // tokens, so its usable end ⌊12/4⌋ = 3 is its last full block: the prefill end and the plan's
  // tail are one state. The aligned case is the test "…puts the prefill end where a re-ask
  // resumes".)
  hc::tree_trace_builder b("lib", 4);
  b.add_tokens(iota_tokens(1, 16), 13, std::string("t1"));
  b.add_tokens(cat(iota_tokens(1, 16), iota_tokens(40, 8)), 24, std::string("t1"));
  b.add_tokens(cat(iota_tokens(1, 16), iota_tokens(40, 8)), 24, std::string("t2"));
  hc::library_policy p;
  const auto r = run(b.trace(), p, 2);
  CHECK(r.resumes[0] == 0);
  CHECK(r.held[0].back());
  CHECK(r.resumes[1] == 4);
  CHECK(r.resumes[2] == 0);  // another namespace
  CHECK(r.metrics.states_peak <= 2);
  hc::library_policy none;
  CHECK(run(b.trace(), none, 0).metrics.resumed_tokens == 0.0);
}

TEST_CASE("the library's policy plans the prompt's tail at match time: a re-ask resumes there") {
  // B = 4. R1 = 1..16 (prompt 13: 3 full blocks, usable end ⌊12/4⌋ = 3; output 3). Causal: at
  // match time the prefill plan over the prompt's grid (4, 8, 12] has the prompt's tail j = 3
  // (the deepest new position, also the prefill end),
  // admitted after the prefill (a pool of 2 has room); at the end the request's tail j = 4 is
  // admitted too. R2 re-asks R1's prompt with another answer (1..12 ++ 50..57, prompt 20):
  // usable min(3, ⌊19/4⌋) = 3, so it resumes at 3 (before the causal protocol it resumed at 0:
  // the plan then ran over the whole path and its tail was j = 4; the separate offer of the
  // prefill's end that fixed it then, `library_policy`'s `prefill_end`, was removed in 0.2).
  hc::tree_trace_builder b("reask", 4);
  b.add_tokens(iota_tokens(1, 16), 13);
  b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(50, 8)), 20);
  hybridcache::policy_options o;
  o.fill_free = false;  // free room would hold j = 3 anyway (see the fill_free test below)
  hc::library_policy p(o, "hybridcache");
  const auto r = run(b.trace(), p, 2);
  CHECK(r.resumes[1] == 3u);
  CHECK(r.held[0] == std::vector<bool>{false, false, true, true});
  CHECK(r.metrics.states_peak <= 2);
}

TEST_CASE("the library's policy admits by value: a full pool keeps a prompt end over a new tail") {
  // The trace above with a pool of 1: R1's prompt tail a3 is admitted after the prefill (the
  // pool is empty) and noted as a prefill end (its prior π_P = 1/3). At R1's end its tail a4
  // (fresh-end prior 1/3) is offered to the full pool; a3 is the only held state and unpinned
  // (R1 resumed at the root). No match has ended at a4, and a4 would save 1 block · 1/3 against
  // Δ(a3) = 3 blocks · 2/3 (a3 anchors both priors): admission by value refuses it, and R2, which
  // re-asks the prompt, resumes at a3 (3 blocks). With `admit_by_value` off (0.2.0 and 0.2.1)
  // a4 displaces a3, and R2 finds no state on its usable path (a4 lies beyond it): 0.
  hc::tree_trace_builder b("reask1", 4);
  b.add_tokens(iota_tokens(1, 16), 13);
  b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(50, 8)), 20);
  for (const bool by_value : {true, false}) {
    CAPTURE(by_value);
    hybridcache::policy_options o;
    o.admit_by_value = by_value;
    hc::library_policy p(o);
    const auto r = run(b.trace(), p, 1);
    CHECK(r.held[0] == (by_value ? std::vector<bool>{false, false, true, false}
                                 : std::vector<bool>{false, false, false, true}));
    CHECK(r.resumes[1] == (by_value ? 3u : 0u));
    CHECK(r.metrics.states_peak <= 1);
  }
}

TEST_CASE("the library's policy puts the prefill end where a re-ask resumes: P a multiple of B") {
  // B = 4. R1's prompt is 1..12 (P = 12, three full blocks), output 13..16; R2 asks the same
  // prompt again (another answer). R2 may resume at most ⌊11/4⌋ = 2 blocks: one prompt token is
  // always computed. The prefill-end prior goes to that block, so R2 resumes at 2. The prompt's
  // last full block (3) serves only longer prompts; with the prior off nothing is at block 2
  // (the plan's tail is block 3, free room is not filled), and R2 starts from the root.
  hc::tree_trace_builder b("reask_aligned", 4);
  b.add_tokens(iota_tokens(1, 16), 12);
  b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(50, 4)), 12);
  for (const bool prior : {true, false}) {
    CAPTURE(prior);
    hybridcache::policy_options o;
    o.fill_free = false;
    o.prefill_prior = prior;
    hc::library_policy p(o, "hybridcache");
    const auto r = run(b.trace(), p, 4);
    CHECK(r.resumes[1] == (prior ? 2u : 0u));
    CHECK(r.held[0][1] == prior);  // block 2, the usable end of R1's prompt
  }
}

TEST_CASE("the library's policy filling free memory: a later branch resumes at a filled state") {
  // B = 4, a pool of 4. R1 = 1..24 (prompt 20 = 5 blocks, output 4: 6 blocks) on an empty pool.
  // At match time the plan over the prompt's grid (4 … 20] is the prompt's tail j = 5 and, with
  // `fill_free`, F = 4 − 1 = 3 of the other 4 positions, the ⌈i·4/3⌉-th for i = 1..3: j = 2, 3,
  // 4 (the pool is then full). Decode block 6: no free room, nothing offered. Request end: the
  // tail j = 6 (fresh-end prior) is offered to the full pool; the held states' regions have no
  // weight, so the least recently admitted, j = 2, goes. Without `fill_free`: the tail j = 5 and
  // the prefill end j = 4 (the prompt's usable end ⌊19/4⌋: P = 20 is a multiple of B, so a
  // re-ask resumes one block before its last full block), then 6. R2 = 1..12 ++ 60..71 (prompt
  // 24) leaves R1 after block 3 (usable 3): it resumes at 3 with the filled states, from the
  // root without them.
  hc::tree_trace_builder b("branch", 4);
  b.add_tokens(iota_tokens(1, 24), 20);
  b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(60, 12)), 24);
  for (bool fill : {true, false}) {
    CAPTURE(fill);
    hybridcache::policy_options o;
    o.fill_free = fill;
    hc::library_policy p(o, "hybridcache_fill");
    const auto r = run(b.trace(), p, 4);
    CHECK(r.held[0] == (fill ? std::vector<bool>{false, false, true, true, true, true}
                             : std::vector<bool>{false, false, false, true, true, true}));
    CHECK(r.resumes[1] == (fill ? 3u : 0u));
    // Extra chunk boundaries (announced j with 4j < P): R1 j = 2, 3, 4 with fill (j = 5 is
    // P = 20 itself), its prefill end j = 4 without; R2 its prefill end j = 5 (⌊23/4⌋) with and
    // without fill (its tail j = 6 is P = 24), and without fill also the junction j = 3.
    CHECK(r.metrics.chunk_boundaries == (fill ? 4.0 : 3.0));
    CHECK(r.metrics.states_peak <= 4);
  }
}

TEST_CASE("the library's policy with message_branch: the user-message start is the branch point") {
  // The trace of the test above, without `fill_free`, now with its messages: both prompts start
  // a user message at 12 tokens (block 3), after a shared system prompt. With `message_branch`
  // R1's plan adds that block as its branch point (no divergence was seen yet, so the learned
  // law offers none): R1 holds j = 3, 4 (the prefill end, ⌊19/4⌋), 5 (the prompt's tail) and 6
  // (the request end), and R2, which leaves R1 after block 3, resumes there. Without it: j = 4,
  // 5 and 6, and R2 starts from the root.
  hc::tree_trace_builder b("messages", 4);
  const std::vector<std::size_t> starts{12};
  b.add_tokens(iota_tokens(1, 24), 20, std::nullopt, 0.0, starts);
  b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(60, 12)), 24, std::nullopt, 0.0, starts);
  for (bool messages : {true, false}) {
    CAPTURE(messages);
    hybridcache::policy_options o;
    o.fill_free = false;
    hc::library_policy p(o, "hybridcache_messages", false, hc::kv_order::stateless_first, true,
                         messages);
    const auto r = run(b.trace(), p, 4);
    CHECK(r.held[0] == (messages ? std::vector<bool>{false, false, true, true, true, true}
                                 : std::vector<bool>{false, false, false, true, true, true}));
    CHECK(r.resumes[1] == (messages ? 3u : 0u));
  }
}

TEST_CASE("static optimum: the best fixed set for the realised matches") {
  // B = 4, document D = 1..12 under three questions of 4 tokens: requests 1 and 2 match D's three
  // blocks (usable ⌊15/4⌋ = 3). One state at D's end serves both: 0 recomputed; none: 2 · 12.
  hc::tree_trace_builder b("static", 4);
  for (hc::token_id q : {100, 200, 300})
    b.add_tokens(cat(iota_tokens(1, 12), iota_tokens(q, 4)), 16);
  const auto usable = hc::usable_matches(b.trace());
  const auto one = hc::static_optimum(b.trace(), 1, usable);
  CHECK(one.recomputed_tokens == 0.0);
  CHECK(one.resumed_tokens == 24.0);
  CHECK(hc::static_optimum(b.trace(), 0, usable).recomputed_tokens == 24.0);
}
#endif

// ---- the causal protocol (issue #22) ------------------------------------------------------------

TEST_CASE("causal protocol: each call sees only the blocks known then") {
  // B = 4. R = 1..22, prompt 10: pb = 2, path n = ⌊22/4⌋ = 5. The probe records blocks_known()
  // and path().size() at every call.
  hc::tree_trace_builder b("known", 4);
  b.add_tokens(iota_tokens(1, 22), 10);
  struct probe final : hc::tree_policy {
    std::vector<std::pair<std::string, std::size_t>> seen;
    std::string name() const override { return "probe"; }
    void reset(const hc::tree_context&) override {}
    std::size_t resume(const hc::tree_step& s) override {
      seen.emplace_back("resume", s.path().size());
      return 0;
    }
    void plan_prefill(const hc::tree_step& s, std::vector<std::size_t>&) override {
      seen.emplace_back("plan", s.blocks_known());
    }
    void after_prefill(const hc::tree_step& s) override {
      seen.emplace_back("prefill", s.path().size());
    }
    void on_decode_block(const hc::tree_step& s, std::size_t j) override {
      CHECK(s.path().size() == j);
      seen.emplace_back("decode", s.path().size());
    }
    void finish(const hc::tree_step& s) override { seen.emplace_back("finish", s.path().size()); }
  } p;
  hc::replay_tree(b.trace(), p, 4, hc::usable_matches(b.trace()));
  const std::vector<std::pair<std::string, std::size_t>> want{
      {"resume", 2}, {"plan", 2},   {"prefill", 2}, {"decode", 3},
      {"decode", 4}, {"decode", 5}, {"finish", 5}};
  CHECK(p.seen == want);
}

TEST_CASE("causal protocol: the replay rejects any snapshot not announced before its tokens") {
  // B = 4. R = 1..22, prompt 10 (pb = 2, n = 5). `mode` picks the cheat.
  hc::tree_trace_builder b("announce", 4);
  b.add_tokens(iota_tokens(1, 22), 10);
  const auto usable = hc::usable_matches(b.trace());
  struct cheat final : hc::tree_policy {
    int mode = 0;
    hc::tree_context c;
    std::string name() const override { return "cheat"; }
    void reset(const hc::tree_context& ctx) override { c = ctx; }
    std::size_t resume(const hc::tree_step&) override { return 0; }
    void plan_prefill(const hc::tree_step&, std::vector<std::size_t>& pos) override {
      if (mode == 0 || mode == 1) pos.push_back(2);  // the prompt's last full block
      if (mode == 2) pos.push_back(3);               // beyond the prompt: not a prefill position
    }
    void after_prefill(const hc::tree_step& s) override {
      if (mode == 0) c.pool->add(s.path()[1]);  // announced: fine
      if (mode == 1) c.pool->add(s.path()[0]);  // j = 1 was not announced
    }
    void on_decode_block(const hc::tree_step& s, std::size_t j) override {
      if (mode == 3 && j == 4) c.pool->add(s.path()[2]);  // block 3 passed a block ago
    }
    void finish(const hc::tree_step& s) override {
      if (mode == 4) c.pool->add(s.path()[3]);  // not the end
      if (mode == 0) c.pool->add(s.path()[4]);  // the end: fine
    }
  } p;
  for (int mode : {0, 1, 2, 3, 4}) {
    CAPTURE(mode);
    p.mode = mode;
    if (mode == 0) {
      const auto m = hc::replay_tree(b.trace(), p, 4, usable);
      CHECK(m.states_peak == 2);
      CHECK(m.chunk_boundaries == 1.0);  // j = 2: 8 < P = 10 splits the prefill
    } else {
      CHECK_THROWS_AS(hc::replay_tree(b.trace(), p, 4, usable), hybridcache::invalid_argument);
    }
  }
}

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
namespace {
// A request: the token sequence (prompt ++ output) and its prompt length.
struct req {
  tokens seq;
  std::size_t prompt = 0;
};
hc::tree_trace build(const std::vector<req>& rs, std::size_t B) {
  hc::tree_trace_builder b("causal", B);
  for (const auto& r : rs) b.add_tokens(r.seq, r.prompt);
  return b.take();
}
// Records what the wrapped policy decided at match time and after each prefill.
struct recorder final : hc::tree_policy {
  hc::tree_policy& inner;
  hc::tree_context c;
  std::vector<std::size_t> resumes;
  std::vector<std::vector<std::size_t>> announced;
  std::vector<std::vector<std::uint32_t>> after_prefill_held;
  explicit recorder(hc::tree_policy& p) : inner(p) {}
  std::string name() const override { return inner.name(); }
  void reset(const hc::tree_context& ctx) override {
    c = ctx;
    inner.reset(ctx);
  }
  std::size_t resume(const hc::tree_step& s) override {
    resumes.push_back(inner.resume(s));
    return resumes.back();
  }
  void plan_prefill(const hc::tree_step& s, std::vector<std::size_t>& pos) override {
    const auto before = pos.size();
    inner.plan_prefill(s, pos);
    announced.emplace_back(pos.begin() + static_cast<std::ptrdiff_t>(before), pos.end());
  }
  void after_prefill(const hc::tree_step& s) override {
    inner.after_prefill(s);
    std::vector<std::uint32_t> h;
    for (std::uint32_t v = 0; v < c.trace->node_count(); ++v)
      if (c.pool->holds(v)) h.push_back(v);
    after_prefill_held.push_back(h);
  }
  void on_decode_block(const hc::tree_step& s, std::size_t j) override {
    inner.on_decode_block(s, j);
  }
  void finish(const hc::tree_step& s) override { inner.finish(s); }
  void on_dropped(std::uint32_t v) override { inner.on_dropped(v); }
  void on_evicted(std::uint32_t v) override { inner.on_evicted(v); }
};
}  // namespace

TEST_CASE("the library's row has no hindsight: a request's output never changes its prefill") {
  // Random conversations (B = 4): a request extends an earlier request's prompt ++ output with a
  // new user turn, or starts afresh; outputs of random length. For each i, a second trace differs
  // from the first only in request i's output (another length and other tokens): everything the
  // library decided up to request i's prefill (resume points, announced positions, states held
  // after each prefill) must be identical. Before the causal protocol the plan ran over prompt ++
  // output (a longer output moved the fill positions and the tail), so this check failed.
  hc::detail::rng rng(7);
  std::vector<req> rs;
  hc::token_id next = 1;
  auto fresh = [&](std::size_t n) {
    tokens t(n);
    for (auto& x : t) x = next++;
    return t;
  };
  for (int i = 0; i < 24; ++i) {
    req r;
    if (!rs.empty() && rng.below(3) != 0) r.seq = rs[rng.below(rs.size())].seq;
    r.seq = cat(r.seq, fresh(rng.between(3, 14)));
    r.prompt = r.seq.size();
    r.seq = cat(r.seq, fresh(rng.below(20)));
    rs.push_back(r);
  }
  for (std::size_t budget : {2, 5, 12}) {
    for (std::size_t i = 1; i < rs.size(); i += 2) {
      CAPTURE(budget);
      CAPTURE(i);
      auto alt = rs;
      alt[i].seq.resize(alt[i].prompt);
      alt[i].seq = cat(alt[i].seq, fresh(rs[i].seq.size() - rs[i].prompt + 37));
      const auto ta = build(rs, 4), tb = build(alt, 4);
      hc::library_policy la, lb;
      recorder ra(la), rb(lb);
      hc::tree_replayer pa(ta, ra, budget, hc::usable_matches(ta));
      hc::tree_replayer pb(tb, rb, budget, hc::usable_matches(tb));
      pa.run(i + 1);
      pb.run(i + 1);
      CHECK(ra.resumes == rb.resumes);
      CHECK(ra.announced == rb.announced);
      // Node ids differ past the changed output; up to request i's prefill they are shared.
      CHECK(ra.after_prefill_held == rb.after_prefill_held);
    }
  }
}
#endif

TEST_CASE("KV budget: separate and joint pools, hand-worked") {
  // A toy model: one state = 8 bytes, KV = 2 bytes per token, so a block of B = 4 tokens is 8 bytes
  // (one unit). KV budget 32 bytes (4 blocks); M = 1 state. vllm_all snapshots every prompt
  // block; one chunk's blocks enter the LRU deepest first (vLLM frees them in reverse order).
  // R1 = 1..8 (2 blocks), R2 = 1..4 ++ 50..53 (prompt 8: match 1, usable 1), R3 = 200..215.
  //
  // separate: state pool of 1. R1: j = 2, then j = 1 evicts it (LRU) → holds R1b1. R2: resumes
  //   at 1 (R1b1, pinned while R2 runs) → j = 2 finds no room. R3 allocates 4 blocks: 7 blocks
  //   = 56 > 32 bytes; LRU leaves off R3's path: R1b2, R2b2 (no states), then R1b1 (now a leaf;
  //   its state dropped) → 4 blocks. Evicted 3, dropped 1; R3's j = 4, 3, 2, 1 → holds R3b1.
  // joint: one pool of 32 + 1·8 = 40 bytes, one LRU over KV blocks and vllm's states (vLLM's
  //   one free queue). R1: KV 16 → capacity ⌊(40 − 16)/8⌋ = 3 → holds j = 2, 1 (2 states > M:
  //   the pool lends KV's unused share); LRU R1b1 R1b2 s(R1b2) s(R1b1). R2: resume 1 (the hit
  //   touches s(R1b1)); KV 24 + 16 = 40 fits; capacity 2; j = 2 needs a slot: the oldest
  //   evictable is the leaf R1b2, older than s(R1b2), so its KV goes and its state with it
  //   (dropped 1). R3: 6 blocks + 2 states = 64 > 40: s(R1b1) (touched before R2's KV) is
  //   older than the leaf R2b2 → dropped → 56; then R2b2 (before its state) → evicted with its
  //   state → 40. Capacity 0: j = 4 takes the now-leaf R1b1's KV (40 − 32 → 1 slot), j = 3, 2, 1
  //   each evict the previous → holds R3b1. Evicted 3, dropped 3.
  hc::tree_trace_builder b("kv", 4);
  b.add_tokens(iota_tokens(1, 8), 8);
  b.add_tokens(cat(iota_tokens(1, 4), iota_tokens(50, 4)), 8);
  b.add_tokens(iota_tokens(200, 16), 16);
  hc::tree_cost_model c;
  c.model = hc::model_shape{"toy", 1, 1, 1, 1, 8, 1, 1, 1};
  REQUIRE(c.model.checkpoint_bytes() == 8.0);
  REQUIRE(c.model.kv_bytes_per_token() == 2.0);
  const auto& t = b.trace();
  for (auto mode : {hc::kv_mode::separate, hc::kv_mode::joint}) {
    CAPTURE(hc::to_string(mode));
    c.kv = {mode, 32.0};
    const auto usable = hc::usable_matches(t, c);
    CHECK(usable == std::vector<std::size_t>{0, 1, 0});
    hc::vllm_all_policy p;
    hc::tree_replayer r(t, p, 1, usable, c);
    std::vector<hc::tree_request_outcome> log;
    r.set_request_log(&log);
    std::vector<std::size_t> resumes;
    while (r.step()) resumes.push_back(r.last_resume());
    const auto m = r.metrics();
    const bool joint = mode == hc::kv_mode::joint;
    CHECK(resumes == std::vector<std::size_t>{0, 1, 0});
    // The per-request log, from the derivation above: states and KV blocks held after R1, R2, R3
    // (separate: R1b1 / R1b1 (pinned, j = 2 finds no room) / R3b1, KV 2 / 3 / 4 blocks; joint:
    // j = 2 and 1 / R1b1 and R2b2 (R1b2 went with its state) / R3b1, KV 2 / 2 / 4 blocks).
    REQUIRE(log.size() == 3);
    const std::size_t prompt[3] = {8, 8, 16}, states[2][3] = {{1, 1, 1}, {2, 2, 1}},
                      kv[2][3] = {{2, 3, 4}, {2, 2, 4}};
    for (std::size_t i = 0; i < 3; ++i) {
      CAPTURE(i);
      CHECK(log[i].request == i);
      CHECK(log[i].prompt_tokens == prompt[i]);
      CHECK(log[i].usable_tokens == usable[i] * 4);
      CHECK(log[i].resumed_tokens == resumes[i] * 4);
      CHECK(log[i].states == states[joint][i]);
      CHECK(log[i].kv_blocks == kv[joint][i]);
      CHECK(log[i].leader == hc::tree_request_outcome::no_candidate);
    }
    CHECK(m.kv_evicted_blocks == 3.0);
    CHECK(m.states_dropped == (joint ? 3.0 : 1.0));
    CHECK(m.states_peak == (joint ? 2u : 1u));
    CHECK(r.tree().blocks() == 4);
    CHECK(r.kv_bytes() == 32.0);
    CHECK(r.pool().size() == 1);
    CHECK(r.pool().holds(t.requests()[2].path[0]));
    CHECK_FALSE(r.tree().present(t.requests()[0].path[0]));
  }
  // Unlimited KV: R1b1 keeps its state (it entered the LRU last), so R2 resumes at 1.
  hc::vllm_all_policy p;
  CHECK(run(t, p, 1).resumes == std::vector<std::size_t>{0, 1, 0});
}

TEST_CASE("KV budget: a state whose KV is gone cannot be resumed") {
  // R1 = 1..8, R2 = 100..107, R3 = 1..12 (R1 extended); a KV pool of 3 blocks (toy model, 8
  // bytes a block): R2's allocation evicts R1's leaf block R1b2 and the state vllm_align took
  // there (j = pb = 2), so R3 matches 1 block (usable 1; unlimited KV: 2) and resumes at R1b1
  // (vllm_align also took j = ⌊(P − 1)/B⌋ = 1 there). R3's allocation then evicts R2b2 and
  // R2b1 with their states. A policy resuming at 2, where the unlimited replay's state was, is
  // rejected.
  hc::tree_trace_builder b("kvgone", 4);
  b.add_tokens(iota_tokens(1, 8), 8);
  b.add_tokens(iota_tokens(100, 8), 8);
  b.add_tokens(iota_tokens(1, 12), 12);
  const auto c = toy_cost(hc::kv_mode::separate, 24.0);
  const auto& t = b.trace();
  const auto usable = hc::usable_matches(t, c);
  CHECK(usable == std::vector<std::size_t>{0, 0, 1});
  CHECK(hc::usable_matches(t) == std::vector<std::size_t>{0, 0, 2});
  hc::vllm_align_policy a;
  const auto m = hc::replay_tree(t, a, 4, usable, c);
  CHECK(m.states_dropped == 3.0);  // R1b2's at R2's allocation, R2b2's and R2b1's at R3's
  CHECK(m.resumed_tokens == 4.0);
  struct stale final : hc::tree_policy {
    std::string name() const override { return "stale"; }
    void reset(const hc::tree_context&) override {}
    std::size_t resume(const hc::tree_step& s) override { return s.index == 2 ? 2 : 0; }
  } st;
  CHECK_THROWS_AS(hc::replay_tree(t, st, 4, usable, c), hybridcache::invalid_argument);
}

TEST_CASE("KV budget: every policy runs within both pools on the synthetic workload") {
  const auto t = small_multi_turn(30);
  for (auto mode : {hc::kv_mode::separate, hc::kv_mode::joint}) {
    CAPTURE(hc::to_string(mode));
    hc::tree_options so;
    so.budgets = {0, 2, 9};
    so.marconi_alphas = {0.0, 1.0};
    // KV for about a third of the trace's distinct blocks: eviction happens.
    so.cost.kv = {mode, static_cast<double>(t.node_count()) / 3.0 * 32.0 *
                            so.cost.model.kv_bytes_per_token()};
    const auto res = hc::simulate_tree(t, so);
    for (const auto& m : res.rows) {
      CAPTURE(m.policy);
      CAPTURE(m.budget);
      CHECK(m.kv == mode);
      if (m.policy != "static_optimum") CHECK(m.kv_evicted_blocks > 0.0);
      CHECK(m.resumed_tokens + m.recomputed_tokens == doctest::Approx(m.usable_tokens));
      if (mode == hc::kv_mode::separate) CHECK(m.states_peak <= m.budget);
    }
  }
}

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
TEST_CASE("victim log: the library policy's victims are the states its pool gave up, in order") {
  // Reference: the replayer's own log of every state added to or removed from the pool. A
  // removal the policy did not log must be the engine's drop (a state whose KV went), counted
  // apart in `states_dropped`; the depths come from the trace, not from the policy.
  const auto t = small_multi_turn(30);
  const std::size_t B = t.block();
  for (auto mode : {hc::kv_mode::unlimited, hc::kv_mode::joint}) {
    for (std::size_t budget : {3, 9}) {
      CAPTURE(hc::to_string(mode));
      CAPTURE(budget);
      hc::tree_options so;
      if (mode == hc::kv_mode::joint)
        so.cost.kv = {mode, static_cast<double>(t.node_count()) / 3.0 * 32.0 *
                                so.cost.model.kv_bytes_per_token()};
      const auto usable = hc::usable_matches(t, so.cost);
      auto plain = hc::make_tree_policy("hybridcache_exact", so);
      const auto m0 = hc::replay_tree(t, *plain, budget, usable, so.cost);
      auto p = hc::make_tree_policy("hybridcache_exact", so);
      std::vector<hc::tree_victim_event> log;
      p->log_victims(&log, 7);
      std::vector<std::uint32_t> changes;
      hc::tree_replayer r(t, *p, budget, usable, so.cost);
      r.log_states(&changes);
      // The states the engine dropped because the policy shed them for KV, per request, from
      // the replayer's own record of its allocation: the log's `shed` victims, in order.
      std::size_t seen = 0, sheds = 0;
      while (r.step()) {
        const std::size_t i = r.current().index;
        std::vector<std::uint32_t> dropped, logged;
        for (const auto& d : r.allocation_drops())
          if (d.why == hc::tree_replayer::state_drop::cause::shed) dropped.push_back(d.node);
        for (; seen < log.size(); ++seen) {
          CHECK(log[seen].request == i);
          if (log[seen].why == hc::tree_victim_event::cause::shed) logged.push_back(log[seen].node);
        }
        CHECK(logged == dropped);
        sheds += dropped.size();
      }
      if (mode == hc::kv_mode::joint) CHECK(sheds > 0);  // the case exercises shedding
      const auto m = r.metrics();
      // Logging changes no decision.
      CHECK(m.recomputed_tokens == m0.recomputed_tokens);
      CHECK(m.states_dropped == m0.states_dropped);
      std::set<std::uint32_t> held;
      std::size_t next = 0, engine_drops = 0, shed = 0;
      for (const std::uint32_t v : changes) {
        if (held.insert(v).second) continue;  // added
        held.erase(v);                        // removed
        if (next < log.size() && log[next].node == v) {
          const auto& e = log[next++];
          CHECK(e.candidate == 7u);
          CHECK(e.request < t.size());
          CHECK(e.depth_tokens == t.depth(v) * B);
          if (e.up != hc::tree_trace::no_parent) {
            CHECK(held.count(e.up) == 1);  // the state above it was held when it went
            CHECK(e.gap_tokens == (t.depth(v) - t.depth(e.up)) * B);
          } else {
            CHECK(e.gap_tokens == t.depth(v) * B);
          }
          CHECK(e.value >= 0.0);
          CHECK(std::isfinite(e.value));
          CHECK(e.expected_tokens >= 0.0);
          CHECK(e.bytes == static_cast<std::size_t>(so.cost.model.checkpoint_bytes()));
          if (e.why == hc::tree_victim_event::cause::shed) ++shed;
          if (mode == hc::kv_mode::unlimited) CHECK(e.why == hc::tree_victim_event::cause::admit);
        } else {
          ++engine_drops;
        }
      }
      CHECK(next == log.size());  // every logged victim left the pool, in the logged order
      CHECK(!log.empty());
      for (std::size_t i = 1; i < log.size(); ++i) CHECK(log[i - 1].request <= log[i].request);
      // The engine's drops, and the states the policy shed for KV (which the engine drops), are
      // the replayer's count of dropped states.
      CHECK(static_cast<double>(engine_drops + shed) == m.states_dropped);
    }
  }
}

TEST_CASE("victim log: the library's row logs its library candidates, engine rows log nothing") {
  const auto t = small_multi_turn(20);
  hc::tree_options so;
  so.budgets = {4};
  so.policies = {"hybridcache", "vllm_align", "hybridcache_exact"};
  so.static_optimum = false;
  so.cost.kv = {hc::kv_mode::joint, static_cast<double>(t.node_count()) / 3.0 * 32.0 *
                                        so.cost.model.kv_bytes_per_token()};
  const auto plain = hc::simulate_tree(t, so);
  so.victim_log = true;
  const auto logged = hc::simulate_tree(t, so);
  REQUIRE(plain.rows.size() == 3);
  REQUIRE(logged.rows.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(logged.rows[i].policy);
    CHECK(logged.rows[i].recomputed_tokens == plain.rows[i].recomputed_tokens);
    CHECK(logged.rows[i].leader == plain.rows[i].leader);
    CHECK(plain.rows[i].victims.empty());
  }
  const auto& row = logged.rows[0];
  REQUIRE(row.candidates.size() > 2);
  REQUIRE(!row.victims.empty());
  std::set<std::uint32_t> seen;
  for (const auto& e : row.victims) {
    REQUIRE(e.candidate < row.candidates.size());
    CHECK(row.candidates[e.candidate].rfind("hybridcache", 0) == 0);  // a library candidate
    seen.insert(e.candidate);
  }
  CHECK(seen.size() == 3);  // all three library candidates (joint pool) gave states up
  CHECK(logged.rows[1].victims.empty());  // vllm_align ranks nothing with the library
  REQUIRE(!logged.rows[2].victims.empty());
  for (const auto& e : logged.rows[2].victims)
    CHECK(e.candidate == hc::tree_request_outcome::no_candidate);
}
#endif

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
namespace {
/// The hand-worked policies below: one-token blocks, one-byte states, `capacity` states.
hc::policy_options unit_policy(std::size_t capacity, std::size_t replan_every) {
  hc::policy_options o;
  o.block_size = 1;
  o.state_bytes = 1;
  o.capacity_bytes = capacity;
  o.replan_every = replan_every;
  return o;
}
}  // namespace
#endif

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
TEST_CASE("tree::state_policy: extend_keys + note_sequence_end insert exactly as insert_keys") {
  // Two policies see the same requests: A inserts each whole sequence at its end (insert_keys);
  // B adds the prompt, then the output one block at a time (extend_keys), then notes the end
  // (note_sequence_end). Both match first and admit the prompt's end and the sequence's end.
  // Their node ids, states, expected recompute and the tail's hit chance must agree throughout
  // (the fresh-end prior included).
  using hybridcache::digest;
  hc::policy_options o = unit_policy(3, 4);
  hc::state_policy a(o), b(o), c(o);
  const auto ns = hybridcache::namespace_key{}.with_tenant("t");
  hc::detail::rng rng(5);
  std::vector<std::vector<std::uint32_t>> seqs;  // symbols
  std::map<std::vector<std::uint32_t>, std::uint64_t> key_of;
  auto key = [&](const std::vector<std::uint32_t>& prefix) {
    auto [it, fresh] = key_of.emplace(prefix, key_of.size() + 1);
    (void)fresh;
    return digest{it->second, 0xABCDULL};
  };
  for (int i = 0; i < 200; ++i) {
    std::vector<std::uint32_t> s;
    if (!seqs.empty() && rng.below(4) != 0) {
      s = seqs[rng.below(seqs.size())];
      s.resize(rng.below(s.size() + 1));
    }
    const std::size_t prompt = s.size() + 1 + rng.below(3);
    while (s.size() < prompt + rng.below(4)) s.push_back(static_cast<std::uint32_t>(rng.below(3)));
    seqs.push_back(s);
    std::vector<digest> keys;
    std::vector<std::uint32_t> prefix;
    for (auto x : s) {
      prefix.push_back(x);
      keys.push_back(key(prefix));
    }
    const std::size_t pl = std::min(prompt, keys.size());
    const auto ma = a.match_keys(ns, std::span(keys).first(pl - 1));
    const auto mb = b.match_keys(ns, std::span(keys).first(pl - 1));
    const auto mc = c.match_keys(ns, std::span(keys).first(pl - 1));
    REQUIRE(ma.resume_node == mb.resume_node);
    REQUIRE(ma.resume_node == mc.resume_node);
    const auto na = a.insert_keys(ns, keys);
    auto nb = b.extend_keys(ns, hc::no_node, std::span(keys).first(pl));
    for (std::size_t j = pl; j < keys.size(); ++j)
      nb.push_back(b.extend_keys(ns, nb.back(), std::span(keys).subspan(j, 1)).front());
    b.note_sequence_end(nb.back());
    REQUIRE(na == nb);
    // C walks the prompt from its match (the prefix overload), then one key at a time.
    auto nc = c.extend_keys(ns, std::span(mc.path), std::span(keys).first(pl));
    for (std::size_t j = pl; j < keys.size(); ++j)
      nc.push_back(c.extend_key(ns, nc.back(), keys[j]));
    c.note_sequence_end(nc.back());
    REQUIRE(na == nc);
    for (auto v : {na[pl - 1], na.back()}) {
      const auto ra = a.admit(v, 1), rb = b.admit(v, 1), rc = c.admit(v, 1);
      CHECK(ra.admitted == rb.admitted);
      CHECK(ra.victims == rb.victims);
      CHECK(ra.admitted == rc.admitted);
      CHECK(ra.victims == rc.victims);
    }
    a.unpin(ma.resume_node);
    b.unpin(mb.resume_node);
    c.unpin(mc.resume_node);
    CHECK(a.expected_recompute() == doctest::Approx(c.expected_recompute()));
    CHECK(a.state_count() == c.state_count());
    CHECK(a.expected_recompute() == doctest::Approx(b.expected_recompute()));
    CHECK(a.match_share(na.back()) == doctest::Approx(b.match_share(na.back())));
    if (a.has_state(na.back()))
      CHECK(a.hit_chance(na.back()) == doctest::Approx(b.hit_chance(na.back())));
    CHECK(a.state_count() == b.state_count());
  }
}
#endif

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
TEST_CASE(
    "tree::state_policy: extend_keys from a match prefix ignores a prefix that is stale or "
    "foreign") {
  // The reference is the walk from the root of a second policy with the same history: the
  // prefix overload must return its nodes whenever the prefix is not the sequence's own.
  using hybridcache::digest;
  hc::policy_options o = unit_policy(4, 0);
  hc::state_policy a(o), b(o);
  const auto ns = hybridcache::namespace_key{}.with_tenant("t");
  const auto other = hybridcache::namespace_key{}.with_tenant("u");
  const std::vector<digest> k{digest{1, 9}, digest{2, 9}, digest{3, 9}, digest{4, 9}};
  for (auto* p : {&a, &b}) (void)p->insert_keys(ns, std::span(k).first(3));
  const auto m = a.match_keys(ns, std::span(k).first(3));
  a.unpin(m.resume_node);
  REQUIRE(m.path.size() == 3);
  // Too long a prefix is an argument error, nothing inserted.
  const std::vector<hybridcache::node_id> four(4, m.path[0]);
  CHECK_THROWS_AS(a.extend_keys(ns, std::span(four), std::span(k).first(3)),
                  hybridcache::invalid_argument);
  // Another namespace's walk ignores the prefix (its first node is not a child of that root).
  CHECK(a.extend_keys(other, std::span(m.path), std::span(k)) ==
        b.extend_keys(other, hc::no_node, std::span(k)));
  // One key below a namespace's root, and below a node, without the vector.
  CHECK(a.extend_key(other, hc::no_node, k[0]) ==
        b.extend_keys(other, hc::no_node, std::span(k).first(1)).front());
  const auto below = b.extend_keys(other, hc::no_node, std::span(k).first(2));
  CHECK(a.extend_key(other, below[0], k[1]) == below[1]);
  CHECK_THROWS_AS(a.extend_key(other, hc::node_id{12345}, k[1]), hybridcache::invalid_argument);
  // A prefix whose deepest node was erased since the match: the walk starts at the root and
  // re-creates the block (the same node count and keys as the root walk).
  a.erase(m.path[2]);
  const auto mb = b.match_keys(ns, std::span(k).first(3));
  b.unpin(mb.resume_node);
  b.erase(mb.path[2]);
  const auto ra = a.extend_keys(ns, std::span(m.path), std::span(k));
  const auto rb = b.extend_keys(ns, hc::no_node, std::span(k));
  REQUIRE(ra.size() == 4);
  CHECK(ra == rb);
  CHECK(ra[0] == m.path[0]);
  CHECK(ra[2] != m.path[2]);
  // A prefix naming other keys (keys[0] differs): ignored.
  std::vector<digest> k2 = k;
  k2[0] = digest{5, 9};
  CHECK(a.extend_keys(ns, std::span(ra).first(2), std::span(k2)) ==
        b.extend_keys(ns, hc::no_node, std::span(k2)));
}
#endif

#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
TEST_CASE("tree::state_policy: set_capacity_bytes frees what evict would, then plans in the room") {
  // Two policies with the same history (B = 1, one-byte states, capacity 4): four sequences of
  // one block under the root, each matched once, with states. A shrinks its capacity to 1
  // (set_capacity_bytes), B frees 3 bytes by evict: the same victims in the same order. Then A
  // plans (fill_free) with room for 0 more states: no fill position; with the capacity back at
  // 4, the free room of 3 states takes the three other grid positions of a 4-block prompt.
  using hybridcache::digest;
  hc::policy_options o = unit_policy(4, 0);
  o.snapshot_tail = false;
  o.snapshot_junction = false;
  hc::state_policy a(o), b(o);
  const auto ns = hybridcache::namespace_key{}.with_tenant("t");
  for (std::uint64_t i = 1; i <= 4; ++i) {
    const std::vector<digest> k{digest{i, 7}};
    for (auto* p : {&a, &b}) {
      const auto n = p->insert_keys(ns, k);
      CHECK(p->admit(n[0], 1).admitted);
      for (std::uint64_t r = 0; r < i; ++r) p->unpin(p->match_keys(ns, k).resume_node);
    }
  }
  const auto va = a.set_capacity_bytes(1);
  const auto vb = b.evict(3);
  CHECK(va.size() == 3);
  CHECK(va == vb);
  CHECK(a.capacity_bytes() == 1);
  CHECK(a.used_bytes() == 1);
  CHECK_THROWS_AS(a.set_capacity_bytes(0), hybridcache::invalid_argument);
  const hc::match_result none = a.match_keys(ns, std::vector<digest>{});
  const std::vector<std::size_t> grid{1, 2, 3, 4};
  CHECK(a.prefill_plan(none, 4, grid).empty());
  CHECK(a.set_capacity_bytes(4).empty());
  CHECK(a.prefill_plan(none, 4, grid) == std::vector<std::size_t>{2, 3, 4});
  a.unpin(none.resume_node);
}
#endif
