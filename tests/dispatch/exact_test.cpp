// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <hybridcache/dispatch.hpp>
#include <random>
#include <vector>

#include "support/dispatch_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("exact_assign equals brute force over all m^n assignments") {
  std::mt19937_64 rng(3);
  std::uniform_int_distribution<int> small(1, 20);
  std::uniform_real_distribution<double> real(0.1, 50.0);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t m = static_cast<std::size_t>(1 + trial % 4);
    const std::size_t n = static_cast<std::size_t>(trial % (m == 4 ? 8 : 10));
    std::vector<double> c(n);
    for (auto& x : c) x = trial % 2 ? real(rng) : static_cast<double>(small(rng));
    const auto opt = hc::exact_assign(c, m);
    CHECK(opt.makespan == doctest::Approx(hcref::brute_force_makespan(c, m)));
    // The returned assignment really achieves the reported makespan and loads.
    REQUIRE(opt.worker_of.size() == n);
    CHECK(opt.makespan == doctest::Approx(hcref::makespan_of(c, opt.worker_of, m)));
    std::vector<double> load(m, 0.0);
    for (std::size_t i = 0; i < n; ++i) load[opt.worker_of[i]] += c[i];
    for (std::size_t w = 0; w < m; ++w) CHECK(opt.load[w] == doctest::Approx(load[w]));

    std::vector<double> speeds(m);
    for (auto& s : speeds) s = 0.5 + static_cast<double>(small(rng)) / 10.0;
    const auto rel = hc::exact_assign(c, speeds);
    CHECK(rel.makespan == doctest::Approx(hcref::brute_force_makespan(c, m, &speeds)));
    CHECK(rel.makespan == doctest::Approx(hcref::makespan_of(c, rel.worker_of, m, &speeds)));
    CHECK(rel.makespan <= hc::lpt_assign(c, speeds).makespan + 1e-9);
  }
}

TEST_CASE("exact_assign handles n = 20 quickly and rejects n > the limit") {
  std::mt19937_64 rng(5);
  std::lognormal_distribution<double> len(5.0, 0.8);
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t m : {2u, 3u, 4u, 8u}) {
    std::vector<double> c(20);
    for (auto& x : c) x = std::round(len(rng));
    const auto opt = hc::exact_assign(c, m);
    const auto lpt = hc::lpt_assign(c, m);
    CHECK(opt.makespan <= lpt.makespan);
    double sum = 0.0;
    for (double x : c) sum += x;
    CHECK(opt.makespan >= sum / static_cast<double>(m) - 1e-9);
  }
  MESSAGE("n = 20 exact solves took "
          << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  const std::vector<double> too_many(hc::exact_assign_max_segments + 1, 1.0);
  CHECK_THROWS_AS(hc::exact_assign(too_many, 2), hc::invalid_argument);
  const std::vector<double> ok{1.0};
  CHECK_THROWS_AS(hc::exact_assign(ok, 0), hc::invalid_argument);
}
