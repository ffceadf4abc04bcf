#pragma once
// SPDX-License-Identifier: Apache-2.0

// Independent reference for sim/multi_node.hpp's counting: segments identified by
// (namespace text, token vector) in a std::map, each node's pool a map id -> last-use stamp with
// eviction by linear scan for the smallest stamp, holders found by scanning every pool.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <hybridcache/sim/trace.hpp>

namespace hcref {

struct multi_node_counts {
  std::size_t segments = 0, local = 0, remote = 0, misses = 0;
  double transferred = 0.0;
  std::vector<std::vector<bool>> hit;                // per request, per segment
  std::vector<std::vector<std::size_t>> remote_len;  // per request: lengths of remote hits
};

inline multi_node_counts multi_node_reference(const hybridcache::trace& t, std::size_t nodes,
                                              std::size_t capacity, bool shared) {
  using seg = std::pair<std::string, std::vector<hybridcache::token_id>>;
  std::map<seg, std::size_t> id_of;
  std::vector<std::size_t> len;
  std::vector<std::map<std::size_t, std::uint64_t>> pool(nodes);
  std::vector<std::size_t> used(nodes, 0);
  std::uint64_t clock = 0;
  multi_node_counts out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto& q = t.requests()[i];
    const std::size_t home = i % nodes;
    const std::string ns = q.ns ? "T" + *q.ns : std::string("S");
    const std::size_t k = q.pieces.size() - (q.ends_with_query && !q.pieces.empty() ? 1 : 0);
    std::vector<std::size_t> ids;
    out.hit.emplace_back();
    out.remote_len.emplace_back();
    for (std::size_t s = 0; s < k; ++s) {
      const auto tok = t.piece(q.pieces[s]);
      seg key{ns, std::vector<hybridcache::token_id>(tok.begin(), tok.end())};
      auto it = id_of.find(key);
      if (it == id_of.end()) {
        it = id_of.emplace(key, len.size()).first;
        len.push_back(tok.size());
      }
      const std::size_t id = it->second;
      ids.push_back(id);
      ++out.segments;
      bool elsewhere = false;
      for (std::size_t n = 0; n < nodes; ++n)
        if (n != home && pool[n].count(id)) elsewhere = true;
      if (pool[home].count(id)) {
        ++out.local;
        pool[home][id] = ++clock;
        out.hit.back().push_back(true);
      } else if (shared && elsewhere) {
        ++out.remote;
        out.transferred += static_cast<double>(tok.size());
        out.remote_len.back().push_back(tok.size());
        out.hit.back().push_back(true);
      } else {
        ++out.misses;
        out.hit.back().push_back(false);
      }
    }
    for (std::size_t id : ids) {
      if (pool[home].count(id) || len[id] > capacity) continue;
      while (used[home] + len[id] > capacity) {
        auto victim = pool[home].begin();
        for (auto v = pool[home].begin(); v != pool[home].end(); ++v)
          if (v->second < victim->second) victim = v;
        used[home] -= len[victim->first];
        pool[home].erase(victim);
      }
      pool[home][id] = ++clock;
      used[home] += len[id];
    }
  }
  return out;
}

}  // namespace hcref
