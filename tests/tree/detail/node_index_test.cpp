// SPDX-License-Identifier: Apache-2.0
// detail::node_index (open addressing, backward-shift deletion) against std::map, with
// clustered keys (many equal digests under different parents) so probe runs wrap and shift.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include <hybridcache/tree/detail/node_index.hpp>

namespace hc = hybridcache;

namespace {
struct rec {
  hc::digest key;
  std::uint32_t parent;
};
}  // namespace

TEST_CASE("node_index finds exactly the live (digest, parent) pairs after inserts and erasures") {
  std::mt19937_64 rng(9);
  std::vector<rec> nodes;
  hc::detail::node_index index;
  std::map<std::pair<std::uint64_t, std::uint32_t>, std::uint32_t> ref;  // (lo, parent) -> id
  std::vector<std::uint32_t> live;
  for (int step = 0; step < 20000; ++step) {
    if (live.empty() || rng() % 3 != 0) {
      // Few distinct digests: collisions on the digest, told apart by the parent.
      const hc::digest d{rng() % 64, 7};
      const auto parent = static_cast<std::uint32_t>(rng() % 4096);
      if (ref.count({d.lo, parent})) continue;
      const auto id = static_cast<std::uint32_t>(nodes.size());
      nodes.push_back({d, parent});
      index.insert(nodes, id);
      ref[{d.lo, parent}] = id;
      live.push_back(id);
    } else {
      const std::size_t i = rng() % live.size();
      const std::uint32_t id = live[i];
      index.erase(nodes, id);
      ref.erase({nodes[id].key.lo, nodes[id].parent});
      live[i] = live.back();
      live.pop_back();
    }
    if (step % 997 == 0 || step == 19999) {
      CHECK(index.size() == ref.size());
      for (const auto& [k, id] : ref)
        CHECK(index.find(nodes, hc::digest{k.first, 7}, k.second) == id);
      for (int probe = 0; probe < 200; ++probe) {
        const hc::digest d{rng() % 64, 7};
        const auto parent = static_cast<std::uint32_t>(rng() % 4096);
        const auto it = ref.find({d.lo, parent});
        const std::uint32_t want = it == ref.end() ? hc::detail::empty_slot : it->second;
        CHECK(index.find(nodes, d, parent) == want);
      }
    }
  }
  CHECK(index.slot_count() >= 2 * index.size());
}
