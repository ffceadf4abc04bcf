// SPDX-License-Identifier: Apache-2.0
// tree_index (tree/index.hpp) alone, against a std::map model of the inserted paths: every block
// has the same few digests at every depth and in both namespaces, so only the parent check and
// the namespace roots keep paths apart; erased ids must go stale even after their slot is reused.
#include <doctest/doctest.h>

#include <algorithm>
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

TEST_CASE("tree_index lists each node's children newest first through inserts and erases") {
  // The children list (first_child, next_sibling: newest first) against a model, each node's
  // children in the order they were created. Wide fan-out (8 symbols), leaves erased at random
  // positions among their siblings (oldest, newest, between, the only one), slots reused. The
  // walks of the policy (regions, the re-plan's view) visit children in this order, and their
  // floating-point sums and ties depend on it.
  std::mt19937_64 rng(7);
  const hc::xxh3_hash hash;
  hc::tree_index ix;
  std::map<path, hc::node_id> model;
  std::map<path, std::vector<path>> kids;  // parent → children, oldest first
  std::size_t erased_oldest = 0, erased_newest = 0, erased_between = 0, erased_only = 0;
  for (int step = 0; step < 6000; ++step) {
    const std::uint64_t ns = rng() % 2;
    if (rng() % 2 == 0) {
      path p{ns};
      auto cur = ix.root_of(hash, ns_of(ns));
      model.emplace(p, ix.handle_of(cur));
      const std::size_t len = 1 + rng() % 3;
      for (std::size_t i = 0; i < len; ++i) {
        const path up = p;
        p.push_back(rng() % 8);
        bool created = false;
        cur = ix.child(cur, hc::digest{p.back(), 9}, created);
        if (created) {
          model[p] = ix.handle_of(cur);
          kids[up].push_back(p);
        }
      }
    } else {
      std::vector<path> leaves;
      for (const auto& [p, id] : model)
        if (p.size() > 1 && kids[p].empty()) leaves.push_back(p);
      if (leaves.empty()) continue;
      const path victim = leaves[rng() % leaves.size()];
      auto& sib = kids[path(victim.begin(), victim.end() - 1)];
      const auto at = std::find(sib.begin(), sib.end(), victim);
      REQUIRE(at != sib.end());
      if (sib.size() == 1)
        ++erased_only;
      else if (at == sib.begin())
        ++erased_oldest;
      else if (at + 1 == sib.end())
        ++erased_newest;
      else
        ++erased_between;
      sib.erase(at);
      ix.erase(ix.resolve(model.at(victim), "v"));
      model.erase(victim);
      kids.erase(victim);
    }
    if (step % 61 == 0) {
      for (const auto& [p, id] : model) {
        std::vector<hc::tree_index::slot_id> got;
        for (auto c = ix[ix.resolve(id, "v")].first_child; c != hc::tree_index::no_slot;
             c = ix[c].next_sibling)
          got.push_back(c);
        const auto& want = kids[p];
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i)
          CHECK(ix.handle_of(got[i]) == model.at(want[want.size() - 1 - i]));
      }
    }
  }
  CHECK(erased_oldest > 50);
  CHECK(erased_newest > 50);
  CHECK(erased_between > 50);
  CHECK(erased_only > 50);
}
