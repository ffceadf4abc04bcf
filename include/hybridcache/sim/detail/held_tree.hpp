#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `held_tree`: the tree of held states over a static block trie (the structure Marconi's
/// eviction reads, sim/tree/policies.hpp `marconi_policy`), kept up to date state by state
/// instead of rebuilt per eviction.
///
/// For a set H of held nodes of the trie, a held node's parent in the held tree is its nearest
/// held proper ancestor a, and a held node's children are the distinct branches below it: the
/// children c of a in the trie whose subtree holds a node of H (the topmost held node of such a
/// subtree has a as its nearest held ancestor, so each such c is one branch). Kept per node:
/// - `kids[v]` = #{children c of v : c's subtree holds a node of H}; a subtree holds one iff its
///   root is held or has kids > 0, so an add walks up only while the subtrees it enters were
///   empty, a remove only while they become empty;
/// - `anc_depth(v)`, the depth of v's nearest held proper ancestor (0 when none): for an added
///   node, that of the first ancestor y whose subtree already held a node (y itself, or the
///   ancestor of the first held node below y in Euler order); updated for the topmost held
///   nodes below an added or removed node, found in the held set ordered by Euler tour entry
///   time (O(log |H|) each).
/// The held nodes are also kept in a sorted vector (ascending ids, as a `std::set` iterates).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/sim/tree/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Euler tour intervals of a trie: v's subtree is the entry times [tin[v], tout[v]).
struct trie_euler {
  const tree_trace* trace = nullptr;
  std::vector<std::uint32_t> tin, tout, node_at;  ///< node_at[tin[v]] = v

  /// Builds the intervals of `t` in O(nodes) (a trie's parents precede their children).
  static std::shared_ptr<const trie_euler> of(const tree_trace& t) {
    auto e = std::make_shared<trie_euler>();
    const std::size_t n = t.node_count();
    e->trace = &t;
    e->tin.assign(n, 0);
    e->tout.assign(n, 0);
    e->node_at.assign(n, 0);
    std::vector<std::uint32_t> size(n, 1), next(n, 0);
    for (std::size_t i = n; i-- > 0;) {
      const auto p = t.parent(static_cast<std::uint32_t>(i));
      if (p != tree_trace::no_parent) size[p] += size[i];
    }
    std::uint32_t roots = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const auto v = static_cast<std::uint32_t>(i);
      const auto p = t.parent(v);
      std::uint32_t at = 0;
      if (p == tree_trace::no_parent) {
        at = roots;
        roots += size[i];
      } else {
        at = next[p];
        next[p] += size[i];
      }
      e->tin[i] = at;
      e->tout[i] = at + size[i];
      next[i] = at + 1;
      e->node_at[at] = v;
    }
    return e;
  }
};

/// The tree of held states (see the file comment).
class held_tree {
 public:
  /// Starts empty over `t`; `euler` = trie_euler::of(t) (shared between replays of one trace).
  void reset(const tree_trace& t, std::shared_ptr<const trie_euler> euler) {
    t_ = &t;
    e_ = euler && euler->trace == &t && euler->tin.size() == t.node_count() ? std::move(euler)
                                                                            : trie_euler::of(t);
    const std::size_t n = t.node_count();
    kids_.assign(n, 0);
    anc_.assign(n, 0);
    on_.assign(n, 0);
    held_.clear();
    by_tin_.clear();
  }
  [[nodiscard]] const std::shared_ptr<const trie_euler>& euler() const noexcept { return e_; }
  /// Held nodes, ascending ids.
  [[nodiscard]] const std::vector<std::uint32_t>& nodes() const noexcept { return held_; }
  [[nodiscard]] bool empty() const noexcept { return held_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return held_.size(); }
  /// Children of held `v` in the held tree (distinct branches with held nodes below v).
  [[nodiscard]] std::uint32_t children(std::uint32_t v) const noexcept { return kids_[v]; }
  /// Depth of held `v`'s nearest held proper ancestor (0 when none).
  [[nodiscard]] std::uint32_t anc_depth(std::uint32_t v) const noexcept { return anc_[v]; }

  /// Adds `v` (not held). `changed(x)` is called for every held x ≠ v whose `anc_depth` changed,
  /// `kids_changed(x)` for every held x ≠ v whose `children` changed (each after the change).
  template <class F, class G>
  void add(std::uint32_t v, F&& changed, G&& kids_changed) {
    const auto& t = *t_;
    held_.insert(std::lower_bound(held_.begin(), held_.end(), v), v);
    // Up from v while the subtrees entered were empty: each parent gains a branch.
    constexpr auto none = tree_trace::no_parent;
    std::uint32_t y = none;  // the first proper ancestor whose subtree held a node before
    if (kids_[v] > 0) {      // v's subtree held one (v was not held): no branch changes
      y = t.parent(v);
    } else {
      for (std::uint32_t x = v;;) {
        const auto p = t.parent(x);
        if (p == none) break;
        const bool held_below = on_[p] != 0 || kids_[p] > 0;
        ++kids_[p];
        if (on_[p] != 0) kids_changed(p);
        if (held_below) {
          y = p;
          break;
        }
        x = p;
      }
    }
    on_[v] = 1;
    std::uint32_t a_depth = 0;
    if (y != none) {
      if (on_[y] != 0) {
        a_depth = t.depth(y);
      } else {  // the first held node below y (v not yet among them) is topmost there
        const auto it = std::upper_bound(by_tin_.begin(), by_tin_.end(), e_->tin[y]);
        a_depth = anc_[e_->node_at[*it]];
      }
    }
    anc_[v] = a_depth;
    const std::uint32_t d = t.depth(v);
    for_topmost_below(v, [&](std::uint32_t x) {
      anc_[x] = d;
      changed(x);
    });
    by_tin_.insert(std::lower_bound(by_tin_.begin(), by_tin_.end(), e_->tin[v]), e_->tin[v]);
  }
  /// Removes held `v`; `changed` and `kids_changed` as for `add`.
  template <class F, class G>
  void remove(std::uint32_t v, F&& changed, G&& kids_changed) {
    const auto& t = *t_;
    held_.erase(std::lower_bound(held_.begin(), held_.end(), v));
    on_[v] = 0;
    by_tin_.erase(std::lower_bound(by_tin_.begin(), by_tin_.end(), e_->tin[v]));
    // Up from v while the subtrees left are empty: each parent loses a branch.
    for (std::uint32_t x = v; on_[x] == 0 && kids_[x] == 0;) {
      const auto p = t.parent(x);
      if (p == tree_trace::no_parent) break;
      --kids_[p];
      if (on_[p] != 0) kids_changed(p);
      x = p;
    }
    const std::uint32_t d = anc_[v];
    for_topmost_below(v, [&](std::uint32_t x) {
      anc_[x] = d;
      changed(x);
    });
  }
  /// Whether `v` is held.
  [[nodiscard]] bool holds(std::uint32_t v) const noexcept { return on_[v] != 0; }

 private:
  /// Calls f(x) for each held x in v's subtree, x ≠ v, with no held node strictly between v and x.
  template <class F>
  void for_topmost_below(std::uint32_t v, F&& f) const {
    const auto end = e_->tout[v];
    auto it = std::upper_bound(by_tin_.begin(), by_tin_.end(), e_->tin[v]);
    while (it != by_tin_.end() && *it < end) {
      const auto x = e_->node_at[*it];
      f(x);
      it = std::lower_bound(it, by_tin_.end(), e_->tout[x]);
    }
  }

  const tree_trace* t_ = nullptr;
  std::shared_ptr<const trie_euler> e_;
  std::vector<std::uint32_t> kids_, anc_;
  std::vector<std::uint8_t> on_;
  std::vector<std::uint32_t> held_, by_tin_;  ///< held ids ascending; their entry times ascending
};

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
