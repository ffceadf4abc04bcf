// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/segment/hash.hpp>
#include <hybridcache/segment/index.hpp>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
/// A forging adversary: a hash that depends on the first token only, so every entry with the
/// same first token collides.
struct first_token_hash {
  hc::digest operator()(std::span<const std::byte> head, std::span<const std::byte> body) const {
    (void)head;
    std::uint64_t x = 0;
    for (std::size_t i = 0; i < body.size() && i < 4; ++i)
      x |= static_cast<std::uint64_t>(body[i]) << (8 * i);
    return {x, x};
  }
};
}  // namespace

TEST_CASE_TEMPLATE("segment_index agrees with std::map on random operations", TestType,
                   hc::xxh3_hash, hc::constant_hash, first_token_hash) {
  hc::segment_index<int, TestType> idx;
  std::map<std::pair<std::string, std::vector<token_id>>, int> ref;
  const hc::namespace_key nss[3] = {hc::namespace_key{}, hc::namespace_key{}.with_tenant("a"),
                                    hc::namespace_key{}.with_tenant("a").with_adapter("l")};
  std::mt19937 rng(99);
  for (int i = 0; i < 6000; ++i) {
    const auto& ns = nss[rng() % 3];
    std::vector<token_id> t(rng() % 4);
    for (auto& x : t) x = rng() % 3;
    const auto key = std::make_pair(std::string(ns.bytes()), t);
    const int v = static_cast<int>(rng() % 1000);
    switch (rng() % 4) {
      case 0: {
        const bool fresh = ref.emplace(key, v).second;
        CHECK(idx.insert(ns, t, v) == fresh);
        break;
      }
      case 1: {
        const bool fresh = ref.find(key) == ref.end();
        ref[key] = v;
        CHECK(idx.insert_or_assign(ns, t, v) == fresh);
        break;
      }
      case 2:
        CHECK(idx.erase(ns, t) == (ref.erase(key) == 1));
        break;
      default: {
        const auto it = ref.find(key);
        const auto got = idx.find(ns, t);
        REQUIRE(got.has_value() == (it != ref.end()));
        if (got) CHECK(*got == it->second);
        CHECK(idx.contains(ns, t) == got.has_value());
      }
    }
    REQUIRE(idx.size() == ref.size());
  }
  // Every reference entry is findable, with its value.
  for (const auto& [k, v] : ref) {
    const auto ns = hc::namespace_key::decode(k.first);
    CHECK(idx.find(ns, k.second) == std::optional<int>(v));
  }
  idx.clear();
  CHECK(idx.empty());
}

TEST_CASE("forged collisions never produce a hit (constant-output policy)") {
  hc::segment_index<std::string, hc::constant_hash> idx;
  const auto a = hc::namespace_key{}.with_tenant("victim");
  const auto b = hc::namespace_key{}.with_tenant("attacker");
  const std::vector<token_id> secret_doc{42, 43, 44};
  idx.insert(a, secret_doc, "victim-kv");
  // Same digest for everything: the attacker's identical tokens in another namespace miss,
  // and so do near-identical tokens in the victim's namespace.
  CHECK_FALSE(idx.find(b, secret_doc));
  CHECK_FALSE(idx.find(a, std::vector<token_id>{42, 43}));
  CHECK_FALSE(idx.find(a, std::vector<token_id>{42, 43, 45}));
  CHECK_FALSE(idx.find(a, std::vector<token_id>{42, 43, 44, 0}));
  CHECK(idx.find(a, secret_doc) == std::optional<std::string>("victim-kv"));
  // The attacker can insert under the same digest without overwriting the victim's entry.
  CHECK(idx.insert(b, secret_doc, "attacker-kv"));
  CHECK(idx.find(a, secret_doc) == std::optional<std::string>("victim-kv"));
  CHECK(idx.find(b, secret_doc) == std::optional<std::string>("attacker-kv"));
  CHECK(idx.size() == 2);
}

TEST_CASE("segment_index: a precomputed wrong digest only causes a miss") {
  hc::segment_index<int> idx;
  const hc::namespace_key ns;
  const std::vector<token_id> t{1, 2}, u{3, 4};
  idx.insert(ns, t, 1);
  CHECK(idx.find_at(idx.key_of(ns, t), ns, t) == std::optional<int>(1));
  CHECK_FALSE(idx.find_at(idx.key_of(ns, u), ns, t));
  CHECK_FALSE(idx.find_at(idx.key_of(ns, t), ns, u));
}

TEST_CASE("segment_index grows and shrinks through many entries (backward-shift deletion)") {
  hc::segment_index<std::size_t> idx;
  const hc::namespace_key ns;
  const std::size_t n = 50000;
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<token_id> t{static_cast<token_id>(i), 7};
    REQUIRE(idx.insert(ns, t, i));
  }
  for (std::size_t i = 0; i < n; i += 2) {
    const std::vector<token_id> t{static_cast<token_id>(i), 7};
    REQUIRE(idx.erase(ns, t));
  }
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<token_id> t{static_cast<token_id>(i), 7};
    const auto v = idx.find(ns, t);
    REQUIRE(v.has_value() == (i % 2 == 1));
    if (v) REQUIRE(*v == i);
  }
  CHECK(idx.size() == n / 2);
}
