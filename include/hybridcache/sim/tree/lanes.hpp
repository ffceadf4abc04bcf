#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `lru_lanes`: the KV bookkeeping of several tree replayers that evict KV in LRU order under a
/// joint KV budget, kept once (one order of the trace's nodes, a threshold per replayer).
/// `block_tree::join` (replay.hpp) makes a replayer's tree a lane; `portfolio_policy` uses it for
/// its LRU shadows.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/tree/recency_order.hpp"
#include "hybridcache/sim/tree/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The KV bookkeeping of replayers that evict KV in LRU order under a joint budget, kept once:
/// one order of the trace's nodes, and per replayer (a *lane*) a threshold in it.
///
/// Why one order serves every lane. Paths are inserted root to leaf and stamped in that order,
/// so a node's own stamp is that of the last allocation A(v) whose path holds it, and A(parent)
/// ≥ A(child). Order the nodes by K(v) = (A(v), −depth(v)): a child's key is below its
/// parent's, so the least present node is a leaf, and among leaves (one per allocation at most:
/// two nodes of one path are never both leaves) K orders as the own stamps do. So evicting the
/// least recently used leaf, repeatedly, evicts in increasing K, and an allocation moves its
/// path's nodes to the top of K. Hence at every moment a replayer that evicts KV in LRU order
/// holds exactly the nodes with K above the key θ of the last node it evicted (a node above θ
/// was inserted after that eviction or never passed), whatever its budget was at each step.
/// Replayers of one trace allocate the same paths in the same order, so they share K and differ
/// only in θ: the states they hold, which set their joint budgets, move θ and nothing else.
///
/// Kept here: the nodes in K order (a `recency_order`, whose stamps are the positions; an
/// allocation moves its path to the end, leaf first), each node's own stamp and the position of
/// its latest child
/// (so "has a present child" is one comparison). Per lane: θ, the first node above it (the next
/// eviction), its block count. An allocation is performed once, by the first lane to reach it;
/// the others count what it made present for them (a prefix of the path was present before:
/// one binary search). Lanes must allocate in lockstep (`tree_replayer`s stepped together, as
/// `portfolio_policy` steps its shadows), from the first request: allocation n + 1 waits until
/// every lane made allocation n.
///
/// Stamps. A lane's own tree would stamp its blocks and its ticks (a state used in the engine's
/// one LRU) from one clock, in the order the lane made them; the one LRU compares the two. Here
/// allocation n stamps its path's i-th node n·2^32 + i, and a lane's k-th tick since its own
/// allocation n is n·2^32 + 2^31 + k: every comparison a lane makes between its ticks and its
/// blocks' stamps comes out as in a tree of its own, wherever the other lanes are.
///
/// Cost per lane: O(log |path|) per allocation and O(1) per eviction, where a replayer's own
/// `block_tree` walks the path and sifts a leaf heap; memory 33 bytes per node of the trace in
/// all, against about 21 bytes per node per replayer. `block_tree::join` makes a tree a lane;
/// tests/sim/tree/lanes_test.cpp checks lanes against trees of their own.
class lru_lanes {
 public:
  static constexpr std::uint32_t none = recency_order::none;

  explicit lru_lanes(const tree_trace& t)
      : t_(t), kid_(t.node_count(), 0), stamp_(t.node_count(), 0) {
    order_.reset(t.node_count());
  }
  lru_lanes(const lru_lanes&) = delete;
  lru_lanes& operator=(const lru_lanes&) = delete;

  [[nodiscard]] const tree_trace& trace() const noexcept { return t_; }
  /// A new lane: nothing present, no allocation yet. @returns its id.
  /// @throws invalid_argument once an allocation was performed (lanes start together).
  std::size_t add_lane() {
    if (performed_ != 0)
      hybridcache::detail::throw_invalid("lane", lanes_.size(),
                                         "joins after the lanes' first allocation");
    lanes_.push_back({});
    return lanes_.size() - 1;
  }
  [[nodiscard]] bool present(std::size_t lane, std::uint32_t v) const noexcept {
    return order_.stamp(v) > lanes_[lane].theta;
  }
  [[nodiscard]] bool has_children(std::size_t lane, std::uint32_t v) const noexcept {
    return kid_[v] > lanes_[lane].theta;
  }
  [[nodiscard]] std::size_t blocks(std::size_t lane) const noexcept { return lanes_[lane].blocks; }
  /// Own stamp of `v` (its last allocation's; 0 if never allocated).
  [[nodiscard]] std::uint64_t stamp(std::uint32_t v) const noexcept { return stamp_[v]; }
  /// The lane's next tick (after its latest allocation's stamps, before its next one's).
  /// @throws invalid_argument after 2^31 − 1 ticks between two allocations of the lane.
  std::uint64_t tick(std::size_t lane) {
    auto& L = lanes_[lane];
    if (L.ticks + 1 >= half)
      hybridcache::detail::throw_invalid("ticks", L.ticks, "between two allocations exceed 2^31");
    return (static_cast<std::uint64_t>(L.allocations) << 32) + half + ++L.ticks;
  }

  /// The lane's next allocation, of `path` (root to leaf): performed when no lane did it yet.
  /// @returns its first stamp (the running path's guard, as `block_tree::insert`).
  /// @throws invalid_argument when the lane runs ahead of or behind the others, or allocates
  ///         another path than the lane that performed it.
  std::uint64_t insert(std::size_t lane, std::span<const std::uint32_t> path) {
    auto& L = lanes_[lane];
    const std::size_t n = L.allocations + 1;
    if (n == performed_ + 1 && (performed_ == 0 || done_ == lanes_.size())) {
      if (path.size() >= half)
        hybridcache::detail::throw_invalid("path.size()", path.size(), "must be below 2^31");
      perform(path);
    } else if (n != performed_) {
      hybridcache::detail::throw_invalid("allocation", n,
                                         "is not the lanes' current one (they run in lockstep)");
    } else if (path.data() != path_ || path.size() != old_.size()) {
      hybridcache::detail::throw_invalid("allocation", n, "is of another request's path");
    }
    L.allocations = n;
    L.ticks = 0;
    ++done_;
    // The nodes present for this lane before the allocation: a prefix of the path.
    std::size_t lo = 0, hi = old_.size();
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (old_[mid] > L.theta)
        lo = mid + 1;
      else
        hi = mid;
    }
    L.blocks += old_.size() - lo;
    return first_;
  }
  /// Evicts the lane's least recently used leaf stamped before `guard`. @returns it, or
  /// `tree_trace::no_parent` when none is left.
  std::uint32_t evict_lru_leaf(std::size_t lane, std::uint64_t guard) noexcept {
    auto& L = lanes_[lane];
    const std::uint32_t v = L.next;
    if (v == none || stamp_[v] >= guard) return tree_trace::no_parent;
    L.theta = order_.stamp(v);
    L.next = order_.next(v);
    --L.blocks;
    return v;
  }
  /// Stamp of the leaf `evict_lru_leaf` would take, or the largest value when none.
  [[nodiscard]] std::uint64_t lru_leaf_stamp(std::size_t lane, std::uint64_t guard) const noexcept {
    const std::uint32_t v = lanes_[lane].next;
    if (v == none || stamp_[v] >= guard) return std::numeric_limits<std::uint64_t>::max();
    return stamp_[v];
  }

 private:
  static constexpr std::uint64_t half = std::uint64_t{1} << 31;
  struct lane_state {
    std::uint64_t theta = 0;    ///< K position of the last node evicted (0: none yet)
    std::uint32_t next = none;  ///< the first node above theta (the next eviction)
    std::size_t blocks = 0, allocations = 0;
    std::uint64_t ticks = 0;  ///< ticks since its latest allocation
  };
  void perform(std::span<const std::uint32_t> path) {
    ++performed_;
    done_ = 0;
    path_ = path.data();
    first_ = static_cast<std::uint64_t>(performed_) << 32;
    old_.resize(path.size());
    for (std::size_t i = 0; i < path.size(); ++i) {
      old_[i] = order_.stamp(path[i]);
      stamp_[path[i]] = first_ + i;
    }
    // K order: this allocation's nodes last, the deepest first.
    for (std::size_t i = path.size(); i-- > 0;) {
      const std::uint32_t v = path[i];
      if (order_.contains(v))
        for (auto& L : lanes_)
          if (L.next == v) L.next = order_.next(v);
      order_.insert(v);  // to the end, with the next position
      const auto p = t_.parent(v);
      if (p != tree_trace::no_parent) kid_[p] = order_.stamp(v);
    }
    if (!path.empty())
      for (auto& L : lanes_)
        if (L.next == none) L.next = path.back();
  }
  const tree_trace& t_;
  recency_order order_;               ///< K order; a node's stamp is its position (0: never)
  std::vector<std::uint64_t> kid_;    ///< per node: the position of its latest child
  std::vector<std::uint64_t> stamp_;  ///< per node: own stamp
  std::uint64_t first_ = 0;
  std::size_t performed_ = 0;
  std::size_t done_ = 0;                 ///< lanes that made allocation `performed_`
  const std::uint32_t* path_ = nullptr;  ///< the current allocation's path
  std::vector<std::uint64_t> old_;       ///< its nodes' positions before it
  std::vector<lane_state> lanes_;
};

HYBRIDCACHE_NAMESPACE_END
