// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/sim/builders.hpp>
#include <hybridcache/sim/synthetic.hpp>
#include <hybridcache/sim/tokenize.hpp>
#include <map>
#include <string>
#include <vector>

namespace hc = hybridcache;

TEST_CASE("word tokenizer: whitespace words, shared vocabulary, byte tokenizer") {
  hc::word_tokenizer w;
  const auto a = w.encode("the cat\tsat\n\non  the mat ");
  CHECK(a == std::vector<std::uint32_t>{0, 1, 2, 3, 0, 4});
  CHECK(w.encode("mat the") == std::vector<std::uint32_t>{4, 0});
  CHECK(w.vocabulary_size() == 5);
  CHECK(w.encode("   ").empty());
  const hc::byte_tokenizer b;
  CHECK(b.encode("Ab\xff") == std::vector<std::uint32_t>{65, 98, 255});
}

TEST_CASE("Poisson arrivals, Zipf popularity, reproducible from the seed") {
  hc::trace t("g");
  std::vector<hc::request_group> groups(5);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    groups[g].prefix = {t.add_piece(std::vector<std::uint32_t>(10, static_cast<std::uint32_t>(g)))};
    groups[g].suffixes = {{t.add_piece(std::vector<std::uint32_t>{99})}, {}};
  }
  hc::generate_requests(t, groups, {.requests = 20000, .rate = 4.0, .zipf = 1.0, .seed = 9});
  CHECK(t.size() == 20000);
  double prev = 0.0;
  std::map<std::uint32_t, std::size_t> count;
  for (const auto& r : t.requests()) {
    CHECK(r.arrival > prev);
    prev = r.arrival;
    ++count[r.pieces.front()];
  }
  // Mean gap 1/rate: 20000 arrivals in about 5000 s.
  CHECK(prev == doctest::Approx(5000.0).epsilon(0.05));
  // Zipf(1) over 5 groups: the hottest gets 1/H_5 ≈ 43.8 %, the coldest ≈ 8.8 %.
  std::size_t hi = 0, lo = 1u << 30;
  for (auto [k, c] : count) {
    hi = std::max(hi, c);
    lo = std::min(lo, c);
  }
  CHECK(static_cast<double>(hi) / 20000.0 == doctest::Approx(0.438).epsilon(0.05));
  CHECK(static_cast<double>(lo) / 20000.0 == doctest::Approx(0.0876).epsilon(0.1));
  hc::trace t2("g");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    (void)t2.add_piece(std::vector<std::uint32_t>(10, static_cast<std::uint32_t>(g)));
    (void)t2.add_piece(std::vector<std::uint32_t>{99});
  }
  hc::generate_requests(t2, groups, {.requests = 20000, .rate = 4.0, .zipf = 1.0, .seed = 9});
  for (std::size_t i = 0; i < t.size(); ++i) {
    CHECK(t.requests()[i].pieces == t2.requests()[i].pieces);
    CHECK(t.requests()[i].arrival == t2.requests()[i].arrival);
  }
  CHECK_THROWS_AS(hc::generate_requests(t2, groups, {.rate = 0.0}), hybridcache::invalid_argument);
  hc::trace t3("once");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    (void)t3.add_piece(std::vector<std::uint32_t>(10, static_cast<std::uint32_t>(g)));
    (void)t3.add_piece(std::vector<std::uint32_t>{99});
  }
  hc::generate_requests(t3, groups, {.requests = 999, .seed = 3, .each_once = true});
  REQUIRE(t3.size() == groups.size());
  std::map<std::uint32_t, std::size_t> once;
  for (const auto& r : t3.requests()) ++once[r.pieces.front()];
  CHECK(once.size() == groups.size());
  CHECK_THROWS_AS(hc::generate_requests(t2, {}, {}), hybridcache::invalid_argument);
}

TEST_CASE("document QA and system-prompt builders share the long prefix") {
  const std::vector<hc::text_document> docs{{"a b c d e f", {"q1 x", "q2 y"}}, {"g h", {}}};
  const auto t = hc::build_document_qa("qa", docs, {.requests = 50, .seed = 1});
  CHECK(t.size() == 50);
  std::vector<std::uint32_t> buf;
  for (const auto& r : t.requests()) {
    t.materialize(r, buf);
    CHECK(buf.size() == 8);
    CHECK(r.ends_with_query);
  }
  const std::vector<std::string> prompts{"you are helpful", "you are terse"};
  const std::vector<std::string> queries{"hi", "what now"};
  const auto s = hc::build_system_prompts("sp", prompts, queries, {.requests = 30});
  CHECK(s.size() == 30);
  CHECK_THROWS_AS(hc::build_document_qa("qa", std::vector<hc::text_document>{{"x", {}}}, {}),
                  hybridcache::invalid_argument);
}

TEST_CASE("block-hash traces: shared leading hash ids are exactly shared tokens") {
  std::vector<hc::block_hash_record> recs{{0, 1000, {1, 2}}, {5, 1100, {1, 2, 3}}, {9, 0, {1, 4}}};
  const auto t = hc::build_block_hash_trace("mc", recs, 512);
  std::vector<std::uint32_t> a, b, c;
  t.materialize(t.requests()[0], a);
  t.materialize(t.requests()[1], b);
  t.materialize(t.requests()[2], c);
  CHECK(a.size() == 1000);
  CHECK(b.size() == 1100);
  CHECK(c.size() == 1024);
  CHECK(t.requests()[1].arrival == doctest::Approx(0.005));
  auto lcp = [](const auto& x, const auto& y) {
    std::size_t k = 0;
    while (k < x.size() && k < y.size() && x[k] == y[k]) ++k;
    return k;
  };
  CHECK(lcp(b, c) == 512);
  // Record 0 ends inside block 2 (1000 tokens); record 1 carries block 2 whole: 1000 shared.
  CHECK(lcp(a, b) == 1000);
  std::vector<hc::block_hash_record> bad{{0, 10, {1}}, {1, 600, {1}}};
  CHECK_THROWS_WITH_AS(hc::build_block_hash_trace("mc", bad, 512), doctest::Contains("records[1]"),
                       hybridcache::invalid_argument);
  std::vector<hc::block_hash_record> back{{5, 0, {1}}, {4, 0, {1}}};
  CHECK_THROWS_AS(hc::build_block_hash_trace("mc", back, 512), hybridcache::invalid_argument);
}

TEST_CASE("synthetic generators are pure functions of their options") {
  for (int kind = 0; kind < 3; ++kind) {
    auto make = [&](std::uint64_t seed) {
      const hc::synthetic_options o{.requests = 200, .length = 256, .seed = seed};
      return kind == 0   ? hc::synthetic_document_qa(o)
             : kind == 1 ? hc::synthetic_system_prompt(o)
                         : hc::synthetic_multimodal(o);
    };
    const auto a = make(4), b = make(4), c = make(5);
    REQUIRE(a.size() == b.size());
    std::vector<std::uint32_t> x, y;
    bool differs = false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      a.materialize(a.requests()[i], x);
      b.materialize(b.requests()[i], y);
      CHECK(x == y);
      c.materialize(c.requests()[i], y);
      differs = differs || x != y;
    }
    CHECK(differs);
    CHECK(a.max_length() <= 256 + 256 + 64 + 256);
  }
  CHECK_THROWS_AS(hc::synthetic_document_qa({.length = 10}), hybridcache::invalid_argument);
  const auto f = hc::cold_segments_request(11, 2400);
  CHECK(f.size() == 1);
  CHECK(f.length(f.requests()[0]) == 26400);
}

TEST_CASE("trace rejects unknown pieces and non-finite arrivals") {
  hc::trace t("x");
  CHECK_THROWS_AS(t.add_request({.pieces = {0}}), hybridcache::invalid_argument);
  const auto p = t.add_piece(std::vector<std::uint32_t>{1});
  CHECK_THROWS_AS(
      t.add_request({.pieces = {p}, .arrival = std::numeric_limits<double>::quiet_NaN()}),
      hybridcache::invalid_argument);
  CHECK(t.empty());
}

TEST_CASE("block-hash traces: blocks*block_size that would wrap is rejected, not expanded") {
  // 3 blocks of 2^63 tokens: 3*2^63 wraps to 2^63 and 2*2^63 to 0, so the old check
  // (n-1)*B < 5 <= n*B passed and the expansion asked for 2^63 tokens.
  const std::size_t huge = std::size_t{1} << 63;
  const std::vector<hc::block_hash_record> recs{
      {.timestamp_ms = 0, .input_length = 5, .hash_ids = {1, 2, 3}}};
  CHECK_THROWS_WITH_AS(hc::build_block_hash_trace("w", recs, huge), doctest::Contains("overflows"),
                       hybridcache::invalid_argument);
  // Two such blocks overflow too (2*2^63 wraps to 0).
  const std::vector<hc::block_hash_record> two{
      {.timestamp_ms = 0, .input_length = 0, .hash_ids = {1, 2}}};
  CHECK_THROWS_AS(hc::build_block_hash_trace("w", two, huge), hybridcache::invalid_argument);
}
