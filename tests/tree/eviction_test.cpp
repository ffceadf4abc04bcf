// SPDX-License-Identifier: Apache-2.0
// tree_state_pool (tree/eviction.hpp) alone: on random trees with random weights and held
// states, every victim `evict` takes is a least-ΔE[r]-per-byte state by brute force (E[r] of the
// held set with and without it, recomputed from scratch), pinned states are never taken, it
// stops once enough bytes are freed, and `prospective` is the record `add` would make (what
// state_policy's admission by value ranks against the first victim).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include <hybridcache/tree/eviction.hpp>

namespace hc = hybridcache;

namespace {

using slot = hc::tree_index::slot_id;

/// Σ_v w(v)(depth(v) − depth(anchor(v))), unnormalised, in tokens; anchor(v) the deepest node
/// of `held` on v's path (the root if none).
double raw_er(const hc::tree_index& ix, const std::vector<slot>& nodes,
              const std::vector<slot>& held, std::size_t B) {
  double sum = 0.0;
  for (const slot v : nodes) {
    slot a = v;
    while (ix[a].parent != hc::tree_index::no_slot &&
           std::find(held.begin(), held.end(), a) == held.end())
      a = ix[a].parent;
    sum += ix[v].weight * static_cast<double>((ix[v].blocks - ix[a].blocks) * B);
  }
  return sum;
}

struct world {
  hc::tree_index ix;
  std::vector<slot> nodes, inner;
  explicit world(std::mt19937_64& rng, std::size_t n) {
    const slot root = ix.root_of(hc::xxh3_hash{}, hc::namespace_key{});
    nodes.push_back(root);
    for (std::size_t i = 0; i < n; ++i) {
      bool created = false;
      const slot v = ix.child(nodes[rng() % nodes.size()], hc::digest{i, 2}, created);
      ix[v].weight = static_cast<double>(1 + rng() % 1000) / 37.0;
      nodes.push_back(v);
      inner.push_back(v);
    }
  }
};

/// Σ w(u) over the nodes u whose anchor in `held` is v (the deepest node of `held` on u's path,
/// u included), by brute force: the region W(v) of a state at v.
double brute_region(const world& w, const std::vector<slot>& held, slot v) {
  double W = 0.0;
  for (const slot u : w.nodes) {
    slot a = u;
    while (w.ix[a].parent != hc::tree_index::no_slot &&
           std::find(held.begin(), held.end(), a) == held.end())
      a = w.ix[a].parent;
    if (a == v) W += w.ix[u].weight;
  }
  return W;
}

/// The least (value, planned, last use, slot) over the held, unpinned states at `candidates`
/// other than `exclude`, by comparing whole entries as tuples (no_slot when there is none).
template <class Value>
slot least_entry_by_scan(const hc::tree_state_pool& pool, const hc::tree_index& ix,
                         const std::vector<slot>& candidates, slot exclude, const Value& value) {
  using entry = std::tuple<double, bool, std::uint32_t, slot>;
  std::optional<entry> best;
  for (const slot x : candidates) {
    if (ix[x].state == hc::tree_state_pool::no_state || x == exclude) continue;
    const hc::tree_state& st = pool.state_at(ix, x);
    if (st.pinned) continue;
    const entry e{value(st), st.planned != 0, st.last_use, x};
    if (!best || e < *best) best = e;
  }
  return best ? std::get<3>(*best) : hc::tree_index::no_slot;
}

/// One more pin on `v`, or one released.
void pin_or_unpin(hc::tree_state_pool& pool, hc::tree_index& ix, slot v, bool pin) {
  if (pin)
    pool.pin(ix, v);
  else
    (void)pool.unpin(ix, v);
}

/// Evicts one state by `value` (never `exclude`) and checks that it is the scan's least entry,
/// or that nothing goes when no state is a candidate; with no exclusion, first checks that
/// `least_value` is the scan's least value (+inf when none). The scan reads the records through
/// the const pool, so it marks nothing. @returns whether a state went.
bool evict_one_as_scan(hc::tree_state_pool& pool, world& w, slot exclude,
                       const hc::age_scaled_value& value, std::uint32_t now) {
  const slot least = least_entry_by_scan(pool, w.ix, w.inner, exclude, value);
  if (exclude == hc::tree_index::no_slot) {
    const double scan = least == hc::tree_index::no_slot
                            ? std::numeric_limits<double>::infinity()
                            : value(std::as_const(pool).state_at(w.ix, least));
    CHECK(pool.least_value(value) == scan);
  }
  const auto victims = pool.evict(w.ix, 1, exclude, now, value, [](std::uint32_t) {});
  if (least == hc::tree_index::no_slot) {
    CHECK(victims.empty());
    return false;
  }
  REQUIRE(victims.size() == 1);
  CHECK(w.ix.live_slot(victims[0]) == least);
  return true;
}

/// A chain root ─ x0 ─ x1 ─ x2 in `ix` (depths 1, 2, 3 blocks) with node weights `w`.
std::array<slot, 3> chain3(hc::tree_index& ix, const std::array<double, 3>& w) {
  slot v = ix.root_of(hc::xxh3_hash{}, hc::namespace_key{});
  std::array<slot, 3> out{};
  for (std::size_t i = 0; i < 3; ++i) {
    bool created = false;
    v = ix.child(v, hc::digest{i + 1, 0}, created);
    ix[v].weight = w[i];
    out[i] = v;
  }
  return out;
}

}  // namespace

TEST_CASE("tree_state_pool: victims go in least exact ΔE[r] per byte, by brute force") {
  std::mt19937_64 rng(5);
  const std::size_t B = 8;
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    world w(rng, 4 + rng() % 12);
    hc::tree_state_pool pool;
    std::vector<slot> held, pinned;
    std::vector<std::uint32_t> bytes(w.ix.slots().size(), 0);
    std::vector<slot> order = w.inner;
    std::shuffle(order.begin(), order.end(), rng);  // states added in any order
    for (const slot v : order) {
      if (rng() % 3 == 0) continue;
      bytes[v] = static_cast<std::uint32_t>(1 + rng() % 4);
      pool.add(w.ix, v, bytes[v], 0);
      held.push_back(v);
      if (rng() % 6 == 0) {
        pool.pin(w.ix, v);
        pinned.push_back(v);
      }
    }
    std::size_t total = 0;
    for (const slot v : held) total += bytes[v];
    CHECK(pool.used_bytes() == total);
    const std::size_t need = 1 + rng() % (total + 1);
    auto value = [&](const hc::tree_state& s) {
      return hc::tree_state_pool::delta_per_byte(w.ix, s, B);
    };
    std::size_t ends = 0;
    const auto victims =
        pool.evict(w.ix, need, hc::tree_index::no_slot, 0, value, [&](std::uint32_t) { ++ends; });
    CHECK(ends == victims.size());
    std::size_t freed = 0;
    for (const hc::node_id id : victims) {
      const slot c = w.ix.live_slot(id);
      REQUIRE(c != hc::tree_index::no_slot);
      CHECK(std::find(pinned.begin(), pinned.end(), c) == pinned.end());
      REQUIRE(std::find(held.begin(), held.end(), c) != held.end());
      // Brute force: ΔE[r]/byte of every unpinned held state, from scratch.
      const double base = raw_er(w.ix, w.nodes, held, B);
      double least = std::numeric_limits<double>::infinity(), mine = 0.0;
      for (const slot x : held) {
        if (std::find(pinned.begin(), pinned.end(), x) != pinned.end()) continue;
        std::vector<slot> without = held;
        without.erase(std::find(without.begin(), without.end(), x));
        const double d = (raw_er(w.ix, w.nodes, without, B) - base) / bytes[x];
        least = std::min(least, d);
        if (x == c) mine = d;
      }
      CHECK(mine == doctest::Approx(least).epsilon(1e-9));
      held.erase(std::find(held.begin(), held.end(), c));
      freed += bytes[c];
      CHECK_FALSE(freed - bytes[c] >= need);  // it stopped as soon as enough was freed
    }
    std::size_t unpinned = 0;
    for (const slot v : held)
      if (std::find(pinned.begin(), pinned.end(), v) == pinned.end()) unpinned += bytes[v];
    CHECK((freed >= need || unpinned == 0));
    CHECK(pool.used_bytes() == total - freed);
    // The regions the pool kept incrementally are the brute-force ones.
    for (const slot v : held) {
      const double W = brute_region(w, held, v);
      CHECK(pool.state_at(w.ix, v).region == doctest::Approx(W).epsilon(1e-9));
    }
  }
}

TEST_CASE("tree_state_pool: prospective is the record add would make, against brute force") {
  // On random trees and held sets: the record `prospective` returns for a node without a state
  // has the state above it, the depth gap, the region W (Σ w over the nodes whose anchor it would
  // become, by brute force) and the count of held states right below it that `add` then gives
  // the real record; its ΔE[r] per byte is E[r] without it minus E[r] with it, from scratch; and
  // the pool is unchanged by the call.
  std::mt19937_64 rng(21);
  const std::size_t B = 4;
  int with_below = 0;
  for (int trial = 0; trial < 200; ++trial) {
    CAPTURE(trial);
    world w(rng, 3 + rng() % 14);
    hc::tree_state_pool pool;
    std::vector<slot> held, free_nodes;
    for (const slot v : w.inner) {
      if (rng() % 2 == 0) {
        pool.add(w.ix, v, 2, 0);
        held.push_back(v);
      } else {
        free_nodes.push_back(v);
      }
    }
    if (free_nodes.empty()) continue;
    const slot v = free_nodes[rng() % free_nodes.size()];
    const std::size_t used = pool.used_bytes(), count = pool.count();
    const hc::tree_state p = pool.prospective(w.ix, v, 3, 7);
    CHECK(pool.used_bytes() == used);
    CHECK(pool.count() == count);
    CHECK(w.ix[v].state == hc::tree_state_pool::no_state);
    CHECK(p.node == v);
    CHECK(p.up == hc::tree_state_pool::state_above(w.ix, v));
    CHECK(p.gap == w.ix[v].blocks - w.ix[p.up].blocks);
    CHECK(p.bytes == 3);
    CHECK(p.touched == 7);
    std::vector<slot> with = held;
    with.push_back(v);
    const double W = brute_region(w, with, v);
    std::uint32_t below = 0;  // held states whose nearest ancestor in held ∪ {v} is v
    for (const slot u : held) {
      slot a = w.ix[u].parent;
      while (w.ix[a].parent != hc::tree_index::no_slot &&
             std::find(with.begin(), with.end(), a) == with.end())
        a = w.ix[a].parent;
      if (a == v) ++below;
    }
    with_below += below > 0;
    CHECK(p.region == doctest::Approx(W).epsilon(1e-12));
    CHECK(p.below == below);
    const double gain = raw_er(w.ix, w.nodes, held, B) - raw_er(w.ix, w.nodes, with, B);
    CHECK(hc::tree_state_pool::delta_per_byte(w.ix, p, B) * 3 ==
          doctest::Approx(gain).epsilon(1e-9).scale(1e-12));
    // `add` makes the same record.
    pool.add(w.ix, v, 3, 7);
    const hc::tree_state& s = pool.state_at(w.ix, v);
    CHECK(s.up == p.up);
    CHECK(s.gap == p.gap);
    CHECK(s.below == p.below);
    CHECK(s.region == doctest::Approx(p.region).epsilon(1e-12));
  }
  CHECK(with_below > 0);  // the boundary count is exercised
}

TEST_CASE("tree_state_pool: a new state displaces the cheapest held one, by hand") {
  // root ─ a (1 block, w 10) ─ b (2 blocks, w 10) ─ c (3 blocks, w 0.1); capacity 2 states.
  // Held a, b: Δ(a) = 1 · 10 (its region is a alone; b anchors b and c), Δ(b) = 1 · 10.1. A
  // state at c is worth less than both (Δ(c) = 0.1) but the pool admits it all the same,
  // displacing the cheapest held one, a: whether a state should enter is the caller's
  // (state_policy's admission by value, policy_options::admit_by_value).
  hc::tree_index ix;
  const auto [a, b, c] = chain3(ix, {10.0, 10.0, 0.1});
  hc::tree_state_pool pool;
  auto value = [&](const hc::tree_state& s) {
    return hc::tree_state_pool::delta_per_byte(ix, s, 1);
  };
  std::vector<std::uint32_t> ends;
  auto on_end = [&](std::uint32_t age) { ends.push_back(age); };
  CHECK(pool.admit(ix, a, 1, 2, 0, value, on_end).admitted);
  CHECK(pool.admit(ix, b, 1, 2, 0, value, on_end).admitted);
  const hc::admit_result r = pool.admit(ix, c, 1, 2, 5, value, on_end);
  CHECK(r.admitted);
  REQUIRE(r.victims.size() == 1);
  CHECK(r.victims[0] == ix.handle_of(a));
  CHECK(ends == std::vector<std::uint32_t>{5});  // a left at age 5 − 0
  CHECK(pool.count() == 2);
  CHECK(ix[a].state == hc::tree_state_pool::no_state);
  CHECK(ix[c].state != hc::tree_state_pool::no_state);
  // b now anchors only itself (c holds its own state): Δ(b) = 1 · 10, Δ(c) = 1 · 0.1.
  CHECK(pool.state_at(ix, b).region == doctest::Approx(10.0));
  CHECK(pool.state_at(ix, c).region == doctest::Approx(0.1));
  // A state larger than the pool, or one that even every unpinned state cannot make room for,
  // changes nothing.
  CHECK_FALSE(pool.admit(ix, a, 3, 2, 5, value, on_end).admitted);
  // With a newcomer record (admission by value), the state at a must be worth more than the
  // first victim, c (Δ = 0.1): a record worth 0.1 is refused and nothing changes; the record
  // `prospective` gives for a (gap 1, region a alone: 10) displaces c.
  hc::tree_state cheap = pool.prospective(ix, a, 1, 5);
  cheap.region = 0.1;
  const hc::admit_result refused = pool.admit(ix, a, 1, 2, 5, value, on_end, &cheap);
  CHECK_FALSE(refused.admitted);
  CHECK(refused.victims.empty());
  CHECK(pool.count() == 2);
  CHECK(ix[c].state != hc::tree_state_pool::no_state);
  const hc::tree_state worth = pool.prospective(ix, a, 1, 5);
  CHECK(worth.region == doctest::Approx(10.0));
  const hc::admit_result in = pool.admit(ix, a, 1, 2, 5, value, on_end, &worth);
  CHECK(in.admitted);
  CHECK(in.victims == std::vector<hc::node_id>{ix.handle_of(c)});
  CHECK(ix[a].state != hc::tree_state_pool::no_state);
  // b anchors b and c again (c holds no state now): Δ(b) = 1 · 10.1; evict a for the pin test.
  CHECK(pool.evict(ix, 1, hc::tree_index::no_slot, 5, value, on_end) ==
        std::vector<hc::node_id>{ix.handle_of(a)});
  REQUIRE(pool.admit(ix, c, 1, 2, 5, value, on_end).admitted);
  pool.pin(ix, b);
  pool.pin(ix, c);
  const hc::admit_result r2 = pool.admit(ix, a, 1, 2, 5, value, on_end);
  CHECK_FALSE(r2.admitted);
  CHECK(r2.victims.empty());
  CHECK(pool.count() == 2);
}

TEST_CASE(
    "tree_state_pool: evictable bytes, depth gaps and flags stay exact through every change") {
  // The pool keeps Σ bytes of the states at pinned nodes, each state's depth gap to the state
  // above and copies of its node's pin and planned flags incrementally (planned as of the last
  // `sync_planned`, which the policy calls after a re-plan); all are checked after every
  // operation against a scan from scratch.
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 100; ++trial) {
    CAPTURE(trial);
    world w(rng, 4 + rng() % 20);
    hc::tree_state_pool pool;
    std::vector<std::uint32_t> bytes(w.ix.slots().size(), 0);
    std::vector<std::uint32_t> pins(w.ix.slots().size(), 0);
    for (int op = 0; op < 200; ++op) {
      const slot v = w.inner[rng() % w.inner.size()];
      const bool held = w.ix[v].state != hc::tree_state_pool::no_state;
      if (rng() % 8 == 0) {  // the planner flips a node's flag; the pool copies it on sync
        w.ix[v].flags ^= hc::tree_node::planned_flag;
        pool.sync_planned(w.ix);
      }
      switch (rng() % 4) {
        case 0:
          if (!held) {
            bytes[v] = static_cast<std::uint32_t>(1 + rng() % 9);
            pool.add(w.ix, v, bytes[v], 0);
          }
          break;
        case 1:
          if (held) pool.remove(w.ix, v);
          break;
        case 2:
          pool.pin(w.ix, v);
          ++pins[v];
          break;
        default:
          CHECK(pool.unpin(w.ix, v) == (pins[v] > 0));
          if (pins[v] > 0) --pins[v];
      }
      const slot exclude = rng() % 2 ? w.inner[rng() % w.inner.size()] : hc::tree_index::no_slot;
      std::size_t evictable = 0;
      for (const slot x : w.inner) {
        if (w.ix[x].state == hc::tree_state_pool::no_state) continue;
        if (pins[x] == 0 && x != exclude) evictable += bytes[x];
        // The gap to the nearest ancestor holding a state (or the root), by a walk up.
        slot a = w.ix[x].parent;
        while (w.ix[a].parent != hc::tree_index::no_slot &&
               w.ix[a].state == hc::tree_state_pool::no_state)
          a = w.ix[a].parent;
        const auto& st = pool.state_at(w.ix, x);
        CHECK(st.up == a);
        CHECK(st.gap == w.ix[x].blocks - w.ix[a].blocks);
        CHECK(st.pinned == (pins[x] > 0 ? 1 : 0));
        CHECK(st.planned == ((w.ix[x].flags & hc::tree_node::planned_flag) != 0 ? 1 : 0));
      }
      CHECK(pool.evictable_bytes(w.ix, exclude) == evictable);
    }
  }
}

TEST_CASE(
    "tree_state_pool: among equal values the victim is unplanned first, then LRU, then slot") {
  // Values rounded to a coarse grid (zero for most: a node weight of 0 leaves a region empty) so
  // that many states tie; the victim must be the least of (value, planned, last use, slot) over
  // the unpinned held states other than `exclude`, found here by a scan of the records that
  // compares whole entries.
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    world w(rng, 4 + rng() % 30);
    for (const slot v : w.inner)
      if (rng() % 2 == 0) w.ix[v].weight = 0.0;
    hc::tree_state_pool pool;
    std::vector<slot> held;
    for (const slot v : w.inner) {
      if (rng() % 4 == 0) continue;
      if (rng() % 2 == 0) w.ix[v].flags |= hc::tree_node::planned_flag;
      pool.add(w.ix, v, static_cast<std::uint32_t>(1 + rng() % 2), 0);
      held.push_back(v);
      if (rng() % 7 == 0) pool.pin(w.ix, v);
    }
    for (int t = 0; t < 5 && !held.empty(); ++t) pool.touch(w.ix, held[rng() % held.size()]);
    const slot exclude =
        rng() % 2 && !held.empty() ? held[rng() % held.size()] : hc::tree_index::no_slot;
    const double grid = static_cast<double>(1 + rng() % 3) * 40.0;
    auto value = [&](const hc::tree_state& s) {
      return std::floor(hc::tree_state_pool::delta_per_byte(w.ix, s, 4) / grid);
    };
    // Brute force, before the pool changes.
    const slot least = least_entry_by_scan(pool, w.ix, held, exclude, value);
    const auto victims = pool.evict(w.ix, 1, exclude, 0, value, [](std::uint32_t) {});
    if (least == hc::tree_index::no_slot) {
      CHECK(victims.empty());
      continue;
    }
    REQUIRE(victims.size() == 1);
    CHECK(w.ix.live_slot(victims[0]) == least);
  }
}

TEST_CASE("tree_state_pool: the policy's value finds the scan's victim through every change") {
  // `evict` with `age_scaled_value` ranks only the states a snapshot cannot rule out (see
  // least_by_snapshot). Here pools of a few hundred states see one random operation of a kind
  // that changes a rank between evictions (states added and removed, regions raised and lowered
  // through region_at, common scalings, a recompute, pins, uses, planned flags, resumes that
  // reset an age, a clock that advances by up to 2^12 per step (by up to 3 in a third of the
  // trials), an age table that changes,
  // regions and scales far from 1), so
  // that most states stay as the snapshot saw them; before each eviction the least entry of
  // (value, planned, last use, slot) is found by scanning every record with the same value, and
  // `least_value` (no exclusion) must give that entry's value. In half the aged trials the value
  // has a second table for states of age class 1 (policy_options::age_classes), and states are
  // admitted at nodes with or without a prior at random.
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 24; ++trial) {
    CAPTURE(trial);
    world w(rng, 300 + rng() % 300);
    for (const slot v : w.inner)
      if (rng() % 5 == 0) w.ix[v].weight = 0.0;
    hc::tree_state_pool pool;
    std::array<double, hc::age_scaled_value::bins> table{}, table1{};
    const bool aged = trial % 4 != 0;             // a quarter with every h = 1
    const bool classes = aged && trial % 2 == 1;  // a second table for class 1
    auto new_table = [&] {
      for (double& h : table) h = static_cast<double>(1 + rng() % 1000) / 1000.0;
      if (classes)
        for (double& h : table1) h = static_cast<double>(1 + rng() % 1000) / 1000.0;
    };
    // The class a state added at v gets: v holds a prior (its fresh flag) or not, at random.
    auto classify = [&](slot v) {
      if (!classes) return;
      if (rng() % 2)
        w.ix[v].flags |= hc::tree_node::fresh_flag;
      else
        w.ix[v].flags &= ~hc::tree_node::fresh_flag;
    };
    new_table();
    std::uint32_t now = static_cast<std::uint32_t>(rng());  // ages wrap mod 2^32 as well
    int prior_states = 0;
    for (const slot v : w.inner) {
      if (rng() % 3 == 0) continue;
      classify(v);
      pool.add(w.ix, v, static_cast<std::uint32_t>(1 + rng() % 3), now);
      prior_states += pool.state_at(w.ix, v).cls;
      now += static_cast<std::uint32_t>(rng() % 64);
    }
    int evictions = 0, valued = 0;
    for (int op = 0; op < 600; ++op) {
      const slot v = w.inner[rng() % w.inner.size()];
      const bool held = w.ix[v].state != hc::tree_state_pool::no_state;
      switch (rng() % 12) {
        case 0:
        case 1:
          if (!held) {
            classify(v);
            pool.add(w.ix, v, static_cast<std::uint32_t>(1 + rng() % 3), now);
          }
          break;
        case 2:
          if (held) pool.remove(w.ix, v);
          break;
        case 3:
          if (double* r = pool.region_at(w.ix, v)) *r *= static_cast<double>(rng() % 300) / 100.0;
          break;
        case 4:
          pool.scale_regions(0.3 + static_cast<double>(rng() % 700) / 1000.0);
          break;
        case 5:
          if (held) pool.state_at(w.ix, v).touched = now;  // a resume
          break;
        case 6:
          if (held) pool.touch(w.ix, v);
          break;
        case 7:
          pin_or_unpin(pool, w.ix, v, rng() % 2 != 0);
          break;
        case 8:
          w.ix[v].flags ^= hc::tree_node::planned_flag;
          pool.sync_planned(w.ix);
          break;
        case 9:
          if (rng() % 4 == 0) pool.recompute_regions(w.ix);
          if (rng() % 2) new_table();
          break;
        case 10:  // far from 1: subnormal regions, tiny common scales
          if (double* r = pool.region_at(w.ix, v)) *r = rng() % 2 ? 1e-310 : 1e-150;
          if (rng() % 4 == 0) pool.scale_regions(rng() % 2 ? 1e-120 : 1e120);
          break;
        default:
          break;
      }
      // A third of the trials with small steps: ages sit near the bins' edges (1, 2, 4, ...).
      now += static_cast<std::uint32_t>(rng() % (trial % 3 == 1 ? 4 : 4096));
      if (pool.count() == 0 || rng() % 2 != 0) continue;
      const hc::age_scaled_value value{.block_size = 4,
                                       .hit_by_bin = aged ? table.data() : nullptr,
                                       .now = now,
                                       .hit_by_bin_prior = classes ? table1.data() : nullptr};
      const slot exclude =
          rng() % 4 == 0 ? w.inner[rng() % w.inner.size()] : hc::tree_index::no_slot;
      if (exclude == hc::tree_index::no_slot) ++valued;
      if (evict_one_as_scan(pool, w, exclude, value, now)) ++evictions;
    }
    CHECK(evictions > 100);
    CHECK(valued > 50);
    if (classes) CHECK(prior_states > 50);  // both classes are ranked
  }
}

TEST_CASE(
    "tree_state_pool: a state's earlier filing is not read for the state that takes its slot") {
  // The victim search files a changed state again under its key of now (`file_changed`) and
  // leaves the earlier entry in the snapshot until the next rebuild; an entry is the record's
  // own only while the record's key, age and class are those it was filed with. Here a state
  // of class 0 is filed, removed, and its record reused by a state of class 1 with the same key
  // and the same age: read for the new state, the old entry would rank it with class 0's table
  // (0.5) instead of its own (1), below every state actually held (0.9).
  hc::tree_index ix;
  const slot root = ix.root_of(hc::xxh3_hash{}, hc::namespace_key{});
  std::vector<slot> leaves;
  for (std::uint64_t i = 0; i < 120; ++i) {
    bool created = false;
    leaves.push_back(ix.child(root, hc::digest{i + 1, 7}, created));
    ix[leaves.back()].weight = 1.0;  // every key gap · B · W / bytes = 1
  }
  hc::tree_state_pool pool;
  std::uint32_t now = 1000;
  for (std::size_t i = 0; i < 100; ++i) pool.add(ix, leaves[i], 1, now);  // more than a scan's
  std::array<double, hc::age_scaled_value::bins> h0{}, h1{};
  h0.fill(0.9);
  h0[0] = 0.5;  // class 0 at age 0
  h1.fill(1.0);
  now += 100;
  const hc::age_scaled_value value{
      .block_size = 1, .hit_by_bin = h0.data(), .now = now, .hit_by_bin_prior = h1.data()};
  pool.add(ix, leaves[100], 1, now);  // class 0, age 0
  CHECK(pool.least_value(value) == 0.5);
  pool.remove(ix, leaves[100]);
  ix[leaves[101]].flags |= hc::tree_node::fresh_flag;  // a prior: class 1
  pool.add(ix, leaves[101], 1, now);                   // the freed record, same key, same age
  REQUIRE(std::as_const(pool).state_at(ix, leaves[101]).cls == 1);
  CHECK(pool.least_value(value) == 0.9);
  const auto victims = pool.evict(ix, 1, hc::tree_index::no_slot, now, value, [](std::uint32_t) {});
  REQUIRE(victims.size() == 1);
  CHECK(ix.live_slot(victims[0]) != leaves[101]);
}

TEST_CASE(
    "tree_state_pool: ties at value 0 follow (planned, last use, slot) through every change") {
  // The victim search walks the states of key 0 in the tie order its snapshot saw, stopping at
  // the first whose snapshot tie key cannot beat the least entry found. Here most regions are 0
  // (so most states tie at value 0) and the tie key itself changes often: planned flags flip
  // both ways (sync_planned), states are used (touch) and pinned, and the snapshot is dropped
  // now and then (a common scaling), so that states planned at a rebuild become unplanned after
  // it. The victim must be the scan's every time.
  std::mt19937_64 rng(57);
  int evictions = 0, unplanned_after = 0;
  for (int trial = 0; trial < 16; ++trial) {
    CAPTURE(trial);
    world w(rng, 500 + rng() % 300);  // pools of more than 64 states (no scan)
    for (const slot v : w.inner)
      if (rng() % 8 != 0) w.ix[v].weight = 0.0;
    hc::tree_state_pool pool;
    std::array<double, hc::age_scaled_value::bins> table{};
    for (double& h : table) h = static_cast<double>(1 + rng() % 1000) / 1000.0;
    std::uint32_t now = 1000;
    for (const slot v : w.inner)
      if (rng() % 2 == 0) pool.add(w.ix, v, 1, now);
    for (int op = 0; op < 800; ++op) {
      const slot v = w.inner[rng() % w.inner.size()];
      const bool held = w.ix[v].state != hc::tree_state_pool::no_state;
      switch (rng() % 6) {
        case 0:
        case 1: {  // flip the planned flag of a few nodes
          for (int k = 0; k < 4; ++k) {
            const slot x = w.inner[rng() % w.inner.size()];
            if (w.ix[x].state != hc::tree_state_pool::no_state &&
                std::as_const(pool).state_at(w.ix, x).planned != 0)
              ++unplanned_after;
            w.ix[x].flags ^= hc::tree_node::planned_flag;
          }
          pool.sync_planned(w.ix);
          break;
        }
        case 2:
          if (held) pool.touch(w.ix, v);
          break;
        case 3:
          pin_or_unpin(pool, w.ix, v, rng() % 2 != 0);
          break;
        case 4:
          if (rng() % 4 == 0) pool.scale_regions(1.0);  // the snapshot goes
          [[fallthrough]];
        default:
          if (!held) pool.add(w.ix, v, 1, now);
          break;
      }
      now += static_cast<std::uint32_t>(rng() % 8);
      if (pool.count() == 0) continue;
      const hc::age_scaled_value value{.block_size = 2, .hit_by_bin = table.data(), .now = now};
      if (evict_one_as_scan(pool, w, hc::tree_index::no_slot, value, now)) ++evictions;
    }
  }
  CHECK(evictions > 5000);
  CHECK(unplanned_after > 500);
}

TEST_CASE(
    "tree_state_pool: under a joint KV charge, victims go in least ΔE[r] per byte freed, "
    "by brute force") {
  // bytes'(c) = bytes(c) + [no held state below c] · gap(c) · K (age_scaled_value): dropping the
  // deepest state of a path frees the KV of its gap too. Random trees, states added in any
  // order and some removed again (the count of states below each one is kept through both), then
  // victims one at a time, each checked against E[r] recomputed from scratch with and without
  // it. Pools above 64 states take the snapshot search, smaller ones the scan.
  std::mt19937_64 rng(11);
  const std::size_t B = 4;
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    world w(rng, 4 + rng() % (trial % 3 == 0 ? 400 : 40));
    hc::tree_state_pool pool;
    std::vector<slot> held;
    std::vector<std::uint32_t> bytes(w.ix.slots().size(), 0);
    std::vector<slot> order = w.inner;
    std::shuffle(order.begin(), order.end(), rng);
    for (const slot v : order) {
      if (rng() % 3 == 0) continue;
      bytes[v] = static_cast<std::uint32_t>(1 + rng() % 4);
      pool.add(w.ix, v, bytes[v], 0);
      held.push_back(v);
    }
    std::shuffle(held.begin(), held.end(), rng);
    for (std::size_t i = 0; i < held.size() / 4; ++i) pool.remove(w.ix, held[i]);
    held.erase(held.begin(), held.begin() + static_cast<std::ptrdiff_t>(held.size() / 4));
    const double K = static_cast<double>(1 + rng() % 16) / 2.0;  // KV bytes per block
    const hc::age_scaled_value value{.block_size = B, .kv_block_bytes = K};
    auto is_held = [&](slot x) { return std::find(held.begin(), held.end(), x) != held.end(); };
    auto above = [&](slot x) {  // nearest held proper ancestor, else the root
      slot a = w.ix[x].parent;
      while (w.ix[a].parent != hc::tree_index::no_slot && !is_held(a)) a = w.ix[a].parent;
      return a;
    };
    const std::size_t rounds = std::min<std::size_t>(held.size(), 12);
    for (std::size_t round = 0; round < rounds; ++round) {
      CAPTURE(round);
      // The states below each held state, by brute force.
      for (const slot v : held) {
        std::uint32_t below = 0;
        for (const slot u : held) below += u != v && above(u) == v ? 1u : 0u;
        CHECK(pool.state_at(w.ix, v).below == below);
      }
      const auto victims =
          pool.evict(w.ix, 1, hc::tree_index::no_slot, 0, value, [](std::uint32_t) {});
      REQUIRE(victims.size() == 1);
      const slot c = w.ix.live_slot(victims[0]);
      REQUIRE(is_held(c));
      const double base = raw_er(w.ix, w.nodes, held, B);
      double least = std::numeric_limits<double>::infinity(), mine = 0.0;
      for (const slot x : held) {
        std::vector<slot> without = held;
        without.erase(std::find(without.begin(), without.end(), x));
        bool leaf = true;
        for (const slot u : held) leaf = leaf && !(u != x && above(u) == x);
        const double gap = static_cast<double>(w.ix[x].blocks - w.ix[above(x)].blocks);
        const double freed = bytes[x] + (leaf ? gap * K : 0.0);
        const double d = (raw_er(w.ix, w.nodes, without, B) - base) / freed;
        least = std::min(least, d);
        if (x == c) mine = d;
      }
      CHECK(mine == doctest::Approx(least).epsilon(1e-9));
      held.erase(std::find(held.begin(), held.end(), c));
    }
  }
}

TEST_CASE("tree_state_pool: the joint KV charge, by hand") {
  // root ─ a (1 block, w 10) ─ b (3 blocks, w 10). Held a, b; state bytes 1, K = 1 byte a block.
  // Δ(a) = 1 · 10 (b anchors itself), Δ(b) = 2 · 10. Without the charge a goes first (10 < 20
  // per byte); with it b is the deepest state of its path and frees 1 + 2 · 1 bytes: 20 / 3 <
  // 10, so b goes, and a, now with no state below, is charged its own gap.
  for (const double K : {0.0, 1.0}) {
    CAPTURE(K);
    hc::tree_index ix;  // the index records the pool's state ids: one per pool
    const auto [a, m, b] = chain3(ix, {10.0, 0.0, 10.0});
    (void)m;
    hc::tree_state_pool pool;
    pool.add(ix, a, 1, 0);
    pool.add(ix, b, 1, 0);
    CHECK(pool.state_at(ix, a).below == 1);
    CHECK(pool.state_at(ix, b).below == 0);
    const hc::age_scaled_value value{.block_size = 1, .kv_block_bytes = K};
    CHECK(value(pool.state_at(ix, a)) == doctest::Approx(10.0));
    CHECK(value(pool.state_at(ix, b)) == doctest::Approx(K == 0.0 ? 20.0 : 20.0 / 3.0));
    const auto v = pool.evict(ix, 1, hc::tree_index::no_slot, 0, value, [](std::uint32_t) {});
    REQUIRE(v.size() == 1);
    CHECK(ix.live_slot(v[0]) == (K == 0.0 ? a : b));
    const slot left = K == 0.0 ? b : a;
    CHECK(pool.state_at(ix, left).below == 0);
    // The one left: b, re-anchored at the root (gap 3, W 10: a's region went to the root's free
    // empty state), or a, now anchoring b's mass too (W 20) and charged its gap of 1 block.
    const double expect = K == 0.0 ? 3.0 * 10.0 / 1.0 : 1.0 * 20.0 / (1.0 + 1.0);
    CHECK(value(pool.state_at(ix, left)) == doctest::Approx(expect));
  }
}

TEST_CASE("tree_state_pool: add_path keeps the records add keeps, bit for bit, by brute force") {
  // Two identical worlds, each with a pool of the same held states (some pinned, some planned,
  // some removed again, a snapshot in use). A fresh path of L blocks hangs below a random node
  // (zero weights, as a prefill leaves them, with now and then a weight, a side branch and a
  // held state below it); K nodes of the path from the root down are chosen. World A adds them
  // one by one (`add`), world B at once (`add_path`): every record, region bits included, must
  // agree, and so must the next victims (found by the snapshot search, checked against a scan).
  std::mt19937_64 seed_rng(97);
  int compared = 0, with_below = 0, restarts = 0;
  for (int trial = 0; trial < 300; ++trial) {
    CAPTURE(trial);
    const std::uint64_t seed = seed_rng();
    const bool kv = trial % 3 == 0;
    std::array<std::optional<world>, 2> ws;
    std::array<hc::tree_state_pool, 2> pools;
    std::vector<slot> chosen;
    std::uint32_t now = 0;
    for (int side = 0; side < 2; ++side) {
      std::mt19937_64 rng(seed);  // the same draws on both sides
      now = 0;
      ws[side].emplace(rng, 40 + rng() % 260);
      world& w = *ws[side];
      hc::tree_state_pool& pool = pools[side];
      // The fresh path and its side branches.
      slot v = w.nodes[rng() % w.nodes.size()];
      std::vector<slot> path;
      const std::size_t len = 1 + rng() % 60;
      for (std::size_t i = 0; i < len; ++i) {
        bool created = false;
        v = w.ix.child(v, hc::digest{1000 + i, 7}, created);
        w.ix[v].weight = rng() % 6 == 0 ? static_cast<double>(1 + rng() % 100) / 7.0 : 0.0;
        path.push_back(v);
        w.inner.push_back(v);
        if (rng() % 5 == 0) {
          const slot side_node = w.ix.child(v, hc::digest{5000 + i, 7}, created);
          w.ix[side_node].weight = static_cast<double>(rng() % 3);
          w.inner.push_back(side_node);
        }
      }
      for (const slot x : w.inner)
        if (rng() % 4 == 0) w.ix[x].flags |= hc::tree_node::planned_flag;
      // Held states: about half the old nodes and, now and then, a node on or off the path.
      for (const slot x : w.inner)
        if (rng() % (x < path.front() ? 2 : 9) == 0) pool.add(w.ix, x, 1 + rng() % 4, now++);
      for (const slot x : w.inner)
        if (w.ix[x].state != hc::tree_state_pool::no_state && rng() % 7 == 0) pool.remove(w.ix, x);
      for (const slot x : w.inner)
        if (w.ix[x].state != hc::tree_state_pool::no_state && rng() % 11 == 0) pool.pin(w.ix, x);
      // A snapshot in use: a few evictions by the policy's value mark the changes after it.
      std::array<double, hc::age_scaled_value::bins> table{};
      for (double& h : table) h = static_cast<double>(1 + rng() % 1000) / 1000.0;
      const hc::age_scaled_value value{.block_size = 4,
                                       .hit_by_bin = table.data(),
                                       .now = now,
                                       .kv_block_bytes = kv ? 3.0 : 0.0};
      for (int e = 0; e < 3 && pool.count() > 0; ++e)
        (void)pool.evict(w.ix, 1, hc::tree_index::no_slot, now, value, [](std::uint32_t) {});
      // The nodes to add: from the root down the whole path (root excluded), those without a
      // state, each kept with probability 1/2 (at least one).
      std::vector<slot> up_path;
      for (slot a = path.back(); w.ix[a].parent != hc::tree_index::no_slot; a = w.ix[a].parent)
        up_path.push_back(a);
      std::reverse(up_path.begin(), up_path.end());
      chosen.clear();
      for (const slot x : up_path)
        if (w.ix[x].state == hc::tree_state_pool::no_state && rng() % 2 == 0) chosen.push_back(x);
      if (chosen.empty())
        for (const slot x : up_path)
          if (w.ix[x].state == hc::tree_state_pool::no_state) {
            chosen.push_back(x);
            break;
          }
      if (side == 0) {
        for (const slot x : chosen) pool.add(w.ix, x, 2, now);
      } else if (!chosen.empty()) {
        pool.add_path(w.ix, chosen, 2, now);
      }
      // Did a held state sit between two chosen nodes (a walk restarts below it)?
      if (side == 1)
        for (std::size_t i = 1; i < chosen.size(); ++i)
          if (w.ix[hc::tree_state_pool::state_above(w.ix, chosen[i])].state !=
                  hc::tree_state_pool::no_state &&
              hc::tree_state_pool::state_above(w.ix, chosen[i]) != chosen[i - 1])
            ++restarts;
    }
    if (chosen.empty()) continue;
    world& a = *ws[0];
    world& b = *ws[1];
    REQUIRE(a.ix.slots().size() == b.ix.slots().size());
    CHECK(pools[0].count() == pools[1].count());
    CHECK(pools[0].used_bytes() == pools[1].used_bytes());
    for (const slot x : a.inner) {
      REQUIRE(a.ix[x].state == b.ix[x].state);
      if (a.ix[x].state == hc::tree_state_pool::no_state) continue;
      const hc::tree_state& sa = std::as_const(pools[0]).state_at(a.ix, x);
      const hc::tree_state& sb = std::as_const(pools[1]).state_at(b.ix, x);
      CHECK(sa.node == sb.node);
      CHECK(sa.up == sb.up);
      CHECK(sa.gap == sb.gap);
      CHECK(sa.below == sb.below);
      CHECK(sa.bytes == sb.bytes);
      CHECK(sa.last_use == sb.last_use);
      CHECK(sa.touched == sb.touched);
      CHECK(sa.pinned == sb.pinned);
      CHECK(sa.planned == sb.planned);
      CHECK(sa.changed == sb.changed);
      CHECK(std::bit_cast<std::uint64_t>(sa.region) == std::bit_cast<std::uint64_t>(sb.region));
      if (sa.below > 0 && std::find(chosen.begin(), chosen.end(), x) != chosen.end()) ++with_below;
    }
    // The next victims agree, and each is the scan's.
    std::array<double, hc::age_scaled_value::bins> table{};
    for (std::size_t j = 0; j < table.size(); ++j) table[j] = 1.0 / static_cast<double>(j + 1);
    for (int e = 0; e < 8; ++e) {
      now += 3;
      const hc::age_scaled_value value{.block_size = 4,
                                       .hit_by_bin = table.data(),
                                       .now = now,
                                       .kv_block_bytes = kv ? 3.0 : 0.0};
      const slot least =
          least_entry_by_scan(pools[1], b.ix, b.inner, hc::tree_index::no_slot, value);
      const auto va =
          pools[0].evict(a.ix, 1, hc::tree_index::no_slot, now, value, [](std::uint32_t) {});
      const auto vb =
          pools[1].evict(b.ix, 1, hc::tree_index::no_slot, now, value, [](std::uint32_t) {});
      REQUIRE(va.size() == vb.size());
      if (vb.empty()) break;
      CHECK(va[0] == vb[0]);
      CHECK(b.ix.live_slot(vb[0]) == least);
    }
    ++compared;
  }
  CHECK(compared > 250);
  CHECK(with_below > 100);
  CHECK(restarts > 20);
}
