// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/segment/hash.hpp>
#include <hybridcache/segment/keys.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "support/segment_key_reference.hpp"

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
hc::xxh3_hash fixed_policy() {
  const auto s = hc_test::ref_secret();
  return hc::xxh3_hash(std::as_bytes(std::span<const unsigned char>(s)));
}
bool same(const hc::digest& d, const hc_test::ref_digest& r) {
  return d.lo == r.lo && d.hi == r.hi;
}
std::vector<token_id> random_tokens(std::mt19937& rng, std::size_t n) {
  std::vector<token_id> t(n);
  for (auto& x : t) x = rng();
  return t;
}
}  // namespace

TEST_CASE("keys match an independent implementation of the documented byte format") {
  const auto h = fixed_policy();
  std::mt19937 rng(11);
  const auto ns = hc::namespace_key{}.with_tenant("org").with_model("m");
  const std::string nsb(ns.bytes());
  for (std::size_t n : {0u, 1u, 16u, 64u, 255u, 256u, 300u, 1000u}) {  // crosses the one-shot limit
    const auto t = random_tokens(rng, n);
    CHECK(same(hc::segment_key(h, ns, t), hc_test::ref_segment('P', nsb, t)));
    CHECK(same(hc::segment_key(h, ns, t, hc::segment_kind::anchored),
               hc_test::ref_segment('A', nsb, t)));
  }
  CHECK(same(hc::root_key(h, ns), hc_test::ref_root(nsb)));
  for (std::size_t b : {1u, 16u, 64u, 256u}) {
    const auto t = random_tokens(rng, 3 * b + b / 2);
    const auto keys = hc::block_keys(h, ns, t, b);
    REQUIRE(keys.size() == 3);
    auto prev = hc_test::ref_root(nsb);
    for (std::size_t i = 0; i < 3; ++i) {
      prev = hc_test::ref_chain(prev, std::vector<token_id>(t.begin() + static_cast<long>(i * b),
                                                            t.begin() + static_cast<long>((i + 1) * b)));
      CHECK(same(keys[i], prev));
    }
  }
}

TEST_CASE("block keys: the namespace reaches every block (paired isolation)") {
  hc::xxh3_hash h;
  std::mt19937 rng(12);
  const auto t = random_tokens(rng, 16 * 8);
  const auto a = hc::namespace_key{}.with_tenant("a");
  const auto b = hc::namespace_key{}.with_tenant("b");
  const auto ka = hc::block_keys(h, a, t, 16);
  const auto kb = hc::block_keys(h, b, t, 16);
  const auto ka2 = hc::block_keys(h, hc::namespace_key::parse("ns{tenant=a}"), t, 16);
  REQUIRE(ka.size() == 8);
  for (std::size_t i = 0; i < 8; ++i) {
    CHECK(ka[i] != kb[i]);   // different namespace: nothing shared, at every depth
    CHECK(ka[i] == ka2[i]);  // same namespace: same keys
  }
}

TEST_CASE("chained block keys identify the whole prefix") {
  hc::xxh3_hash h;
  std::mt19937 rng(13);
  const hc::namespace_key ns;
  const auto t = random_tokens(rng, 64 * 6);
  const auto base = hc::block_keys(h, ns, t, 64);
  for (std::size_t j = 0; j < 6; ++j) {
    auto u = t;
    u[j * 64 + 5] ^= 1;
    const auto k = hc::block_keys(h, ns, u, 64);
    for (std::size_t i = 0; i < 6; ++i) CHECK((k[i] == base[i]) == (i < j));
  }
  // A trailing partial block has no key; adding tokens never changes earlier keys.
  auto longer = t;
  longer.push_back(1);
  CHECK(hc::block_keys(h, ns, longer, 64) == base);
}

TEST_CASE("Megatron-style +31/-1 token pairs and shifted block boundaries give distinct keys") {
  hc::xxh3_hash h;
  const hc::namespace_key ns;
  // The pattern collides under the naive polynomial hash x -> 31*x + t ...
  auto poly31 = [](const std::vector<token_id>& t) {
    std::uint64_t x = 0;
    for (auto v : t) x = 31 * x + v;
    return x;
  };
  std::set<hc::digest> seen;
  std::size_t poly_collisions = 0;
  std::mt19937 rng(14);
  for (int r = 0; r < 2000; ++r) {
    auto t = random_tokens(rng, 16);
    for (auto& v : t) v = 100 + v % 1000;
    const std::size_t i = rng() % 15;
    auto u = t;
    u[i] -= 1;   // -1 at position i ...
    u[i + 1] += 31;  // ... +31 at position i+1: 31*(a-1) + (b+31) = 31*a + b
    if (poly31(t) == poly31(u)) ++poly_collisions;
    const auto kt = hc::segment_key(h, ns, t);
    const auto ku = hc::segment_key(h, ns, u);
    CHECK(kt != ku);
    CHECK(hc::block_keys(h, ns, t, 16).front() != hc::block_keys(h, ns, u, 16).front());
    seen.insert(kt);
    seen.insert(ku);
  }
  CHECK(poly_collisions == 2000);  // ... so the test is meaningful
  CHECK(seen.size() == 4000);
  // Shifted boundaries: one token prepended changes every block key; the same 32 tokens as
  // two 16-token blocks or one 32-token block give different keys.
  const auto t = random_tokens(rng, 256);
  std::vector<token_id> shifted{7};
  shifted.insert(shifted.end(), t.begin(), t.end() - 1);
  const auto a = hc::block_keys(h, ns, t, 16);
  const auto b = hc::block_keys(h, ns, shifted, 16);
  for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i] != b[i]);
  CHECK(hc::block_keys(h, ns, t, 16)[1] != hc::block_keys(h, ns, t, 32)[0]);
  // Segment keys of a sequence and of its split halves differ (length is in the key).
  const std::span<const token_id> s(t);
  CHECK(hc::segment_key(h, ns, s.first(32)) != hc::segment_key(h, ns, s.first(16)));
}

TEST_CASE("segment keys are position-independent and domain-separated") {
  hc::xxh3_hash h;
  const auto ns = hc::namespace_key{}.with_knowledge_base("kb");
  const std::vector<token_id> doc{5, 6, 7};
  const std::vector<token_id> req1{1, 2, 5, 6, 7}, req2{9, 5, 6, 7, 4, 4};
  const auto k = hc::segment_key(h, ns, doc);
  CHECK(hc::segment_key(h, ns, std::span(req1).subspan(2, 3)) == k);
  CHECK(hc::segment_key(h, ns, std::span(req2).subspan(1, 3)) == k);
  CHECK(hc::segment_key(h, ns, doc, hc::segment_kind::anchored) != k);
  CHECK(hc::segment_key(h, hc::namespace_key{}, doc) != k);
  // Two policy instances have different random secrets.
  hc::xxh3_hash other;
  CHECK(hc::segment_key(other, ns, doc) != k);
}

TEST_CASE("key functions reject bad arguments") {
  hc::xxh3_hash h;
  const std::vector<token_id> t{1, 2, 3};
  CHECK_THROWS_AS(hc::block_keys(h, hc::namespace_key{}, t, 0), hybridcache::invalid_argument);
  std::vector<hc::digest> small(1);
  CHECK_THROWS_AS(hc::block_keys_into(h, hc::namespace_key{}, t, 1, small),
                  hybridcache::invalid_argument);
  std::vector<std::byte> short_secret(100);
  CHECK_THROWS_AS(hc::xxh3_hash{short_secret}, hybridcache::invalid_argument);
}
