// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cmath>
#include <hybridcache/select/selection.hpp>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "support/select_reference.hpp"

namespace hc = hybridcache;

namespace {
std::set<std::size_t> as_set(const std::vector<std::size_t>& v) { return {v.begin(), v.end()}; }
}  // namespace

TEST_CASE("select_tokens matches the set-based reference on random layouts") {
  std::mt19937_64 rng(8);
  std::uniform_int_distribution<int> seg_len(1, 40), gap(0, 12), coin(0, 1);
  std::uniform_real_distribution<double> score(0.0, 1.0);
  for (int trial = 0; trial < 300; ++trial) {
    // Alternate reused segments and non-reuse gaps (gaps may be 0: adjacent reused segments).
    std::vector<hc::token_range> reused;
    std::vector<std::pair<std::size_t, std::size_t>> ref_ranges;
    std::size_t t = static_cast<std::size_t>(coin(rng) ? gap(rng) : 0);
    const int segs = trial % 6;
    for (int s = 0; s < segs; ++s) {
      const std::size_t len = static_cast<std::size_t>(seg_len(rng)) * (trial % 3 == 0 ? 4 : 1);
      reused.push_back({t, t + len});
      ref_ranges.emplace_back(t, t + len);
      t += len + static_cast<std::size_t>(gap(rng));
    }
    const std::size_t tail_gap = static_cast<std::size_t>(coin(rng) ? gap(rng) : 0);
    const std::size_t t_len = std::max<std::size_t>(t + tail_gap, 1);
    if (!reused.empty() && reused.back().end > t_len) continue;
    std::vector<double> s(t_len);
    for (auto& x : s) x = trial % 4 == 0 ? std::round(score(rng) * 4) / 4 : score(rng);  // ties
    const std::size_t k = static_cast<std::size_t>(trial % 17);
    const std::size_t block = static_cast<std::size_t>(1 + trial % 8);
    const std::size_t fallback = trial % 5 == 0 ? 3 : 64;
    const auto got = hc::select_tokens(
        s, reused, {.top_k = k, .block_size = block, .fallback_tokens = fallback});
    const auto want = hcref::select(s, ref_ranges, k, block, fallback);
    CHECK(as_set(got.non_reuse) == want.non_reuse);
    CHECK(as_set(got.key) == want.key);
    CHECK(as_set(got.overflow) == want.overflow);
    CHECK(as_set(got.tail) == want.tail);
    CHECK(as_set(got.recompute) == want.recompute);
    REQUIRE(got.recompute_mask.size() == t_len);
    for (std::size_t j = 0; j < t_len; ++j)
      CHECK(static_cast<bool>(got.recompute_mask[j]) == (want.recompute.count(j) == 1));
    for (std::size_t i = 1; i < got.key.size(); ++i) CHECK(s[got.key[i - 1]] >= s[got.key[i]]);
    CHECK(std::is_sorted(got.recompute.begin(), got.recompute.end()));
  }
}

TEST_CASE("SparseX layout: instruction, two passages, question, and a reused tail") {
  // [0,8) instruction | [8,40) passage A | [40,72) passage B | [72,80) question.
  std::vector<double> s(80, 0.001);
  s[20] = 0.5;  // a key token in passage A
  s[8] = 0.4;   // already covered by overflow
  const std::vector<hc::token_range> reused{{8, 40}, {40, 72}};
  auto sel = hc::select_tokens(s, reused, {.top_k = 2, .block_size = 4});
  CHECK(sel.key == std::vector<std::size_t>{20, 8});
  CHECK(sel.overflow == std::vector<std::size_t>{8, 9, 10, 11, 68, 69, 70, 71});
  CHECK(sel.tail.empty());  // the prompt ends in non-reuse tokens
  CHECK(sel.recompute.size() == 8 + 8 + 1 + 8);
  // Now the passages come last: no sparse-Q token at the tail -> the last 64 reused tokens of B
  // (B has only 32, so all of them).
  std::vector<double> s2(72, 0.0);
  const std::vector<hc::token_range> tail_reused{{8, 40}, {40, 72}};
  sel = hc::select_tokens(s2, tail_reused, {.top_k = 0, .block_size = 4});
  CHECK(sel.tail.size() == 32);
  CHECK(sel.tail.front() == 40);
  sel = hc::select_tokens(s2, tail_reused, {.top_k = 0, .block_size = 4, .fallback_tokens = 10});
  CHECK(sel.tail == std::vector<std::size_t>{62, 63, 64, 65, 66, 67, 68, 69, 70, 71});
}

TEST_CASE("select_tokens: k larger than the reused set is clamped, nothing reused") {
  const std::vector<double> s{0.1, 0.2, 0.3, 0.4};
  const std::vector<hc::token_range> one{{1, 3}};
  auto sel = hc::select_tokens(s, one, {.top_k = 100, .block_size = 1});
  CHECK(sel.key == std::vector<std::size_t>{2, 1});
  sel = hc::select_tokens(s, {}, {.top_k = 3});
  CHECK(sel.key.empty());
  CHECK(sel.recompute.size() == 4);
  CHECK(hc::non_reuse_positions(one, 4) == std::vector<std::size_t>{0, 3});
}

TEST_CASE("select_tokens rejects bad ranges, scores and block size") {
  const std::vector<double> s(10, 0.1);
  auto bad = [&](std::vector<hc::token_range> r, const char* arg) {
    try {
      hc::select_tokens(s, r, {.top_k = 1});
      return false;
    } catch (const hc::invalid_argument& e) {
      return e.argument() == arg;
    }
  };
  CHECK(bad({{3, 3}}, "reused[0].end"));
  CHECK(bad({{3, 11}}, "reused[0].end"));
  CHECK(bad({{4, 6}, {5, 8}}, "reused[1].begin"));
  CHECK(bad({{6, 8}, {1, 2}}, "reused[1].begin"));
  std::vector<double> nan_s(10, 0.1);
  nan_s[4] = std::nan("");
  CHECK_THROWS_AS(hc::select_tokens(nan_s, {}, {}), hc::invalid_argument);
  nan_s[4] = -0.5;
  CHECK_THROWS_AS(hc::select_tokens(nan_s, {}, {}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::select_tokens(s, {}, {.block_size = 0}), hc::invalid_argument);
}
