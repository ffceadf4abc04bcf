// SPDX-License-Identifier: Apache-2.0
// optimal_frontier against the brute force and its structural properties (V convex, nonincreasing).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <hybridcache/placement.hpp>

#include "support/placement_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("optimal_frontier equals the brute-force minimum for every budget") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t n = 1 + rng() % 13;
    const std::size_t B = 1 + rng() % 3;
    if (B > n) continue;
    std::vector<double> w(n);
    for (auto& x : w) x = rng() % 4 == 0 ? 0.0 : std::ldexp(static_cast<double>(rng() % 1000), -7);
    w[n - 1 - rng() % n] += 0.25;
    const auto ref = hybridcache_test::brute_force(w, n + 2, B);
    const auto v = hc::optimal_frontier(w, n + 2, {.granularity = B});
    REQUIRE(v.size() == n + 3);
    for (std::size_t m = 0; m <= n + 2; ++m) {
      CHECK(v[m] == doctest::Approx(static_cast<double>(ref[m].best)).epsilon(1e-12));
    }
  }
}

TEST_CASE("optimal_frontier is nonincreasing and convex, V(0) is the no-cache cost") {
  std::mt19937 rng(11);
  std::vector<double> w(2000);
  std::lognormal_distribution<double> d(0.0, 2.0);
  for (auto& x : w) x = rng() % 3 == 0 ? 0.0 : d(rng);
  const auto v = hc::optimal_frontier(w, 64);
  CHECK(v[0] == doctest::Approx(hc::no_cache_recompute(w)).epsilon(1e-12));
  for (std::size_t m = 1; m < v.size(); ++m) CHECK(v[m] <= v[m - 1] * (1 + 1e-12));
  for (std::size_t m = 1; m + 1 < v.size(); ++m) {
    CHECK(v[m - 1] - v[m] >= (v[m] - v[m + 1]) - 1e-9 * v[0]);
  }
  // Past the useful positions the frontier stays flat (here: 3 depths carry mass).
  std::vector<double> sparse(50, 0.0);
  sparse[9] = sparse[19] = sparse[49] = 1.0;
  const auto s = hc::optimal_frontier(sparse, 10);
  CHECK(s[3] == 0.0);
  CHECK(s[10] == 0.0);
  CHECK(s[2] > 0.0);
}

TEST_CASE("optimal_frontier on a long prefix agrees with the independent Lagrangian solver") {
  // N = 20000 exercises the interleaved kernel's hull compaction (more than 2 × 4096 columns).
  std::mt19937 rng(23);
  std::vector<double> w(20000);
  std::exponential_distribution<double> e(1.0);
  for (std::size_t i = 0; i < w.size(); ++i) {
    const double t = static_cast<double>(i) / 20000.0;
    w[i] = e(rng) *
           (0.05 + 5.0 * std::exp(-std::pow((t - 0.9) / 0.02, 2)) + 2.0 * std::exp(-t / 0.03));
  }
  const auto v = hc::optimal_frontier(w, 9, {.granularity = 1});
  for (std::size_t m : {1u, 4u, 9u}) {
    const auto p = hc::place_optimal(w, m, {.method = hc::placement_method::lagrangian});
    CHECK(p.checkpoints.size() == m);
    CHECK(p.expected_recompute == doctest::Approx(v[m]).epsilon(1e-10));
  }
  // And against the plain O(N^2 M) DP beyond one 4096-column step (K = 4200).
  std::vector<double> u(w.begin(), w.begin() + 4200);
  const auto ref = hybridcache_test::plain_dp(u, 1);
  const auto f = hc::optimal_frontier(u, 1);
  for (std::size_t m = 0; m <= 1; ++m) {
    CHECK(f[m] == doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-11));
  }
}
