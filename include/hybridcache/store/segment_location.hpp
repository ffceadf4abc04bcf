#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `segment_location`: where a cached segment (or prefix block) lives in a multi-node
/// deployment — the value of the shared segment index (store/redis_index.hpp) and the input of
/// the dispatch affinity adapter (dispatch/shared_affinity.hpp). Plain data, no dependency, so
/// code that only *consumes* locations never needs hiredis or OpenSSL.

#include <cstdint>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A cached segment's location: on node `node`, in that node's pool `pool`, at byte `offset`,
/// `bytes` long, covering `tokens` tokens (the segment's, or one block's for a chained block).
struct segment_location {
  std::uint32_t node = 0;    ///< serving node id (deployment-defined)
  std::uint32_t pool = 0;    ///< pool on that node (e.g. 0 = public, 1 = private)
  std::uint64_t offset = 0;  ///< byte offset (or block id) inside the pool
  std::uint64_t bytes = 0;   ///< size of the cached state in bytes
  std::uint32_t tokens = 0;  ///< tokens the entry covers

  friend constexpr bool operator==(const segment_location&, const segment_location&) = default;
};

HYBRIDCACHE_NAMESPACE_END
