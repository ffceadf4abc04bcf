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
/// through `region_at`) and `up(c)` per state, so Δ(c) is O(1). The first victim of an
/// admission is found without ranking every held state (`least_by_snapshot`; docs/tree.md,
/// "Finding the first victim without ranking every state").

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/tree/index.hpp"
#include "hybridcache/tree/statistics.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What `admit` did.
struct admit_result {
  bool admitted = false;         ///< false: no room even after evicting every unpinned state
  std::vector<node_id> victims;  ///< states the engine must free (already off the books)
};

/// One state taken as a victim, with the figures it was ranked by when it went
/// (`state_policy::set_victim_log`). With the file comment's ΔE[r](c) = (depth(c) −
/// depth(up(c))) · W(c) and Σ w the statistics' total mass when it went:
///
///   expected_tokens = ΔE[r](c) / Σ w       (tokens per request: what its loss adds to E[r]),
///   value           = expected_tokens / bytes'(c) · h[bin(age)]   (`age_scaled_value`),
///
/// bytes'(c) its bytes plus, under a joint pool, its gap's KV when no held state is below it.
/// Victims go in increasing `value`.
struct tree_victim {
  node_id node = no_node;          ///< the state's node (already off the books)
  node_id up = no_node;            ///< the held state above it when it went, or its namespace root
  std::size_t gap_tokens = 0;      ///< depth(node) − depth(up), tokens
  double expected_tokens = 0.0;    ///< ΔE[r] / Σ w, tokens per request
  double value = 0.0;              ///< its rank: ΔE[r] / Σ w per byte freed, times P(hit | age)
  std::size_t bytes = 0;           ///< the state's own bytes
  std::uint32_t age = 0;           ///< observations since its admission or its last resume
  std::uint32_t states_below = 0;  ///< held states whose `up` it was
  bool planned = false;            ///< the plan placed a state at its node
  bool prior = false;              ///< admitted on a prior (age class 1, `tree_state::cls`)
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
  std::uint8_t changed = 0;    ///< changed since the victim search's last snapshot (internal)
  /// Age class (policy_options::age_classes): 1 when its node held a prior (fresh end, prefill
  /// end, branch point) at admission, else 0. Fixed for the state's life.
  std::uint8_t cls = 0;
  std::uint32_t below = 0;     ///< held states whose `up` is this one (kept with `up`)
  double region = 0.0;
};

/// The eviction value of the library's policy: ΔE[r] per byte times P(hit | age bin),
///
///   value(s) = (depth(c) − depth(up(c))) · B · W(c) / bytes'(c) · h[bin(now − touched(c))],
///
///   bytes'(c) = bytes(c) + [no held state has up = c] · (depth(c) − depth(up(c))) · K,
///
/// K = `kv_block_bytes`, 0 unless states and KV share one pool (`policy_options::kv_block_bytes`).
/// Then a state with no held state below it is the only reason the KV of its gap is worth
/// keeping (KV beyond the deepest state of a path resumes nothing), so dropping it frees that KV
/// too: the ranking is ΔE[r] per byte actually freed. With states below, that KV still serves
/// them and is not charged.
///
/// bin(a) = `tree_statistics::age_bucket(a)` = bit_width(a) ∈ [0, 32], h the 33 values of
/// `tree_statistics::hit_given_age_table()` (nullptr: every h = 1); with `hit_by_bin_prior`
/// (policy_options::age_classes), a state of class 1 reads that table instead
/// (`tree_statistics::hit_given_age_table(1)`, and `hit_by_bin` is class 0's).
/// `tree_state_pool::evict` recognises this type and finds the first victim without ranking every
/// held state (see there); any other callable is ranked by a scan.
struct age_scaled_value {
  std::size_t block_size = 1;
  const double* hit_by_bin = nullptr;
  std::uint32_t now = 0;
  double kv_block_bytes = 0.0;
  const double* hit_by_bin_prior = nullptr;  ///< class 1's table (nullptr: `hit_by_bin`)
  static constexpr std::size_t bins = tree_statistics::age_buckets;
  [[nodiscard]] static std::size_t bin(std::uint32_t age) noexcept {
    return tree_statistics::age_bucket(age);
  }
  /// ΔE[r] per byte alone (the factor that does not depend on the age).
  [[nodiscard]] double key(const tree_state& s) const noexcept {
    const double gap = static_cast<double>(s.gap) * static_cast<double>(block_size);
    double bytes = static_cast<double>(s.bytes);
    if (kv_block_bytes != 0.0 && s.below == 0) bytes += static_cast<double>(s.gap) * kv_block_bytes;
    return gap * s.region / bytes;
  }
  /// The table a state of class `cls` reads (nullptr: every h = 1).
  [[nodiscard]] const double* table(std::uint8_t cls) const noexcept {
    return cls != 0 && hit_by_bin_prior ? hit_by_bin_prior : hit_by_bin;
  }
  [[nodiscard]] double operator()(const tree_state& s) const noexcept {
    const double d = key(s);
    const double* h = table(s.cls);
    return h ? d * h[bin(now - s.touched)] : d;
  }
};

/// The held states and their eviction ranking (see the file comment). Not thread-safe.
class tree_state_pool {
 public:
  using slot_id = tree_node::slot_id;
  static constexpr slot_id no_slot = tree_node::no_slot;
  static constexpr std::uint32_t no_state = tree_node::no_state;
  static constexpr std::uint32_t max_pins = (1u << 24) - 1;

  // ---- states ---------------------------------------------------------------------------

  /// The age class a state admitted at `v` now gets (`tree_state::cls`): 1 when v holds a prior
  /// (a fresh end's, a prefill end's or a branch point's: `tree_node::holds_prior`), else 0.
  [[nodiscard]] static std::uint8_t admission_class(const tree_index& ix, slot_id v) noexcept {
    return ix[v].holds_prior() ? 1 : 0;
  }
  /// Nearest proper ancestor of non-root `v` holding a state, else v's namespace root.
  /// O(depth).
  [[nodiscard]] static slot_id state_above(const tree_index& ix, slot_id v) noexcept {
    slot_id a = ix[v].parent;
    while (ix[a].parent != no_slot && ix[a].state == no_state) a = ix[a].parent;
    return a;
  }
  /// W of the state at `anchor`, or nullptr when it holds none (a root's free empty state).
  /// (A caller that writes through it changes the state's rank: the victim search re-ranks it.)
  [[nodiscard]] double* region_at(const tree_index& ix, slot_id anchor) {
    if (ix[anchor].state == no_state) return nullptr;
    mark(ix[anchor].state);
    return &states_[ix[anchor].state].region;
  }
  /// The record of the state at `v` (which holds one), to change (re-ranked by the victim
  /// search, as for `region_at`).
  [[nodiscard]] tree_state& state_at(const tree_index& ix, slot_id v) {
    mark(ix[v].state);
    return states_[ix[v].state];
  }
  [[nodiscard]] const tree_state& state_at(const tree_index& ix, slot_id v) const noexcept {
    return states_[ix[v].state];
  }
  /// Marks the last use of the state at `v` (LRU clock).
  /// (Ties only: the victim search reads it live, so no re-rank.)
  void touch(const tree_index& ix, slot_id v) noexcept { states_[ix[v].state].last_use = ++clock_; }

  /// Marks a state of `bytes` at `node` (which holds none), admitted at observation `now`: its
  /// region and the states below it are found by one walk of the region (O(region)); the
  /// region above shrinks by the same amount.
  void add(tree_index& ix, slot_id node, std::uint32_t bytes, std::uint32_t now) {
    const std::uint32_t id = new_record(ix, node, bytes, now);
    book_region(ix, id, region_of(ix, node, [&](std::uint32_t b) {
                  mark(b);
                  set_up(ix, states_[b], node);
                }));
  }

  /// `add` for each of `nodes` in turn (each a proper descendant of the one before, none holding
  /// a state; unchecked here, `state_policy::admit_path` checks): the same records, the regions
  /// bit for bit, the same up links, counts and marks once done. `add` sums a new state's region
  /// by walking it, and on a path of fresh nodes each node's region holds the whole path below
  /// it, so K calls walk O(K · path). Here one walk covers the first node's region (a new walk
  /// starts at a node below a held state, which the one above cannot reach) and adds each
  /// weight to the running sum of every listed node whose region holds it, in the order the K
  /// walks would (the sub-walk below a node is contiguous and in the same order). A weight of
  /// +0 changes no sum (weights are sums and differences of non-negative terms, never −0) and
  /// is skipped, so the cost is O(region of the first node + Σ over nonzero weights met of the
  /// listed nodes above them).
  void add_path(tree_index& ix, std::span<const slot_id> nodes, std::uint32_t bytes,
                std::uint32_t now) {
    const std::size_t k = nodes.size();
    path_sums_.assign(k, 0.0);
    path_owner_.clear();
    std::size_t next = 0;  // the next listed node the walks have not met
    while (next < k) {
      auto& st = stack_;
      st.clear();
      path_open_.clear();  // (listed index, stack size once it was popped): the sums open now
      st.push_back(nodes[next]);
      while (!st.empty()) {
        // A node's region is walked once the stack is back to its size after the node's pop.
        while (!path_open_.empty() && st.size() <= path_open_.back().second) path_open_.pop_back();
        const slot_id x = st.back();
        st.pop_back();
        const double w = ix[x].weight;
        const bool counts = w != 0.0 || std::signbit(w);
        if (next < k && x == nodes[next]) {
          if (counts)
            for (const auto& o : path_open_) path_sums_[o.first] += w;
          path_sums_[next] = w;  // as `region_of` starts: the node's own weight
          path_open_.emplace_back(next, st.size());
          ++next;
        } else if (ix[x].state != no_state) {
          path_owner_.emplace_back(ix[x].state, path_open_.back().first);  // the deepest open
          continue;
        } else if (counts) {
          for (const auto& o : path_open_) path_sums_[o.first] += w;
        }
        for (slot_id y = ix[x].first_child; y != no_slot; y = ix[y].next_sibling) st.push_back(y);
      }
    }
    for (std::size_t j = 0; j < k; ++j)
      book_region(ix, new_record(ix, nodes[j], bytes, now), path_sums_[j]);
    // A state met below lands under the deepest listed node above it, as after the K walks
    // (each re-linked it to the node it walked from).
    for (const auto& [b, j] : path_owner_) {
      mark(b);
      set_up(ix, states_[b], nodes[j]);
    }
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
    const std::uint8_t changed = s.changed;  // still listed if it was
    // One state fewer below `up` (marked below in any case: its region grows).
    if (ix[up].state != no_state) --states_[ix[up].state].below;
    s = tree_state{};
    s.changed = changed;
    free_states_.push_back(id);
    (void)region_of(ix, node, [&](std::uint32_t b) {
      mark(b);
      set_up(ix, states_[b], up);
    });
    if (ix[up].state != no_state) {
      mark(ix[up].state);
      states_[ix[up].state].region += region;
    }
  }

  /// Every region recomputed from the node weights (one walk of the tree), so that rounding
  /// from incremental updates never accumulates.
  void recompute_regions(const tree_index& ix) {
    for (auto& st : states_)
      if (st.node != no_slot) st.region = region_of(ix, st.node, [](std::uint32_t) {});
    snap_.valid = false;
  }
  /// Copies the planner's flag of every held state's node into its record (`tree_state::planned`):
  /// call after a re-plan changed the plan, so that ranking reads only the pool's records.
  void sync_planned(const tree_index& ix) {
    for (std::size_t i = 0; i < states_.size(); ++i) {
      tree_state& st = states_[i];
      if (st.node == no_slot) continue;
      const std::uint8_t planned = (ix[st.node].flags & tree_node::planned_flag) != 0 ? 1 : 0;
      if (planned == st.planned) continue;
      st.planned = planned;
      mark(static_cast<std::uint32_t>(i));  // the victim search's tie bound reads it
    }
  }
  /// Multiplies every region by `f` (the statistics folding their scale back: rare, once per
  /// ≈ 345/(1 − γ) observations). Every rank changes, so the victim search's snapshot goes.
  void scale_regions(double f) noexcept {
    for (auto& st : states_) st.region *= f;
    snap_.valid = false;
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
    return age_scaled_value{.block_size = block_size}.key(s);
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
  /// victims (a heap orders all but the first). The first: for `age_scaled_value` (the policy's),
  /// by `least_by_snapshot`, which ranks only the states changed since its snapshot and those
  /// it cannot rule out (a scan in pools of at most 64 states); for any other `value`, by one
  /// scan of the records. Both take the entry a scan comparing every state's entry would.
  template <class Value, class OnEnd>
  std::vector<node_id> evict(tree_index& ix, std::size_t need, slot_id exclude, std::uint32_t now,
                             Value&& value, OnEnd&& on_end) {
    if (need == 0 || count_ == 0) return {};
    // The first victim is the least entry (the order is total: slots differ); most admissions
    // need no more.
    victim_entry best{};
    if (!first_victim(exclude, value, best)) return {};
    return evict_from(ix, need, exclude, now, value, on_end, best);
  }

  /// Admission of a state of `bytes` that the engine stored at `node` (no state yet,
  /// 1 ≤ bytes < 2^32) into a pool of `capacity` bytes, at observation `now`: if the pool would
  /// overflow, victims in `evict`'s order (never pinned, never `node`) are freed first, so the
  /// new state displaces the cheapest held ones. If even all unpinned states would not make room,
  /// nothing changes. With `newcomer` (the record `prospective` gives for `node`), admission by
  /// value: when a victim must go, the new state must be worth strictly more than the first one
  /// by `value`, or nothing changes (`state_policy::admit` passes it for a state no match has
  /// ended at; policy_options::admit_by_value); the first victim is found once for both.
  /// `value` and `on_end` as for `evict`.
  template <class Value, class OnEnd>
  admit_result admit(tree_index& ix, slot_id node, std::size_t bytes, std::size_t capacity,
                     std::uint32_t now, Value&& value, OnEnd&& on_end,
                     const tree_state* newcomer = nullptr) {
    admit_result r;
    if (ix[node].state != no_state) {
      r.admitted = true;
      return r;
    }
    if (bytes > capacity) return r;
    if (used_bytes_ + bytes > capacity) {
      const std::size_t need = used_bytes_ + bytes - capacity;
      if (evictable_bytes(ix, node) < need) return r;
      victim_entry best{};
      if (!first_victim(node, value, best)) return r;
      if (newcomer && !(value(*newcomer) > best.per_byte)) return r;
      r.victims = evict_from(ix, need, node, now, value, on_end, best);
    }
    add(ix, node, static_cast<std::uint32_t>(bytes), now);
    r.admitted = true;
    return r;
  }

  // ---- queries ---------------------------------------------------------------------------

  /// The record a state of `bytes` at `node` (which holds none) would get if admitted at
  /// observation `now`: the state above it and its depth gap, the region it would anchor and the
  /// held states right below it (one walk of that region, O(region)), its age 0. Nothing
  /// changes. `admit` takes it as the newcomer of admission by value (it must outrank the first
  /// victim).
  [[nodiscard]] tree_state prospective(const tree_index& ix, slot_id node, std::uint32_t bytes,
                                       std::uint32_t now) {
    tree_state s;
    s.node = node;
    s.up = state_above(ix, node);
    s.gap = ix[node].blocks - ix[s.up].blocks;
    s.bytes = bytes;
    s.touched = now;
    s.planned = (ix[node].flags & tree_node::planned_flag) != 0;
    s.cls = admission_class(ix, node);
    s.region = region_of(ix, node, [&](std::uint32_t) { ++s.below; });
    return s;
  }

  /// Appends every victim that `evict` and `admit` take to `log` (nullptr: none; not owned), in
  /// the pool's own units: `gap_tokens` in blocks, `expected_tokens` = gap · W(c) in blocks
  /// times unnormalised weight, `value` = `value(s)`. `state_policy::set_victim_log` turns them
  /// into the units `tree_victim` documents.
  void set_victim_log(std::vector<tree_victim>* log) noexcept { victim_log_ = log; }
  /// The log `set_victim_log` set (nullptr: none).
  [[nodiscard]] std::vector<tree_victim>* victim_log() const noexcept { return victim_log_; }

  /// The least value among the unpinned held states (+inf when none): the value of the first
  /// victim `evict` would take now.
  [[nodiscard]] double least_value(const age_scaled_value& value) {
    victim_entry best{};
    if (count_ == 0 || !least_by_snapshot(no_slot, value, best))
      return std::numeric_limits<double>::infinity();
    return best.per_byte;
  }

  [[nodiscard]] std::size_t used_bytes() const noexcept { return used_bytes_; }
  [[nodiscard]] std::size_t count() const noexcept { return count_; }
  /// Bytes of the state records, their free list, the pin table and the victim search's
  /// snapshot (16 bytes per state, 12 per state of key 0) and its list of changed records.
  [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept {
    std::size_t snap_bytes = changed_.capacity() * sizeof(std::uint32_t);
    for (const auto& by_bin : snap_.groups)
      for (const auto& g : by_bin) snap_bytes += g.capacity() * sizeof(snap_entry);
    for (const auto& z : snap_.zero) snap_bytes += z.capacity() * sizeof(zero_entry);
    snap_bytes += snap_.odd.capacity() * sizeof(std::uint32_t);
    return states_.capacity() * sizeof(tree_state) +
           free_states_.capacity() * sizeof(std::uint32_t) + detail::table_bytes(pins_) +
           snap_bytes;
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
  /// The least entry among the candidates other than `exclude` (false when there is none): by
  /// `least_by_snapshot` for the policy's `age_scaled_value`, else by a scan.
  template <class Value>
  bool first_victim(slot_id exclude, const Value& value, victim_entry& best) {
    if constexpr (std::is_same_v<std::remove_cvref_t<Value>, age_scaled_value>)
      return least_by_snapshot(exclude, value, best);
    else
      return least_by_scan(exclude, value, best);
  }
  /// `evict` after its first victim `best` was found.
  template <class Value, class OnEnd>
  std::vector<node_id> evict_from(tree_index& ix, std::size_t need, slot_id exclude,
                                  std::uint32_t now, Value&& value, OnEnd&& on_end,
                                  const victim_entry& best) {
    std::vector<node_id> out;
    using entry = victim_entry;
    std::size_t freed = 0;
    auto take = [&](slot_id v) {
      const tree_state& s = states_[ix[v].state];
      if (victim_log_) victim_log_->push_back(victim_record(ix, s, value(s), now));
      freed += s.bytes;
      ended_.push_back(now - s.touched);
      ended_cls_.push_back(s.cls);
      remove(ix, v);
      out.push_back(ix.handle_of(v));
    };
    take(best.v);
    if (freed < need) {
      // More must go: the rest by their values now, in a heap, re-queued lazily as values
      // grow. (Each step takes the least current value, as if the heap had held every state
      // from the start: a stale entry is never below its current value.)
      heap_.clear();
      for (const auto& st : states_) {
        if (!candidate(st, exclude)) continue;
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
    for (std::size_t q = 0; q < ended_.size(); ++q) {
      if constexpr (std::is_invocable_v<OnEnd&, std::uint32_t, std::uint8_t>)
        on_end(ended_[q], ended_cls_[q]);
      else
        on_end(ended_[q]);
    }
    ended_.clear();
    ended_cls_.clear();
    return out;
  }

  /// The log record of victim `s` (`set_victim_log`'s units), ranked `value` at `now`.
  [[nodiscard]] static tree_victim victim_record(const tree_index& ix, const tree_state& s,
                                                 double value, std::uint32_t now) {
    tree_victim r;
    r.node = ix.handle_of(s.node);
    r.up = ix.handle_of(s.up);
    r.gap_tokens = s.gap;
    r.expected_tokens = static_cast<double>(s.gap) * s.region;
    r.value = value;
    r.bytes = s.bytes;
    r.age = now - s.touched;
    r.states_below = s.below;
    r.planned = s.planned != 0;
    r.prior = s.cls != 0;
    return r;
  }

  /// Whether record `st` is a victim candidate: a held state, not at `exclude`, not pinned.
  [[nodiscard]] static bool candidate(const tree_state& st, slot_id exclude) noexcept {
    return st.node != no_slot && st.node != exclude && !st.pinned;
  }

  /// The least entry by one scan of every record: a state whose value exceeds the least found
  /// is passed over, any other is compared as a whole entry (value, planned, last use, slot).
  /// (It replaced a two-pass scan, values then ties, in 2026-11: 15 % fewer instructions for the
  /// exact policy at M = 64, faster in 7 of 8 alternating rounds.)
  template <class Value>
  bool least_by_scan(slot_id exclude, Value& value, victim_entry& best) {
    bool found = false;
    for (const tree_state& st : states_) {
      if (!candidate(st, exclude)) continue;
      const double v = value(st);
      if (found && v > best.per_byte) continue;
      const victim_entry e{v, st.planned != 0, st.last_use, st.node};
      if (!found || best > e) best = e;
      found = true;
    }
    return found;
  }

  /// The least entry for the policy's value (`age_scaled_value`) without ranking every state.
  /// A snapshot keeps, for each state as of its last rebuild, its key k₀ = ΔE[r]/byte, its
  /// clock of last admit/resume t₀ and its age bin j₀, the states of each age class c and bin
  /// sorted by k₀; the states of key exactly 0 (value 0 whatever their age) are kept apart,
  /// sorted by the tie-break (planned, last use, slot) as of the rebuild. Since then, a state
  /// that no call marked changed (`mark`: its region, depth gap, age, class or planned flag
  /// written by this pool or through `region_at` / `state_at`; pins and last use are read live,
  /// so they need no mark) still has key k₀ exactly (the same fields; a common scaling drops the
  /// snapshot) and age now − t₀, so its value is exactly k₀ · h_c[bin(now − t₀)], h_c its class's
  /// table (no record read to know it), its bin lies in [j₀, bin(top of bin j₀ + elapsed)] (all
  /// bins if that passes 2^32), and
  ///
  ///   value ≥ k₀ · min_{bins it may be in} h_c        (exact: rounding is monotone),
  ///
  /// while a state of key 0 has value 0 and a tie key (planned, last use, slot) no less than its
  /// snapshot's (the last use only grows; a wrapped clock rebuilds). The search first files
  /// every changed state again under its key of now (`file_changed`: a state touched since the
  /// rebuild in bin 0, whose bound covers every age up to the time elapsed), then walks the zero
  /// lists while their snapshot tie key can beat the least entry found, and each bin's sorted
  /// list while the bound above is ≤ the least value found, reading a state's record only when
  /// its exact value can match the least, and offering it only when the entry is the record's
  /// own (the earlier filings of a record stay in the lists until the next rebuild). A state it
  /// stops before cannot be the least entry nor tie with it, so the result is the scan's.
  /// Rebuilt (O(K log K)) when more than max(64, K/4) states were filed again or changed since
  /// the last rebuild, after a scaling or `recompute_regions`, when the clock moved by 2^30, or
  /// when the LRU clock wrapped. Pools of at most `scan_below` states, and a table h with a
  /// negative or non-finite entry, are ranked by a scan instead. (Until 2026-12-02 the changed
  /// states were ranked exactly on every search until the next rebuild instead of filed once:
  /// at K = 1024 that was about half of the search's work, docs/tree.md.)
  bool least_by_snapshot(slot_id exclude, const age_scaled_value& value, victim_entry& best) {
    bool scan = count_ <= scan_below;  // a snapshot would rank about as many states as a scan
    for (const double* h : {value.hit_by_bin, value.hit_by_bin_prior})
      if (h && !scan)
        for (std::size_t j = 0; j < age_scaled_value::bins; ++j)
          scan |= !(h[j] >= 0.0 && h[j] <= std::numeric_limits<double>::max());
    if (scan) {
      snap_.valid = false;  // no marks to keep meanwhile
      return least_by_scan(exclude, value, best);
    }
    if (!snap_.valid ||
        snap_.filed + changed_.size() > std::max<std::size_t>(rebuild_after, count_ / 4) ||
        value.now - snap_.now >= (1u << 30) || clock_ < snap_.clock ||
        value.block_size != snap_.block_size || value.kv_block_bytes != snap_.kv_block_bytes)
      rebuild_snapshot(value);
    else
      file_changed(value);
    bool found = false;
    // `st`, of value v = value(st), if it is a candidate.
    auto offer = [&](const tree_state& st, double v) {
      if (!candidate(st, exclude)) return;
      const victim_entry e{v, st.planned != 0, st.last_use, st.node};
      if (!found || best > e) best = e;
      found = true;
    };
    auto consider = [&](const tree_state& st) {
      if (st.node != no_slot) offer(st, value(st));
    };
    // Every changed record is filed by now, so no record is marked changed here. The odd keys and
    // the states of key 0 are ranked from their records (an entry left behind by an earlier
    // filing is then ranked exactly too, which cannot change the least entry).
    for (const std::uint32_t id : snap_.odd) consider(states_[id]);
    // Key 0: value 0, in the snapshot's tie order (unplanned first).
    for (std::uint8_t planned = 0; planned < 2; ++planned) {
      for (const zero_entry& e : snap_.zero[planned]) {
        if (found && victim_entry{0.0, planned != 0, e.last_use, e.node} > best) break;
        consider(states_[e.id]);
      }
    }
    const std::uint64_t elapsed = value.now - snap_.now;
    // Each class's states read one table (`age_scaled_value::table`), so a bin's bound is that
    // table's least entry over the bins its states may be in now, and the exact value needs no
    // read of the record.
    for (std::size_t c = 0; c < 2; ++c) {
      const double* h = value.table(static_cast<std::uint8_t>(c));
      for (std::size_t j = 0; j < age_scaled_value::bins; ++j) {
        const auto& group = snap_.groups[c][j];
        if (group.empty()) continue;
        double hmin = 1.0;
        if (h) {
          const std::uint64_t top = (j == 0 ? 0 : (std::uint64_t{1} << j) - 1) + elapsed;
          const bool wraps = top > std::numeric_limits<std::uint32_t>::max();
          const std::size_t lo = wraps ? 0 : j;
          const std::size_t hi = wraps ? age_scaled_value::bins - 1
                                       : age_scaled_value::bin(static_cast<std::uint32_t>(top));
          hmin = h[lo];
          for (std::size_t k = lo + 1; k <= hi; ++k) hmin = std::min(hmin, h[k]);
        }
        for (const snap_entry& e : group) {
          if (found && e.key * hmin > best.per_byte) break;
          // Exactly value(st) while the record is unchanged (the same key, class and age).
          const double v = h ? e.key * h[age_scaled_value::bin(value.now - e.touched)] : e.key;
          if (found && v > best.per_byte) continue;
          // The entry is the record's own while the record still has the key, age and class it
          // was filed with; else it is an earlier filing of the same record (filed again since,
          // under its entry of now) or of a state that has gone (`file_changed`).
          const tree_state& st = states_[e.id];
          if (st.node != no_slot && st.touched == e.touched && (st.cls != 0) == (c != 0) &&
              value.key(st) == e.key)
            offer(st, v);
        }
      }
    }
    return found;
  }

  /// Pools of at most this many states are ranked by a scan: there a snapshot would be rebuilt
  /// after about as many filings as the pool has states (`rebuild_after`), and a search would
  /// walk much of it. (Speed only: both searches take the same entry. Until 2026-11-29 the scan
  /// went up to 128 states; a joint pool holds about a hundred states at M = 1024, and there the
  /// snapshot made the row's request path 10 % faster, docs/tree_simulation.md.)
  static constexpr std::size_t scan_below = 64;
  /// The snapshot is rebuilt once more than max(rebuild_after, K/4) records were filed again or
  /// changed since the last rebuild: each leaves an earlier entry behind that a search may walk
  /// past. (Speed only. Until 2026-12-02, when changed records were ranked on every search
  /// instead of filed, a rebuild came after max(16, K/8) changed records. On the Mooncake trace
  /// at M = 1024 the exact policy alone executes 17 % fewer instructions under unlimited KV and
  /// 1 % fewer under a joint pool than then; max(16, K/8) with filing would save 13 % and cost
  /// 7 %, docs/tree.md.)
  static constexpr std::size_t rebuild_after = 64;

  /// Files every record changed since the last search under its key as of `value.now` (see
  /// `least_by_snapshot`): key 0 into its zero list at its tie key, a positive finite key into
  /// its class's list of the bin its age had at the rebuild (bin 0 when it was touched since),
  /// any other key with the odd ones. Its earlier entry, if any, stays and no longer matches the
  /// record. O(changed · (log n + n)) for lists of n entries.
  void file_changed(const age_scaled_value& value) {
    const std::uint32_t elapsed = value.now - snap_.now;
    for (const std::uint32_t id : changed_) {
      tree_state& st = states_[id];
      st.changed = 0;
      if (st.node == no_slot) continue;  // gone: its entry, if any, no longer matches
      const double k = value.key(st);
      if (k == 0.0) {
        auto& z = snap_.zero[st.planned != 0 ? 1 : 0];
        const zero_entry e{st.last_use, st.node, id};
        z.insert(std::upper_bound(z.begin(), z.end(), e, zero_before), e);
      } else if (k > 0.0 && k <= std::numeric_limits<double>::max()) {
        const std::uint32_t age = value.now - st.touched;
        const std::size_t j = age <= elapsed ? 0 : age_scaled_value::bin(age - elapsed);
        auto& g = snap_.groups[st.cls != 0 ? 1 : 0][j];
        const snap_entry e{k, st.touched, id};
        g.insert(std::upper_bound(g.begin(), g.end(), e, key_before), e);
      } else {
        snap_.odd.push_back(id);
      }
    }
    snap_.filed += changed_.size();
    changed_.clear();
  }

  void rebuild_snapshot(const age_scaled_value& value) {
    for (const std::uint32_t id : changed_) states_[id].changed = 0;
    changed_.clear();
    snap_.filed = 0;
    for (auto& by_bin : snap_.groups)
      for (auto& g : by_bin) g.clear();
    for (auto& z : snap_.zero) z.clear();
    snap_.odd.clear();
    for (std::size_t i = 0; i < states_.size(); ++i) {
      const tree_state& st = states_[i];
      if (st.node == no_slot) continue;
      const auto id = static_cast<std::uint32_t>(i);
      const double k = value.key(st);
      if (k == 0.0)
        snap_.zero[st.planned != 0 ? 1 : 0].push_back({st.last_use, st.node, id});
      else if (k > 0.0 && k <= std::numeric_limits<double>::max())
        snap_.groups[st.cls != 0 ? 1 : 0][age_scaled_value::bin(value.now - st.touched)].push_back(
            {k, st.touched, id});
      else  // negative, infinite or NaN: no order, ranked on every search
        snap_.odd.push_back(id);
    }
    for (auto& by_bin : snap_.groups)
      for (auto& g : by_bin) std::sort(g.begin(), g.end(), key_before);
    for (auto& z : snap_.zero) std::sort(z.begin(), z.end(), zero_before);
    snap_.valid = true;
    snap_.now = value.now;
    snap_.clock = clock_;
    snap_.block_size = value.block_size;
    snap_.kv_block_bytes = value.kv_block_bytes;
  }

  /// `add`'s first half: a record for a new state at `node` (which holds none), linked under
  /// the state above it, region not yet booked. Returns its id.
  std::uint32_t new_record(tree_index& ix, slot_id node, std::uint32_t bytes, std::uint32_t now) {
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
    mark(id);
    tree_state& s = states_[id];
    s.node = node;
    s.up = no_slot;  // a fresh or reset record (below = 0): set_up counts it under `up` only
    set_up(ix, s, up);
    s.bytes = bytes;
    s.last_use = ++clock_;
    s.touched = now;
    s.pinned = ix[node].pinned;
    s.planned = (ix[node].flags & tree_node::planned_flag) != 0;
    s.cls = admission_class(ix, node);
    return id;
  }
  /// `add`'s second half: the new state `id` anchors `region`, which the region above loses,
  /// and its bytes count.
  void book_region(tree_index& ix, std::uint32_t id, double region) {
    tree_state& s = states_[id];
    s.region = region;
    // The region above loses exactly what the new state now anchors. Rounding of this
    // difference is ~ulp(W(up)); re-plans recompute every region from the node weights.
    if (ix[s.up].state != no_state) {
      mark(ix[s.up].state);
      double& r = states_[ix[s.up].state].region;
      r = std::max(0.0, r - s.region);
    }
    used_bytes_ += s.bytes;
    if (ix[s.node].pinned) pinned_bytes_ += s.bytes;
    ++count_;
  }

  /// Record `id` changed since the snapshot (listed once until the next rebuild; nothing to do
  /// while there is no snapshot, e.g. in a pool that never had to evict).
  void mark(std::uint32_t id) {
    if (!snap_.valid || states_[id].changed) return;
    states_[id].changed = 1;
    changed_.push_back(id);
  }

  /// `s.up = up`, with the depth gap that goes with it.
  /// The old and new `up` states' counts of states below change; a state's rank reads the
  /// count only as `below == 0` (`age_scaled_value`), so it is marked only when that flips.
  void set_up(const tree_index& ix, tree_state& s, slot_id up) noexcept {
    if (s.up != no_slot && ix[s.up].state != no_state) {
      if (--states_[ix[s.up].state].below == 0) mark(ix[s.up].state);
    }
    if (ix[up].state != no_state) {
      if (states_[ix[up].state].below++ == 0) mark(ix[up].state);
    }
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
  std::vector<tree_victim>* victim_log_ = nullptr;  // set_victim_log
  // scratch
  std::vector<std::uint32_t> ended_;
  std::vector<std::uint8_t> ended_cls_;
  std::vector<slot_id> stack_;
  std::vector<victim_entry> heap_;
  std::vector<double> path_sums_;                                  // add_path: each node's region
  std::vector<std::pair<std::size_t, std::size_t>> path_open_;     // add_path: open sums
  std::vector<std::pair<std::uint32_t, std::size_t>> path_owner_;  // add_path: states met below
  // least_by_snapshot: the snapshot and the records changed since it
  struct snap_entry {
    double key;             // k₀ > 0, finite
    std::uint32_t touched;  // t₀
    std::uint32_t id;
  };
  struct zero_entry {  // a state of key 0, ordered by (last use, slot) within its planned flag
    std::uint32_t last_use;
    slot_id node;
    std::uint32_t id;
  };
  static bool key_before(const snap_entry& a, const snap_entry& b) noexcept {
    return a.key < b.key;
  }
  static bool zero_before(const zero_entry& a, const zero_entry& b) noexcept {
    return a.last_use != b.last_use ? a.last_use < b.last_use : a.node < b.node;
  }
  struct snapshot {
    /// [class != 0][age bin at the rebuild], each sorted by key
    std::array<std::array<std::vector<snap_entry>, age_scaled_value::bins>, 2> groups;
    std::array<std::vector<zero_entry>, 2> zero;  // [planned]
    std::vector<std::uint32_t> odd;               // keys without an order (never in practice)
    bool valid = false;
    std::uint32_t now = 0;
    std::uint32_t clock = 0;
    std::size_t block_size = 0;
    double kv_block_bytes = 0.0;
    std::size_t filed = 0;  // records filed again since the rebuild (`file_changed`)
  } snap_;
  std::vector<std::uint32_t> changed_;
};

HYBRIDCACHE_NAMESPACE_END
