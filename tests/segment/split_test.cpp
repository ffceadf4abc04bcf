// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/segment/split.hpp>

#include <algorithm>
#include <random>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
constexpr token_id S = 100;  // separator
constexpr token_id P = 0;    // pad
}  // namespace

TEST_CASE("split: leading, reusable and query segments with padding, positions and seams") {
  // sys(3) S doc(10) S doc(2) S query(4)
  const std::vector<token_id> t = {1, 2, 3, S, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19,
                                   S, 20, 21, S, 30, 31, 32, 33};
  const auto r =
      hc::split_request(t, {.separator = S, .block_size = 4, .pad_token = P, .seam_width = 3});
  CHECK(r.pic_enabled());
  CHECK(r.separators == 3);
  REQUIRE(r.segments.size() == 4);
  const auto& lead = r.segments[0];
  CHECK(lead.role == hc::segment_role::leading);
  CHECK(lead.begin == 0);
  CHECK(lead.end == 3);
  CHECK(lead.position == 0);
  CHECK(lead.padded_length == 4);
  CHECK(lead.head_seam == 0);  // cached whole (HYPIC §4.3)
  CHECK(lead.tail_seam == 0);
  const auto& d1 = r.segments[1];
  CHECK(d1.role == hc::segment_role::reusable);
  CHECK(d1.begin == 4);
  CHECK(d1.end == 14);
  CHECK(d1.position == 4);
  CHECK(d1.padded_length == 12);
  CHECK(d1.head_seam == 3);
  CHECK(d1.tail_seam == 3);
  CHECK(d1.interior_begin() == 7);
  CHECK(d1.interior_end() == 11);
  const auto& d2 = r.segments[2];  // shorter than 2w: head 2, tail 0
  CHECK(d2.position == 16);
  CHECK(d2.padded_length == 4);
  CHECK(d2.head_seam == 2);
  CHECK(d2.tail_seam == 0);
  const auto& q = r.segments[3];
  CHECK(q.role == hc::segment_role::query);
  CHECK_FALSE(q.cacheable());
  CHECK(q.position == 20);
  CHECK(q.padded_length == 4);  // the query is not padded
  CHECK(r.spliced_length == 24);
  const auto spliced = hc::splice_request(t, r, P);
  const std::vector<token_id> expect = {1, 2, 3, P, 10, 11, 12, 13, 14, 15, 16, 17,
                                        18, 19, P, P, 20, 21, P, P, 30, 31, 32, 33};
  CHECK(spliced == expect);
}

TEST_CASE("split: no separator is one uncached query, empty pieces give no segment") {
  const std::vector<token_id> plain = {1, 2, 3};
  const auto r = hc::split_request(plain, {.separator = S});
  CHECK_FALSE(r.pic_enabled());
  REQUIRE(r.segments.size() == 1);
  CHECK(r.segments[0].role == hc::segment_role::query);
  // HYPIC's warm-up form: a segment wrapped in two separators, nothing else.
  const std::vector<token_id> warm = {S, 5, 6, S};
  const auto w =
      hc::split_request(warm, {.separator = S, .block_size = 1, .pad_token = P, .seam_width = 8});
  REQUIRE(w.segments.size() == 1);
  CHECK(w.segments[0].role == hc::segment_role::reusable);
  CHECK(w.segments[0].begin == 1);
  CHECK(w.segments[0].end == 3);
  CHECK(w.segments[0].position == 0);
  const std::vector<token_id> empty;
  CHECK(hc::split_request(empty, {.separator = S}).segments.empty());
  const std::vector<token_id> doubled = {1, S, S, 2};
  CHECK(hc::split_request(doubled, {.separator = S}).segments.size() == 2);
}

TEST_CASE("split: properties on random requests (default seam 8)") {
  std::mt19937 rng(5);
  for (int it = 0; it < 500; ++it) {
    std::vector<token_id> t(rng() % 80);
    for (auto& x : t) x = rng() % 7 == 0 ? S : 1 + rng() % 50;
    const std::size_t b = 1 + rng() % 8;
    const auto r = hc::split_request(t, {.separator = S, .block_size = b, .pad_token = P});
    std::size_t pos = 0, covered = 0, seps = 0;
    for (auto x : t) seps += x == S;
    CHECK(r.separators == seps);
    for (std::size_t i = 0; i < r.segments.size(); ++i) {
      const auto& s = r.segments[i];
      CHECK(s.length() > 0);
      CHECK(s.position == pos);
      if (s.cacheable()) CHECK(s.padded_length % b == 0);
      CHECK(s.padded_length - s.length() < (s.cacheable() ? b : 1));
      CHECK(s.head_seam + s.tail_seam <= s.length());
      if (s.role == hc::segment_role::reusable)
        CHECK(s.head_seam == std::min<std::size_t>(8, s.length()));
      for (std::size_t k = s.begin; k < s.end; ++k) CHECK(t[k] != S);
      CHECK((s.role == hc::segment_role::query) == (s.end == t.size() || seps == 0));
      pos += s.padded_length;
      covered += s.length();
    }
    CHECK(covered + seps == t.size());
    CHECK(r.spliced_length == pos);
    CHECK(hc::splice_request(t, r, P).size() == pos);
  }
}

TEST_CASE("split: seam interior is h to n - w with h = max(w, k - 1), empty when h + w >= n") {
  for (std::size_t w : {0u, 1u, 4u, 8u}) {
    for (std::size_t k : {0u, 1u, 4u, 12u}) {
      for (std::size_t n = 1; n < 40; ++n) {
        std::vector<token_id> t{S};
        for (std::size_t i = 0; i < n; ++i) t.push_back(1);
        t.push_back(S);
        const auto r = hc::split_request(t, {.separator = S, .seam_width = w, .conv_kernel = k});
        REQUIRE(r.segments.size() == 1);
        const auto& s = r.segments[0];
        const std::size_t h = std::max<std::size_t>(w, k > 1 ? k - 1 : 0);
        const std::size_t ib = s.interior_begin() - s.begin, ie = s.interior_end() - s.begin;
        if (h + w < n) {
          CHECK(ib == h);
          CHECK(ie == n - w);
        } else {
          CHECK(ib == ie);
        }
      }
    }
  }
}

TEST_CASE("split rejects bad options") {
  const std::vector<token_id> t = {1, S, 2};
  CHECK_THROWS_AS(hc::split_request(t, {.separator = S, .block_size = 0}),
                  hybridcache::invalid_argument);
  CHECK_THROWS_AS(hc::split_request(t, {.separator = S, .block_size = 4, .pad_token = S}),
                  hybridcache::invalid_argument);
}
