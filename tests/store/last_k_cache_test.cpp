// SPDX-License-Identifier: Apache-2.0
// last_k_cache against a brute-force reference: a deque of the last K requests and a scan of
// every entry's longest common prefix.
#include <doctest/doctest.h>

#include <hybridcache/store/last_k_cache.hpp>

#include <algorithm>
#include <deque>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
struct brute_last_k {
  std::size_t k;
  std::deque<std::pair<std::string, std::vector<token_id>>> q;
  std::size_t observe(const std::string& ns, const std::vector<token_id>& t) {
    std::size_t best = 0;
    for (const auto& [n, e] : q) {
      if (n != ns) continue;
      std::size_t d = 0;
      while (d < e.size() && d < t.size() && e[d] == t[d]) ++d;
      best = std::max(best, d);
    }
    q.emplace_back(ns, t);
    if (q.size() > k) q.pop_front();
    return best;
  }
};
}  // namespace

TEST_CASE("last_k_cache depth equals the brute-force longest common prefix") {
  std::mt19937 rng(7);
  for (std::size_t k : {1u, 2u, 5u, 35u}) {
    hc::last_k_cache cache(k);
    brute_last_k ref{k, {}};
    const hc::namespace_key nss[2] = {hc::namespace_key{}, hc::namespace_key{}.with_tenant("b")};
    for (int r = 0; r < 2000; ++r) {
      // Requests share prefixes: a small vocabulary and short lengths make deep overlaps common.
      std::vector<token_id> t(rng() % 24);
      for (auto& x : t) x = rng() % 3;
      const auto& ns = nss[rng() % 2];
      const auto m = cache.observe(ns, t);
      const std::size_t expect = ref.observe(std::string(ns.bytes()), t);
      REQUIRE(m.depth == expect);
      CHECK((m.depth == 0) == !m.hit());
      if (m.hit()) CHECK(m.entry_length >= m.depth);
    }
    CHECK(cache.size() == k);
  }
}

TEST_CASE("last_k_cache depth on long shared prefixes (document QA shape) equals brute force") {
  std::mt19937 rng(8);
  std::vector<std::vector<token_id>> docs(4, std::vector<token_id>(700));
  for (auto& d : docs)
    for (auto& t : d) t = rng() % 5;
  for (std::size_t k : {3u, 50u}) {
    hc::last_k_cache cache(k);
    brute_last_k ref{k, {}};
    for (int r = 0; r < 1500; ++r) {
      const auto& d = docs[rng() % docs.size()];
      std::vector<token_id> t(d.begin(), d.begin() + static_cast<long>(rng() % d.size()));
      if (!t.empty() && rng() % 3 == 0) t[rng() % t.size()] += 1;  // a mutation anywhere
      for (int q = 0; q < 5; ++q) t.push_back(rng() % 5);           // a question
      const auto m = cache.observe(t);
      REQUIRE(m.depth == ref.observe(std::string(hc::namespace_key{}.bytes()), t));
    }
  }
}

TEST_CASE("last_k_cache retains exactly the last K requests") {
  hc::last_k_cache cache(2);
  const std::vector<token_id> a{1, 2, 3}, b{4, 5}, c{6};
  cache.observe(a);
  cache.observe(b);
  CHECK(cache.match(a).depth == 3);
  cache.observe(c);                       // evicts a
  CHECK(cache.match(a).depth == 0);
  CHECK(cache.match(std::vector<token_id>{4, 5, 9}).depth == 2);
  const auto m = cache.match(b);
  CHECK(m.entry_length == 2);
  CHECK(m.entry_id == 2);                 // ids count observed requests from 1
}

TEST_CASE("last_k_cache isolates namespaces (paired test)") {
  hc::last_k_cache cache(4);
  const std::vector<token_id> doc{10, 11, 12, 13};
  const auto a = hc::namespace_key{}.with_tenant("a");
  const auto b = hc::namespace_key{}.with_tenant("b");
  cache.observe(a, doc);
  CHECK(cache.match(b, doc).depth == 0);  // different namespace: nothing shared
  CHECK(cache.match(a, doc).depth == 4);  // same namespace: hit
}

TEST_CASE("last_k_cache rejects K = 0") {
  CHECK_THROWS_AS(hc::last_k_cache(0), hybridcache::invalid_argument);
}

TEST_CASE("last_k_cache::overlaps gives every entry's common prefix (brute force)") {
  // Small alphabet and shared stems so that many entries share prefixes of many lengths.
  std::mt19937 rng(11);
  for (std::size_t k : {1u, 3u, 8u, 20u}) {
    hc::last_k_cache cache(k);
    std::deque<std::tuple<std::string, std::vector<token_id>, std::uint64_t>> live;  // oldest first
    std::vector<hc::last_k_overlap> got;
    for (int i = 0; i < 600; ++i) {
      const std::string ns = rng() % 5 == 0 ? "b" : "a";
      std::vector<token_id> t(rng() % 12);
      for (auto& x : t) x = rng() % 3;
      // Expected: every live entry of ns with LCP >= 1.
      std::vector<std::pair<std::uint64_t, std::size_t>> want;
      std::size_t want_best = 0;
      for (const auto& [n, e, id] : live) {
        if (n != ns) continue;
        std::size_t d = 0;
        while (d < e.size() && d < t.size() && e[d] == t[d]) ++d;
        if (d > 0) want.emplace_back(id, d);
        want_best = std::max(want_best, d);
      }
      const auto key = hc::namespace_key().with_tenant(ns);
      std::vector<hc::last_k_overlap> peek;
      cache.overlaps(key, t, peek);
      const auto m = cache.observe(key, t, got);
      CHECK(m.depth == want_best);
      std::vector<std::pair<std::uint64_t, std::size_t>> have, have_peek;
      for (const auto& o : got) {
        have.emplace_back(o.entry_id, o.depth);
        // entry_length is the entry's own token count
        for (const auto& [n, e, id] : live) {
          if (id == o.entry_id) CHECK(o.entry_length == e.size());
        }
      }
      for (const auto& o : peek) have_peek.emplace_back(o.entry_id, o.depth);
      std::sort(want.begin(), want.end());
      std::sort(have.begin(), have.end());
      std::sort(have_peek.begin(), have_peek.end());
      CHECK(have == want);
      CHECK(have_peek == want);
      live.emplace_back(ns, t, static_cast<std::uint64_t>(i + 1));
      if (live.size() > k) live.pop_front();
    }
  }
}

TEST_CASE("last_k_cache: requests that differ at token 0 share nothing, whatever follows") {
  // The simulator once trusted an unkeyed 64-bit block hash; here every comparison is on tokens.
  hc::last_k_cache cache(4);
  std::vector<token_id> a(4096, 7), b(4096, 7);
  b[0] = 8;
  std::vector<hc::last_k_overlap> per;
  CHECK(cache.observe(hc::namespace_key::shared(), a, per).depth == 0);
  CHECK(per.empty());
  CHECK(cache.observe(hc::namespace_key::shared(), b, per).depth == 0);
  CHECK(per.empty());
  b[0] = 7;
  b[4095] = 9;
  CHECK(cache.observe(hc::namespace_key::shared(), b, per).depth == 4095);
  REQUIRE(per.size() == 1);
  CHECK(per[0].entry_id == 1);
}

TEST_CASE(
    "last_k_cache::entry_overlaps gives a retained entry's common prefix with every other (brute "
    "force)") {
  std::mt19937 rng(23);
  for (std::size_t k : {1u, 2u, 7u, 20u}) {
    hc::last_k_cache cache(k);
    std::deque<std::tuple<std::string, std::vector<token_id>, std::uint64_t>> live;  // oldest first
    std::vector<hc::last_k_overlap> got;
    for (int i = 0; i < 400; ++i) {
      const std::string ns = rng() % 5 == 0 ? "b" : "a";
      std::vector<token_id> t(rng() % 12);
      for (auto& x : t) x = rng() % 3;
      cache.observe(hc::namespace_key().with_tenant(ns), t);
      live.emplace_back(ns, t, static_cast<std::uint64_t>(i + 1));
      if (live.size() > k) live.pop_front();
      // Every retained entry against every other one of its namespace, LCP >= 1.
      for (const auto& [ns_e, e, id_e] : live) {
        std::vector<std::pair<std::uint64_t, std::size_t>> want, have;
        for (const auto& [ns_g, g, id_g] : live) {
          if (id_g == id_e || ns_g != ns_e) continue;
          std::size_t d = 0;
          while (d < e.size() && d < g.size() && e[d] == g[d]) ++d;
          if (d > 0) want.emplace_back(id_g, d);
        }
        cache.entry_overlaps(id_e, got);
        for (const auto& o : got) {
          have.emplace_back(o.entry_id, o.depth);
          for (const auto& [n, g, id] : live) {
            if (id == o.entry_id) CHECK(o.entry_length == g.size());
          }
        }
        std::sort(want.begin(), want.end());
        std::sort(have.begin(), have.end());
        CHECK(have == want);
      }
      // An evicted (or never inserted) id lists nothing.
      cache.entry_overlaps(static_cast<std::uint64_t>(i + 2), got);
      CHECK(got.empty());
      if (i >= static_cast<int>(k)) {
        cache.entry_overlaps(static_cast<std::uint64_t>(i + 1 - static_cast<int>(k)), got);
        CHECK(got.empty());
      }
    }
  }
}
