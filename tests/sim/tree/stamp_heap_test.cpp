// SPDX-License-Identifier: Apache-2.0
// stamp_heap (sim/tree/stamp_heap.hpp), the KV leaf orders of block_tree, against the structure
// it replaced: an ordered set of (stamp, node) pairs, driven by the same random inserts (newest,
// oldest, any stamp, repeated stamps, re-keys), erases of members and non-members, pops of
// the least, as block_tree's evictions do, and replacements of a member by a non-member (the
// least by its parent, usually stamped before it, as an eviction that leaves the parent a leaf).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <hybridcache/error.hpp>
#include <hybridcache/sim/tree/stamp_heap.hpp>

namespace hc = hybridcache;

TEST_CASE("stamp_heap: the same least element and members as an ordered set of (stamp, node)") {
  std::mt19937_64 rng(11);
  std::size_t checks = 0;
  for (int trial = 0; trial < 80; ++trial) {
    CAPTURE(trial);
    const std::uint32_t n = 1 + static_cast<std::uint32_t>(rng() % 64);
    hc::stamp_heap heap;
    heap.reset(n);
    std::set<std::pair<std::uint64_t, std::uint32_t>> model;
    std::vector<std::uint64_t> key(n, 0);
    std::vector<bool> in(n, false);
    std::uint64_t clock = 1000;
    for (int op = 0; op < 600; ++op) {
      const auto v = static_cast<std::uint32_t>(rng() % n);
      const int kind = static_cast<int>(rng() % 8);
      if (kind <= 2) {  // insert: the newest stamp, an old one, or one shared with others
        std::uint64_t st = 0;
        if (kind == 0)
          st = ++clock;
        else if (kind == 1)
          st = rng() % 1000;
        else
          st = 500 + rng() % 4;  // ties on the stamp: the node decides
        if (in[v]) model.erase({key[v], v});
        heap.insert(v, st);
        model.emplace(st, v);
        key[v] = st;
        in[v] = true;
      } else if (kind <= 4) {  // erase, a member or not
        heap.erase(v);
        if (in[v]) model.erase({key[v], v});
        in[v] = false;
      } else if (kind == 5 && !model.empty()) {  // pop the least, as an eviction
        const auto top = heap.top();
        REQUIRE(top == *model.begin());
        heap.erase(top.second);
        model.erase(model.begin());
        in[top.second] = false;
      } else if (kind >= 6 && !model.empty() && !in[v]) {
        // replace a member (the least, or any) by non-member v: an older stamp, or any
        const auto old =
            kind == 6 ? model.begin()->second
                      : std::next(model.begin(), static_cast<std::ptrdiff_t>(rng() % model.size()))
                            ->second;
        // older by 0-2 (never below 0), or any
        const std::uint64_t st =
            kind == 6 ? key[old] - std::min<std::uint64_t>(rng() % 3, key[old]) : rng() % 2000;
        heap.replace(old, v, st);
        model.erase({key[old], old});
        in[old] = false;
        model.emplace(st, v);
        key[v] = st;
        in[v] = true;
      }
      REQUIRE(heap.size() == model.size());
      CHECK(heap.empty() == model.empty());
      for (std::uint32_t x = 0; x < n; ++x) CHECK(heap.contains(x) == static_cast<bool>(in[x]));
      if (!model.empty()) CHECK(heap.top() == *model.begin());
      std::vector<std::pair<std::uint64_t, std::uint32_t>> got;
      heap.for_each([&](std::uint64_t st, std::uint32_t x) { got.emplace_back(st, x); });
      std::sort(got.begin(), got.end());
      CHECK(got ==
            std::vector<std::pair<std::uint64_t, std::uint32_t>>(model.begin(), model.end()));
      ++checks;
    }
  }
  CHECK(checks == 80 * 600);
}

TEST_CASE("stamp_heap: replace needs a member to take out and a non-member to put in") {
  hc::stamp_heap heap;
  heap.reset(4);
  heap.insert(0, 5);
  heap.insert(1, 6);
  CHECK_THROWS_AS(heap.replace(2, 3, 1), hc::invalid_argument);  // 2 is not a member
  CHECK_THROWS_AS(heap.replace(0, 1, 1), hc::invalid_argument);  // 1 is one already
  CHECK(heap.size() == 2);
  CHECK(heap.top() == std::pair<std::uint64_t, std::uint32_t>{5, 0});
  heap.replace(0, 2, 4);  // the least, by a node stamped before it: stays on top
  CHECK(heap.top() == std::pair<std::uint64_t, std::uint32_t>{4, 2});
  CHECK(!heap.contains(0));
  heap.replace(2, 0, 9);  // the least, by a newer one: moves down
  CHECK(heap.top() == std::pair<std::uint64_t, std::uint32_t>{6, 1});
  CHECK(heap.size() == 2);
}

TEST_CASE("stamp_heap: an empty heap has no top, and reset empties it") {
  hc::stamp_heap heap;
  heap.reset(4);
  CHECK_THROWS_AS((void)heap.top(), hc::invalid_argument);
  heap.insert(2, 7);
  heap.insert(1, 7);
  CHECK(heap.top() == std::pair<std::uint64_t, std::uint32_t>{7, 1});
  heap.erase(3);  // not a member: no-op
  CHECK(heap.size() == 2);
  heap.reset(4);
  CHECK(heap.empty());
  CHECK_FALSE(heap.contains(2));
}
