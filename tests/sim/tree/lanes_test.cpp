// SPDX-License-Identifier: Apache-2.0
// lru_lanes (sim/tree/lanes.hpp): block trees that evict KV in LRU order, kept as thresholds in
// one shared order, against the reference: a block_tree of its own per lane (its leaf heap and
// child counts), driven by the same allocations, the same clock ticks and the same evictions to
// per-lane budgets that change at random (the joint pool's room, which the states held move).
// Compared after every allocation and eviction: the leaf evicted, the block count, every node's
// presence and child presence, the match of the next request's path, the order of the present
// nodes' stamps, and how the least recently used leaf's stamp compares with each tick (the
// engine's one LRU compares exactly that).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <hybridcache/error.hpp>
#include <hybridcache/sim/tree/families.hpp>
#include <hybridcache/sim/tree/lanes.hpp>
#include <hybridcache/sim/tree/replay.hpp>

namespace hc = hybridcache;

namespace {

struct lane_pair {
  hc::block_tree own;   // the reference
  hc::block_tree lane;  // a lane of the shared order
  std::uint64_t own_guard = 0, lane_guard = 0;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> ticks;  // (own, lane) stamps of ticks
};

// The present nodes of `tr`, ordered by its stamps.
std::vector<std::uint32_t> by_stamp(const hc::block_tree& tr, std::size_t nodes) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> v;
  for (std::uint32_t i = 0; i < nodes; ++i)
    if (tr.present(i)) v.emplace_back(tr.stamp(i), i);
  std::sort(v.begin(), v.end());
  std::vector<std::uint32_t> out;
  for (const auto& e : v) out.push_back(e.second);
  return out;
}

}  // namespace

TEST_CASE("lru_lanes: each lane evicts and holds exactly what a tree of its own would") {
  std::size_t evictions = 0, compared = 0, ticks = 0;
  for (const std::string fam : {"rag", "agent-loop", "code-edit"}) {
    for (std::uint64_t seed : {1u, 2u}) {
      CAPTURE(fam);
      CAPTURE(seed);
      const auto t = hc::tree_family(fam, 16, {.sessions = 12, .seed = seed});
      const std::size_t nodes = t.node_count();
      std::mt19937_64 rng(seed * 7919 + fam.size());
      hc::lru_lanes lanes(t);
      std::vector<std::unique_ptr<lane_pair>> ps;
      for (int i = 0; i < 4; ++i) {
        auto p = std::make_unique<lane_pair>();
        p->own.reset(nodes, true);
        p->lane.reset(nodes, true);
        p->lane.join(lanes);
        ps.push_back(std::move(p));
      }
      const auto& reqs = t.requests();
      // Ticks (a state used in the engine's one LRU) at random points of each lane's own
      // timeline: before its allocation, after it, and after its evictions; the lanes take turns
      // as the portfolio's shadows do, so other lanes' allocations fall in between.
      auto tick = [&](lane_pair& p) {
        for (int k = static_cast<int>(rng() % 3); k > 0; --k) {
          p.ticks.emplace_back(p.own.tick(), p.lane.tick());
          ++ticks;
        }
      };
      for (std::size_t r = 0; r < reqs.size(); ++r) {
        const auto& path = reqs[r].path;
        for (auto& p : ps) {
          tick(*p);
          p->own_guard = p->own.insert(t, path);
          p->lane_guard = p->lane.insert(t, path);
          REQUIRE(p->own.blocks() == p->lane.blocks());
          tick(*p);
          // A budget anywhere from a tenth of the blocks to all of them.
          const std::size_t b = p->own.blocks();
          const std::size_t cap = b / 10 + static_cast<std::size_t>(rng() % (b - b / 10 + 1));
          while (p->own.blocks() > cap) {
            const auto want = p->own.lru_leaf_stamp(p->own_guard);
            const auto got = p->lane.lru_leaf_stamp(p->lane_guard);
            // The least leaf's stamp against every tick: the same answer in both clocks.
            for (const auto& [a, c] : p->ticks) REQUIRE((want < a) == (got < c));
            const auto v = p->own.evict_lru_leaf(t, p->own_guard);
            const auto w = p->lane.evict_lru_leaf(t, p->lane_guard);
            REQUIRE(v == w);
            if (v == hc::tree_trace::no_parent) break;
            ++evictions;
            REQUIRE(p->own.blocks() == p->lane.blocks());
          }
          tick(*p);
          if (p->ticks.size() > 8) p->ticks.erase(p->ticks.begin(), p->ticks.end() - 8);
        }
        // Every few requests, the whole state of every lane against its reference.
        if (r % 5 != 0 && r + 1 != reqs.size()) continue;
        for (auto& p : ps) {
          std::size_t mismatched = 0;
          for (std::uint32_t v = 0; v < nodes; ++v) {
            if (p->own.present(v) != p->lane.present(v)) ++mismatched;
            if (p->own.present(v) && (p->own.children(v) != 0) != p->lane.has_children(v))
              ++mismatched;
            if (p->own.has_children(v) != (p->own.children(v) != 0)) ++mismatched;
          }
          CHECK(mismatched == 0);
          if (r + 1 < reqs.size())
            CHECK(p->own.match(reqs[r + 1].path) == p->lane.match(reqs[r + 1].path));
          CHECK(by_stamp(p->own, nodes) == by_stamp(p->lane, nodes));
          ++compared;
        }
      }
    }
  }
  CHECK(evictions > 10000);
  CHECK(compared > 100);
  CHECK(ticks > 100);
  MESSAGE("evictions ", evictions, ", full comparisons ", compared, ", ticks ", ticks);
}

TEST_CASE("lru_lanes: typed errors") {
  const auto t = hc::tree_family("rag", 16, {.sessions = 4, .seed = 1});
  const auto& reqs = t.requests();
  REQUIRE(reqs.size() >= 3);
  hc::lru_lanes lanes(t);
  hc::block_tree a, b, untracked;
  a.reset(t.node_count(), true);
  b.reset(t.node_count(), true);
  untracked.reset(t.node_count(), false);
  CHECK_THROWS_AS(untracked.join(lanes), hc::invalid_argument);  // no KV budget, no LRU order
  a.join(lanes);
  b.join(lanes);
  CHECK(a.shared());
  CHECK_THROWS_AS((void)a.children(0), hc::invalid_argument);  // child counts are not kept
  a.insert(t, reqs[0].path);
  hc::block_tree late;
  late.reset(t.node_count(), true);
  CHECK_THROWS_AS(late.join(lanes), hc::invalid_argument);           // lanes start together
  CHECK_THROWS_AS(a.insert(t, reqs[1].path), hc::invalid_argument);  // a runs ahead of b
  const std::vector<std::uint32_t> copy(reqs[0].path.begin(), reqs[0].path.end());
  CHECK_THROWS_AS(b.insert(t, copy), hc::invalid_argument);  // another path than a's
  b.insert(t, reqs[0].path);                                 // the same allocation: fine
  CHECK(a.blocks() == b.blocks());
  hc::state_pool pool;
  pool.reset(t.node_count(), 4);
  CHECK_THROWS_AS(a.watch(pool), hc::invalid_argument);  // the stateless order is not kept
}
