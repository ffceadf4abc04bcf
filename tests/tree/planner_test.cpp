// SPDX-License-Identifier: Apache-2.0
// tree_planner (tree/planner.hpp) alone: on random trees of two namespaces, the re-plan's E[r]
// against brute force over every checkpoint set of at most M nodes (E[r] recomputed naively by
// walking each node's path), the plan it marks against that optimum, the hysteresis rule, and
// E[r] of the held states.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <hybridcache/tree/planner.hpp>

namespace hc = hybridcache;

namespace {

using slot = hc::tree_index::slot_id;

/// Σ_v w(v)(depth(v) − depth(anchor(v))) / Σ_v w(v), anchor(v) the deepest node of `held` on
/// v's path (a root if none); depth in tokens.
double naive_er(const hc::tree_index& ix, const std::vector<slot>& nodes,
                const std::vector<slot>& held, std::size_t B) {
  double num = 0.0, den = 0.0;
  for (const slot v : nodes) {
    slot a = v;
    while (ix[a].parent != hc::tree_index::no_slot &&
           std::find(held.begin(), held.end(), a) == held.end())
      a = ix[a].parent;
    num += ix[v].weight * static_cast<double>((ix[v].blocks - ix[a].blocks) * B);
    den += ix[v].weight;
  }
  return den > 0.0 ? num / den : 0.0;
}

}  // namespace

TEST_CASE("tree_planner: the re-plan is the brute-force optimum, kept under hysteresis") {
  std::mt19937_64 rng(11);
  const hc::xxh3_hash hash;
  const std::size_t B = 16;
  for (int trial = 0; trial < 60; ++trial) {
    hc::tree_index ix;
    std::vector<slot> nodes, inner;  // all live nodes; the non-root ones
    for (int ns = 0; ns < 2; ++ns) {
      const slot root = ix.root_of(hash, hc::namespace_key{}.with_tenant(ns == 0 ? "a" : "b"));
      nodes.push_back(root);
      ix[root].weight = static_cast<double>(rng() % 3);
    }
    const std::size_t n = 3 + rng() % 8;
    for (std::size_t i = 0; i < n; ++i) {
      const slot parent = nodes[rng() % nodes.size()];
      bool created = false;
      const slot v = ix.child(parent, hc::digest{i, 1}, created);
      ix[v].weight = rng() % 4 == 0 ? 0.0 : static_cast<double>(1 + rng() % 100) / 7.0;
      nodes.push_back(v);
      inner.push_back(v);
    }
    if (std::all_of(nodes.begin(), nodes.end(), [&](slot v) { return ix[v].weight == 0.0; }))
      ix[inner[0]].weight = 1.0;  // some mass, or there is nothing to plan
    const std::size_t M = rng() % 4;
    CAPTURE(trial);
    CAPTURE(M);
    // Brute force: every subset of the non-root nodes with at most M members.
    double best = std::numeric_limits<double>::infinity();
    for (std::uint32_t mask = 0; mask < (1u << inner.size()); ++mask) {
      if (static_cast<std::size_t>(std::popcount(mask)) > M) continue;
      std::vector<slot> held;
      for (std::size_t i = 0; i < inner.size(); ++i)
        if (mask & (1u << i)) held.push_back(inner[i]);
      best = std::min(best, naive_er(ix, nodes, held, B));
    }
    hc::tree_planner planner;
    const hc::replan_result r = planner.replan(
        ix, B, [&] { return M; }, 0.5);
    CHECK(r.adopted);  // the first plan is always adopted
    CHECK(r.expected_after == doctest::Approx(best).epsilon(1e-9));
    std::vector<slot> planned;
    for (const slot v : inner)
      if (hc::tree_planner::planned(ix, v)) planned.push_back(v);
    CHECK(planned.size() <= M);
    CHECK(planned.size() == r.planned);
    CHECK(naive_er(ix, nodes, planned, B) == doctest::Approx(best).epsilon(1e-9));
    // Same statistics: the optimum is not better by half, so the plan stays.
    const hc::replan_result again = planner.replan(
        ix, B, [&] { return M; }, 0.5);
    CHECK_FALSE(again.adopted);
    CHECK(again.expected_before == doctest::Approx(best).epsilon(1e-9));
    // E[r] of held states: a random set, marked in the node records.
    std::vector<slot> held;
    for (const slot v : inner)
      if (rng() % 2) {
        ix[v].state = 0;
        held.push_back(v);
      }
    CHECK(planner.expected_recompute(ix, B) ==
          doctest::Approx(naive_er(ix, nodes, held, B)).epsilon(1e-9));
  }
}

TEST_CASE("tree_planner: due every replan_every observations once the work reaches the nodes") {
  hc::tree_planner p;
  p.add_work(5);
  CHECK_FALSE(p.due(2, 1.0, 4));  // 1 observation
  CHECK(p.due(2, 1.0, 4));        // 2 observations, 5 blocks ≥ 4 nodes
  p.restart();
  p.add_work(3);
  CHECK_FALSE(p.due(1, 1.0, 4));  // 3 blocks < 4 nodes
  p.add_work(1);
  CHECK(p.due(1, 1.0, 4));
  CHECK_FALSE(p.due(0, 0.0, 4));  // replan_every 0: manual only
}

TEST_CASE("tree_planner: snapshot positions of a prefill, hand-worked") {
  // root ─ n1 ─ n2 ─ n3 ─ n4 (B = 4): a state at n1, n2 planned; the match reached n4 (16
  // tokens), the prompt has 24; chunk ends on and off the grid.
  hc::tree_index ix;
  const slot root = ix.root_of(hc::xxh3_hash{}, hc::namespace_key{});
  std::vector<hc::node_id> path;
  slot cur = root;
  for (std::uint64_t i = 1; i <= 4; ++i) {
    bool created = false;
    cur = ix.child(cur, hc::digest{i, 3}, created);
    path.push_back(ix.handle_of(cur));
  }
  ix[ix.live_slot(path[0])].state = 0;
  ix[ix.live_slot(path[1])].flags |= hc::tree_node::planned_flag;
  const hc::snapshot_request m{.resume_tokens = 4, .matched_tokens = 16, .path = path};
  const std::vector<std::size_t> ends{4, 8, 12, 16, 18, 20, 24};
  using v = std::vector<std::size_t>;
  auto at = [&](hc::snapshot_rules rules, std::size_t free_states) {
    return hc::tree_planner::snapshot_positions(ix, 4, m, 24, ends, rules, free_states);
  };
  // Planned n2 (8), the junction (16), the tail (24); 4 at or above the resume never.
  CHECK(at({.fill_free = false}, 100) == v{8, 16, 24});
  CHECK(at({.junction = false, .tail = false, .fill_free = false}, 100) == v{8});
  // Free room for 5 states: 2 more, the candidates 12 and 20 both.
  CHECK(at({}, 5) == v{8, 12, 16, 20, 24});
  // Room for 4: one more of {12, 20}, the deepest kept: c_{⌈1·2/1⌉−1} = 20.
  CHECK(at({}, 4) == v{8, 16, 20, 24});
  CHECK(at({}, 3) == v{8, 16, 24});
  // Without the junction and tail rules, free room for 3: 2 more of {12, 16, 20, 24}, spread
  // c_{⌈1·4/2⌉−1} = 16 and c_{⌈2·4/2⌉−1} = 24.
  CHECK(at({.junction = false, .tail = false}, 3) == v{8, 16, 24});
  // A prompt that ends at the match leaves the tree nowhere: no junction.
  const std::vector<std::size_t> short_ends{8, 12, 16};
  CHECK(hc::tree_planner::snapshot_positions(ix, 4, m, 16, short_ends, {.fill_free = false}, 100) ==
        v{8});
  CHECK_THROWS_AS((void)hc::tree_planner::snapshot_positions(ix, 4, m, 20, ends, {}, 0),
                  hc::invalid_argument);
}
