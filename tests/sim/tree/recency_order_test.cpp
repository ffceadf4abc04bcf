// SPDX-License-Identifier: Apache-2.0
// recency_order (sim/tree/recency_order.hpp), the intrusive LRU list of the engine rows and the
// portfolio's real pool, against the structure it replaced: an ordered set of (stamp, node)
// pairs, driven by the same random inserts, touches and erases, with its own counter and with
// an outside clock that skips values (as the engine's one LRU does).
#include <doctest/doctest.h>

#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <hybridcache/sim/tree/recency_order.hpp>

namespace hc = hybridcache;

TEST_CASE("recency_order: the same order as an ordered set of (stamp, node)") {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 60; ++trial) {
    CAPTURE(trial);
    const std::uint32_t n = 1 + static_cast<std::uint32_t>(rng() % 40);
    const bool outside = trial % 2 == 1;
    std::uint64_t ticks = 0;
    hc::recency_order order;
    if (outside)
      order.reset(n, [&] { return ticks += 1 + rng() % 3; });
    else
      order.reset(n);
    std::set<std::pair<std::uint64_t, std::uint32_t>> model;
    std::vector<std::uint64_t> stamp(n, 0);
    std::uint64_t clock = 0;
    for (int op = 0; op < 400; ++op) {
      const auto v = static_cast<std::uint32_t>(rng() % n);
      const bool in = stamp[v] != 0;
      CHECK(order.contains(v) == in);
      if (rng() % 3 == 0) {
        order.erase(v);
        if (in) model.erase({stamp[v], v});
        stamp[v] = 0;
      } else {
        if (in) model.erase({stamp[v], v});
        if (rng() % 2)
          order.insert(v);
        else
          order.touch(v);
        clock = outside ? ticks : clock + 1;
        stamp[v] = clock;
        model.emplace(clock, v);
        CHECK(order.stamp(v) == clock);
        CHECK(order.clock() == clock);
      }
      REQUIRE(order.size() == model.size());
      CHECK(order.empty() == model.empty());
      std::vector<std::pair<std::uint64_t, std::uint32_t>> got, want(model.begin(), model.end());
      for (const auto& [s, x] : order) got.emplace_back(s, x);
      CHECK(got == want);
      if (!model.empty()) CHECK(order.oldest() == model.begin()->second);
      // `next` walks the same order, member to member, and ends at the most recent.
      for (auto it = model.begin(); it != model.end(); ++it) {
        const auto after = std::next(it);
        CHECK(order.next(it->second) ==
              (after == model.end() ? hc::recency_order::none : after->second));
      }
    }
  }
}

TEST_CASE("recency_order: an empty order has no oldest") {
  hc::recency_order order;
  order.reset(4);
  CHECK_THROWS_AS((void)order.oldest(), hc::invalid_argument);
  order.insert(2);
  order.erase(2);
  order.erase(2);  // erasing a node not in the order changes nothing
  CHECK(order.empty());
  CHECK(order.begin() == order.end());
}
