// SPDX-License-Identifier: Apache-2.0
// The engine rows of the tree scenario (include/hybridcache/sim/tree/policies.hpp), one rule of
// the engine each, on hand-built traces whose outcome is worked out by hand in the comments
// (docs/tree_simulation.md, "Engine rows: what each follows", cites the engine code behind each
// rule). A test names the rule it pins; each was checked to fail under the rule it replaced.
#include <doctest/doctest.h>

#include "hand_trace.hpp"

#include <cstddef>
#include <cstdint>
#include <hybridcache/sim/tree.hpp>
#include <hybridcache/sim/tree/families.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hc = hybridcache;

namespace {

using hybridcache_test::hand_trace;

/// `n` names "x1" … "xn".
std::vector<std::string> chain(const std::string& x, std::size_t n) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i <= n; ++i) out.push_back(x + std::to_string(i));
  return out;
}
std::vector<std::string> cat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

/// The positions j (1-based) at which the chain `names` holds a state, i.e. at its prefix of j
/// names.
std::vector<std::size_t> held_at(const hand_trace& h, const hc::tree_replayer& r,
                                 const std::vector<std::string>& names) {
  std::vector<std::size_t> out;
  for (std::size_t j = 1; j <= names.size(); ++j) {
    const std::vector<std::string> prefix(names.begin(), names.begin() + j);
    if (r.pool().holds(h.at(prefix))) out.push_back(j);
  }
  return out;
}

/// Replays `h` through `p` request by request; `after(i, replayer)` runs after request i.
template <class After>
void replay(const hand_trace& h, hc::tree_policy& p, std::size_t budget, After&& after,
            const hc::tree_cost_model& cost = {}) {
  const auto usable = hc::usable_matches(h.t, cost);
  hc::tree_replayer r(h.t, p, budget, usable, cost);
  for (std::size_t i = 0; i < h.t.size(); ++i) {
    REQUIRE(r.step());
    after(i, r);
  }
}

}  // namespace

// ---------------------------------------------------------------- vLLM

TEST_CASE("vllm: a hit touches only the resumed state (find_longest_cache_hit)") {
  // B = 4, M = 3, vllm_align (states at the junction m and the boundary pb).
  //   r0 a1 a2     P=9 : pb=2                     → {a2}
  //   r1 a1..a4    P=17: m=2, k=2 (a2, touched)   → {a2, a4}        order a2 < a4
  //   r2 x1..x4    P=17: k=0                      → {a2, a4, x4}    order a2 < a4 < x4
  //   r3 a1..a5    P=21: m=4, u=4, k=4 (a4)       → touch a4 only:  order a2 < x4 < a4
  //                pb=5 → a5 evicts the LRU, a2.  (Touching the whole path would evict x4.)
  //   r4 a1 a2 c3 c4 P=17: m=2 but a2 is gone → k=0.
  hand_trace h(4);
  h.add(chain("a", 2), 9);
  h.add(chain("a", 4), 17);
  h.add(chain("x", 4), 17);
  h.add(chain("a", 5), 21);
  h.add(cat(chain("a", 2), {"c3", "c4"}), 17);
  hc::vllm_align_policy p;
  std::vector<std::size_t> k;
  replay(h, p, 3, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    if (i == 3) {
      CHECK_FALSE(r.pool().holds(h.at(chain("a", 2))));
      CHECK(r.pool().holds(h.at(chain("x", 4))));
      CHECK(r.pool().holds(h.at(chain("a", 4))));
      CHECK(r.pool().holds(h.at(chain("a", 5))));
    }
  });
  CHECK(k == std::vector<std::size_t>{0, 2, 0, 4, 0});
}

TEST_CASE("vllm align: replay boundary at pb and at (P-1)/B, junction at the match") {
  // B = 4. r0 a1..a4 P=16: pb=4 and ⌊15/4⌋=3 → {a3, a4}. r1 repeats the prompt: u=⌊15/4⌋=3 →
  // resumes at a3 (with pb alone it could not resume at all). r2 a1 a2 b3 b4 P=17: m=2 with no
  // state there → the junction a2 is snapshotted, and pb=4 → b4.
  hand_trace h(4);
  h.add(chain("a", 4), 16);
  h.add(chain("a", 4), 16);
  h.add(cat(chain("a", 2), {"b3", "b4"}), 17);
  hc::vllm_align_policy p;
  std::vector<std::size_t> k;
  replay(h, p, 8, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    if (i == 0) {
      CHECK(r.pool().holds(h.at(chain("a", 3))));
      CHECK(r.pool().holds(h.at(chain("a", 4))));
      CHECK(r.pool().size() == 2);
    }
    if (i == 2) {
      CHECK(r.pool().holds(h.at(chain("a", 2))));
      CHECK(r.pool().holds(h.at(cat(chain("a", 2), {"b3", "b4"}))));
      CHECK(r.pool().size() == 4);
    }
  });
  CHECK(k == std::vector<std::size_t>{0, 3, 0});
}

TEST_CASE("vllm align_dense: every chunk end, the boundary and every decode block") {
  // B = 4, chunk 8 tokens = 2 blocks. r0 a1..a6, P=21 (pb=5), O=3 (n=6): chunk ends from k=0:
  // 2, 4 (< pb); pb = 5; decode block 6 → {a2, a4, a5, a6}; a1 and a3 are not chunk ends.
  hand_trace h(4);
  h.add(chain("a", 6), 21, 3);
  hc::vllm_policy p(hc::vllm_policy::mode::align_dense, 8);
  CHECK(p.name() == "vllm_align_dense");
  replay(h, p, 8, [&](std::size_t, const hc::tree_replayer& r) {
    CHECK(held_at(h, r, chain("a", 6)) == std::vector<std::size_t>{2, 4, 5, 6});
    CHECK(r.metrics().chunk_boundaries == 3.0);  // 2·4, 4·4 and 5·4 are all < P = 21
  });
}

TEST_CASE("vllm all: decode blocks included, the tail of each chunk freed first") {
  // B = 4, chunk 16 tokens, M = 3. r0 a1..a6, P=17 (pb=4), O=7 (n=6). The prefill's blocks enter
  // the free queue deepest first (free order reversed): a4, a3, a2, then a1 evicts a4 → order
  // a3 < a2 < a1. Decode: a5 evicts a3, a6 evicts a2 → {a1, a5, a6}. (Shallowest-first
  // admission of the prompt only would keep {a2, a3, a4}.)
  hand_trace h(4);
  h.add(chain("a", 6), 17, 7);
  hc::vllm_policy p(hc::vllm_policy::mode::all, 16);
  CHECK(p.name() == "vllm_all");
  replay(h, p, 3, [&](std::size_t, const hc::tree_replayer& r) {
    CHECK(held_at(h, r, chain("a", 6)) == std::vector<std::size_t>{1, 5, 6});
  });
}

// ---------------------------------------------------------------- SGLang

TEST_CASE("sglang extra_buffer: one state per extend, the final extend's too") {
  // B = 64, chunk 128 tokens, M = 10 (room 8 while running). r0 a1..a5, P=330 (pb=5), O=0:
  // extends [0,128) → 2, [128,256) → 4, [256,330) → ⌊330/64⌋·64 = 320 → block 5 = pb, each
  // inserted after its extend → {a2, a4, a5}. r1 a1 a2 a3 b4 b5 b6, P=394 (pb=6): k=2 (a2), the
  // branch point m=3 (KV matched beyond the state) falls inside [128,256) → 3; [256,384) → 6;
  // [384,394) → 6 = pb. New: {a3, b6}. (The rule it replaces, pb + branch point + end, held
  // neither a2 nor a4.)
  hand_trace h(64);
  h.add(chain("a", 5), 330);
  h.add(cat(chain("a", 3), {"b4", "b5", "b6"}), 394);
  hc::sglang_policy p(hc::sglang_policy::mode::extra_buffer, 128);
  std::vector<std::size_t> k;
  replay(h, p, 10, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    if (i == 0) {
      CHECK(held_at(h, r, chain("a", 5)) == std::vector<std::size_t>{2, 4, 5});
      CHECK(r.pool().size() == 3);
    } else {
      CHECK(held_at(h, r, chain("a", 5)) == std::vector<std::size_t>{2, 3, 4, 5});
      CHECK(r.pool().holds(h.at(cat(chain("a", 3), {"b4", "b5", "b6"}))));
      CHECK(!r.pool().holds(h.at(cat(chain("a", 3), {"b4"}))));
      CHECK(r.pool().size() == 5);
    }
  });
  CHECK(k == std::vector<std::size_t>{0, 2});
}

TEST_CASE("sglang extra_buffer: the prompt end is cached before the decode, its last track after") {
  // B = 64. c1..c4, P=130 (pb=2), O=126 (n=4): the final extend's track is pb, inserted after
  // the prefill (`cache_unfinished_req`, the request goes on to decode); the decode tracks at
  // 256 = block 4, inserted at finish → {c2, c4}. (The rule it replaces inserted only the last
  // track at finish: {c4}.) A second request re-asks the prompt with another output: it
  // resumes at c2, the usable match ⌊129/64⌋ = 2.
  hand_trace h(64);
  h.add(chain("c", 4), 130, 126);
  h.add(cat(chain("c", 2), {"d3", "d4"}), 130, 126);
  hc::sglang_extra_buffer_policy p;
  std::vector<std::size_t> k;
  replay(h, p, 8, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    CHECK(r.pool().holds(h.at(chain("c", 4))));
    CHECK(r.pool().holds(h.at(chain("c", 2))));
    CHECK_FALSE(r.pool().holds(h.at(chain("c", 1))));
    CHECK(r.pool().size() == 2 + i);
  });
  CHECK(k == std::vector<std::size_t>{0, 2});
}

TEST_CASE("sglang: a hit refreshes only the state it resumes from, an insert only its own") {
  // no_buffer, B = 64, chunk 64 (every prompt block is a chunk end), M = 5.
  //   r0 a1 a2 a3 P=200 → a1 < a2 < a3 (chunk ends 1, 2, the prompt end 3);
  //   r1 x1 P=70 → x1;  r2 y1 P=70 → y1 (pool full: a1 < a2 < a3 < x1 < y1)
  //   r3 a1..a4 P=260: k=3; the hit refreshes a3 alone: a1 < a2 < x1 < y1 < a3; the prompt end
  //      4 evicts a1 (inserting a4 refreshes nothing on its path).  (Refreshing the node and
  //      its ancestors, ancestors older, would evict x1.)
  //   r4 z1 evicts a2;  r5 w1 evicts x1.
  hand_trace h(64);
  h.add(chain("a", 3), 200);
  h.add({"x1"}, 70);
  h.add({"y1"}, 70);
  h.add(chain("a", 4), 260);
  h.add({"z1"}, 70);
  h.add({"w1"}, 70);
  hc::sglang_no_buffer_policy p(64);
  std::vector<std::size_t> k;
  replay(h, p, 5, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    if (i == 3) {
      CHECK_FALSE(r.pool().holds(h.at(chain("a", 1))));
      CHECK(r.pool().holds(h.at(chain("a", 2))));
      CHECK(r.pool().holds(h.at({"x1"})));
      CHECK(r.pool().holds(h.at({"y1"})));
      CHECK(r.pool().holds(h.at(chain("a", 4))));
    }
    if (i == 5) {
      CHECK_FALSE(r.pool().holds(h.at(chain("a", 2))));
      CHECK_FALSE(r.pool().holds(h.at({"x1"})));
      CHECK(r.pool().holds(h.at({"y1"})));
      CHECK(r.pool().holds(h.at(chain("a", 3))));
    }
  });
  CHECK(k[3] == 3);
}

TEST_CASE(
    "sglang per-path cap: drops the shallowest eligible state, keeps forks, tail, lock, leaves") {
  // extra_buffer, cap 2, B = 64, chunk 64 (one track per block), M = 20.
  //   r0 a1..a4 P=266: inserts a1, a2, a3 (cap → a1 dropped: one child), a4 (→ a2 dropped);
  //      finish at 4 → {a3, a4}.
  //   r1 a1 a2 a3 b4 b5 P=330: k=3 (a3 locked). b4 → path {a3, b4}; b5 → {a3, b4, b5} > 2:
  //      a3 is locked and a fork (a4, b4), b4 has one child and is not the tail → dropped.
  //      a4 (a leaf of another path) stays → {a3, a4, b5}.
  //   r2 a1 a2 a3 b4 b5 b6 P=394: k=5 (b5 locked). b6 → {a3, b5, b6} > 2, but a3 is a fork, b5
  //      locked, b6 the tail: nothing is eligible, the cap is soft → 3 states on the path.
  hand_trace h(64);
  h.add(chain("a", 4), 266);
  h.add(cat(chain("a", 3), {"b4", "b5"}), 330);
  h.add(cat(chain("a", 3), {"b4", "b5", "b6"}), 394);
  hc::sglang_extra_buffer_policy p(2, 64);
  CHECK(p.name() == "sglang_extra_buffer_cap2");
  std::vector<std::size_t> k;
  replay(h, p, 20, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    const auto held = [&](const std::vector<std::string>& n) { return r.pool().holds(h.at(n)); };
    if (i == 0) {
      CHECK(!held(chain("a", 1)));
      CHECK(!held(chain("a", 2)));
      CHECK(held(chain("a", 3)));
      CHECK(held(chain("a", 4)));
    }
    if (i == 1) {
      CHECK(held(chain("a", 3)));
      CHECK(held(chain("a", 4)));
      CHECK(!held(cat(chain("a", 3), {"b4"})));
      CHECK(held(cat(chain("a", 3), {"b4", "b5"})));
      CHECK(r.pool().size() == 3);
    }
    if (i == 2) {
      CHECK(held(chain("a", 3)));
      CHECK(held(cat(chain("a", 3), {"b4", "b5"})));
      CHECK(held(cat(chain("a", 3), {"b4", "b5", "b6"})));
      CHECK(r.pool().size() == 4);
    }
  });
  CHECK(k == std::vector<std::size_t>{0, 3, 5});
}

TEST_CASE("sglang: extra_buffer charges two slots per running request, lazy one, no_buffer none") {
  // B = 64, chunk 64, M = 3, a1 a2 a3 P=200: tracks 1, 2, 3 (3 at finish). While running the
  // row may keep M − reserved states: extra_buffer 1 → only the last survives, {a3}; lazy 2 →
  // {a2, a3}; no_buffer 3 → {a1, a2, a3}.
  hand_trace h(64);
  h.add(chain("a", 3), 200);
  hc::sglang_policy eb(hc::sglang_policy::mode::extra_buffer, 64);
  hc::sglang_policy lazy(hc::sglang_policy::mode::extra_buffer_lazy, 64);
  hc::sglang_policy nb(hc::sglang_policy::mode::no_buffer, 64);
  CHECK(lazy.name() == "sglang_extra_buffer_lazy");
  std::vector<std::size_t> sizes;
  for (hc::tree_policy* p :
       {static_cast<hc::tree_policy*>(&eb), static_cast<hc::tree_policy*>(&lazy),
        static_cast<hc::tree_policy*>(&nb)}) {
    replay(h, *p, 3, [&](std::size_t, const hc::tree_replayer& r) {
      sizes.push_back(r.pool().size());
      CHECK(r.pool().holds(h.at(chain("a", 3))));
    });
  }
  CHECK(sizes == std::vector<std::size_t>{1, 2, 3});
}

// ---------------------------------------------------------------- TensorRT-LLM

TEST_CASE("trtllm: periodic, offsets from start and end, save-last and branch snapshots") {
  // B = 4, interval 8 tokens, offset 6 from the start, 5 from the end. r0 a1..a5 P=22 (pb=5):
  // 8, 16 → blocks 2, 4; 6 → 1; 22 − 5 = 17 → 4; save-last ⌊21/4⌋ = 5 → {a1, a2, a4, a5}.
  hand_trace h(4);
  h.add(chain("a", 5), 22);
  hc::trtllm_policy p(8, {6}, {5}, true);
  replay(h, p, 8, [&](std::size_t, const hc::tree_replayer& r) {
    CHECK(held_at(h, r, chain("a", 5)) == std::vector<std::size_t>{1, 2, 4, 5});
  });
  // Branch snapshot only: r0 a1..a4 P=17 → save-last 4 → a4; r1 a1 a2 b3 b4 P=17: m=2 > k=0 →
  // the branch a2, save-last b4.
  hand_trace g(4);
  g.add(chain("a", 4), 17);
  g.add(cat(chain("a", 2), {"b3", "b4"}), 17);
  hc::trtllm_policy q(0, {}, {}, true);
  CHECK(q.name() == "trtllm");
  replay(g, q, 8, [&](std::size_t i, const hc::tree_replayer& r) {
    if (i == 1) {
      CHECK(r.pool().holds(g.at(chain("a", 2))));
      CHECK(r.pool().holds(g.at(chain("a", 4))));
      CHECK(r.pool().holds(g.at(cat(chain("a", 2), {"b3", "b4"}))));
      CHECK(r.pool().size() == 3);
    }
  });
}

// ---------------------------------------------------------------- Marconi

TEST_CASE("marconi: a hit refreshes only the deepest matched node") {
  // α = 0 (recency only), B = 4, M = 3, logical clock: +1 per match, the insert's own match
  // (which refreshes the deepest held node on the inserted sequence), insert and eviction.
  //   r0 a1 a2 P=9:       match t=1, insert's match t=2, insert t=3 → a2@3
  //   r1 a1..a4 P=17:     match t=4 (a2 ← 4), insert's match t=5 (a2 ← 5), insert t=6 → a4@6
  //   r2 x1 x2 P=9:       match t=7, insert's match t=8, insert t=9 → x2@9      (full)
  //   r3 a1..a6 P=25:     match t=10 (a4 ← 10; a2 stays 5), insert's match t=11 (a4 ← 11),
  //                       insert t=12, evict t=13: 1/(13−5) < 1/(13−9) < 1/(13−11) → a2 goes.
  //                       (Refreshing a2 at the hit too: x2 goes.)
  hand_trace h(4);
  h.add(chain("a", 2), 9);
  h.add(chain("a", 4), 17);
  h.add(chain("x", 2), 9);
  h.add(chain("a", 6), 25);
  hc::marconi_policy p(0.0, false);
  replay(h, p, 3, [&](std::size_t i, const hc::tree_replayer& r) {
    if (i == 3) {
      CHECK_FALSE(r.pool().holds(h.at(chain("a", 2))));
      CHECK(r.pool().holds(h.at(chain("x", 2))));
      CHECK(r.pool().holds(h.at(chain("a", 4))));
      CHECK(r.pool().holds(h.at(chain("a", 6))));
    }
  });
}

TEST_CASE("marconi: recency 1/(now - ts), efficiency FLOPs saved per (state + KV) bytes") {
  // FLOPs(n, p) = n (one FLOP per token), B = 4, M = 3, α = 0.4.
  //   r0 p1..p4 P=17 → p4@2 (4 blocks from the root); r1 q1 P=5 → q1@4; r2 s1 s2 P=9 → s2@6.
  //   r3 t1 P=5: match 7, insert 8, evict 9 → ages 7, 5, 3:
  //     recency 1/age = .143, .2, .333 → normalised 0, 0.3, 1 (stamps, linearly: 0, 0.5, 1)
  //   (a) no KV: efficiency = blocks saved / state bytes ∝ 4, 1, 2 → normalised 1, 0, 1/3:
  //       p4 0.4, q1 0.3, s2 1.13 → q1 goes (the linear stamp would give p4 0.4 < q1 0.5).
  //   (b) KV only: efficiency ∝ gap / depth = 1, 1, 1 → all equal → normalised to 1:
  //       p4 0.4, q1 0.7, s2 1.4 → p4 goes (a state-only denominator would evict q1).
  hand_trace h(4);
  h.add(chain("p", 4), 17);
  h.add({"q1"}, 5);
  h.add(chain("s", 2), 9);
  h.add({"t1"}, 5);
  for (const bool kv : {false, true}) {
    hc::tree_cost_model cost;
    cost.flops_per_token = 1.0;
    cost.flops_per_pair = 0.0;
    cost.model.attention_layers = kv ? 1000 : 0;  // (b): KV bytes only, no state bytes
    cost.model.linear_layers = kv ? 0 : 1;
    hc::marconi_policy p(0.4, false, cost);
    replay(
        h, p, 3,
        [&](std::size_t i, const hc::tree_replayer& r) {
          if (i != 3) return;
          CHECK(r.pool().holds(h.at({"t1"})));
          CHECK(r.pool().holds(h.at(chain("s", 2))));
          CHECK(r.pool().holds(h.at(chain("p", 4))) == !kv);
          CHECK(r.pool().holds(h.at({"q1"})) == kv);
        },
        cost);
  }
}

TEST_CASE("marconi: the branch-off state of a split edge, checkpointed during the prefill") {
  // B = 4. r0 a1..a4 P=17 → leaf a4. r1 a1 a2 b3 P=13: the match ends inside the edge a1..a4
  // (a2 holds no state and has a child) → the branch-off a2 and the leaf b3.
  hand_trace h(4);
  h.add(chain("a", 4), 17);
  h.add(cat(chain("a", 2), {"b3"}), 13);
  hc::marconi_policy p(1.0, false);
  replay(h, p, 8, [&](std::size_t i, const hc::tree_replayer& r) {
    if (i == 1) {
      CHECK(r.pool().holds(h.at(chain("a", 2))));
      CHECK(r.pool().holds(h.at(cat(chain("a", 2), {"b3"}))));
      CHECK(r.metrics().chunk_boundaries == 1.0);
    }
  });
}

TEST_CASE("marconi: the insert's own match refreshes the deepest held node of the sequence") {
  // α = 0, B = 4, M = 3 (`insert` re-matches prompt + output, radix_cache_hybrid.py l.158).
  //   r0 b1..b4 P=13 O=3: match 1, insert's match 2, insert 3 → b4@3
  //   r1 c1 c2 P=8:       match 4, insert's match 5, insert 6 → c2@6
  //   r2 c1 d2 d3 P=12:   match 7 (m = 1 inside the edge c1 c2: branch-off at c1); insert's match
  //                       8, insert 9, evict 10 for two states: b4 (oldest) → c1@10, d3@10
  //   r3 c1 c2 P=5 O=3:   match 11 (k = 1: c1 ← 11), insert's match 12 refreshes c2 (← 12),
  //                       which lies past the prompt; insert 13, evict 14 (Marconi evicts on
  //                       every insert into a full tree): c1 has two held children, so d3 (10)
  //                       goes before c2 (12) and c2 is already held: {c1, c2}.
  //   Without the insert's refresh c2 (6) went and was stored again: {c1, c2, d3}.
  hand_trace h(4);
  h.add(chain("b", 4), 13, 3);
  h.add(chain("c", 2), 8);
  h.add({"c1", "d2", "d3"}, 12);
  h.add(chain("c", 2), 5, 3);
  hc::marconi_policy p(0.0, false);
  replay(h, p, 3, [&](std::size_t i, const hc::tree_replayer& r) {
    if (i == 2) {
      CHECK_FALSE(r.pool().holds(h.at(chain("b", 4))));
      CHECK(r.pool().holds(h.at({"c1"})));
      CHECK(r.pool().holds(h.at({"c1", "d2", "d3"})));
    }
    if (i == 3) {
      CHECK(r.last_resume() == 1);
      CHECK(r.pool().size() == 2);
      CHECK(r.pool().holds(h.at({"c1"})));
      CHECK(r.pool().holds(h.at(chain("c", 2))));
      CHECK_FALSE(r.pool().holds(h.at({"c1", "d2", "d3"})));
    }
  });
}

TEST_CASE("marconi: a state evicted with one held child passes its fresher access time on") {
  // FLOPs(n, p) = n, state bytes only (efficiency ∝ blocks saved over the nearest held
  // ancestor), B = 4, M = 3, α = 0.5. `_evict_intermediate_node` merges the victim into its
  // child, which keeps the later access time (l.424).
  //   r0 c1 x2 x3 P=9 O=3: x3@3.  r1 c1 P=4: branch-off c1@6.  r2 b1 P=4: b1@9.
  //   r3 b1 b2 y3 P=9 O=3: match 10 (k = 1, b1 ← 10), insert's match 11 (b1 ← 11), insert 12,
  //      evict 13 among c1 (1 child), x3, b1: efficiency 1, 2, 1 → 0, 1, 0; recency 1/7, 1/10,
  //      1/2 → 0.107, 0, 1; scores 0.107, 0.5, 1 → c1 goes and x3 takes its time: x3@6. y3@13.
  //   r4 a1 a2 P=5 O=3: insert 16, evict 17 among x3, b1 (1 child), y3: efficiency 3, 1, 2 → 1,
  //      0, 0.5; recency 1/11, 1/6, 1/4 → 0, 0.476, 1; scores 0.5, 0.476, 1.25 → b1 goes.
  //   With x3 still at 3: recency 1/14, 1/6, 1/4 → 0, 0.533, 1; scores 0.5, 0.533, 1.25 → x3.
  hand_trace h(4);
  h.add({"c1", "x2", "x3"}, 9, 3);
  h.add({"c1"}, 4);
  h.add({"b1"}, 4);
  h.add({"b1", "b2", "y3"}, 9, 3);
  h.add({"a1", "a2"}, 5, 3);
  hc::tree_cost_model cost;
  cost.flops_per_token = 1.0;
  cost.flops_per_pair = 0.0;
  cost.model.attention_layers = 0;
  cost.model.linear_layers = 1;
  hc::marconi_policy p(0.5, false, cost);
  replay(
      h, p, 3,
      [&](std::size_t i, const hc::tree_replayer& r) {
        if (i == 3) CHECK_FALSE(r.pool().holds(h.at({"c1"})));
        if (i != 4) return;
        CHECK(r.pool().holds(h.at({"c1", "x2", "x3"})));
        CHECK_FALSE(r.pool().holds(h.at({"b1"})));
        CHECK(r.pool().holds(h.at({"b1", "b2", "y3"})));
        CHECK(r.pool().holds(h.at({"a1", "a2"})));
      },
      cost);
}

TEST_CASE("marconi, joint KV budget: stale KV becomes state room, as one byte budget frees it") {
  // One state = one KV block (16 bytes each), B = 4, M = 2, KV share 6 blocks: 8 units in all.
  // Marconi keeps no KV without a state below it (`_delete_leaf` frees the leaf's KV with it).
  //   r0 c1..c4 x5 x6 P=24: 6 blocks + x6's state = 7 units.
  //   r1 b1..b4 y5 P=17 O=3: 11 blocks + 1 state > 8. No stateless KV leaf: the row names its
  //      victim, x6 (`shed_state`); then x6, x5, c4 go as stateless leaves (8 units, no room).
  //      At the insert, c3 goes too (`grow`) and y5 is stored.
  //   r2 b1..b4 z5 z6 P=24: m = 4 ends inside b4 → y5: branch-off at b4. c2 and c1 go at the
  //      allocation (7 blocks + y5). Room for two: y5 is evicted and its KV freed → b4, z6.
  // Leaving KV to the LRU and not growing, the row held no state after r1 or r2: the stale KV
  // left no room.
  hand_trace h(4);
  h.add(cat(chain("c", 4), {"x5", "x6"}), 24);
  h.add(cat(chain("b", 4), {"y5"}), 17, 3);
  h.add(cat(chain("b", 4), {"z5", "z6"}), 24);
  hc::tree_cost_model cost;
  cost.model = hc::model_shape{};
  cost.model.linear_layers = 1;
  cost.model.linear_heads = 1;
  cost.model.linear_key_dim = 1;
  cost.model.linear_value_dim = 8;  // 16 bytes
  cost.model.attention_layers = 1;
  cost.model.kv_heads = 1;
  cost.model.head_dim = 1;  // 4 bytes per token, 16 per block
  cost.model.bytes_per_element = 2;
  cost.kv.mode = hc::kv_mode::joint;
  cost.kv.bytes = 16.0 * 6;
  hc::marconi_policy p(0.0, false, cost);
  replay(
      h, p, 2,
      [&](std::size_t i, const hc::tree_replayer& r) {
        if (i == 0) CHECK(r.pool().holds(h.at(cat(chain("c", 4), {"x5", "x6"}))));
        if (i == 1) {
          CHECK(r.pool().size() == 1);
          CHECK(r.pool().holds(h.at(cat(chain("b", 4), {"y5"}))));
        }
        if (i == 2) {
          CHECK(r.pool().size() == 2);
          CHECK(r.pool().holds(h.at(chain("b", 4))));
          CHECK(r.pool().holds(h.at(cat(chain("b", 4), {"z5", "z6"}))));
        }
      },
      cost);
}

TEST_CASE("marconi: α tuned on a bootstrap window of 5x the requests before the first eviction") {
  // M = 2, B = 4: requests of one block each, distinct, then repeats. The first eviction happens
  // at request 3 (three leaves for two states): the window is 5 · 3 = 15 requests. At the end
  // of request 15 the policy replays requests 1..15 once per α of the grid and keeps the one
  // with the most FLOPs saved over them: the reference below replays the same window with a
  // fixed α each (the tuning objective written out independently: prefill FLOPs of the
  // resumed tokens, summed).
  hand_trace h(4);
  const std::vector<std::string> names{"a", "b", "c", "a", "d", "a", "b", "e", "a", "b",
                                       "f", "a", "a", "b", "g", "a", "b", "a", "c", "a"};
  for (const auto& n : names) h.add({n + "1", n + "2"}, 9);
  hc::marconi_policy p(0.0, true);
  double tuned = -1.0;
  replay(h, p, 2, [&](std::size_t i, const hc::tree_replayer&) {
    if (i == 2) CHECK(p.window() == 15);
    if (i == 13) CHECK(p.alpha() == 0.0);  // not tuned yet
    if (i == 14) tuned = p.alpha();
  });
  const hc::tree_cost_model cost;
  double best = -1.0, best_alpha = 0.0;
  for (const double a : hc::marconi_policy::default_grid()) {
    hc::marconi_policy q(a, false);
    double saved = 0.0;
    replay(h, q, 2, [&](std::size_t i, const hc::tree_replayer& r) {
      if (i < 15) saved += cost.flops(static_cast<double>(r.last_resume() * 4), 0.0);
    });
    if (saved > best) {
      best = saved;
      best_alpha = a;
    }
  }
  CHECK(tuned == best_alpha);
}

// ---------------------------------------------------------------- llama.cpp

TEST_CASE("llamacpp: checkpoints before the last batches of the prompt (P-4-n_ubatch, P-4)") {
  // One slot, B = 4, n_ubatch 8, n_batch 16. a1..a11, P=42 (pb=10), O=2 (n=11). Batches from 0:
  // [0,16) [16,30) [30,38) [38,42) (breaks at P − 12 = 30 and P − 4 = 38). A checkpoint is the
  // state before a batch near the prompt end (P < end + n_ubatch) or the last: 30 → block 7,
  // 38 → block 9; the live state at the end, a11 → {a7, a9, a11}.
  hand_trace h(4);
  h.add(chain("a", 11), 42, 2);
  hc::llamacpp_policy p(32, 8, 16, 12, 1);
  CHECK(p.name() == "llamacpp");
  replay(h, p, 64, [&](std::size_t, const hc::tree_replayer& r) {
    CHECK(held_at(h, r, chain("a", 11)) == std::vector<std::size_t>{7, 9, 11});
  });
}

TEST_CASE("llamacpp: checkpoints at user-message starts spaced by --checkpoint-min-step") {
  // One slot, B = 4, n_ubatch 8, n_batch 64, min step 12. Conversation A's turns end at 12, 24
  // and 36 tokens; a conversation B in between takes the slot each time, so A's fourth turn
  // (P = 46, O = 2) starts from scratch. User starts (earlier ends on its path): 12, 24, 36 (the
  // last). Batches: [0,12) (break at the first user start), [12,24), [24,34), [34,36), [36,42),
  // [42,46). Checkpoints: 12 (user start, none yet), 24 skipped (not > 12 + 12), 36 (the last
  // user message, near the end), 42 (the last batch) → blocks 3, 9, 10 and the live a12.
  hand_trace h(4);
  for (std::size_t turn = 1; turn <= 3; ++turn) {
    h.add(chain("a", 3 * turn), 12 * turn - 2, 2);
    h.add(chain("b" + std::to_string(turn) + "_", 3), 10, 2);
  }
  h.add(chain("a", 12), 46, 2);
  hc::llamacpp_policy p(32, 8, 64, 12, 1);
  std::size_t k_last = 99;
  replay(h, p, 64, [&](std::size_t i, const hc::tree_replayer& r) {
    if (i != 6) return;
    k_last = r.last_resume();
    CHECK(held_at(h, r, chain("a", 12)) == std::vector<std::size_t>{3, 9, 10, 12});
  });
  CHECK(k_last == 0);
}

TEST_CASE("llamacpp: live-slot reuse, and checkpoints past the divergence are invalidated") {
  // One slot, B = 4, n_ubatch 8, n_batch 16.
  //   r0 a1 a2 a3 P=10 O=2: checkpoint at 6 (block 1, before the last batch); live a3.
  //   r1 a1..a5 P=22: the slot's sequence is a prefix → resumes from the live state, k = 3
  //      (checkpoints alone would give 1). Checkpoints 12 (block 3) and 18 (block 4); live a5.
  //   r2 a1 c2 c3 P=10: common prefix 1 → restores the checkpoint at block 1; the checkpoints
  //      at 12 and 18 lie past it and are erased → a3 and a4 leave the pool.
  hand_trace h(4);
  h.add(chain("a", 3), 10, 2);
  h.add(chain("a", 5), 22);
  h.add(cat(chain("a", 1), {"c2", "c3"}), 10, 2);
  hc::llamacpp_policy p(32, 8, 16, 8192, 1);
  std::vector<std::size_t> k;
  replay(h, p, 64, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    if (i == 1) {
      CHECK(r.pool().holds(h.at(chain("a", 3))));
      CHECK(r.pool().holds(h.at(chain("a", 4))));
      CHECK(r.pool().holds(h.at(chain("a", 5))));
    }
    if (i == 2) {
      CHECK(r.pool().holds(h.at(chain("a", 1))));
      CHECK_FALSE(r.pool().holds(h.at(chain("a", 3))));
      CHECK_FALSE(r.pool().holds(h.at(chain("a", 4))));
    }
  });
  CHECK(k == std::vector<std::size_t>{0, 3, 1});
}

TEST_CASE("llamacpp: a checkpoint at the restore point survives its own replacement") {
  // One slot, B = 4, n_ubatch 8, n_batch 16.
  //   r0 a1 a2 a3 P=10 O=2: checkpoint at P − 4 = 6 tokens (block 1); live a3.
  //   r1 a1 c2 c3 P=10 O=2: common prefix 1 → restores the checkpoint at block 1 (k = 1). Its
  //      own checkpoint at 6 tokens is again block 1: it supersedes the old one (same tokens),
  //      and the engine's new one is a fresh copy, so a1 stays held. (Releasing the old
  //      reference first left a1 with none: the state left the pool and the checkpoint with it.)
  //   r2 a1 d2 d3 P=10: restores block 1 again, k = 1 (it was 0).
  hand_trace h(4);
  h.add(chain("a", 3), 10, 2);
  h.add(cat(chain("a", 1), {"c2", "c3"}), 10, 2);
  h.add(cat(chain("a", 1), {"d2", "d3"}), 10, 2);
  hc::llamacpp_policy p(32, 8, 16, 8192, 1);
  std::vector<std::size_t> k;
  replay(h, p, 64, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    if (i == 1) CHECK(r.pool().holds(h.at(chain("a", 1))));
  });
  CHECK(k == std::vector<std::size_t>{0, 1, 1});
}

TEST_CASE("llamacpp: a checkpoint where earlier prompts diverged (the user-message start)") {
  // One slot, B = 4, n_ubatch 8, n_batch 16. Sessions share a system prompt s1 s2 (8 tokens)
  // and differ in the user message after it, where the engine checkpoints (a user-message
  // start). The trace has no message boundaries: a node where earlier requests took different
  // children stands in for one.
  //   r0 s1 s2 a3 P=10 O=2: checkpoint at P − 4 = 6 (block 1).
  //   r1 s1 s2 b3: restores block 1 (k = 1); checkpoint at 6 again. At its end s2 is a fork.
  //   r2 s1 s2 c3: k = 1; the fork at 8 tokens is a user start: checkpoint at 8 (block 2).
  //   r3 s1 s2 d3: restores block 2 (k = 2). Without the fork, block 1 again (k = 1).
  hand_trace h(4);
  for (const char* u : {"a3", "b3", "c3", "d3"}) h.add({"s1", "s2", u}, 10, 2);
  hc::llamacpp_policy p(32, 8, 16, 8192, 1);
  std::vector<std::size_t> k;
  replay(h, p, 64, [&](std::size_t, const hc::tree_replayer& r) { k.push_back(r.last_resume()); });
  CHECK(k == std::vector<std::size_t>{0, 1, 1, 2});
}

TEST_CASE("llamacpp: the trace's user-message starts, from the first request on") {
  // The trace of the test above, now with its message boundaries: each request's user message
  // starts at 8 tokens, after the system prompt. One slot, B = 4, n_ubatch 8, n_batch 16.
  //   r0 s1 s2 a3 P=10 O=2: batches [0,6) (P − 4 = 6), [6,8) (the last user start breaks it),
  //      [8,10). Checkpoints: 6 (near the end, the first) and 8 (the last user message): blocks
  //      1 and 2; live a3.
  //   r1 s1 s2 b3: restores block 2 (k = 2), the newest checkpoint within the common prefix.
  // The fork stand-in alone first checkpoints at 8 during r2, so there k = {0, 1, 1, 2}.
  hand_trace h(4);
  for (const char* u : {"a3", "b3", "c3", "d3"}) h.add({"s1", "s2", u}, 10, 2, {8});
  hc::llamacpp_policy p(32, 8, 16, 8192, 1);
  std::vector<std::size_t> k;
  replay(h, p, 64, [&](std::size_t i, const hc::tree_replayer& r) {
    k.push_back(r.last_resume());
    if (i == 0) CHECK(held_at(h, r, {"s1", "s2", "a3"}) == std::vector<std::size_t>{1, 2, 3});
  });
  CHECK(k == std::vector<std::size_t>{0, 2, 2, 2});
}

TEST_CASE("llamacpp: where the trace knows the messages, a fork inside a system prompt is none") {
  // One slot, B = 4, n_ubatch 8, n_batch 16. Four system prompts s1 x2 x3 (12 tokens) share
  // their first block, then a user message of 10 tokens: P = 22, O = 2, 6 blocks. Breaks at
  // P − 12 = 10 and P − 4 = 18; the user message starts at 12 (the last one).
  //   r0, r1: each resumes from scratch (the slot's checkpoints lie past the shared s1) and
  //      checkpoints at 12 (the user start) and 18 (near the end). At r1's end s1 is a fork.
  //   r2: with the trace's starts only 12 and 18 again, so r3 resumes from scratch (k = 0).
  //      Without them (stand-ins), the fork at 4 tokens is a user start: a checkpoint at
  //      block 1, and r3 resumes there (k = 1). The engine sees no user message at 4.
  for (const bool known : {true, false}) {
    CAPTURE(known);
    hand_trace h(4);
    for (const char* x : {"a", "b", "c", "d"}) {
      const std::string p(x);
      h.add({"s1", p + "2", p + "3", p + "u4", p + "u5", p + "u6"}, 22, 2,
            known ? std::vector<std::size_t>{12} : std::vector<std::size_t>{});
    }
    hc::llamacpp_policy p(32, 8, 16, 8192, 1);
    std::vector<std::size_t> k;
    replay(h, p, 64,
           [&](std::size_t, const hc::tree_replayer& r) { k.push_back(r.last_resume()); });
    CHECK(k ==
          (known ? std::vector<std::size_t>{0, 0, 0, 0} : std::vector<std::size_t>{0, 0, 0, 1}));
  }
}

TEST_CASE("llamacpp cache_ram: a prompt extending a cached one resumes fully") {
  // Four slots (auto), B = 4. Conversations A … E, one turn each (P=10, O=2, 3 blocks), then A's
  // second turn (P=22). Without the prompt cache, E took A's slot (LRU) and A's state is gone:
  // k = 0. With it, A was saved when its slot went idle and is loaded back: k = 3.
  hand_trace h(4);
  for (const char* c : {"a", "b", "c", "d", "e"}) h.add(chain(c, 3), 10, 2);
  h.add(chain("a", 5), 22);
  std::vector<std::size_t> k;
  for (const bool ram : {false, true}) {
    hc::llamacpp_policy p(32, 512, 2048, 8192, 4, 0.1, ram);
    CHECK(p.name() == (ram ? "llamacpp_cache_ram" : "llamacpp"));
    replay(h, p, 64, [&](std::size_t i, const hc::tree_replayer& r) {
      if (i == 5) k.push_back(r.last_resume());
    });
  }
  CHECK(k == std::vector<std::size_t>{0, 3});
}

// ---------------------------------------------------------------- all rows

TEST_CASE("every engine row survives KV evictions (on_dropped) within its budget") {
  hc::multi_turn_options o;
  o.sessions = 40;
  o.block = 64;
  o.seed = 7;
  const auto t = hc::synthetic_multi_turn(o);
  hc::tree_options so;
  for (const auto mode : {hc::kv_mode::separate, hc::kv_mode::joint}) {
    hc::tree_cost_model cost;
    cost.kv.mode = mode;
    cost.kv.bytes = 400.0 * 64.0 * cost.model.kv_bytes_per_token();  // ~400 blocks of KV
    so.cost = cost;
    const auto usable = hc::usable_matches(t, cost);
    for (const char* name :
         {"vllm_align", "vllm_align_dense", "vllm_all", "sglang_no_buffer", "sglang_extra_buffer",
          "sglang_extra_buffer_lazy", "sglang_extra_buffer_cap", "marconi", "marconi_insample",
          "llamacpp", "llamacpp_cache_ram", "trtllm"}) {
      CAPTURE(name);
      CAPTURE(hc::to_string(mode));
      auto p = hc::make_tree_policy(name, so);
      hc::tree_metrics m;
      CHECK_NOTHROW(m = hc::replay_tree(t, *p, 16, usable, cost));
      CHECK(m.requests == t.size());
      CHECK(m.states_peak <= 16 + 400);
    }
  }
}

TEST_CASE("llamacpp rows: KV evictions purge the dropped state from every slot and cache entry") {
  // A prompt library (shared system prompts, thousands of prompt-cache entries, many listing the
  // same states) under a separate KV budget: KV evictions drop states that slots and entries
  // still list. A holder that kept listing a dropped state would later release a reference it no
  // longer owns and take a state from under another holder, which then resumes from a state the
  // pool no longer holds: the replayer rejects that. (Found while speeding `on_dropped` up: a
  // depth filter off by one passed every smaller trace here.)
  const auto t = hc::tree_family("prompt-library", 64, {.sessions = 0, .seed = 7});
  hc::tree_options so;
  hc::tree_cost_model cost;
  cost.kv.mode = hc::kv_mode::separate;
  cost.kv.bytes = 4.0 * 1024 * 1024 * 1024;
  so.cost = cost;
  const auto usable = hc::usable_matches(t, cost);
  for (const char* name : {"llamacpp", "llamacpp_cache_ram"}) {
    for (const std::size_t m : {256, 1024}) {
      CAPTURE(name);
      CAPTURE(m);
      auto p = hc::make_tree_policy(name, so);
      hc::tree_metrics r;
      CHECK_NOTHROW(r = hc::replay_tree(t, *p, m, usable, cost));
      CHECK(r.requests == t.size());
      CHECK(r.kv_evicted_blocks > 0.0);
      CHECK(r.states_peak <= m);
    }
  }
}

TEST_CASE("llamacpp cache_ram: the prompt cache's indexes agree with the linear scans") {
  // The prompt cache finds the entries a request concerns through indexes (by the Euler entry
  // time of an entry's last node, by the node at the least prefix `load` accepts, by an entry's
  // oldest checkpoint) instead of scanning every entry. With the index check on, every `save`,
  // `load`, `on_dropped` and eviction also runs the server's linear loops over all entries and
  // throws where the two disagree: the entry that contains the slot, the entries it contains,
  // the entry loaded, the oldest checkpoint evicted, and that no entry still lists a dropped
  // state or is left empty. Families with thousands of
  // entries, under each KV mode (KV evictions drop states entries list) and small and large
  // state budgets (evictions of checkpoints and of whole entries).
  for (const char* family : {"prompt-library", "agent-loop", "doc-qa-repeat", "rag"}) {
    const auto t = hc::tree_family(family, 64, {.sessions = 0, .seed = 3});
    for (const auto mode : {hc::kv_mode::unlimited, hc::kv_mode::separate, hc::kv_mode::joint}) {
      hc::tree_cost_model cost;
      cost.kv.mode = mode;
      if (mode != hc::kv_mode::unlimited) cost.kv.bytes = 1.0 * 1024 * 1024 * 1024;
      const auto usable = hc::usable_matches(t, cost);
      for (const std::size_t m : {16, 256}) {
        CAPTURE(family);
        CAPTURE(hc::to_string(mode));
        CAPTURE(m);
        hc::llamacpp_policy p(32, 512, 2048, 8192, 4, 0.1, true);
        p.set_index_check(true);
        hc::tree_metrics r;
        CHECK_NOTHROW(r = hc::replay_tree(t, p, m, usable, cost));
        CHECK(r.requests == t.size());
        if (mode != hc::kv_mode::joint) CHECK(r.states_peak <= m);
      }
    }
  }
}
