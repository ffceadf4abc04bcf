#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Open-addressing index from (chained block digest, parent id) to node id for tree/policy.hpp:
/// 4 bytes per slot, linear probing, load ≤ 1/2, backward-shift deletion (no tombstones), so a
/// lookup never degrades after many erasures. The table stores node ids only; the key is read
/// from the node array through the accessor, which keeps the per-node bookkeeping small.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/segment/digest.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

inline constexpr std::uint32_t empty_slot = std::numeric_limits<std::uint32_t>::max();

/// `KeyOf(id)` returns the node's digest, `ParentOf(id)` its parent id.
class node_index {
 public:
  node_index() { slots_.assign(16, empty_slot); }

  [[nodiscard]] std::size_t slot_count() const noexcept { return slots_.size(); }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }

  /// Grows the table so that `n` entries keep the load ≤ 1/2.
  template <class Nodes>
  void reserve(const Nodes& nodes, std::size_t n) {
    while (slots_.size() < 2 * n) grow(nodes);
  }

  /// The node with key `key` and parent `parent`, or `empty_slot`.
  template <class Nodes>
  [[nodiscard]] std::uint32_t find(const Nodes& nodes, const digest& key,
                                   std::uint32_t parent) const noexcept {
    const std::size_t mask = slots_.size() - 1;
    for (std::size_t i = home(key, parent) & mask;; i = (i + 1) & mask) {
      const std::uint32_t id = slots_[i];
      if (id == empty_slot) return empty_slot;
      if (nodes[id].key == key && nodes[id].parent == parent) return id;
    }
  }

  /// Adds node `id` (its key and parent must already be set in `nodes`).
  template <class Nodes>
  void insert(const Nodes& nodes, std::uint32_t id) {
    if (2 * (size_ + 1) > slots_.size()) grow(nodes);
    place(nodes, id);
    ++size_;
  }

  /// Removes node `id` (present).
  template <class Nodes>
  void erase(const Nodes& nodes, std::uint32_t id) noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(nodes[id].key, nodes[id].parent) & mask;
    while (slots_[i] != id) i = (i + 1) & mask;
    // Backward-shift: move later members of the probe run into the hole when allowed.
    std::size_t hole = i;
    for (std::size_t j = (i + 1) & mask; slots_[j] != empty_slot; j = (j + 1) & mask) {
      const std::uint32_t m = slots_[j];
      const std::size_t h = home(nodes[m].key, nodes[m].parent) & mask;
      // m may move to `hole` iff its home is not cyclically in (hole, j].
      const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
      if (!stays) {
        slots_[hole] = m;
        hole = j;
      }
    }
    slots_[hole] = empty_slot;
    --size_;
  }

 private:
  static std::size_t home(const digest& key, std::uint32_t parent) noexcept {
    return static_cast<std::size_t>(digest_hasher{}(key) ^
                                    (static_cast<std::uint64_t>(parent) * 0x9e3779b97f4a7c15ull));
  }
  template <class Nodes>
  void place(const Nodes& nodes, std::uint32_t id) noexcept {
    const std::size_t mask = slots_.size() - 1;
    std::size_t i = home(nodes[id].key, nodes[id].parent) & mask;
    while (slots_[i] != empty_slot) i = (i + 1) & mask;
    slots_[i] = id;
  }
  template <class Nodes>
  void grow(const Nodes& nodes) {
    std::vector<std::uint32_t> old(slots_.size() * 2, empty_slot);
    old.swap(slots_);
    for (std::uint32_t id : old)
      if (id != empty_slot) place(nodes, id);
  }

  std::vector<std::uint32_t> slots_;
  std::size_t size_ = 0;
};

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
