#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `pic_store`: HYPIC's two-pool store (HYPIC §4.4 "State cache management", §5).
///
/// - The **public pool** holds per-segment entries shared across requests — for a linear-
///   attention layer the summary (T_C, S_C|0), for full attention the segment-local KV — keyed
///   by the position-independent segment key K(ns, tokens) (leading segments by the anchored
///   key). Its entries are `entry_class::reserved` by default, so a COMB-style reservation
///   (`public_reserved`) guarantees them memory that other public entries cannot take.
/// - The **private pool** holds per-request running states S after a block-aligned prefix,
///   keyed by the chained block key of that prefix (so a later turn of the same session, whose
///   prompt extends this one, finds it).
/// - Each pool has its own byte budget and LRU eviction.
///
/// Lookup order (HYPIC §4.4: "HYPIC first looks up the private pool for a prefix hit, and then
/// queries the public pool for PIC hits on the remaining segments"): `lookup` finds the deepest
/// block-aligned prefix of the request with a private entry, then looks up every cacheable
/// segment that starts at or after that depth in the public pool. Segments the prefix covers
/// are not looked up; a segment the prefix only partly covers must be recomputed and is reported
/// as a miss; the query segment is never looked up. All hits are verified (namespace + tokens),
/// and every returned handle pins its entry until dropped.

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/segment/split.hpp"
#include "hybridcache/segment/verified_key.hpp"
#include "hybridcache/store/lru_pool.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Budgets of a `pic_store`.
struct pic_store_options {
  std::size_t public_capacity = 0;   ///< bytes for segment entries
  std::size_t public_reserved = 0;   ///< of which reserved for `entry_class::reserved` entries
  std::size_t private_capacity = 0;  ///< bytes for running states
  std::size_t block_size = 64;       ///< prefix granularity of private entries (FLA block)
};

/// HYPIC's public/private store (file comment).
/// @tparam Segment the public value (segment summary / KV handle)
/// @tparam State   the private value (running state)
template <class Segment, class State, hash_policy Hash = xxh3_hash>
class pic_store {
 public:
  using key_type = verified_key;
  using public_pool = lru_pool<key_type, Segment, verified_key_hash, verified_key_equal>;
  using private_pool = lru_pool<key_type, State, verified_key_hash, verified_key_equal>;
  using public_handle = typename public_pool::handle;
  using private_handle = typename private_pool::handle;

  /// Domain byte of private (prefix) keys in `verified_key`.
  static constexpr std::uint8_t prefix_domain = 'B';

  /// One looked-up segment.
  struct segment_hit {
    std::size_t index = 0;  ///< index into `segmentation::segments`
    public_handle entry;    ///< empty on a miss
  };
  /// The result of `lookup`.
  struct lookup_result {
    std::size_t prefix_depth = 0;  ///< tokens covered by the private prefix hit (0: none)
    private_handle prefix;         ///< the running state after `prefix_depth` tokens
    std::vector<segment_hit> segments;  ///< public lookups, in request order
    [[nodiscard]] std::size_t hits() const noexcept {
      std::size_t n = 0;
      for (const auto& s : segments) n += s.entry ? 1 : 0;
      return n;
    }
    [[nodiscard]] std::size_t misses() const noexcept { return segments.size() - hits(); }
  };

  /// @throws invalid_argument if `block_size == 0` or `public_reserved > public_capacity`.
  explicit pic_store(const pic_store_options& opts, Hash hash = Hash{},
                     typename public_pool::release_callback on_public_release = {},
                     typename private_pool::release_callback on_private_release = {})
      : opts_(opts),
        hash_(std::move(hash)),
        public_(opts.public_capacity, opts.public_reserved, std::move(on_public_release)),
        private_(opts.private_capacity, 0, std::move(on_private_release)) {
    if (opts.block_size == 0)
      hybridcache::detail::throw_invalid("opts.block_size", opts.block_size, "must be >= 1");
  }

  /// Stores a segment entry under K(ns, tokens) of `kind`.
  typename public_pool::insert_result put_segment(
      const namespace_key& ns, std::span<const token_id> tokens, Segment value, std::size_t bytes,
      segment_kind kind = segment_kind::position_independent,
      entry_class cls = entry_class::reserved) {
    key_type k(hybridcache::segment_key(hash_, ns, tokens, kind), static_cast<std::uint8_t>(kind),
               ns, tokens);
    return public_.insert(std::move(k), std::move(value), bytes, cls);
  }

  /// Stores a running state after `prefix` (length a positive multiple of `block_size`).
  /// @throws invalid_argument otherwise.
  typename private_pool::insert_result put_prefix(const namespace_key& ns,
                                                  std::span<const token_id> prefix, State value,
                                                  std::size_t bytes) {
    if (prefix.empty() || prefix.size() % opts_.block_size != 0)
      hybridcache::detail::throw_invalid("prefix.size()", prefix.size(),
                                         "must be a positive multiple of the block size");
    const auto keys = hybridcache::block_keys(hash_, ns, prefix, opts_.block_size);
    key_type k(keys.back(), prefix_domain, ns, prefix);
    return private_.insert(std::move(k), std::move(value), bytes);
  }

  /// HYPIC lookup order (file comment). `seg` must be `split(tokens, ...)`'s result.
  [[nodiscard]] lookup_result lookup(const namespace_key& ns, std::span<const token_id> tokens,
                                     const segmentation& seg) {
    lookup_result out;
    const auto keys = hybridcache::block_keys(hash_, ns, tokens, opts_.block_size);
    for (std::size_t m = keys.size(); m > 0; --m) {
      const std::size_t depth = m * opts_.block_size;
      const key_view probe{keys[m - 1], prefix_domain, ns.bytes(), tokens.first(depth)};
      if (auto h = private_.find(probe)) {
        out.prefix_depth = depth;
        out.prefix = std::move(h);
        break;
      }
    }
    for (std::size_t i = 0; i < seg.segments.size(); ++i) {
      const auto& s = seg.segments[i];
      if (s.begin > s.end || s.end > tokens.size())  // as `splice` checks: seg is caller data
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed("seg.segments", i),
                                           std::to_string(s.begin) + ".." + std::to_string(s.end),
                                           "segment range does not fit the token sequence");
      if (!s.cacheable() || s.end <= out.prefix_depth) continue;
      segment_hit hit{i, {}};
      if (s.begin >= out.prefix_depth) {
        const auto kind = s.role == segment_role::leading ? segment_kind::anchored
                                                          : segment_kind::position_independent;
        const auto part = tokens.subspan(s.begin, s.length());
        const key_view probe{hybridcache::segment_key(hash_, ns, part, kind),
                             static_cast<std::uint8_t>(kind), ns.bytes(), part};
        hit.entry = public_.find(probe);
      }
      out.segments.push_back(std::move(hit));
    }
    return out;
  }

  [[nodiscard]] public_pool& public_entries() noexcept { return public_; }
  [[nodiscard]] private_pool& private_entries() noexcept { return private_; }
  [[nodiscard]] const pic_store_options& options() const noexcept { return opts_; }
  [[nodiscard]] const Hash& hash() const noexcept { return hash_; }

 private:
  pic_store_options opts_;
  Hash hash_;
  public_pool public_;
  private_pool private_;
};

HYBRIDCACHE_NAMESPACE_END
