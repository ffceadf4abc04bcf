#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `tree_planner`: the tree policy's exact re-plan (DESIGN §7; docs/tree.md "Structure",
/// "The exact planner"). It lays the live tree of a `tree_index` out as one `tree_view` —
/// node 0 a super-root standing for every namespace root (all at depth 0, all free, their
/// match-end mass on it), the other nodes in DFS order with depth(v) = blocks(v) · B and the
/// statistics' weights w(v) — and solves
///
///   S* = argmin_{|S| ≤ M} E[r](S),  E[r](S) = Σ_v ŵ(v) (depth(v) − depth(anchor_S(v))),
///
/// exactly with `place_optimal_tree` (placement/tree.hpp), anchor_S(v) the deepest node of
/// S ∪ {root} on v's path. The new plan is adopted only if
/// E[r](S*) < (1 − hysteresis) · E[r](S_old) under the current weights (always, the first time),
/// and marked on the nodes (the planned flag: admission prefers planned states, tree/eviction.hpp).
/// Re-plans are due every `replan_every` observations once the blocks walked since the last one
/// reach `replan_work` × the node count, so they cost O(1) amortised per block.
///
/// Per request, `snapshot_positions` turns the plan into the grid positions where a prefill
/// should snapshot: planned nodes of the replayed path, the junction where the request leaves
/// the cached tree, the deepest new position (tail), and with `fill_free` up to
/// F = (free states) − (those) more, evenly spread with the deepest kept: of n candidates
/// c_0 < … < c_{n−1} it picks c_{⌈(i+1)·n/k⌉−1}, i < k = min(F, n) (docs/tree.md, "Free memory").

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/placement/tree.hpp"
#include "hybridcache/tree/index.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What `replan` did.
struct replan_result {
  bool adopted = false;          ///< the new plan replaced the old one
  double expected_before = 0.0;  ///< E[r] of the old plan under the current statistics
  double expected_after = 0.0;   ///< E[r] of the new optimal plan
  std::size_t planned = 0;       ///< size of the plan now in force
};

/// Where a request's match left it, for `tree_planner::snapshot_positions`.
struct snapshot_request {
  std::size_t resume_tokens = 0;   ///< depth of the state the prefill resumes from
  std::size_t matched_tokens = 0;  ///< depth of the deepest cached node matched
  std::span<const node_id> path;   ///< path[i] = node of block i (i < matched_tokens / B)
};
/// Which positions `tree_planner::snapshot_positions` offers (policy_options' switches).
struct snapshot_rules {
  bool junction = true;   ///< where the request leaves the cached tree
  bool tail = true;       ///< the deepest new grid position
  bool fill_free = true;  ///< more, into the pool's free room
};

/// The exact re-planner of the tree policy (see the file comment). Not thread-safe.
class tree_planner {
 public:
  using slot_id = tree_node::slot_id;
  static constexpr slot_id no_slot = tree_node::no_slot;

  // ---- where a prefill snapshots ------------------------------------------------------------

  /// The positions (tokens, ascending) at which a prefill of `prompt_tokens` that follows `m`
  /// should snapshot, of the `chunk_ends` on the block grid of B and in (m.resume_tokens,
  /// prompt_tokens]: on the matched path, a node (still live, without a state) that is planned
  /// or is the junction (m.matched_tokens, when the prompt goes beyond it); beyond it, the
  /// deepest (the tail); then, with `rules.fill_free`, up to `free_states` − (those) more, spread
  /// as the file comment says. @pre m fits (matched_tokens ≤ prompt_tokens, a multiple of B,
  /// path size matched_tokens / B). @throws invalid_argument for a chunk end beyond the prompt.
  [[nodiscard]] static std::vector<std::size_t> snapshot_positions(
      const tree_index& ix, std::size_t B, const snapshot_request& m, std::size_t prompt_tokens,
      std::span<const std::size_t> chunk_ends, const snapshot_rules& rules,
      std::size_t free_states) {
    std::vector<std::size_t> out;
    std::size_t tail = 0;
    for (std::size_t i = 0; i < chunk_ends.size(); ++i) {
      const std::size_t p = chunk_ends[i];
      if (p > prompt_tokens)
        hybridcache::detail::throw_invalid(
            hybridcache::detail::indexed("chunk_ends", i), p,
            "beyond prompt_tokens = " + std::to_string(prompt_tokens));
      if (p % B != 0 || p <= m.resume_tokens || p == 0) continue;
      if (p <= m.matched_tokens) {
        const slot_id v = ix.live_slot(m.path[p / B - 1]);  // erased since the match: skipped
        if (v == no_slot || ix[v].state != tree_node::no_state) continue;
        const bool junction =
            rules.junction && p == m.matched_tokens && prompt_tokens > m.matched_tokens;
        if (junction || planned(ix, v)) out.push_back(p);
      } else if (rules.tail) {
        tail = std::max(tail, p);
      }
    }
    if (tail != 0) out.push_back(tail);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (rules.fill_free) fill_free_room(ix, B, m, prompt_tokens, chunk_ends, free_states, out);
    return out;
  }

  // ---- when -------------------------------------------------------------------------------

  /// `blocks` more blocks walked by a match or an insert.
  void add_work(std::size_t blocks) noexcept { work_ += blocks; }
  /// One more observation: whether a re-plan is due now (`replan_every` 0: never), given the
  /// live node count.
  [[nodiscard]] bool due(std::size_t replan_every, double replan_work,
                         std::size_t live_nodes) noexcept {
    return replan_every != 0 && ++since_plan_ >= replan_every &&
           static_cast<double>(work_) >= replan_work * static_cast<double>(live_nodes);
  }
  /// A re-plan starts: the counters of `due` restart.
  void restart() noexcept {
    since_plan_ = 0;
    work_ = 0;
  }

  // ---- what -------------------------------------------------------------------------------

  /// Re-solves the placement for `budget` states on the live tree of `ix` (block size B) and
  /// adopts it per the hysteresis rule (see the file comment). Nothing changes while the tree
  /// holds no mass. `budget` is called only then (the pool's M).
  /// @throws invalid_argument (placement/tree.hpp) for non-finite weights.
  template <class Budget>
  replan_result replan(tree_index& ix, std::size_t block_size, Budget&& budget, double hysteresis) {
    replan_result r;
    build_view(ix, block_size);
    if (!(view_total_ > 0.0)) return r;
    const std::size_t m = budget();
    const tree_view tv{vparent_, vdepth_, vweight_};
    const tree_placement best = place_optimal_tree(tv, m);
    std::vector<std::size_t> old;
    for (std::size_t i = 1; i < vnode_.size(); ++i)
      if (ix[vnode_[i]].flags & tree_node::planned_flag) old.push_back(i);
    r.expected_after = best.expected_recompute;
    r.expected_before = expected_recompute_tree(tv, old);
    const bool adopt = !has_plan_ || r.expected_after < (1.0 - hysteresis) * r.expected_before;
    if (adopt) {
      for (std::size_t i : old)
        ix[vnode_[i]].flags &= static_cast<std::uint8_t>(~tree_node::planned_flag);
      for (std::size_t i : best.checkpoints) ix[vnode_[i]].flags |= tree_node::planned_flag;
      has_plan_ = true;
      plan_size_ = best.checkpoints.size();
    }
    r.adopted = adopt;
    r.planned = plan_size_;
    return r;
  }

  /// E[r] (tokens) of the states held on `ix` now (the nodes whose `state` is set), under the
  /// current weights (0 while the tree holds no mass).
  [[nodiscard]] double expected_recompute(const tree_index& ix, std::size_t block_size) {
    build_view(ix, block_size);
    if (!(view_total_ > 0.0)) return 0.0;
    std::vector<std::size_t> held;
    for (std::size_t i = 1; i < vnode_.size(); ++i)
      if (ix[vnode_[i]].state != tree_node::no_state) held.push_back(i);
    return expected_recompute_tree({vparent_, vdepth_, vweight_}, held);
  }

  /// Whether live slot `v` is in the plan in force.
  [[nodiscard]] static bool planned(const tree_index& ix, slot_id v) noexcept {
    return (ix[v].flags & tree_node::planned_flag) != 0;
  }
  /// Size of the plan in force (0 before the first re-plan with mass).
  [[nodiscard]] std::size_t plan_size() const noexcept { return plan_size_; }

 private:
  /// `fill_free`: adds to the sorted `out` up to F = free_states − |out| further candidates
  /// (grid positions in (resume, prompt], no state at their node if on the match), evenly
  /// spread, the deepest kept.
  static void fill_free_room(const tree_index& ix, std::size_t B, const snapshot_request& m,
                             std::size_t prompt_tokens, std::span<const std::size_t> chunk_ends,
                             std::size_t free_states, std::vector<std::size_t>& out) {
    if (free_states <= out.size()) return;
    const std::size_t free_slots = free_states - out.size();
    std::vector<std::size_t> cand;
    for (const std::size_t p : chunk_ends) {
      if (p % B != 0 || p <= m.resume_tokens || p == 0 || p > prompt_tokens) continue;
      if (p <= m.matched_tokens) {
        const slot_id v = ix.live_slot(m.path[p / B - 1]);  // erased since the match: skipped
        if (v == no_slot || ix[v].state != tree_node::no_state) continue;
      }
      if (!std::binary_search(out.begin(), out.end(), p)) cand.push_back(p);
    }
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    const std::size_t n = cand.size(), k = std::min(free_slots, n);
    if (k == 0) return;
    for (std::size_t i = 0; i < k; ++i) out.push_back(cand[((i + 1) * n + k - 1) / k - 1]);
    std::sort(out.begin(), out.end());
  }

  /// The tree_view of the live tree (see the file comment). Fills vnode_/vparent_/vdepth_/
  /// vweight_.
  void build_view(const tree_index& ix, std::size_t block_size) {
    vnode_.assign(1, no_slot);
    vparent_.assign(1, 0);
    vdepth_.assign(1, 0.0);
    vweight_.assign(1, 0.0);
    view_total_ = 0.0;
    struct frame {
      slot_id v;
      std::size_t vparent;
    };
    std::vector<frame> st;
    // Namespaces in slot order: the order of the roots table is the process secret's
    // (keyed_map), and the view's order reaches the plan's floating-point sums and ties.
    root_order_.clear();
    ix.for_each_root([&](slot_id root) { root_order_.push_back(root); });
    std::sort(root_order_.begin(), root_order_.end());
    for (const slot_id root : root_order_) {
      vweight_[0] += ix[root].weight;
      for (slot_id c = ix[root].first_child; c != no_slot; c = ix[c].next_sibling)
        st.push_back({c, 0});
      while (!st.empty()) {
        const frame f = st.back();
        st.pop_back();
        const std::size_t i = vnode_.size();
        vnode_.push_back(f.v);
        vparent_.push_back(f.vparent);
        vdepth_.push_back(static_cast<double>(ix[f.v].blocks) * static_cast<double>(block_size));
        vweight_.push_back(ix[f.v].weight);
        for (slot_id c = ix[f.v].first_child; c != no_slot; c = ix[c].next_sibling)
          st.push_back({c, i});
      }
    }
    for (double w : vweight_) view_total_ += w;
  }

  std::size_t since_plan_ = 0, work_ = 0, plan_size_ = 0;
  bool has_plan_ = false;
  // scratch
  std::vector<slot_id> root_order_;  // roots in slot order
  std::vector<slot_id> vnode_;
  std::vector<std::size_t> vparent_;
  std::vector<double> vdepth_, vweight_;
  double view_total_ = 0.0;
};

HYBRIDCACHE_NAMESPACE_END
