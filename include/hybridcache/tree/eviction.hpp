#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `tree_state_pool`: the states held on a `tree_index`, their pins, and the eviction ranking
/// that admission and victim choice follow (DESIGN §7; docs/tree.md "Structure").
///
/// Cost model (DESIGN §7): a request whose match ends at v replays
/// r(v) = depth(v) − depth(anchor(v)) tokens, anchor(v) the deepest node on v's path that holds
/// a state (the namespace root, the empty prefix, is free); E[r] = Σ_v ŵ(v) r(v). For a held
/// state c let up(c) be the nearest proper ancestor holding a state (or the root) and
/// W(c) = Σ_{v : anchor(v) = c} w(v) its region's mass. Dropping c re-anchors its region at
/// up(c), so exactly
///
///   ΔE[r](c) = (depth(c) − depth(up(c))) · W(c)          (unnormalised weights, tokens),
///
/// and victims go in increasing ΔE[r] per byte, recomputed after each removal (removing c raises
/// W(up(c)) and the Δ of the states just below c), ties: not planned first, then least recently
/// used, then slot. The pool keeps W(c) per state incrementally (the statistics update it
/// through `region_at`) and `up(c)` per state, so Δ(c) is O(1).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/tree/index.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What `admit` did.
struct admit_result {
  bool admitted = false;         ///< false: no room even after evicting every unpinned state
  std::vector<node_id> victims;  ///< states the engine must free (already off the books)
};

/// One held state. `up` is the nearest proper ancestor holding a state (or the namespace root);
/// `region` = W(c), the weight of the nodes whose anchor is this state.
struct tree_state {
  tree_node::slot_id node = tree_node::no_slot;
  tree_node::slot_id up = tree_node::no_slot;
  std::uint32_t bytes = 0;
  std::uint32_t last_use = 0;  ///< clock of the last admit/resume (LRU tie-break)
  std::uint32_t touched = 0;   ///< observations (mod 2^32) at the last admit/resume: its age
  std::uint32_t gap = 0;       ///< depth(node) − depth(up), blocks (kept with `up`)
  std::uint8_t pinned = 0;     ///< the node's pin flag (kept by `pin` / `unpin`)
  std::uint8_t planned = 0;    ///< the node's planned flag (as of `add` / `sync_planned`)
  double region = 0.0;
};

/// The held states and their eviction ranking (see the file comment). Not thread-safe.
class tree_state_pool {
 public:
  using slot_id = tree_node::slot_id;
  static constexpr slot_id no_slot = tree_node::no_slot;
  static constexpr std::uint32_t no_state = tree_node::no_state;
  static constexpr std::uint32_t max_pins = (1u << 24) - 1;

  // ---- states ---------------------------------------------------------------------------

  /// Nearest proper ancestor of non-root `v` holding a state, else v's namespace root.
  /// O(depth).
  [[nodiscard]] static slot_id state_above(const tree_index& ix, slot_id v) noexcept {
    slot_id a = ix[v].parent;
    while (ix[a].parent != no_slot && ix[a].state == no_state) a = ix[a].parent;
    return a;
  }
  /// W of the state at `anchor`, or nullptr when it holds none (a root's free empty state).
  [[nodiscard]] double* region_at(const tree_index& ix, slot_id anchor) noexcept {
    return ix[anchor].state != no_state ? &states_[ix[anchor].state].region : nullptr;
  }
  /// The record of the state at `v` (which holds one).
  [[nodiscard]] tree_state& state_at(const tree_index& ix, slot_id v) noexcept {
    return states_[ix[v].state];
  }
  [[nodiscard]] const tree_state& state_at(const tree_index& ix, slot_id v) const noexcept {
    return states_[ix[v].state];
  }
  /// Marks the last use of the state at `v` (LRU clock).
  void touch(const tree_index& ix, slot_id v) noexcept { states_[ix[v].state].last_use = ++clock_; }

  /// Marks a state of `bytes` at `node` (which holds none), admitted at observation `now`: its
  /// region and the states below it are found by one walk of the region (O(region)); the
  /// region above shrinks by the same amount.
  void add(tree_index& ix, slot_id node, std::uint32_t bytes, std::uint32_t now) {
    std::uint32_t id;
    if (!free_states_.empty()) {
      id = free_states_.back();
      free_states_.pop_back();
    } else {
      id = static_cast<std::uint32_t>(states_.size());
      states_.emplace_back();
    }
    const slot_id up = state_above(ix, node);
    ix[node].state = id;
    tree_state& s = states_[id];
    s.node = node;
    s.up = up;
    s.gap = ix[node].blocks - ix[up].blocks;
    s.bytes = bytes;
    s.last_use = ++clock_;
    s.touched = now;
    s.pinned = ix[node].pinned;
    s.planned = (ix[node].flags & tree_node::planned_flag) != 0;
    s.region = region_of(ix, node, [&](std::uint32_t b) { set_up(ix, states_[b], node); });
    // The region above loses exactly what c now anchors. Rounding of this difference is
    // ~ulp(W(up)); re-plans recompute every region from the node weights.
    if (ix[up].state != no_state) {
      double& r = states_[ix[up].state].region;
      r = std::max(0.0, r - s.region);
    }
    used_bytes_ += bytes;
    if (ix[node].pinned) pinned_bytes_ += bytes;
    ++count_;
  }

  /// Unmarks the state at `node`: its region joins the state above, the states below it now
  /// fall back to that state.
  void remove(tree_index& ix, slot_id node) {
    const std::uint32_t id = ix[node].state;
    tree_state& s = states_[id];
    const slot_id up = s.up;
    const double region = s.region;
    ix[node].state = no_state;
    used_bytes_ -= s.bytes;
    if (ix[node].pinned) pinned_bytes_ -= s.bytes;
    --count_;
    s = tree_state{};
    free_states_.push_back(id);
    (void)region_of(ix, node, [&](std::uint32_t b) { set_up(ix, states_[b], up); });
    if (ix[up].state != no_state) states_[ix[up].state].region += region;
  }

  /// Every region recomputed from the node weights (one walk of the tree), so that rounding
  /// from incremental updates never accumulates.
  void recompute_regions(const tree_index& ix) {
    for (auto& st : states_)
      if (st.node != no_slot) st.region = region_of(ix, st.node, [](std::uint32_t) {});
  }
  /// Copies the planner's flag of every held state's node into its record (`tree_state::planned`):
  /// call after a re-plan changed the plan, so that ranking reads only the pool's records.
  void sync_planned(const tree_index& ix) noexcept {
    for (auto& st : states_)
      if (st.node != no_slot) st.planned = (ix[st.node].flags & tree_node::planned_flag) != 0;
  }
  /// Multiplies every region by `f` (the statistics folding their scale back).
  void scale_regions(double f) noexcept {
    for (auto& st : states_) st.region *= f;
  }

  // ---- pins ------------------------------------------------------------------------------

  /// One more pin on `v` (flag in the record, count in a side table; pins nest).
  /// @throws capacity_error past 2^24 − 1 pins.
  void pin(tree_index& ix, slot_id v) {
    std::uint32_t& c = pins_[v];
    if (c == max_pins)
      throw capacity_error("hybridcache: state_policy pin count overflow (2^24 - 1)");
    ++c;
    if (!ix[v].pinned && ix[v].state != no_state) {
      pinned_bytes_ += states_[ix[v].state].bytes;
      states_[ix[v].state].pinned = 1;
    }
    ix[v].pinned = 1;
  }
  /// Releases one pin of `v`. @returns false if `v` was not pinned.
  bool unpin(tree_index& ix, slot_id v) {
    const auto it = pins_.find(v);
    if (it == pins_.end()) return false;
    if (--it->second == 0) {
      pins_.erase(it);
      ix[v].pinned = 0;
      if (ix[v].state != no_state) {
        pinned_bytes_ -= states_[ix[v].state].bytes;
        states_[ix[v].state].pinned = 0;
      }
    }
    return true;
  }
  [[nodiscard]] std::uint32_t pin_count(const tree_index& ix, slot_id v) const {
    if (!ix[v].pinned) return 0;
    return pins_.find(v)->second;
  }

  // ---- ranking ---------------------------------------------------------------------------

  /// ΔE[r] per byte of dropping state `s` (a state of this pool):
  /// (depth(c) − depth(up(c))) · B · W(c) / bytes, the depth gap kept in the record
  /// (`tree_state::gap`), so that ranking K states reads only the pool's records.
  [[nodiscard]] static double delta_per_byte(const tree_index& ix, const tree_state& s,
                                             std::size_t block_size) noexcept {
    (void)ix;
    const double gap = static_cast<double>(s.gap) * static_cast<double>(block_size);
    return gap * s.region / static_cast<double>(s.bytes);
  }

  /// Bytes held by unpinned states other than at `exclude`. O(1): the bytes of the states at
  /// pinned nodes are kept as pins and states come and go.
  [[nodiscard]] std::size_t evictable_bytes(const tree_index& ix, slot_id exclude) const {
    std::size_t evictable = used_bytes_ - pinned_bytes_;
    if (exclude != no_slot && ix[exclude].state != no_state && !ix[exclude].pinned)
      evictable -= states_[ix[exclude].state].bytes;
    return evictable;
  }

  /// Greedy exact victims until `need` bytes are freed or no unpinned state other than
  /// `exclude` is left: each step takes the state of least `value(s)` (ΔE[r] per byte, possibly
  /// scaled: `value` must not fall as other states go), recomputed when it comes up; ties as
  /// the file comment says. Victims are taken off the books and returned. Every victim is
  /// reported as `on_end(age)`, age = now − touched, after the loop, so that `value` sees the
  /// same statistics throughout. O(K + V log K + Σ victim regions), K = states held, V the
  /// victims (the first is found by two passes over the records, values then ties; a heap
  /// orders the rest). `value` is called once per unpinned state per pass it is needed in: a
  /// small callable (tree/policy.hpp's `eviction_value`) keeps the first pass a tight loop.
  template <class Value, class OnEnd>
  std::vector<node_id> evict(tree_index& ix, std::size_t need, slot_id exclude, std::uint32_t now,
                             Value&& value, OnEnd&& on_end) {
    std::vector<node_id> out;
    if (need == 0 || count_ == 0) return out;
    using entry = victim_entry;
    std::size_t freed = 0;
    auto take = [&](slot_id v) {
      const tree_state& s = states_[ix[v].state];
      freed += s.bytes;
      ended_.push_back(now - s.touched);
      remove(ix, v);
      out.push_back(ix.handle_of(v));
    };
    // The first victim is the least entry (the order is total: slots differ); most admissions
    // need no more. It is found in two passes so that no division sits on a loop-carried
    // chain: the values and their minimum m (a running min, whatever the order of the states),
    // then the least entry among the states of value m (the tie-breaks). Same entry as one
    // scan comparing whole entries.
    constexpr double none = std::numeric_limits<double>::infinity();
    values_.resize(states_.size());
    double m = none;
    bool any = false;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      const tree_state& st = states_[i];
      const bool eligible = st.node != no_slot && st.node != exclude && !st.pinned;
      const double v = eligible ? value(st) : none;
      values_[i] = v;
      m = v < m ? v : m;
      any |= eligible;
    }
    if (!any) return out;
    entry best{};
    bool found = false;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (values_[i] != m) continue;
      const tree_state& st = states_[i];
      if (st.node == no_slot || st.node == exclude || st.pinned) continue;
      const entry e{m, st.planned != 0, st.last_use, st.node};
      if (!found || best > e) best = e;
      found = true;
    }
    take(best.v);
    if (freed < need) {
      // More must go: the rest by their values now, in a heap, re-queued lazily as values
      // grow. (Each step takes the least current value, as if the heap had held every state
      // from the start: a stale entry is never below its current value.)
      heap_.clear();
      for (const auto& st : states_) {
        if (st.node == no_slot || st.node == exclude || st.pinned) continue;
        heap_.push_back({value(st), st.planned != 0, st.last_use, st.node});
      }
      auto less_urgent = [](const entry& a, const entry& b) { return a > b; };
      std::make_heap(heap_.begin(), heap_.end(), less_urgent);
      while (freed < need && !heap_.empty()) {
        std::pop_heap(heap_.begin(), heap_.end(), less_urgent);
        entry e = heap_.back();
        heap_.pop_back();
        const double v_now = value(states_[ix[e.v].state]);
        if (v_now != e.per_byte) {  // Δ only grows as victims go: re-queue the stale entry
          e.per_byte = v_now;
          heap_.push_back(e);
          std::push_heap(heap_.begin(), heap_.end(), less_urgent);
          continue;
        }
        take(e.v);
      }
    }
    for (std::uint32_t age : ended_) on_end(age);
    ended_.clear();
    return out;
  }

  /// Admission of a state of `bytes` that the engine stored at `node` (no state yet,
  /// 1 ≤ bytes < 2^32) into a pool of `capacity` bytes, at observation `now`: if the pool would
  /// overflow, victims in `evict`'s order (never pinned, never `node`) are freed first, so a new
  /// state always displaces the cheapest held ones (admission by value, which let the new state
  /// compete and refused it when it was the cheapest, was removed in 0.2: it did not pay on the
  /// tuning families, docs/tree_simulation.md "Fewer knobs"). If even all unpinned states would
  /// not make room, nothing changes. `value` and `on_end` as for `evict`.
  template <class Value, class OnEnd>
  admit_result admit(tree_index& ix, slot_id node, std::size_t bytes, std::size_t capacity,
                     std::uint32_t now, Value&& value, OnEnd&& on_end) {
    admit_result r;
    if (ix[node].state != no_state) {
      r.admitted = true;
      return r;
    }
    if (bytes > capacity) return r;
    if (used_bytes_ + bytes > capacity) {
      const std::size_t need = used_bytes_ + bytes - capacity;
      if (evictable_bytes(ix, node) < need) return r;
      r.victims = evict(ix, need, node, now, value, on_end);
    }
    add(ix, node, static_cast<std::uint32_t>(bytes), now);
    r.admitted = true;
    return r;
  }

  // ---- queries ---------------------------------------------------------------------------

  [[nodiscard]] std::size_t used_bytes() const noexcept { return used_bytes_; }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  /// Bytes of the state records, their free list, the pin table and the victim search's values
  /// (one double per record).
  [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept {
    return states_.capacity() * sizeof(tree_state) +
           free_states_.capacity() * sizeof(std::uint32_t) + detail::table_bytes(pins_) +
           values_.capacity() * sizeof(double);
  }

 private:
  /// A candidate victim: ordered by value per byte, then unplanned first, then LRU, then slot.
  struct victim_entry {
    double per_byte;
    bool planned;
    std::uint32_t last_use;
    slot_id v;
    bool operator>(const victim_entry& o) const {
      if (per_byte != o.per_byte) return per_byte > o.per_byte;
      if (planned != o.planned) return planned;
      if (last_use != o.last_use) return last_use > o.last_use;
      return v > o.v;
    }
  };

  /// `s.up = up`, with the depth gap that goes with it.
  static void set_up(const tree_index& ix, tree_state& s, slot_id up) noexcept {
    s.up = up;
    s.gap = ix[s.node].blocks - ix[up].blocks;
  }

  /// Σ weight over the region of `c` (c and its descendants not below another state); calls
  /// `boundary(s)` for each state met at the region's lower boundary. O(region size).
  template <class F>
  double region_of(const tree_index& ix, slot_id c, F&& boundary) {
    double sum = ix[c].weight;
    auto& st = stack_;
    st.clear();
    for (slot_id x = ix[c].first_child; x != no_slot; x = ix[x].next_sibling) st.push_back(x);
    while (!st.empty()) {
      const slot_id x = st.back();
      st.pop_back();
      if (ix[x].state != no_state) {
        boundary(ix[x].state);
        continue;
      }
      sum += ix[x].weight;
      for (slot_id y = ix[x].first_child; y != no_slot; y = ix[y].next_sibling) st.push_back(y);
    }
    return sum;
  }

  std::vector<tree_state> states_;
  std::vector<std::uint32_t> free_states_;
  std::unordered_map<slot_id, std::uint32_t> pins_;  // pin counts of the pinned nodes
  std::size_t used_bytes_ = 0, count_ = 0;
  std::size_t pinned_bytes_ = 0;  // bytes of the states at pinned nodes
  std::uint32_t clock_ = 0;
  // scratch
  std::vector<std::uint32_t> ended_;
  std::vector<slot_id> stack_;
  std::vector<victim_entry> heap_;
  std::vector<double> values_;  // evict's first pass, one per record
};

HYBRIDCACHE_NAMESPACE_END
