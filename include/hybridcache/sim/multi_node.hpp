#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Multi-node segment reuse: N prefill nodes, each with its own LRU pool of segment states, with
/// and without a segment index shared across nodes (store/redis_index.hpp's role). HYPIC's
/// gateway reuses segments cached on other nodes; without a shared index a node sees only its own
/// pool.
///
/// Model. Requests arrive in trace order and are routed round-robin (request i to node i mod N,
/// the affinity-blind router of both configurations, so the index is the only difference). For
/// each segment s of a request on node h (the query is never cached), looked up by (namespace,
/// tokens):
///
/// | where s is | local index only | with the shared index |
/// |---|---|---|
/// | in h's pool | local hit | local hit |
/// | in another node's pool only | miss: prefill on h | remote hit: transfer to h (copy kept on h)
/// | | nowhere | miss: prefill on h | miss: prefill on h |
///
/// Missed and transferred segments are inserted into h's pool (capacity C tokens, LRU by last
/// use; a segment larger than C is never cached). A shared index knows exactly which pools hold
/// a segment (entries are removed on eviction); the holder that ships it is the lowest-numbered.
///
/// Modelled TTFT of a request (ms): the one-worker composition TTFT of segment_reuse.hpp,
/// `composition_ttft(lengths, hit, query, 1)` with hit = local or remote hit, plus, if any
/// segment is transferred, transfer_fixed + transfer_ms_per_token · Σ_remote |s|: the pulls start
/// together (one fixed latency, the cost model's `transfer_fixed`) and share the receiving node's
/// link (bandwidth-bound). No queueing is modelled, which is why both configurations route alike.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/index.hpp"
#include "hybridcache/sim/segment_reuse.hpp"
#include "hybridcache/sim/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Options of the multi-node simulation.
struct multi_node_options {
  std::size_t nodes = 4;                 ///< N prefill nodes (1..64)
  std::size_t pool_tokens = 1u << 20;    ///< C: each node's pool capacity, in tokens
  double transfer_ms_per_token = 0.001;  ///< cross-node transfer cost per token (ms)
  segment_reuse_options reuse{};         ///< cost model and seam window (workers unused)
};

/// Outcome of one configuration (with or without the shared index).
struct multi_node_result {
  std::string trace_name;
  std::size_t nodes = 0;
  bool shared_index = false;
  std::size_t requests = 0;
  std::size_t segments = 0;     ///< segment lookups (queries excluded)
  std::size_t local_hits = 0;   ///< found in the serving node's pool
  std::size_t remote_hits = 0;  ///< found in another node's pool and transferred (= transfers)
  std::size_t misses = 0;       ///< prefilled
  double transferred_tokens = 0.0;
  double ttft_mean = 0.0, ttft_p50 = 0.0, ttft_p90 = 0.0;  ///< modelled TTFT (ms)
  double full_mean = 0.0;  ///< mean full-recompute TTFT of the same requests (ms)
  [[nodiscard]] double hit_rate() const noexcept {
    return segments ? static_cast<double>(local_hits + remote_hits) / static_cast<double>(segments)
                    : 0.0;
  }
};

/// Replays `t` on `o.nodes` nodes (see the file comment).
/// @throws invalid_argument for an empty trace, `nodes` outside 1..64, a negative or non-finite
///         transfer cost.
inline multi_node_result simulate_multi_node(const trace& t, const multi_node_options& o,
                                             bool shared_index) {
  if (t.empty())
    hybridcache::detail::throw_invalid("trace.size()", std::size_t{0}, "the trace has no requests");
  if (o.nodes == 0 || o.nodes > 64)
    hybridcache::detail::throw_invalid("nodes", o.nodes, "must be in 1..64");
  if (!(o.transfer_ms_per_token >= 0.0) || o.transfer_ms_per_token > 1e300)
    hybridcache::detail::throw_invalid("transfer_ms_per_token", o.transfer_ms_per_token,
                                       "must be finite and >= 0");
  multi_node_result r;
  r.trace_name = t.name();
  r.nodes = o.nodes;
  r.shared_index = shared_index;

  // Dense ids for distinct (namespace, tokens) segments, through the verified index.
  segment_index<std::uint32_t> ids;
  std::vector<std::size_t> length;     // tokens of segment id
  std::vector<std::uint64_t> holders;  // bit n: node n's pool holds it
  struct pool_state {
    std::list<std::uint32_t> lru;  // front = most recent
    std::vector<std::list<std::uint32_t>::iterator> where;
    std::vector<char> present;
    std::size_t used = 0;
  };
  std::vector<pool_state> pools(o.nodes);
  auto touch = [&](std::size_t node, std::uint32_t id) {
    pool_state& p = pools[node];
    p.lru.splice(p.lru.begin(), p.lru, p.where[id]);
  };
  auto admit = [&](std::size_t node, std::uint32_t id) {
    pool_state& p = pools[node];
    if (length[id] > o.pool_tokens) return;  // never fits
    while (p.used + length[id] > o.pool_tokens) {
      const std::uint32_t victim = p.lru.back();
      p.lru.pop_back();
      p.present[victim] = 0;
      p.used -= length[victim];
      holders[victim] &= ~(std::uint64_t{1} << node);
    }
    p.lru.push_front(id);
    p.where[id] = p.lru.begin();
    p.present[id] = 1;
    p.used += length[id];
    holders[id] |= std::uint64_t{1} << node;
  };

  std::vector<double> ttft, full;
  std::vector<std::size_t> lengths;
  std::vector<std::uint32_t> seg_ids;
  std::unique_ptr<bool[]> hit;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const request& q = t.requests()[i];
    const std::size_t home = i % o.nodes;
    const namespace_key ns = detail::namespace_of(q);
    const std::size_t k = q.pieces.size() - (q.ends_with_query && !q.pieces.empty() ? 1 : 0);
    const std::size_t query = k < q.pieces.size() ? t.piece(q.pieces.back()).size() : 0;
    lengths.assign(k, 0);
    seg_ids.assign(k, 0);
    hit.reset(new bool[k + 1]());
    double remote_tokens = 0.0;
    for (std::size_t s = 0; s < k; ++s) {
      const auto tok = t.piece(q.pieces[s]);
      lengths[s] = tok.size();
      const auto next = static_cast<std::uint32_t>(length.size());
      std::uint32_t id = next;
      if (!ids.insert(ns, tok, next)) {
        id = *ids.find(ns, tok);
      } else {
        length.push_back(tok.size());
        holders.push_back(0);
        for (auto& p : pools) {
          p.where.emplace_back();
          p.present.push_back(0);
        }
      }
      seg_ids[s] = id;
      ++r.segments;
      if (pools[home].present[id]) {
        ++r.local_hits;
        hit[s] = true;
        touch(home, id);
      } else if (shared_index && holders[id] != 0) {
        ++r.remote_hits;
        hit[s] = true;
        remote_tokens += static_cast<double>(tok.size());
      } else {
        ++r.misses;
      }
    }
    // Admit after the lookups: a request's own segments cannot hit each other, and two
    // occurrences of one segment in a request are admitted once.
    for (std::size_t s = 0; s < k; ++s)
      if (!pools[home].present[seg_ids[s]]) admit(home, seg_ids[s]);
    r.transferred_tokens += remote_tokens;
    const double transfer =
        remote_tokens > 0.0 ? o.reuse.compose.transfer_fixed + o.transfer_ms_per_token * remote_tokens
                            : 0.0;
    const auto b =
        composition_ttft(lengths, std::span<const bool>(hit.get(), k), query, 1, o.reuse);
    ttft.push_back(b.total + transfer);
    full.push_back(b.full);
    ++r.requests;
  }
  double sum = 0.0, sum_full = 0.0;
  for (std::size_t i = 0; i < ttft.size(); ++i) {
    sum += ttft[i];
    sum_full += full[i];
  }
  r.ttft_mean = sum / static_cast<double>(ttft.size());
  r.full_mean = sum_full / static_cast<double>(full.size());
  r.ttft_p50 = detail::percentile(ttft, 0.5);
  r.ttft_p90 = detail::percentile(ttft, 0.9);
  return r;
}

HYBRIDCACHE_NAMESPACE_END
