#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `tree_index`: the radix index of the tree policy (DESIGN §7, docs/tree.md "Structure"): one
/// node per full block of B tokens, keyed by the chained block key h_i = H(h_{i−1}, block i) of
/// segment/keys.hpp, h_0 = H(namespace) the key of the namespace's root. The namespace (tenant,
/// model, adapter …) is in h_0, so two namespaces never reach the same node; a lookup also checks
/// the parent link, (h_i, parent) → node, so even a digest collision cannot join two paths.
///
/// A node is named by a `node_id`: its slot (low 32 bits) and the slot's generation (high 32
/// bits). Slots are reused after `erase`, generations never repeat within a slot: `resolve`
/// throws `stale_handle_error` for the id of an erased node even after another node took its
/// slot (docs/tree.md, "Stale ids").
///
/// The index owns the shape of the tree (key, parent, children, depth, generation, the live
/// flag). Each 48-byte record also carries the words that the other parts of the policy keep per
/// node, so that one cache line serves a walk: `weight` and the prior flags (tree/statistics.hpp),
/// `state` and `pinned` (tree/eviction.hpp), the planned flag (tree/planner.hpp).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/keyed_hash.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/tree/detail/node_index.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A node of the policy's tree: a handle, slot index (low 32 bits) + the slot's generation (high
/// 32 bits). Slots are reused after `erase`, generations never: `erase` advances the slot's
/// generation, so every call given the id of an erased node throws `stale_handle_error` even
/// after another node (of any namespace) took its slot (docs/tree.md, "Stale ids"). A node that
/// never had a predecessor in its slot has generation 0, its id equals its slot index.
using node_id = std::uint64_t;
/// "No node".
inline constexpr node_id no_node = std::numeric_limits<node_id>::max();

/// One slot of `tree_index`: the node's place in the tree and the per-node words of the other
/// parts of the policy (48 bytes).
struct tree_node {
  using slot_id = std::uint32_t;
  static constexpr slot_id no_slot = std::numeric_limits<slot_id>::max();
  static constexpr std::uint32_t no_state = std::numeric_limits<std::uint32_t>::max();
  // Flag bits, by owner: live (index); planned (planner); fresh, once, repeat, prefill
  // (statistics), branch (statistics, added after 0.2.0). Bit 64 is free (the junction prior used
  // it and bit 8 before 0.2).
  static constexpr std::uint32_t live_flag = 1, planned_flag = 2, fresh_flag = 4,
                                 branch_flag = 8,  // with fresh_flag: the prior is π_I
      once_flag = 16, repeat_flag = 32,
                                 prefill_flag = 128;  // with fresh_flag: the prior is π_P

  digest key{};              ///< chained block key h_i (h_0 for a namespace root)
  slot_id parent = no_slot;  ///< no_slot: namespace root
  slot_id first_child = no_slot;
  slot_id next_sibling = no_slot;
  std::uint32_t blocks = 0;        ///< depth in blocks
  double weight = 0.0;             ///< statistics: Σ_s γ^{−s}[match s ended here], common scale
  std::uint32_t state = no_state;  ///< eviction: the held state's record, or no_state
  std::uint32_t gen : 23 = 0;      ///< generation of the slot: the high half of the node_id
  std::uint32_t pinned : 1 = 0;    ///< eviction: the node has pins (count kept apart)
  std::uint32_t flags : 8 = 0;     ///< the flag bits above

  /// Whether the node still holds a prior (a fresh end's, a prefill end's or a branch point's):
  /// `prefill_flag` and `branch_flag` are only ever set together with `fresh_flag` and cleared
  /// with it (`tree_statistics::set_prior`, `drop_prior`), so `fresh_flag` alone says it.
  [[nodiscard]] bool holds_prior() const noexcept { return (flags & fresh_flag) != 0; }
};

namespace detail {
/// Bytes of a node-based side table (entries plus buckets), as the policy's bookkeeping counts.
template <class Map>
std::size_t table_bytes(const Map& m) noexcept {
  return m.size() * (sizeof(typename Map::value_type) + 2 * sizeof(void*)) +
         m.bucket_count() * sizeof(void*);
}
}  // namespace detail

/// The radix index (see the file comment): slots, the (key, parent) → slot table, namespaces.
/// Finding a child costs one probe of an open-addressing table (4 bytes per slot, load ≤ 1/2).
class tree_index {
 public:
  using slot_id = tree_node::slot_id;
  static constexpr slot_id no_slot = tree_node::no_slot;
  /// The size of one node record (its generation included); with 4-byte index slots at load
  /// ≤ 1/2 a node costs at most 48 + 16 = 64 bytes.
  static constexpr std::size_t node_record_bytes = 48;
  static_assert(sizeof(tree_node) <= node_record_bytes);
  /// The last generation of a slot (23 bits in the record); a slot that reaches it is retired.
  static constexpr std::uint32_t max_generation = (1u << 23) - 1;

  /// The record of slot `v` (live or not).
  [[nodiscard]] tree_node& operator[](slot_id v) noexcept { return nodes_[v]; }
  [[nodiscard]] const tree_node& operator[](slot_id v) const noexcept { return nodes_[v]; }
  /// Every slot record, live or not (for passes over all nodes).
  [[nodiscard]] std::vector<tree_node>& slots() noexcept { return nodes_; }

  /// The id of live slot `v`: its generation in the high half.
  [[nodiscard]] node_id handle_of(slot_id v) const noexcept {
    return (static_cast<node_id>(nodes_[v].gen) << 32) | v;
  }
  /// The slot of `id` if it names a live node (its slot is live at the id's generation), else
  /// no_slot. O(1): one bounds check and one load.
  [[nodiscard]] slot_id live_slot(node_id id) const noexcept {
    const auto v = static_cast<slot_id>(id & 0xffffffffu);
    if (v >= nodes_.size()) return no_slot;
    const tree_node& n = nodes_[v];
    return ((n.flags & tree_node::live_flag) && n.gen == (id >> 32)) ? v : no_slot;
  }
  /// The slot of `id`, checked; `name` is the argument's name in the error.
  /// @throws stale_handle_error if its slot exists but not at its generation (erased, or
  ///         reused by another node since); invalid_argument if the index never had the slot.
  slot_id resolve(node_id id, const char* name) const {
    const slot_id v = live_slot(id);
    if (v != no_slot) [[likely]]
      return v;
    const std::uint64_t slot = id & 0xffffffffu;
    if (slot >= nodes_.size())
      hybridcache::detail::throw_invalid(name, id, "is not a node id of this policy");
    throw stale_handle_error(name, id, slot, id >> 32, nodes_[slot].gen);
  }

  /// The root of namespace `ns`, created on first use with key h_0 = `root_key(hash,
  /// ns)`.
  template <class Hash>
  slot_id root_of(const Hash& hash, const namespace_key& ns) {
    const std::string_view b = ns.bytes();
    auto it = roots_.find(std::string(b));
    if (it != roots_.end()) return it->second;
    const slot_id id = new_node();
    nodes_[id].key = hybridcache::root_key(hash, ns);
    root_name_.emplace(id, roots_.emplace(std::string(b), id).first->first);
    return id;
  }

  /// The child of `parent` with key `h`, or no_slot. A node without children answers without
  /// probing the table (its record is at hand; a probe reads the records of the slots it passes).
  [[nodiscard]] slot_id find(const digest& h, slot_id parent) const noexcept {
    if (nodes_[parent].first_child == no_slot) return no_slot;
    const slot_id id = index_.find(nodes_, h, parent);
    return id == detail::empty_slot ? no_slot : id;
  }

  /// The child of `cur` with key `h`, created if absent (`created` says which). Below a node
  /// without children (every block after the first new one of a walk) the table is not probed.
  /// @throws capacity_error for a path deeper than 2^32 − 1 blocks or 2^32 − 1 slots.
  slot_id child(slot_id cur, const digest& h, bool& created) {
    const slot_id found =
        nodes_[cur].first_child == no_slot ? detail::empty_slot : index_.find(nodes_, h, cur);
    created = found == detail::empty_slot;
    if (!created) return found;
    if (nodes_[cur].blocks == std::numeric_limits<std::uint32_t>::max())
      throw capacity_error("hybridcache: state_policy path deeper than 2^32 - 1 blocks");
    const slot_id id = new_node();
    tree_node& n = nodes_[id];
    n.key = h;
    n.parent = cur;
    n.blocks = nodes_[cur].blocks + 1;
    n.next_sibling = nodes_[cur].first_child;
    nodes_[cur].first_child = id;
    index_.insert(nodes_, id);
    return id;
  }

  /// Removes childless live slot `v` (a namespace root forgets its namespace): unlinks it, clears
  /// its record (every per-node word included) and advances the slot's generation, so its id is
  /// stale from now on. A slot whose generation is exhausted is retired (never reused), so a
  /// generation never repeats within a slot (48 B per 2^23 erasures).
  void erase(slot_id v) {
    tree_node& n = nodes_[v];
    if (n.parent == no_slot) {
      roots_.erase(root_name_.at(v));
      root_name_.erase(v);
    } else {
      tree_node& p = nodes_[n.parent];
      if (p.first_child == v) {
        p.first_child = n.next_sibling;
      } else {
        slot_id s = p.first_child;
        while (nodes_[s].next_sibling != v) s = nodes_[s].next_sibling;
        nodes_[s].next_sibling = n.next_sibling;
      }
      index_.erase(nodes_, v);
    }
    const std::uint32_t gen = n.gen;
    n = tree_node{};
    --live_;
    if (gen < max_generation) {
      n.gen = gen + 1;
      free_.push_back(v);
    } else {
      n.gen = gen;
    }
  }

  /// Calls `f(root)` for every namespace root (in the keyed table's order: a process secret's).
  template <class F>
  void for_each_root(F&& f) const {
    for (const auto& [key, root] : roots_) f(root);
  }

  /// Live nodes, namespace roots included.
  [[nodiscard]] std::size_t node_count() const noexcept { return live_; }
  [[nodiscard]] std::size_t namespace_count() const noexcept { return roots_.size(); }
  /// Bytes of the node records, the index slots and the free list.
  [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept {
    return nodes_.capacity() * sizeof(tree_node) + index_.slot_count() * sizeof(std::uint32_t) +
           free_.capacity() * sizeof(slot_id);
  }
  /// Reserves room for `n` nodes (records and index), so growth leaves no slack.
  void reserve(std::size_t n) {
    nodes_.reserve(n);
    index_.reserve(nodes_, n);
  }

 private:
  slot_id new_node() {
    slot_id id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      if (nodes_.size() >= static_cast<std::size_t>(no_slot) - 1)
        throw capacity_error("hybridcache: state_policy node ids exhausted (2^32 - 1)");
      id = static_cast<slot_id>(nodes_.size());
      nodes_.emplace_back();
    }
    const std::uint32_t gen = nodes_[id].gen;  // erase advanced it
    nodes_[id] = tree_node{};
    nodes_[id].gen = gen;
    nodes_[id].flags = tree_node::live_flag;
    ++live_;
    return id;
  }

  std::vector<tree_node> nodes_;
  std::vector<slot_id> free_;
  detail::node_index index_;
  // Namespace name -> root. The names are the caller's input: keyed (issue #21, hash flooding).
  keyed_map<std::string, slot_id> roots_;
  std::unordered_map<slot_id, std::string> root_name_;  // root -> its name, for erase in O(1)
  std::size_t live_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
