#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// From a shared segment index to dispatch affinity: which worker already holds each segment.
///
/// The shared index (store/redis_index.hpp) answers "segment i is cached on node n" with a
/// `segment_location`; `dispatch_segments` (dispatch/affinity.hpp) wants "segment i is
/// cached on worker w". With `worker_nodes[w]` the node id of worker w,
///
///     cached_on(i) = w            if located[i] is present and located[i]->node == worker_nodes[w]
///                  = no_worker    if located[i] is absent, or its node runs none of the workers
///
/// (HYPIC's router: hit segments are pulled from the peer that holds them, misses are
/// LPT-dispatched — Fig. 9.) A location on a node outside this dispatch (a node that left, a
/// decode node) is a miss here: its state would have to cross the network anyway.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/dispatch/affinity.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/keyed_hash.hpp"
#include "hybridcache/store/segment_location.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Builds dispatch jobs from segment lengths and shared-index lookups (see the file comment).
/// @param tokens       token count of each segment
/// @param located      the shared index's answer for each segment (same length as `tokens`)
/// @param worker_nodes node id of each worker (distinct)
/// @throws invalid_argument if the lengths differ, a node id repeats, or a location's token count
///         differs from its segment's (a location of some other entry).
inline std::vector<segment_job> jobs_from_locations(
    std::span<const std::size_t> tokens, std::span<const std::optional<segment_location>> located,
    std::span<const std::uint32_t> worker_nodes) {
  if (located.size() != tokens.size())
    detail::throw_invalid("located.size()", located.size(),
                          "must equal tokens.size() = " + std::to_string(tokens.size()));
  keyed_map<std::uint32_t, std::size_t> worker_of_node;  // keyed: node ids are the caller's
  worker_of_node.reserve(worker_nodes.size());
  for (std::size_t w = 0; w < worker_nodes.size(); ++w) {
    if (!worker_of_node.emplace(worker_nodes[w], w).second)
      detail::throw_invalid(detail::indexed("worker_nodes", w), worker_nodes[w],
                            "node id given for two workers");
  }
  std::vector<segment_job> jobs(tokens.size());
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    jobs[i].tokens = tokens[i];
    if (!located[i]) continue;
    if (located[i]->tokens != tokens[i])
      detail::throw_invalid(detail::indexed("located", i) + ".tokens", located[i]->tokens,
                            "differs from the segment's " + std::to_string(tokens[i]) + " tokens");
    const auto it = worker_of_node.find(located[i]->node);
    if (it != worker_of_node.end()) jobs[i].cached_on = it->second;
  }
  return jobs;
}

HYBRIDCACHE_NAMESPACE_END
