#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `virtual_block_index`: SparseX's virtual blocks (SparseX §4.4). A virtual block is an
/// index entry — (namespace, token ids) → (physical block key, source position) — over a block
/// that already lives in a pool. Several views (e.g. one per knowledge base or user namespace
/// that may reuse the content) point at one physical block; they add no block memory. Lookup is
/// verified (`segment_index`: namespace and token ids must match).
///
/// **Copy on hit**: a hit never hands out the shared physical block. `hit` pins the physical
/// block for the duration of a caller-supplied copy function `copy(const Block&, source_position)`
/// and returns what it returns — the request's own block (in SparseX, a fresh vLLM block with
/// Delta-RoPE applied to K and V copied). If the physical block has been evicted meanwhile, the
/// view is dropped and the hit reports a miss: a view can never reach freed memory.

#include <cstddef>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>

#include "hybridcache/config.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/index.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Virtual-block views over the blocks of `Pool` (an `lru_pool`). See the file comment.
template <class Pool, hash_policy Hash = xxh3_hash>
class virtual_block_index {
 public:
  using physical_key = typename Pool::key_type;
  using block_type = typename Pool::value_type;

  /// One view: which physical block, and the position its first token had where it was computed.
  struct view {
    physical_key physical;
    std::size_t source_position = 0;
  };

  /// @param pool the pool holding the physical blocks (must outlive this index).
  explicit virtual_block_index(Pool& pool, Hash hash = Hash{})
      : pool_(pool), views_(std::move(hash)) {}

  /// Adds a view (ns, tokens) → `physical`. @returns false if that (ns, tokens) view exists.
  bool add_view(const namespace_key& ns, std::span<const token_id> tokens, physical_key physical,
                std::size_t source_position = 0) {
    return views_.insert(ns, tokens, view{std::move(physical), source_position});
  }
  /// Removes a view (the physical block is unaffected). @returns whether it existed.
  bool remove_view(const namespace_key& ns, std::span<const token_id> tokens) {
    return views_.erase(ns, tokens);
  }

  /// Copy-on-hit lookup: on a verified hit whose physical block is still pooled, returns
  /// `copy(block, source_position)` computed while the block is pinned; otherwise nothing.
  template <class Copy>
  auto hit(const namespace_key& ns, std::span<const token_id> tokens, Copy&& copy)
      -> std::optional<std::invoke_result_t<Copy&, const block_type&, std::size_t>> {
    const std::optional<view> v = views_.find(ns, tokens);
    if (!v) return std::nullopt;
    auto pin = pool_.find(v->physical);
    if (!pin) {
      views_.erase(ns, tokens);  // the physical block is gone: the view is stale
      return std::nullopt;
    }
    return copy(static_cast<const block_type&>(*pin), v->source_position);
  }

  /// Number of views.
  [[nodiscard]] std::size_t size() const noexcept { return views_.size(); }

 private:
  Pool& pool_;
  segment_index<view, Hash> views_;
};

HYBRIDCACHE_NAMESPACE_END
