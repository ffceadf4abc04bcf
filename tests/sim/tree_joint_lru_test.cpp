// SPDX-License-Identifier: Apache-2.0
// The vLLM rows under a joint KV budget: one LRU over cached KV blocks and held states, as vLLM's
// hybrid allocator pops the least recently used free block of one `BlockPool` whatever group it
// belongs to (include/hybridcache/sim/tree/policies.hpp, `vllm_policy`; replay.hpp,
// `tree_context::evict_kv_older`, `tree_policy::lru_state`). Two hand-worked cases and a
// comparison with an independent restatement of the free queue (a list, least recently used
// first, scanned for the first evictable item) on random traces.
#include <doctest/doctest.h>

#include "hand_trace.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <hybridcache/sim/tree.hpp>
#include <limits>
#include <list>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace hc = hybridcache;

namespace {

/// A toy model with B = 4 tokens: a state is 8 bytes and so is a block (2 bytes per token), so
/// one state and one KV block each take one page, as in vLLM's padded pool.
hc::tree_cost_model toy_joint(std::size_t pages, std::size_t M) {
  hc::tree_cost_model c;
  c.model = hc::model_shape{"toy", 1, 1, 1, 1, 8, 1, 1, 1};
  REQUIRE(c.model.checkpoint_bytes() == 8.0);
  REQUIRE(c.model.kv_bytes_per_token() == 2.0);
  REQUIRE(pages >= M);
  c.kv = {hc::kv_mode::joint, 8.0 * static_cast<double>(pages - M)};  // + M · 8 = pages · 8
  return c;
}

using hybridcache_test::hand_trace;

/// vLLM's free queue restated for `vllm_align` on a pool of `pages` pages (one per KV block and
/// per state): a list of cached items, least recently used first; a use moves an item to the
/// back; room is made by taking the first evictable item of the list: a KV block with no cached
/// child and not on the running request's path (its state goes with it: its prefix KV is gone),
/// or a state other than the resumed one. The row's rules (vllm_policy, align mode): resume at
/// the deepest state within the usable match (a hit uses that state only); the request's KV is
/// then used root to leaf; then the states at pb, at pb − 1 when B divides P, and at the KV
/// match when it lies strictly between the resume point and pb are taken in that position
/// order, a held one left as it is. The counters follow the replay's: `dropped` counts states
/// that went with their KV or for a KV allocation, not those the row evicts for its own states.
struct free_queue_model {
  struct item {
    bool state;
    std::uint32_t node;
  };
  free_queue_model(const hc::tree_trace& trace, std::size_t n) : t(trace), pages(n) {}
  const hc::tree_trace& t;
  std::size_t pages;
  std::list<item> lru{};
  std::set<std::uint32_t> kv{}, states{};
  std::vector<std::size_t> resumes{};
  double evicted = 0.0, dropped = 0.0;

  void forget(bool state, std::uint32_t v) {
    lru.remove_if([&](const item& x) { return x.state == state && x.node == v; });
    (state ? states : kv).erase(v);
  }
  void use(bool state, std::uint32_t v) {
    forget(state, v);
    lru.push_back({state, v});
    (state ? states : kv).insert(v);
  }
  [[nodiscard]] bool cached_child(std::uint32_t v) const {
    return std::any_of(kv.begin(), kv.end(), [&](std::uint32_t c) { return t.parent(c) == v; });
  }
  [[nodiscard]] std::size_t used() const { return kv.size() + states.size(); }
  /// Frees the first evictable item of the list. @returns false when none is.
  bool pop(const std::set<std::uint32_t>& running, std::uint32_t pinned, bool count_state) {
    for (const auto& x : lru) {
      if (x.state) {
        if (x.node == pinned) continue;
        if (count_state) dropped += 1.0;
        forget(true, x.node);
        return true;
      }
      if (running.count(x.node) || cached_child(x.node)) continue;
      const auto v = x.node;
      forget(false, v);
      evicted += 1.0;
      if (states.count(v)) {
        forget(true, v);
        dropped += 1.0;
      }
      return true;
    }
    return false;
  }
  void run() {
    constexpr auto none = std::numeric_limits<std::uint32_t>::max();
    const std::size_t B = t.block();
    for (const auto& r : t.requests()) {
      const std::size_t P = r.prompt_tokens, pb = P / B;
      std::size_t m = 0;
      while (m < pb && kv.count(r.path[m])) ++m;
      const std::size_t u = std::min(m, (P - 1) / B);
      std::size_t k = u;
      while (k > 0 && !states.count(r.path[k - 1])) --k;
      resumes.push_back(k);
      const std::uint32_t pinned = k > 0 ? r.path[k - 1] : none;
      if (k > 0) use(true, pinned);
      const std::set<std::uint32_t> running(r.path.begin(), r.path.end());
      for (auto v : r.path) use(false, v);
      while (used() > pages && pop(running, pinned, true)) {
      }
      REQUIRE(used() <= pages);  // the cases below never run the replay's last-resort rule
      std::set<std::size_t> at{pb};
      if (P % B == 0 && pb > 0) at.insert(pb - 1);
      if (m > k && m < pb) at.insert(m);
      for (auto j : at) {
        if (j <= k || j > pb || states.count(r.path[j - 1])) continue;
        bool room = true;
        while (room && used() >= pages) room = pop(running, pinned, false);
        if (room) use(true, r.path[j - 1]);
      }
    }
  }
};

std::vector<std::size_t> replay_resumes(hc::tree_replayer& r) {
  std::vector<std::size_t> out;
  while (r.step()) out.push_back(r.last_resume());
  return out;
}

std::set<std::uint32_t> held(const hc::tree_trace& t, const hc::tree_replayer& r) {
  std::set<std::uint32_t> out;
  for (std::uint32_t v = 0; v < t.node_count(); ++v)
    if (r.pool().holds(v)) out.insert(v);
  return out;
}

std::set<std::uint32_t> cached(const hc::tree_trace& t, const hc::tree_replayer& r) {
  std::set<std::uint32_t> out;
  for (std::uint32_t v = 0; v < t.node_count(); ++v)
    if (r.tree().present(v)) out.insert(v);
  return out;
}

}  // namespace

TEST_CASE("vllm joint pool: a new state takes an older KV block, not the row's newer state") {
  // 6 pages (M = 1 + 40 bytes of KV). R1 = a1 a2 a3 (P = 9, one output block): KV a1 a2 a3, the
  // state at pb = 2 (s_a2). R2 = b1 b2 (P = 9): KV 5 pages + s_a2 = 6, full; its state at b2 needs
  // a page. LRU order: a1 a2 a3 s_a2 b1 b2; evictable: the leaf a3 (R1's output block) and s_a2.
  // One LRU: a3 is older → its KV goes and s_a2 stays (the old rule evicted the row's own LRU
  // state, s_a2). R3 = a1 a2 c3 (P = 13): match 2, resumes at s_a2 (k = 2; old rule: 0). Its KV
  // c3 makes 5 + 2 = 7 pages: the oldest evictable is the leaf b2 (before s_b2, taken after it),
  // which goes with s_b2. Then s_c3 at pb = 3 fits. Evicted: a3, b2; dropped: s_b2.
  hand_trace h(4);
  h.add({"a1", "a2", "a3"}, 9, 3);
  h.add({"b1", "b2"}, 9);
  h.add({"a1", "a2", "c3"}, 13);
  const auto cost = toy_joint(6, 1);
  const auto usable = hc::usable_matches(h.t, cost);
  hc::vllm_align_policy p;
  hc::tree_replayer r(h.t, p, 1, usable, cost);
  r.step();
  r.step();
  CHECK(held(h.t, r) == std::set<std::uint32_t>{h.at({"a1", "a2"}), h.at({"b1", "b2"})});
  CHECK_FALSE(r.tree().present(h.at({"a1", "a2", "a3"})));
  r.step();
  CHECK(r.last_resume() == 2);
  const auto m = r.metrics();
  CHECK(m.resumed_tokens == 8.0);
  CHECK(m.kv_evicted_blocks == 2.0);
  CHECK(m.states_dropped == 1.0);
  CHECK(held(h.t, r) == std::set<std::uint32_t>{h.at({"a1", "a2"}), h.at({"a1", "a2", "c3"})});
  CHECK_FALSE(r.tree().present(h.at({"b1", "b2"})));
  // The free-queue restatement agrees.
  free_queue_model q{h.t, 6};
  q.run();
  CHECK(q.resumes == std::vector<std::size_t>{0, 0, 2});
  CHECK(q.states == held(h.t, r));
  CHECK(q.kv == cached(h.t, r));
  CHECK(q.evicted == m.kv_evicted_blocks);
  CHECK(q.dropped == m.states_dropped);
}

TEST_CASE("vllm joint pool: new KV takes an older state, and a new state the row's older state") {
  // 8 pages (M = 1). R1 = a1 a2 (P = 8: states at pb = 2 and pb − 1 = 1): LRU a1 a2 s_a1 s_a2.
  // R2 = a1 a2 a3 a4 (P = 13, one output block): resumes at s_a2 (touched), KV a1 … a4, state at
  // pb = 3: LRU s_a1 s_a2 a1 a2 a3 a4 s_a3 (a1, a2 are not leaves). R3 = b1 b2 (P = 9): KV 6 +
  // 3 states = 9 > 8: the oldest evictable is s_a1 (older than the leaf a4), so the state goes,
  // not the KV (the old rule evicted the leaf a4). Pool full again (6 + 2 = 8): s_b2 needs a
  // page; the oldest evictable is s_a2, older than a4, so the row's own state goes (as before).
  // R4 = a1 … a5 (P = 17, one output block): a4 is still cached, so the match is 4 (old rule:
  // 3) and it resumes at s_a3 (k = 3). Its KV a5 makes 7 + 2 = 9: the leaf b2 (older than s_b2)
  // goes with s_b2; s_a4 at pb = 4 fits. Evicted: b2; dropped: s_a1, s_b2.
  hand_trace h(4);
  h.add({"a1", "a2"}, 8);
  h.add({"a1", "a2", "a3", "a4"}, 13, 3);
  h.add({"b1", "b2"}, 9);
  h.add({"a1", "a2", "a3", "a4", "a5"}, 17, 3);
  const auto cost = toy_joint(8, 1);
  const auto usable = hc::usable_matches(h.t, cost);
  hc::vllm_align_policy p;
  hc::tree_replayer r(h.t, p, 1, usable, cost);
  r.run(3);
  CHECK(r.tree().present(h.at({"a1", "a2", "a3", "a4"})));
  CHECK(held(h.t, r) == std::set<std::uint32_t>{h.at({"a1", "a2", "a3"}), h.at({"b1", "b2"})});
  CHECK(r.metrics().states_dropped == 1.0);
  CHECK(r.metrics().kv_evicted_blocks == 0.0);
  r.step();
  CHECK(r.last_resume() == 3);
  const auto m = r.metrics();
  CHECK(m.usable_tokens == 4.0 * (2 + 0 + 4));  // R2: 2 blocks, R3: 0, R4: 4 (old rule: 3)
  CHECK(m.kv_evicted_blocks == 1.0);
  CHECK(m.states_dropped == 2.0);
  CHECK(held(h.t, r) ==
        std::set<std::uint32_t>{h.at({"a1", "a2", "a3"}), h.at({"a1", "a2", "a3", "a4"})});
  free_queue_model q{h.t, 8};
  q.run();
  CHECK(q.resumes == std::vector<std::size_t>{0, 2, 0, 3});
  CHECK(q.states == held(h.t, r));
  CHECK(q.kv == cached(h.t, r));
  CHECK(q.evicted == m.kv_evicted_blocks);
  CHECK(q.dropped == m.states_dropped);
}

TEST_CASE("vllm joint pool: the replay matches the free-queue restatement on random traces") {
  std::mt19937 rng(24);
  int cases = 0;
  for (int trial = 0; trial < 60; ++trial) {
    hc::tree_trace t("random", 4);
    const auto root = t.root_of(std::nullopt);
    std::vector<std::vector<std::uint32_t>> paths;
    std::size_t longest = 0;
    const int n = 10 + static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) {
      std::vector<std::uint32_t> path;
      if (!paths.empty() && rng() % 4 != 0) {  // a prefix of an earlier request
        const auto& from = paths[rng() % paths.size()];
        path.assign(from.begin(), from.begin() + static_cast<long>(rng() % (from.size() + 1)));
      }
      const std::size_t fresh = 1 + rng() % 4;
      for (std::size_t f = 0; f < fresh; ++f)
        path.push_back(t.new_node(path.empty() ? root : path.back(), 0));
      const std::size_t len = path.size();
      hc::tree_request r;
      r.root = root;
      r.prompt_tokens = 1 + rng() % (4 * len);
      r.output_tokens = 4 * len - r.prompt_tokens + rng() % 4;
      r.path = path;
      longest = std::max(longest, len);
      paths.push_back(path);
      t.add_request(std::move(r));
    }
    const std::size_t M = 1 + rng() % 3;
    // The running request's KV and its resumed state always fit (no last-resort drop).
    const std::size_t pages = longest + 1 + M + rng() % 12;
    const auto cost = toy_joint(pages, M);
    const auto usable = hc::usable_matches(t, cost);
    hc::vllm_align_policy p;
    hc::tree_replayer r(t, p, M, usable, cost);
    const auto resumes = replay_resumes(r);
    free_queue_model q{t, pages};
    q.run();
    CAPTURE(trial);
    CHECK(resumes == q.resumes);
    CHECK(held(t, r) == q.states);
    CHECK(cached(t, r) == q.kv);
    CHECK(r.metrics().kv_evicted_blocks == q.evicted);
    CHECK(r.metrics().states_dropped == q.dropped);
    cases += r.metrics().kv_evicted_blocks > 0.0 ? 1 : 0;
  }
  CHECK(cases > 30);  // most traces do evict
}

TEST_CASE("one LRU: only the vllm rows join it, and only under a joint pool") {
  // The default `lru_state` keeps a policy's states out of the one LRU (the engine then evicts
  // KV first, as before): SGLang's rows (separate pools in SGLang) and every row under a
  // `separate` budget.
  hand_trace h(4);
  h.add({"a1", "a2"}, 8);
  h.add({"a1", "a2", "a3", "a4"}, 13, 3);
  for (const auto mode : {hc::kv_mode::separate, hc::kv_mode::joint}) {
    CAPTURE(hc::to_string(mode));
    auto cost = toy_joint(8, 1);
    cost.kv.mode = mode;
    const auto usable = hc::usable_matches(h.t, cost);
    hc::vllm_align_policy v;
    hc::sglang_no_buffer_policy g;
    hc::tree_replayer rv(h.t, v, 1, usable, cost);
    hc::tree_replayer rg(h.t, g, 1, usable, cost);
    rv.run();
    rg.run();
    CHECK(g.lru_state().second == hc::tree_trace::no_parent);
    if (mode == hc::kv_mode::joint) {
      // s_a1 (taken by R1, never touched since) is the row's least recently used state.
      CHECK(v.lru_state().second == h.at({"a1"}));
    } else {
      CHECK(v.lru_state().second == hc::tree_trace::no_parent);
    }
  }
}
