// SPDX-License-Identifier: Apache-2.0
// tree_index (tree/index.hpp) alone, against a std::map model of the inserted paths: every block
// has the same few digests at every depth and in both namespaces, so only the parent check and
// the namespace roots keep paths apart; erased ids must go stale even after their slot is reused.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include <hybridcache/tree/index.hpp>

namespace hc = hybridcache;

namespace {

using path = std::vector<std::uint64_t>;  // namespace, then one symbol per block

hc::namespace_key ns_of(std::uint64_t i) {
  return hc::namespace_key{}.with_tenant(i == 0 ? "tenant_a" : "tenant_b");
}

}  // namespace

TEST_CASE("tree_index keeps exactly the inserted paths apart by parent and namespace") {
  std::mt19937_64 rng(24);
  const hc::xxh3_hash hash;
  hc::tree_index ix;
  std::map<path, hc::node_id> model;  // every live node, roots as the one-element path {ns}
  std::vector<hc::node_id> stale;
  std::size_t reused = 0;
  for (int step = 0; step < 4000; ++step) {
    const std::uint64_t ns = rng() % 2;
    if (rng() % 3 != 0) {  // insert a random path: symbols 0..2, the digest {symbol, 7}
      path p{ns};
      const auto root = ix.root_of(hash, ns_of(ns));
      if (model.count(p)) {
        CHECK(ix.handle_of(root) == model.at(p));
      } else {
        model[p] = ix.handle_of(root);
      }
      auto cur = root;
      const std::size_t len = 1 + rng() % 4;
      for (std::size_t i = 0; i < len; ++i) {
        const std::uint64_t sym = rng() % 3;
        p.push_back(sym);
        bool created = false;
        const auto before = ix.find(hc::digest{sym, 7}, cur);
        cur = ix.child(cur, hc::digest{sym, 7}, created);
        CHECK(created == (model.count(p) == 0));
        CHECK(ix[cur].blocks == i + 1);
        if (!created) {
          CHECK(before == cur);
          CHECK(ix.handle_of(cur) == model.at(p));
        } else {
          CHECK(before == hc::tree_index::no_slot);
          if ((ix.handle_of(cur) >> 32) != 0) ++reused;
          model[p] = ix.handle_of(cur);
        }
      }
    } else {  // erase a random leaf of the model (a childless root too)
      std::vector<path> leaves;
      for (auto it = model.begin(); it != model.end(); ++it) {
        const auto next = std::next(it);
        const bool has_child = next != model.end() && next->first.size() > it->first.size() &&
                               std::equal(it->first.begin(), it->first.end(), next->first.begin());
        if (!has_child) leaves.push_back(it->first);
      }
      if (leaves.empty()) continue;
      const path victim = leaves[rng() % leaves.size()];
      const hc::node_id id = model.at(victim);
      ix.erase(ix.resolve(id, "v"));
      model.erase(victim);
      stale.push_back(id);
    }
    // The model's view, checked in full now and then.
    if (step % 97 == 0) {
      std::size_t roots = 0;
      for (const auto& [p, id] : model) {
        const auto v = ix.resolve(id, "v");
        REQUIRE(ix.live_slot(id) == v);
        CHECK(ix[v].blocks == p.size() - 1);
        if (p.size() == 1) {
          ++roots;
          CHECK(ix[v].parent == hc::tree_index::no_slot);
        } else {
          const path up(p.begin(), p.end() - 1);
          CHECK(ix.handle_of(ix[v].parent) == model.at(up));
          CHECK(ix.find(hc::digest{p.back(), 7}, ix[v].parent) == v);
        }
      }
      CHECK(ix.node_count() == model.size());
      CHECK(ix.namespace_count() == roots);
      for (const hc::node_id id : stale) {
        CHECK(ix.live_slot(id) == hc::tree_index::no_slot);
        CHECK_THROWS_AS((void)ix.resolve(id, "v"), hc::stale_handle_error);
      }
    }
  }
  CHECK(reused > 0);  // slots were reused, under a new generation
  CHECK_THROWS_AS((void)ix.resolve(hc::node_id{1} << 31, "v"), hc::invalid_argument);
}
