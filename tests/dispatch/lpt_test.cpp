// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cmath>
#include <hybridcache/dispatch.hpp>
#include <limits>
#include <random>
#include <vector>

#include "support/dispatch_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("lpt_assign matches a textbook LPT on random instances, identical and related") {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> cost(0.0, 100.0);
  std::uniform_int_distribution<int> small(1, 9);
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t n = static_cast<std::size_t>(trial % 40);
    const std::size_t m = static_cast<std::size_t>(1 + trial % 7);
    std::vector<double> c(n);
    // Half the trials use small integers so equal costs and equal loads (ties) are common.
    for (auto& x : c) x = trial % 2 ? cost(rng) : static_cast<double>(small(rng));
    std::vector<double> ref_load;
    const auto ref = hcref::naive_lpt(c, m, &ref_load);
    const auto a = hc::lpt_assign(c, m);
    REQUIRE(a.worker_of == ref);
    REQUIRE(a.load.size() == m);
    for (std::size_t w = 0; w < m; ++w) CHECK(a.load[w] == doctest::Approx(ref_load[w]));
    CHECK(a.makespan == doctest::Approx(hcref::makespan_of(c, ref, m)));

    std::vector<double> speeds(m);
    for (auto& s : speeds) s = 0.5 + static_cast<double>(small(rng)) / 4.0;
    const auto rel = hc::lpt_assign(c, speeds);
    CHECK(rel.worker_of == hcref::naive_lpt(c, m, nullptr, &speeds));
    CHECK(rel.makespan == doctest::Approx(hcref::makespan_of(c, rel.worker_of, m, &speeds)));
    // Equal speeds reduce to the identical-worker greedy.
    const std::vector<double> ones(m, 1.0);
    CHECK(hc::lpt_assign(c, ones).worker_of == a.worker_of);
  }
}

TEST_CASE("ties are deterministic: lower segment first, lower worker first") {
  const std::vector<double> c{5, 5, 5, 5};
  const auto a = hc::lpt_assign(c, 2);
  CHECK(a.worker_of == std::vector<std::size_t>{0, 1, 0, 1});
  CHECK(a.makespan == 10.0);
  const std::vector<double> c2{3, 7, 3};  // 7 -> w0, first 3 -> w1, second 3 -> w1 (3 < 7)
  CHECK(hc::lpt_assign(c2, 2).worker_of == std::vector<std::size_t>{1, 0, 1});
}

TEST_CASE("Graham's tight instance reaches exactly 4/3 - 1/(3m)") {
  for (std::size_t m = 2; m <= 6; ++m) {
    // Jobs 2m-1, 2m-1, 2m-2, 2m-2, ..., m+1, m+1, m, m, m: LPT = 4m-1, OPT = 3m.
    std::vector<double> c;
    for (std::size_t v = 2 * m - 1; v >= m + 1; --v) c.insert(c.end(), 2, static_cast<double>(v));
    c.insert(c.end(), 3, static_cast<double>(m));
    const auto a = hc::lpt_assign(c, m);
    CHECK(a.makespan == static_cast<double>(4 * m - 1));
    const auto opt = hc::exact_assign(c, m);
    CHECK(opt.makespan == static_cast<double>(3 * m));
    CHECK(a.makespan / opt.makespan == doctest::Approx(hc::lpt_ratio_bound(m)));
  }
}

TEST_CASE("LPT stays within 4/3 - 1/(3m) of the exact optimum on random instances") {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> u(1.0, 100.0);
  std::lognormal_distribution<double> heavy(4.0, 1.0);
  double worst = 1.0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t m = static_cast<std::size_t>(2 + trial % 5);
    const std::size_t n = static_cast<std::size_t>(m + 1 + trial % (15 - m));
    std::vector<double> c(n);
    for (auto& x : c) x = trial % 3 == 0 ? heavy(rng) : u(rng);
    const auto a = hc::lpt_assign(c, m);
    const auto opt = hc::exact_assign(c, m);
    REQUIRE(opt.makespan > 0.0);
    const double ratio = a.makespan / opt.makespan;
    CHECK(ratio >= 1.0 - 1e-12);
    CHECK(ratio <= hc::lpt_ratio_bound(m) + 1e-12);
    worst = std::max(worst, ratio);
  }
  MESSAGE("worst LPT/OPT on 400 random instances: " << worst);
}

TEST_CASE("edge cases: no segments, more workers than segments, zero costs") {
  const std::vector<double> none;
  auto a = hc::lpt_assign(none, 3);
  CHECK(a.worker_of.empty());
  CHECK(a.load == std::vector<double>(3, 0.0));
  CHECK(a.makespan == 0.0);
  const std::vector<double> two{4.0, 9.0};
  a = hc::lpt_assign(two, 5);
  CHECK(a.worker_of == std::vector<std::size_t>{1, 0});
  CHECK(a.makespan == 9.0);
  const std::vector<double> zeros(4, 0.0);
  CHECK(hc::lpt_assign(zeros, 2).makespan == 0.0);
}

TEST_CASE("bad input names the argument and the value") {
  const std::vector<double> ok{1.0, 2.0};
  CHECK_THROWS_AS(hc::lpt_assign(ok, 0), hc::invalid_argument);
  try {
    hc::lpt_assign(ok, 0);
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "workers");
    CHECK(e.value() == "0");
  }
  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    const std::vector<double> c{1.0, bad, 3.0};
    try {
      hc::lpt_assign(c, 2);
      FAIL("expected a throw");
    } catch (const hc::invalid_argument& e) {
      CHECK(e.argument() == "costs[1]");
    }
  }
  const std::vector<double> no_speeds;
  CHECK_THROWS_AS(hc::lpt_assign(ok, no_speeds), hc::invalid_argument);
  const std::vector<double> zero_speed{1.0, 0.0};
  CHECK_THROWS_AS(hc::lpt_assign(ok, zero_speed), hc::invalid_argument);
  const std::vector<double> nan_speed{std::nan("")};
  CHECK_THROWS_AS(hc::lpt_assign(ok, nan_speed), hc::invalid_argument);
  CHECK_THROWS_AS(hc::lpt_ratio_bound(0), hc::invalid_argument);
  CHECK_THROWS_AS(hc::lpt_assign(ok, 0), hc::error);  // catchable as the base type
}

TEST_CASE("prefill_cost_model: a·L + b·L² + overhead, transfer, hybrid stack") {
  hc::prefill_cost_model m{.per_token = 2.0, .per_token_sq = 0.5, .overhead = 10.0,
                           .transfer_per_token = 0.25, .transfer_overhead = 1.0};
  CHECK(m.cost(0) == 10.0);
  CHECK(m.cost(4) == 10.0 + 8.0 + 8.0);
  CHECK(m.transfer(8) == 3.0);
  const std::vector<std::size_t> lens{1, 2, 3};
  const auto c = hc::segment_costs(lens, m);
  CHECK(c == std::vector<double>{12.5, 16.0, 20.5});
  const auto h = hc::prefill_cost_model::hybrid_stack(3, 1.0, 1, 2.0, 0.01, 5.0);
  CHECK(h.per_token == 5.0);
  CHECK(h.per_token_sq == 0.01);
  CHECK(h.overhead == 5.0);
  m.per_token_sq = -1.0;
  CHECK_THROWS_AS(m.validate(), hc::invalid_argument);
  CHECK_THROWS_AS(hc::segment_costs(lens, m), hc::invalid_argument);
  CHECK_THROWS_AS(hc::prefill_cost_model::hybrid_stack(1, std::nan(""), 1, 1, 1),
                  hc::invalid_argument);
}
