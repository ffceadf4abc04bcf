// SPDX-License-Identifier: Apache-2.0
// detail::held_tree (include/hybridcache/sim/detail/held_tree.hpp), the incremental tree of held
// states behind marconi_policy's eviction, against a brute-force restatement of the scan it
// replaced: per held state, walk up to the nearest held ancestor a and count, per a, the distinct
// branches (a's children on those walks). Random tries and random add/remove sequences.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <hybridcache/sim/detail/held_tree.hpp>
#include <hybridcache/sim/detail/random.hpp>
#include <hybridcache/sim/tree.hpp>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hc = hybridcache;

namespace {

struct brute {
  std::map<std::uint32_t, std::uint32_t> kids;  ///< held a → distinct branches below it
  std::map<std::uint32_t, std::uint32_t> anc;   ///< held v → depth of nearest held ancestor
};

brute scan(const hc::tree_trace& t, const std::set<std::uint32_t>& held) {
  brute b;
  std::set<std::pair<std::uint32_t, std::uint32_t>> branches;  // (a, c)
  for (auto v : held) {
    std::uint32_t c = v, a = t.parent(v);
    while (a != hc::tree_trace::no_parent && held.count(a) == 0) {
      c = a;
      a = t.parent(a);
    }
    b.anc[v] = a == hc::tree_trace::no_parent ? 0 : t.depth(a);
    if (a != hc::tree_trace::no_parent) branches.emplace(a, c);
  }
  for (auto v : held) b.kids[v] = 0;
  for (const auto& [a, c] : branches) ++b.kids[a];
  return b;
}

/// A random trie of `n` nodes under `roots` namespace roots (each node's parent drawn among the
/// earlier ones, biased to recent nodes so that chains form).
hc::tree_trace random_trie(hc::detail::rng& g, std::size_t n, std::size_t roots) {
  hc::tree_trace t("random", 4);
  for (std::size_t r = 0; r < roots; ++r) t.root_of(std::to_string(r));
  while (t.node_count() < n) {
    const auto m = t.node_count();
    const auto back = std::min<std::uint64_t>(m, g.next() % 2 == 0 ? 3 : m);
    const auto p = static_cast<std::uint32_t>(m - 1 - g.next() % back);
    t.new_node(p, t.ns(p));
  }
  return t;
}

}  // namespace

TEST_CASE("held_tree: children and nearest held ancestors match the per-eviction scan") {
  hc::detail::rng g(24);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t n = 5 + g.next() % 60, roots = 1 + g.next() % 3;
    const auto t = random_trie(g, n, roots);
    hc::detail::held_tree h;
    h.reset(t, trial % 2 == 0 ? hc::detail::trie_euler::of(t) : nullptr);
    std::set<std::uint32_t> held;
    for (int op = 0; op < 120; ++op) {
      const auto v = static_cast<std::uint32_t>(g.next() % t.node_count());
      const auto before = scan(t, held);
      std::set<std::uint32_t> reported;
      const auto note = [&](std::uint32_t x) { reported.insert(x); };
      if (held.count(v) != 0) {
        h.remove(v, note);
        held.erase(v);
      } else {
        h.add(v, note);
        held.insert(v);
      }
      const auto after = scan(t, held);
      REQUIRE(h.nodes() == std::vector<std::uint32_t>(held.begin(), held.end()));
      REQUIRE(h.size() == held.size());
      for (auto x : held) {
        CHECK(h.holds(x));
        CHECK(h.children(x) == after.kids.at(x));
        CHECK(h.anc_depth(x) == after.anc.at(x));
        // every other held state whose ancestor changed was reported
        if (x != v && before.anc.count(x) != 0 && before.anc.at(x) != after.anc.at(x))
          CHECK(reported.count(x) == 1);
      }
      CHECK(reported.count(v) == 0);
    }
  }
}

TEST_CASE("held_tree: a hand-worked chain and fork") {
  // root ─ a ─ b ─ c
  //             └ d ─ e
  hc::tree_trace t("hand", 4);
  const auto root = t.root_of(std::nullopt);
  const auto a = t.new_node(root, 0), b = t.new_node(a, 0), c = t.new_node(b, 0),
             d = t.new_node(b, 0), e = t.new_node(d, 0);
  hc::detail::held_tree h;
  h.reset(t, nullptr);
  const auto none = [](std::uint32_t) {};
  h.add(c, none);
  h.add(e, none);
  h.add(a, none);  // a's branches: both through b → one child
  CHECK(h.children(a) == 1);
  CHECK(h.anc_depth(c) == 1);
  CHECK(h.anc_depth(e) == 1);
  std::vector<std::uint32_t> got;
  h.add(b, [&](std::uint32_t x) { got.push_back(x); });  // b: two children (c, d's subtree)
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::uint32_t>{c, e});
  CHECK(h.children(b) == 2);
  CHECK(h.children(a) == 1);
  CHECK(h.anc_depth(b) == 1);
  CHECK(h.anc_depth(e) == 2);
  h.remove(a, none);
  CHECK(h.anc_depth(b) == 0);
  h.remove(b, none);
  CHECK(h.anc_depth(c) == 0);
  CHECK(h.anc_depth(e) == 0);
  CHECK(h.children(c) == 0);
}
