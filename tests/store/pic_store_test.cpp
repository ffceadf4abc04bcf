// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/segment/split.hpp>
#include <hybridcache/store/pic_store.hpp>

#include <string>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
constexpr token_id sep = 999;
}

TEST_CASE_TEMPLATE("pic_store: private prefix first, then public segments (HYPIC lookup order)",
                   TestType, hc::xxh3_hash, hc::constant_hash) {
  hc::pic_store<std::string, std::string, TestType> store(
      {.public_capacity = 10000, .public_reserved = 0, .private_capacity = 10000, .block_size = 4});
  const auto ns = hc::namespace_key{}.with_tenant("t1");
  // system(4) SEP doc1(5) SEP doc2(3) SEP query(2)
  const std::vector<token_id> req = {1, 2, 3, 4, sep, 10, 11, 12, 13, 14, sep, 20, 21, 22, sep, 7, 8};
  const auto seg = hc::split_request(req, {.separator = sep});
  REQUIRE(seg.segments.size() == 4);
  const std::span<const token_id> r(req);

  // Nothing cached: every cacheable segment misses, the query is not looked up.
  auto miss = store.lookup(ns, req, seg);
  CHECK(miss.prefix_depth == 0);
  CHECK(miss.segments.size() == 3);
  CHECK(miss.hits() == 0);

  store.put_segment(ns, r.subspan(0, 4), "sys", 10, hc::segment_kind::anchored);
  store.put_segment(ns, r.subspan(5, 5), "doc1", 10);
  store.put_segment(ns, r.subspan(11, 3), "doc2", 10);
  auto pub = store.lookup(ns, req, seg);
  CHECK(pub.hits() == 3);
  CHECK(*pub.segments[1].entry == "doc1");

  // A private running state after the first 8 tokens (2 blocks): the leading segment is
  // covered, doc1 is partly covered (miss: recompute), doc2 still hits publicly.
  store.put_prefix(ns, r.first(8), "S@8", 100);
  auto both = store.lookup(ns, req, seg);
  CHECK(both.prefix_depth == 8);
  REQUIRE(both.prefix);
  CHECK(*both.prefix == "S@8");
  REQUIRE(both.segments.size() == 2);
  CHECK(both.segments[0].index == 1);
  CHECK_FALSE(both.segments[0].entry);
  CHECK(both.segments[1].index == 2);
  CHECK(both.segments[1].entry);

  // Paired isolation: another tenant sees nothing, neither private nor public.
  const auto other = hc::namespace_key{}.with_tenant("t2");
  auto iso = store.lookup(other, req, seg);
  CHECK(iso.prefix_depth == 0);
  CHECK(iso.hits() == 0);

  // An anchored (leading) entry is not a position-independent entry, and vice versa.
  const std::vector<token_id> moved = {10, 11, 12, 13, 14, sep, 1, 2, 3, 4, sep, 7};
  const auto seg2 = hc::split_request(moved, {.separator = sep});
  auto cross = store.lookup(ns, moved, seg2);
  REQUIRE(cross.segments.size() == 2);
  CHECK_FALSE(cross.segments[0].entry);  // doc1 as leading: only stored as PI
  CHECK_FALSE(cross.segments[1].entry);  // system prompt as PI: only stored anchored
}

TEST_CASE("pic_store pools have independent budgets") {
  hc::pic_store<int, int> store(
      {.public_capacity = 100, .public_reserved = 0, .private_capacity = 50, .block_size = 2});
  const hc::namespace_key ns;
  const std::vector<token_id> a{1, 2}, b{3, 4};
  CHECK(store.put_prefix(ns, a, 1, 50).status == hc::insert_status::inserted);
  CHECK(store.put_segment(ns, a, 1, 100).status == hc::insert_status::inserted);
  CHECK(store.put_prefix(ns, b, 2, 50).status == hc::insert_status::inserted);  // evicts a's
  CHECK(store.private_entries().size() == 1);
  CHECK(store.public_entries().size() == 1);  // untouched by private pressure
  CHECK_THROWS_AS(store.put_prefix(ns, std::vector<token_id>{1, 2, 3}, 0, 1),
                  hybridcache::invalid_argument);
}
