// SPDX-License-Identifier: Apache-2.0
// place_optimal against the brute force (N ≤ 14) and the plain O(N²M) DP (N ≤ 400).
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include <hybridcache/placement.hpp>

#include "support/placement_reference.hpp"

namespace hc = hybridcache;
using hybridcache_test::brute_force;
using hybridcache_test::plain_dp;
using hybridcache_test::recompute;

namespace {

constexpr hc::placement_method methods[] = {
    hc::placement_method::automatic, hc::placement_method::cht, hc::placement_method::lagrangian};

/// Random weights with zero stretches and a few spikes.
std::vector<double> random_weights(std::mt19937& rng, std::size_t n, bool integer) {
  std::vector<double> w(n);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (auto& x : w) {
    const double r = u(rng);
    if (r < 0.35) {
      x = 0.0;
    } else if (integer) {
      x = static_cast<double>(rng() % 20);
    } else {
      x = u(rng) * (r > 0.95 ? 50.0 : 1.0);
    }
  }
  w[rng() % n] += 1.0;
  return w;
}

void check_plan(const std::vector<double>& w, const hc::placement& p, std::size_t B) {
  std::size_t last = 0;
  for (std::size_t c : p.checkpoints) {
    CHECK(c > last);
    CHECK(c <= w.size());
    CHECK(c % B == 0);
    last = c;
  }
  // The reported E[r] is the E[r] of the reported positions.
  CHECK(static_cast<double>(recompute(w, p.checkpoints)) ==
        doctest::Approx(p.expected_recompute).epsilon(1e-12));
}

/// Number of candidate blocks with mass: the checkpoints an optimal plan may use at most.
std::size_t useful(const std::vector<double>& w, std::size_t B) {
  std::size_t u = 0;
  for (std::size_t c = B; c <= w.size(); c += B) {
    double m = 0;
    for (std::size_t t = c; t < c + B && t <= w.size(); ++t) m += w[t - 1];
    u += m > 0 ? 1 : 0;
  }
  return u;
}

}  // namespace

TEST_CASE("place_optimal matches brute force over all subsets (N <= 14, B = 1)") {
  std::mt19937 rng(42);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t n = trial % 8 == 0 ? 14 : 1 + rng() % 12;  // keeps ASan runs short
    const auto w = random_weights(rng, n, trial % 2 == 0);
    const auto ref = brute_force(w, n + 1);
    for (std::size_t m = 0; m <= n + 1; ++m) {
      for (auto method : methods) {
        const auto p = hc::place_optimal(w, m, {.granularity = 1, .method = method});
        check_plan(w, p, 1);
        CHECK(p.expected_recompute ==
              doctest::Approx(static_cast<double>(ref[m].best)).epsilon(1e-12));
        CHECK(p.checkpoints.size() == std::min(m, useful(w, 1)));
      }
    }
  }
}

TEST_CASE("place_optimal matches brute force with granularity (candidates B, 2B, ...)") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    const std::size_t n = 2 + rng() % 30;
    const std::size_t B = 2 + rng() % (n - 1);  // 2..n
    if (n / B > 14) continue;
    const auto w = random_weights(rng, n, trial % 2 == 1);
    const auto ref = brute_force(w, n / B + 1, B);
    for (std::size_t m = 0; m <= n / B + 1; ++m) {
      for (auto method : methods) {
        const auto p = hc::place_optimal(w, m, {.granularity = B, .method = method});
        check_plan(w, p, B);
        CHECK(p.expected_recompute ==
              doctest::Approx(static_cast<double>(ref[m].best)).epsilon(1e-12));
        CHECK(p.checkpoints.size() == std::min(m, useful(w, B)));
        CHECK(p.checkpoints.size() == ref[m].fewest);
      }
    }
  }
}

TEST_CASE("place_optimal and optimal_frontier match the plain O(N^2 M) DP (N <= 400)") {
  std::mt19937 rng(2026);
  for (int trial = 0; trial < 8; ++trial) {
    const std::size_t n = 50 + rng() % 351;
    const std::size_t B = trial % 3 == 0 ? 1 + rng() % 16 : 1;
    const auto w = random_weights(rng, n, trial % 2 == 0);
    const std::size_t max_m = 12;
    const auto ref = plain_dp(w, max_m, B);
    const auto frontier = hc::optimal_frontier(w, max_m, {.granularity = B});
    REQUIRE(frontier.size() == max_m + 1);
    for (std::size_t m = 0; m <= max_m; ++m) {
      CHECK(frontier[m] == doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-11));
      for (auto method : methods) {
        const auto p = hc::place_optimal(w, m, {.granularity = B, .method = method});
        check_plan(w, p, B);
        CHECK(p.expected_recompute == doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-11));
      }
    }
  }
}

TEST_CASE("cht and lagrangian agree bit for bit on integer weights, at large budgets too") {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 6; ++trial) {
    const std::size_t n = 300 + rng() % 200;
    const auto w = random_weights(rng, n, true);
    for (std::size_t m : {1u, 2u, 5u, 17u, 40u, 120u}) {
      const auto a = hc::place_optimal(w, m, {.method = hc::placement_method::cht});
      const auto b = hc::place_optimal(w, m, {.method = hc::placement_method::lagrangian});
      CHECK(a.expected_recompute == b.expected_recompute);
      CHECK(a.checkpoints.size() == b.checkpoints.size());
    }
  }
}

TEST_CASE("uniform overlap: the optimum equals Theorem 1 and balanced attains it") {
  for (std::size_t n : {1u, 2u, 7u, 100u, 257u}) {
    const std::vector<double> w(n, 3.0);
    for (std::size_t m : {0u, 1u, 2u, 3u, 9u, 31u}) {
      const double thm = static_cast<double>(hybridcache_test::theorem1(n, std::min(m, n)));
      CHECK(hc::uniform_optimal_recompute(n, m) == doctest::Approx(thm).epsilon(1e-14));
      for (auto method : methods) {
        const auto p = hc::place_optimal(w, m, {.method = method});
        CHECK(p.expected_recompute == doctest::Approx(thm).epsilon(1e-12));
      }
      CHECK(hc::expected_recompute(w, hc::place_balanced(n, m)) ==
            doctest::Approx(thm).epsilon(1e-12));
    }
  }
}

TEST_CASE("special distributions: single point, all mass at N, spike + zero mass") {
  SUBCASE("single point mass: one checkpoint on it removes all recompute") {
    std::vector<double> w(100, 0.0);
    w[36] = 2.5;  // depth 37
    const auto p = hc::place_optimal(w, 5);
    REQUIRE(p.checkpoints.size() == 1);
    CHECK(p.checkpoints[0] == 37);
    CHECK(p.expected_recompute == 0.0);
    // With B = 8 the best candidate is 32 (the largest multiple of 8 below 37).
    const auto q = hc::place_optimal(w, 5, {.granularity = 8});
    REQUIRE(q.checkpoints.size() == 1);
    CHECK(q.checkpoints[0] == 32);
    CHECK(q.expected_recompute == doctest::Approx(5.0));
  }
  SUBCASE("all mass at N") {
    std::vector<double> w(64, 0.0);
    w.back() = 1.0;
    for (std::size_t m : {1u, 3u, 100u}) {
      const auto p = hc::place_optimal(w, m);
      REQUIRE(p.checkpoints.size() == 1);
      CHECK(p.checkpoints[0] == 64);
      CHECK(hc::reduction(w, p.checkpoints) == std::numeric_limits<double>::infinity());
    }
    CHECK(hc::place_optimal(w, 0).expected_recompute == 64.0);
  }
  SUBCASE("spike near the end and mass at short depths (document QA + system prompt shapes)") {
    std::mt19937 rng(5);
    std::vector<double> w(300, 0.0);
    for (std::size_t t = 280; t < 300; ++t) w[t] = 10.0 + static_cast<double>(rng() % 5);
    for (std::size_t t = 10; t < 40; ++t) w[t] = static_cast<double>(rng() % 3);
    const auto ref = plain_dp(w, 6);
    for (std::size_t m = 0; m <= 6; ++m) {
      for (auto method : methods) {
        CHECK(hc::place_optimal(w, m, {.method = method}).expected_recompute ==
              doctest::Approx(static_cast<double>(ref[m])).epsilon(1e-12));
      }
    }
  }
  SUBCASE("mass only below B: nothing can help") {
    std::vector<double> w(40, 0.0);
    w[3] = 1.0;  // depth 4 < B = 10
    const auto p = hc::place_optimal(w, 3, {.granularity = 10});
    CHECK(p.checkpoints.empty());
    CHECK(p.expected_recompute == 4.0);
  }
}

TEST_CASE("budget semantics: 0 gives the no-cache cost, >= N gives every useful position") {
  std::vector<double> w = {0, 2, 0, 0, 1, 1, 0, 3};
  const auto none = hc::place_optimal(w, 0);
  CHECK(none.checkpoints.empty());
  CHECK(none.expected_recompute == doctest::Approx(hc::no_cache_recompute(w)));
  for (std::size_t m : {w.size(), w.size() + 5, std::size_t{1} << 40}) {
    const auto all = hc::place_optimal(w, m);
    CHECK(all.checkpoints == std::vector<std::size_t>{2, 5, 6, 8});
    CHECK(all.expected_recompute == 0.0);
  }
  // With B = 3 the candidates are 3 and 6; both blocks carry mass.
  const auto blk = hc::place_optimal(w, 99, {.granularity = 3});
  CHECK(blk.checkpoints == std::vector<std::size_t>{3, 6});
  CHECK(blk.expected_recompute == doctest::Approx(static_cast<double>(recompute(w, {3, 6}))));
}
