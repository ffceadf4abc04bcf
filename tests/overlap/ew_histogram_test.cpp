// SPDX-License-Identifier: Apache-2.0
// Histograms against the definition p̂_t ∝ Σ_s γ^{n−s} [T_s = t], evaluated directly in long double.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include <hybridcache/overlap.hpp>

namespace hc = hybridcache;

namespace {

struct reference_law {
  std::vector<long double> hit;  // per depth 1..N
  long double miss = 0;
};

/// Σ_s γ^{n−s} e_{T_s}, summed from the newest observation backwards.
reference_law reference(const std::vector<std::size_t>& depths, std::size_t max_depth,
                        double gamma) {
  reference_law r;
  r.hit.assign(max_depth, 0);
  long double g = 1;
  for (std::size_t s = depths.size(); s-- > 0;) {
    if (depths[s] == 0) {
      r.miss += g;
    } else {
      r.hit[depths[s] - 1] += g;
    }
    g *= gamma;
  }
  return r;
}

void check_against_reference(const hc::ew_histogram& h, const std::vector<std::size_t>& depths,
                             double gamma, double tol) {
  const auto ref = reference(depths, h.max_depth(), gamma);
  long double hits = 0;
  for (auto x : ref.hit) hits += x;
  const auto p = h.pmf();
  const auto w = h.weights();
  REQUIRE(p.size() == h.max_depth());
  for (std::size_t i = 0; i < p.size(); ++i) {
    REQUIRE(std::isfinite(p[i]));
    CHECK(p[i] == doctest::Approx(static_cast<double>(ref.hit[i] / hits)).epsilon(tol));
    CHECK(w[i] ==
          doctest::Approx(static_cast<double>(ref.hit[i] / (hits + ref.miss))).epsilon(tol));
  }
  CHECK(h.miss_rate() ==
        doctest::Approx(static_cast<double>(ref.miss / (hits + ref.miss))).epsilon(tol));
}

}  // namespace

TEST_CASE("ew_histogram matches the exponentially weighted definition") {
  std::mt19937 rng(1);
  for (double gamma : {0.99, 0.9, 0.5, 1.0}) {
    hc::ew_histogram h(50, gamma);
    std::vector<std::size_t> depths;
    for (int i = 0; i < 3000; ++i) {
      // Drift: the law moves from short to long depths.
      const std::size_t d =
          rng() % 10 == 0 ? 0 : 1 + (rng() % 20) + static_cast<std::size_t>(i / 100);
      depths.push_back(d);
      h.observe(d);
    }
    CHECK(h.observations() == depths.size());
    check_against_reference(h, depths, gamma, 1e-9);
  }
}

TEST_CASE("ew_histogram stays finite and exact across many renormalisation epochs") {
  // γ = 0.5: an epoch is ~600 observations, so 10^6 observations cross ~1700 epochs; bins not
  // touched for several epochs must decay to (numerically) zero, recent ones stay exact.
  std::mt19937 rng(2);
  hc::ew_histogram h(1000, 0.5);
  std::vector<std::size_t> depths;
  depths.reserve(1000000);
  for (int i = 0; i < 1000000; ++i) {
    const std::size_t d = i < 999000 ? 1 + rng() % 1000 : 1 + rng() % 7;
    depths.push_back(d);
    h.observe(d);
  }
  check_against_reference(h, depths, 0.5, 1e-9);
  // γ close to 1: epochs are long; the increment is re-anchored every 4096 steps.
  hc::ew_histogram slow(64, 0.999999);
  std::vector<std::size_t> d2;
  for (int i = 0; i < 200000; ++i) {
    d2.push_back(1 + rng() % 64);
    slow.observe(d2.back());
  }
  check_against_reference(slow, d2, 0.999999, 1e-9);
}

TEST_CASE("gamma = 1 is the empirical histogram, misses are kept apart") {
  hc::ew_histogram ew(10, 1.0);
  hc::empirical_histogram emp(10);
  std::mt19937 rng(3);
  for (int i = 0; i < 5000; ++i) {
    const std::size_t d = rng() % 11;
    ew.observe(d);
    emp.observe(d);
  }
  const auto a = ew.pmf(), b = emp.pmf();
  for (std::size_t i = 0; i < 10; ++i) CHECK(a[i] == doctest::Approx(b[i]).epsilon(1e-12));
  CHECK(ew.miss_rate() == doctest::Approx(emp.miss_rate()).epsilon(1e-12));
  std::uint64_t sum = emp.misses();
  for (auto c : emp.counts()) sum += c;
  CHECK(sum == 5000);
  CHECK(emp.observations() == 5000);
}

TEST_CASE("histograms: empty state, bad depth, bad parameters") {
  hc::ew_histogram h(8);
  CHECK(h.gamma() == 0.99);
  for (double x : h.pmf()) CHECK(x == 0.0);
  CHECK(h.miss_rate() == 0.0);
  h.observe(0);
  for (double x : h.pmf()) CHECK(x == 0.0);  // misses only: no hit law yet
  CHECK(h.miss_rate() == 1.0);
  h.observe(8);
  CHECK(h.pmf()[7] == 1.0);
  CHECK_THROWS_AS(h.observe(9), hc::invalid_argument);
  CHECK(h.observations() == 2);  // the rejected depth was not recorded
  CHECK_THROWS_AS(hc::ew_histogram(0), hc::invalid_argument);
  CHECK_THROWS_AS(hc::ew_histogram(4, 0.0), hc::invalid_argument);
  CHECK_THROWS_AS(hc::ew_histogram(4, 1.5), hc::invalid_argument);
  CHECK_THROWS_AS(hc::ew_histogram(4, std::nan("")), hc::invalid_argument);
  hc::empirical_histogram e(3);
  CHECK_THROWS_AS(e.observe(4), hc::invalid_argument);
  CHECK_THROWS_AS(hc::empirical_histogram(0), hc::invalid_argument);
  try {
    h.observe(100);
  } catch (const hc::invalid_argument& err) {
    CHECK(err.argument() == "depth");
    CHECK(err.value() == "100");
  }
}

TEST_CASE("gamma has a documented valid range [2^-1022, 1], its ends give a finite pmf") {
  CHECK(hc::ew_histogram::min_gamma == std::numeric_limits<double>::min());
  CHECK_THROWS_AS(hc::ew_histogram(4, std::numeric_limits<double>::denorm_min()),
                  hc::invalid_argument);
  CHECK_THROWS_AS(hc::ew_histogram(4, std::nextafter(hc::ew_histogram::min_gamma, 0.0)),
                  hc::invalid_argument);
  // At γ = 2^-1022 every older observation weighs ≤ 2^-1022 of the newest: the pmf is (to
  // double precision) the point mass at the last depth, finite, summing to 1.
  hc::ew_histogram h(4, hc::ew_histogram::min_gamma);
  for (std::size_t d : {1u, 2u, 4u, 3u}) h.observe(d);
  const auto p = h.pmf();
  double sum = 0.0;
  for (double x : p) {
    CHECK(std::isfinite(x));
    sum += x;
  }
  CHECK(sum == doctest::Approx(1.0));
  CHECK(p[2] == doctest::Approx(1.0));
  const auto w = h.weights();
  for (double x : w) CHECK(std::isfinite(x));
  hc::ew_histogram one(4, 1.0);  // γ = 1: the empirical law
  for (std::size_t d : {1u, 1u, 4u, 0u}) one.observe(d);
  CHECK(one.pmf()[0] == doctest::Approx(2.0 / 3.0));
  CHECK(one.weights()[0] == doctest::Approx(0.5));
}
