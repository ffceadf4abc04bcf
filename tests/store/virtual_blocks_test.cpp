// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/segment/hash.hpp>
#include <hybridcache/store/lru_pool.hpp>
#include <hybridcache/store/virtual_blocks.hpp>

#include <string>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

TEST_CASE_TEMPLATE("virtual blocks: several namespaced views over one physical block, copy on hit",
                   TestType, hc::xxh3_hash, hc::constant_hash) {
  using pool_t = hc::lru_pool<int, std::string>;
  pool_t pool(1000);
  pool.insert(42, "KV(doc)", 100);
  hc::virtual_block_index<pool_t, TestType> views(pool);
  const std::vector<token_id> doc{5, 6, 7, 8};
  const auto kb_a = hc::namespace_key{}.with_knowledge_base("a");
  const auto kb_b = hc::namespace_key{}.with_knowledge_base("b");
  const auto kb_c = hc::namespace_key{}.with_knowledge_base("c");
  CHECK(views.add_view(kb_a, doc, 42, 128));
  CHECK(views.add_view(kb_b, doc, 42, 0));
  CHECK_FALSE(views.add_view(kb_a, doc, 42, 0));
  CHECK(pool.used() == 100);  // views add no block memory
  auto copy = [](const std::string& block, std::size_t pos) {
    return block + "@" + std::to_string(pos);
  };
  const auto a = views.hit(kb_a, doc, copy);
  REQUIRE(a);
  CHECK(*a == "KV(doc)@128");
  const auto b = views.hit(kb_b, doc, copy);
  REQUIRE(b);
  CHECK(*b == "KV(doc)@0");
  CHECK_FALSE(views.hit(kb_c, doc, copy));  // no view in namespace c: nothing shared
  CHECK_FALSE(views.hit(kb_a, std::vector<token_id>{5, 6, 7}, copy));
  // After the physical block leaves the pool, views miss and are dropped.
  pool.erase(42);
  CHECK_FALSE(views.hit(kb_a, doc, copy));
  CHECK(views.size() == 1);
}
