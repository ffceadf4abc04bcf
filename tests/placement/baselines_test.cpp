// SPDX-License-Identifier: Apache-2.0
// The Table 1 baselines (positions from their definitions) and the metrics against the reference
// evaluator.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include <hybridcache/placement.hpp>

#include "support/placement_reference.hpp"

namespace hc = hybridcache;
using V = std::vector<std::size_t>;

namespace {
bool strictly_increasing_in(const V& c, std::size_t n) {
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (c[i] == 0 || c[i] > n || (i > 0 && c[i] <= c[i - 1])) return false;
  }
  return true;
}
/// Largest gap (c_0 = 0, c_{M+1} = N + 1) minus one: the worst-case recompute.
std::size_t worst_case(const V& c, std::size_t n) {
  std::size_t prev = 0, worst = 0;
  for (std::size_t x : c) {
    worst = std::max(worst, x - prev - 1);
    prev = x;
  }
  return std::max(worst, n + 1 - prev - 1);
}
}  // namespace

TEST_CASE("balanced: floor(i(N+1)/(M+1)), worst case ceil((N+1)/(M+1)) - 1 (Theorem 1.2)") {
  CHECK(hc::place_balanced(99, 3) == V{25, 50, 75});
  CHECK(hc::place_balanced(10, 0).empty());
  CHECK(hc::place_balanced(5, 5) == V{1, 2, 3, 4, 5});
  CHECK(hc::place_balanced(5, 50) == hc::place_dense(5));  // clamped to N
  for (std::size_t n : {1u, 13u, 1000u, 4097u}) {
    for (std::size_t m : {1u, 2u, 7u, 64u}) {
      const auto c = hc::place_balanced(n, m);
      REQUIRE(strictly_increasing_in(c, n));
      const std::size_t mm = std::min(m, n);
      CHECK(c.size() == mm);
      for (std::size_t i = 1; i <= mm; ++i) CHECK(c[i - 1] == i * (n + 1) / (mm + 1));
      CHECK(worst_case(c, n) == (n + 1 + mm) / (mm + 1) - 1);
    }
  }
}

TEST_CASE("block, sqrt, dense, none") {
  CHECK(hc::place_block(10, 3) == V{3, 6, 9});
  CHECK(hc::place_block(2, 3).empty());
  CHECK(hc::place_sqrt(10) == V{3, 6, 9});
  CHECK(hc::place_sqrt(16) == V{4, 8, 12, 16});
  CHECK(hc::place_sqrt(1) == V{1});
  CHECK(hc::place_dense(3) == V{1, 2, 3});
  CHECK(hc::place_none(3).empty());
  const std::vector<double> w(100, 1.0);
  CHECK(hc::expected_recompute(w, hc::place_dense(100)) == 0.0);
  // Tail recompute of Table 1: N mod B for the block grid.
  const auto c = hc::place_block(100, 7);
  CHECK(100 - c.back() == 100 % 7);
}

TEST_CASE("logarithmic: M strictly increasing positions whose gaps grow geometrically") {
  for (std::size_t n : {10u, 1000u, 100000u}) {
    for (std::size_t m : {1u, 3u, 8u, 40u}) {
      const auto c = hc::place_logarithmic(n, m);
      REQUIRE(strictly_increasing_in(c, n));
      CHECK(c.size() == std::min(m, n));
      if (m <= 8 && n >= 1000) {
        // Positions follow (N+1)^{i/(M+1)} (up to the floor).
        for (std::size_t i = 1; i <= m; ++i) {
          const double x = std::pow(static_cast<double>(n + 1), static_cast<double>(i) / (m + 1));
          CHECK(std::abs(static_cast<double>(c[i - 1]) - x) <= 1.0);
        }
        // Gaps (from 0) are nondecreasing.
        std::size_t prev = 0, gap = 0;
        for (std::size_t x : c) {
          CHECK(x - prev >= gap);
          gap = x - prev;
          prev = x;
        }
      }
    }
  }
  CHECK(hc::place_logarithmic(4, 9) == hc::place_dense(4));
}

TEST_CASE("clip_to_granularity rounds down to block boundaries and drops 0 and duplicates") {
  CHECK(hc::clip_to_granularity(V{3, 9, 10, 31}, 8) == V{8, 24});
  CHECK(hc::clip_to_granularity(V{16, 17}, 16) == V{16});
}

TEST_CASE("expected_recompute, savings and reduction match the reference evaluator") {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 20; ++trial) {
    const std::size_t n = 1 + rng() % 200;
    std::vector<double> w(n);
    for (auto& x : w) x = rng() % 4 == 0 ? 0.0 : static_cast<double>(rng() % 1000) / 7.0;
    w[rng() % n] += 1.0;
    const auto c = hc::place_balanced(n, rng() % 10);
    const double er = static_cast<double>(hybridcache_test::recompute(w, c));
    const double nc = static_cast<double>(hybridcache_test::recompute(w, {}));
    CHECK(hc::expected_recompute(w, c) == doctest::Approx(er).epsilon(1e-13));
    CHECK(hc::no_cache_recompute(w) == doctest::Approx(nc).epsilon(1e-13));
    CHECK(hc::savings(w, c) == doctest::Approx(1.0 - er / nc).epsilon(1e-12));
    if (er > 0) CHECK(hc::reduction(w, c) == doctest::Approx(nc / er).epsilon(1e-12));
  }
  // Normalisation: scaling the weights changes nothing.
  const std::vector<double> a = {1, 2, 3, 4}, b = {1e300, 2e300, 3e300, 4e300};
  const V c = {2};
  CHECK(hc::expected_recompute(a, c) == hc::expected_recompute(b, c));
  CHECK(hc::reduction(std::vector<double>{0, 0, 1}, V{3}) ==
        std::numeric_limits<double>::infinity());
  CHECK(hc::savings(std::vector<double>{0, 0, 1}, V{3}) == 1.0);
}

TEST_CASE("uniform_optimal_recompute is Theorem 1's closed form") {
  for (std::size_t n : {1u, 5u, 64u, 1000u}) {
    for (std::size_t m : {0u, 1u, 4u, 63u, 5000u}) {
      CHECK(hc::uniform_optimal_recompute(n, m) ==
            doctest::Approx(static_cast<double>(hybridcache_test::theorem1(n, std::min(m, n)))));
    }
  }
  // N/(2(M+1)) + O(1).
  CHECK(std::abs(hc::uniform_optimal_recompute(1000000, 9) - 1e6 / 20) < 1.0);
}
