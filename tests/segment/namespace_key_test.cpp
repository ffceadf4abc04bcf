// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/segment/index.hpp>
#include <hybridcache/segment/namespace_key.hpp>

#include <map>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;
using hc::namespace_key;

TEST_CASE("namespace encoding follows the documented byte format") {
  // Written from docs/design/key_format.md, not from the encoder's output.
  const std::string expect_shared("HCNS\x01\x00", 6);
  CHECK(namespace_key{}.bytes() == expect_shared);
  const std::string expect = std::string("HCNS\x01", 5) + std::string("\x01\x03\x00\x00\x00", 5) +
                             "org" + std::string("\x03\x04\x00\x00\x00", 5) + "lora" +
                             std::string("\x05\x00\x00\x00\x00", 5) + std::string("\x00", 1);
  const auto ns = namespace_key{}.with_extra("").with_adapter("lora").with_tenant("org");
  CHECK(ns.bytes() == expect);
}

TEST_CASE("namespace aliasing cases of real engines encode differently") {
  // vLLM-style untyped extra-key tuples: ("org_1","2345") vs ("org_12345","").
  const auto a = namespace_key{}.with_extra("org_1").with_extra("2345");
  const auto b = namespace_key{}.with_extra("org_12345").with_extra("");
  CHECK(a.bytes() != b.bytes());
  CHECK_FALSE(a == b);
  // Splitting differently.
  CHECK(namespace_key{}.with_extra("ab").with_extra("c").bytes() !=
        namespace_key{}.with_extra("a").with_extra("bc").bytes());
  // Empty vs absent: a tenant "" is not "no tenant", and not the shared namespace.
  CHECK(namespace_key{}.with_tenant("").bytes() != namespace_key{}.bytes());
  CHECK_FALSE(namespace_key{}.with_tenant("").is_shared());
  CHECK(namespace_key{}.with_extra("").bytes() != namespace_key{}.bytes());
  // A value in another field: tenant "x" vs knowledge base "x" vs extra "x".
  CHECK(namespace_key{}.with_tenant("x").bytes() != namespace_key{}.with_knowledge_base("x").bytes());
  CHECK(namespace_key{}.with_tenant("x").bytes() != namespace_key{}.with_extra("x").bytes());
  // SGLang-style: a base-model request must not alias a LoRA namespace.
  const auto base = namespace_key{}.with_model("qwen3");
  const auto lora = base.with_adapter("lora-7");
  CHECK(base.bytes() != lora.bytes());
  CHECK(lora.with_adapter("").bytes() != base.bytes());
  // Order of extras matters.
  CHECK(namespace_key{}.with_extra("a").with_extra("b").bytes() !=
        namespace_key{}.with_extra("b").with_extra("a").bytes());
  // Values that contain what looks like an encoding do not confuse the decoder.
  const auto tricky = namespace_key{}.with_tenant(std::string("\x00\x02\x01\x00\x00\x00x", 7));
  CHECK(namespace_key::decode(tricky.bytes()) == tricky);
}

TEST_CASE("aliasing namespaces share nothing in the index (paired isolation)") {
  hc::segment_index<int> idx;
  const auto a = namespace_key{}.with_extra("org_1").with_extra("2345");
  const auto b = namespace_key{}.with_extra("org_12345").with_extra("");
  const std::vector<token_id> doc{1, 2, 3, 4};
  CHECK(idx.insert(a, doc, 1));
  CHECK_FALSE(idx.find(b, doc));            // different namespace: miss
  CHECK(idx.find(a, doc) == std::optional<int>(1));  // same namespace: hit
  CHECK(idx.find(namespace_key::decode(a.bytes()), doc) == std::optional<int>(1));
  CHECK_FALSE(idx.find(namespace_key{}, doc));
}

namespace {
using tuple_t = std::tuple<std::optional<std::string>, std::optional<std::string>,
                           std::optional<std::string>, std::optional<std::string>,
                           std::vector<std::string>>;
tuple_t tuple_of(const namespace_key& k) {
  return {k.tenant(), k.knowledge_base(), k.adapter(), k.model(), k.extras()};
}
}  // namespace

TEST_CASE("namespace encoding is injective and round-trips (random tuples over a tiny alphabet)") {
  std::mt19937 rng(3);
  auto rand_str = [&] {
    std::string s(rng() % 3, 'a');
    for (auto& c : s) c = "ab\x00;"[rng() % 4];
    return s;
  };
  std::map<std::string, tuple_t> seen;
  for (int i = 0; i < 20000; ++i) {
    namespace_key k;
    if (rng() % 2) k = k.with_tenant(rand_str());
    if (rng() % 3 == 0) k = k.with_knowledge_base(rand_str());
    if (rng() % 3 == 0) k = k.with_adapter(rand_str());
    if (rng() % 3 == 0) k = k.with_model(rand_str());
    for (unsigned e = rng() % 3; e > 0; --e) k = k.with_extra(rand_str());
    const tuple_t t = tuple_of(k);
    auto [it, fresh] = seen.emplace(std::string(k.bytes()), t);
    if (!fresh) REQUIRE(it->second == t);  // same bytes => same tuple
    REQUIRE(tuple_of(namespace_key::decode(k.bytes())) == t);
    REQUIRE(tuple_of(namespace_key::parse(k.to_string())) == t);
  }
  CHECK(seen.size() > 1000);
}

TEST_CASE("malformed namespace input is an error, never the shared namespace") {
  const std::string good(namespace_key{}.with_tenant("t").bytes());
  auto bad = [](const std::string& s) {
    CHECK_THROWS_AS(namespace_key::decode(s), hybridcache::invalid_argument);
  };
  bad("");
  bad("HCNS");
  bad(std::string("XCNS\x01\x00", 6));
  bad(std::string("HCNS\x02\x00", 6));                      // version
  bad(good.substr(0, good.size() - 1));                      // no end tag
  bad(good + std::string("\x00", 1));                        // trailing
  bad(std::string("HCNS\x01\x09\x00\x00\x00\x00\x00", 11));  // unknown tag
  bad(std::string("HCNS\x01\x02\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00", 16));  // out of order
  bad(std::string("HCNS\x01\x01\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00", 16));  // repeated
  bad(std::string("HCNS\x01\x01\x05\x00\x00\x00" "ab" "\x00", 13));                    // truncated
  bad(std::string("HCNS\x01\x01\xff\xff\xff\xff\x00", 11));                      // huge length
  for (const char* t : {"", "ns", "ns{", "tenant=a", "ns{tenant}", "ns{owner=a}",
                        "ns{tenant=a;tenant=b}", "ns{tenant=a;}", "ns{tenant=%G0}",
                        "ns{tenant=%4}", "ns{tenant=a=b}", "{}"})
    CHECK_THROWS_AS(namespace_key::parse(t), hybridcache::invalid_argument);
  CHECK(namespace_key::parse("ns{}").is_shared());
  CHECK(namespace_key::parse("ns{kb=docs;tenant=org%3B1}") ==
        namespace_key{}.with_tenant("org;1").with_knowledge_base("docs"));
  CHECK_THROWS_AS(namespace_key{}.with_tenant(std::string(namespace_key::max_field_bytes + 1, 'x')),
                  hybridcache::invalid_argument);
}
