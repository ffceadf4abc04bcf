#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `stamp_heap`: a set of node ids ordered by (stamp, node), as an indexed binary min-heap.
///
/// `block_tree` (replay.hpp) keeps the KV leaves of a replay in LRU order and takes the least
/// recently used one at every eviction. A leaf joins that order with the newest stamp (the end of
/// an inserted path), with the oldest (a parent whose last child was evicted) or, under the
/// stateless-first order, with any stamp (a leaf whose state was dropped), so the order is not a
/// plain recency list (`recency_order`). Until 2026-11 it was an ordered set of (stamp, node)
/// pairs; this heap gives the same least element, (stamp, node) compared lexicographically, with
/// O(log n) insert and erase by node, O(1) access to the least, no allocation per operation and
/// contiguous storage. Memory: 4 bytes per node of the trace (its heap position) plus 16 bytes
/// per member.

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Nodes keyed by a 64-bit stamp, least (stamp, node) first (see the file comment).
class stamp_heap {
 public:
  static constexpr std::uint32_t none = 0xffffffffu;

  /// Empties the heap for node ids in [0, nodes).
  void reset(std::size_t nodes) {
    pos_.assign(nodes, none);
    heap_.clear();
  }
  [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return heap_.size(); }
  [[nodiscard]] bool contains(std::uint32_t v) const noexcept { return pos_[v] != none; }
  /// The least (stamp, node). @throws invalid_argument when the heap is empty.
  [[nodiscard]] std::pair<std::uint64_t, std::uint32_t> top() const {
    if (heap_.empty()) hybridcache::detail::throw_invalid("stamp_heap", "empty", "has no top");
    return {heap_.front().stamp, heap_.front().node};
  }
  /// Adds `v` with `stamp` (re-keys it in place when it is a member already).
  void insert(std::uint32_t v, std::uint64_t stamp) {
    if (const std::uint32_t i = pos_[v]; i != none) {
      heap_[i].stamp = stamp;
      sift(i);
      return;
    }
    heap_.push_back({stamp, v});
    pos_[v] = static_cast<std::uint32_t>(heap_.size() - 1);
    up(heap_.size() - 1);
  }
  /// Removes member `old` and adds non-member `v` with `stamp` in one step: `v` takes `old`'s
  /// place and moves from there. Same members and least element as `erase(old)` then
  /// `insert(v, stamp)`. When `old` is the least and `v`'s key is at most the other members' (a
  /// KV leaf evicted and its parent, usually stamped before it, becoming a leaf) nothing moves:
  /// O(1) where the two calls take O(log n) each.
  /// @throws invalid_argument when `old` is not a member or `v` is one.
  void replace(std::uint32_t old, std::uint32_t v, std::uint64_t stamp) {
    const std::uint32_t i = pos_[old];
    if (i == none) hybridcache::detail::throw_invalid("old", old, "is not a member");
    if (pos_[v] != none) hybridcache::detail::throw_invalid("v", v, "is a member already");
    pos_[old] = none;
    heap_[i] = {stamp, v};
    pos_[v] = i;
    sift(i);
  }
  /// Removes `v` (no-op when it is not a member).
  void erase(std::uint32_t v) {
    const std::uint32_t i = pos_[v];
    if (i == none) return;
    pos_[v] = none;
    const entry last = heap_.back();
    heap_.pop_back();
    if (i == heap_.size()) return;
    heap_[i] = last;
    pos_[last.node] = i;
    sift(i);
  }
  /// Calls f(stamp, node) for every member, in heap (not sorted) order.
  template <class F>
  void for_each(F&& f) const {
    for (const auto& e : heap_) f(e.stamp, e.node);
  }

 private:
  struct entry {
    std::uint64_t stamp;
    std::uint32_t node;
  };
  static bool less(const entry& a, const entry& b) noexcept {
    return a.stamp < b.stamp || (a.stamp == b.stamp && a.node < b.node);
  }
  /// Restores the order after the entry at `i` changed.
  void sift(std::size_t i) noexcept {
    if (i > 0 && less(heap_[i], heap_[(i - 1) / 2]))
      up(i);
    else
      down(i);
  }
  void up(std::size_t i) noexcept {
    const entry e = heap_[i];
    while (i > 0) {
      const std::size_t p = (i - 1) / 2;
      if (!less(e, heap_[p])) break;
      heap_[i] = heap_[p];
      pos_[heap_[i].node] = static_cast<std::uint32_t>(i);
      i = p;
    }
    heap_[i] = e;
    pos_[e.node] = static_cast<std::uint32_t>(i);
  }
  void down(std::size_t i) noexcept {
    const entry e = heap_[i];
    const std::size_t n = heap_.size();
    for (;;) {
      std::size_t c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && less(heap_[c + 1], heap_[c])) ++c;
      if (!less(heap_[c], e)) break;
      heap_[i] = heap_[c];
      pos_[heap_[i].node] = static_cast<std::uint32_t>(i);
      i = c;
    }
    heap_[i] = e;
    pos_[e.node] = static_cast<std::uint32_t>(i);
  }

  std::vector<std::uint32_t> pos_;
  std::vector<entry> heap_;
};

HYBRIDCACHE_NAMESPACE_END
