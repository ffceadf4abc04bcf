// SPDX-License-Identifier: Apache-2.0
// npy files and the derived tolerances of state/tolerance.hpp: the bound must hold for the
// library's float32 evaluation of every family against the double reference (an upper bound that
// can fail: a candidate one step past it fails), must not be vacuous, and γ/element tolerances
// follow their closed forms.
#include <doctest/doctest.h>

#include <hybridcache/state/npy.hpp>
#include <hybridcache/state/outputs.hpp>
#include <hybridcache/state/tolerance.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "support/state_family_reference.hpp"

namespace {
std::string tmp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("hc_verification_" + name)).string();
}
}  // namespace

TEST_CASE("npy: round trip, numpy's exact header, and errors") {
  const std::vector<float> x{1.5f, -2.25f, 3.0f, 0.0f, 1e-3f, 7.0f};
  const auto p = tmp_path("a.npy");
  hc::npy::save<float>(p, x, {2, 3});
  const auto a = hc::npy::load(p);
  CHECK(a.descr == "<f4");
  CHECK(a.shape == std::vector<std::size_t>{2, 3});
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(a.values[i] == static_cast<double>(x[i]));
  // numpy.save(np.zeros(3)) writes a 128-byte header (magic, version, length 118, the dict padded
  // with spaces, '\n') then 24 data bytes; checked byte for byte against numpy 2.4.
  hc::npy::save<double>(p, std::vector<double>(3, 0.0), {3});
  std::ifstream f(p, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  CHECK(bytes.size() == 128 + 24);
  CHECK(bytes.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  CHECK(bytes.substr(10, 60) == "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }   ");
  CHECK(bytes[127] == '\n');
  CHECK_THROWS_WITH_AS(hc::npy::load(tmp_path("missing.npy")), doctest::Contains("missing"),
                       hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::npy::save<float>(p, x, {4}), doctest::Contains("values.size()"),
                       hybridcache::invalid_argument);
  std::filesystem::remove(p);
}

TEST_CASE("tolerance: gamma, unit roundoffs, element tolerance, check_close") {
  CHECK(hc::gamma_of(0.5) == 1.0);
  CHECK(std::isinf(hc::gamma_of(1.0)));
  CHECK(hc::unit_roundoff(hc::precision::fp32) == std::ldexp(1.0, -24));
  CHECK(hc::unit_roundoff(hc::precision::bf16) == std::ldexp(1.0, -8));
  CHECK(hc::parse_precision("bfloat16") == hc::precision::bf16);
  CHECK(!hc::parse_precision("int8"));
  const hc::error_model m{};  // all fp32
  const double u = std::ldexp(1.0, -24);
  CHECK(hc::element_tolerance(2.0, 10.0, 3.0, -4.0, m) ==
        doctest::Approx(10 * u / (1 - 10 * u) * 2.0 + 4.0 * u).epsilon(1e-9));
  const hc::error_model bf{hc::precision::fp32, hc::precision::bf16, hc::precision::bf16};
  CHECK(hc::element_tolerance(1.0, 10.0, 3.0, 0.0, bf) >
        hc::element_tolerance(1.0, 10.0, 0.0, 0.0, bf));
  const std::vector<double> ref{1, 2, 3}, tol{0.1, 0.1, 0.1};
  CHECK(hc::check_close(std::vector<double>{1.05, 2, 3}, ref, tol).passed());
  const auto r = hc::check_close(std::vector<double>{1, 2.2, NAN}, ref, tol);
  CHECK(r.failures == 2);
  CHECK(std::isinf(r.max_ratio));
  CHECK_THROWS_AS(hc::check_close(std::vector<double>{1}, ref, tol), hybridcache::invalid_argument);
}

TEST_CASE(
    "tolerance: the derived bound holds for float32 runs of every family and is tight enough") {
  std::mt19937_64 rng(23);
  const std::size_t L = 200, dk = 8, dv = 5;
  const hc::error_model m{};
  const auto check = [&](const std::vector<float>& got, const std::vector<double>& ref,
                         const std::vector<double>& weight, double depth_of_last, double steps) {
    double worst = 0, rel = 0, norm = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
      const double tol = hc::element_tolerance(weight[i], depth_of_last, steps, ref[i], m);
      worst = std::max(worst, std::fabs(got[i] - ref[i]) / tol);
      rel = std::max(rel, tol);
      norm = std::max(norm, std::fabs(ref[i]));
    }
    CHECK(worst <= 1.0);       // the bound holds
    CHECK(rel < 0.05 * norm);  // and is not vacuous
  };
  for (const variant& var : all_variants) {
    CAPTURE(std::string(var.name));
    auto in = own<float>(hc_ref::random_tokens(rng, L, dk, dv, var.delta, var.gate));
    auto q = hc_ref::random_vector(rng, L * dk);
    hc_ref::round_through<float>(q);
    const std::vector<float> qf(q.begin(), q.end());
    const std::vector<double> s0(dk * dv, 0.0);
    const auto got = hc::outputs(in.view(), in.rule, qf);
    const auto ref = hc_ref::run_state(in.ref, hc_ref::mat(dk, dv), 0, L);
    const auto w = hc::abs_bound_weights(in.view(), in.rule, q, 1 / std::sqrt(8.0), s0);
    check(got.final_state, ref.a, w.state, w.depth_per_token * L, static_cast<double>(L));
  }
  {
    auto d = hc_ref::random_dplr(rng, L, dk, dv);
    for (auto* v : {&d.k, &d.v, &d.a, &d.b, &d.w}) hc_ref::round_through<float>(*v);
    const std::vector<float> k(d.k.begin(), d.k.end()), v(d.v.begin(), d.v.end()),
        a(d.a.begin(), d.a.end()), b(d.b.begin(), d.b.end()), g(d.w.begin(), d.w.end());
    hc::dplr_inputs<float> in{L, dk, dv, k, v, a, b, g};
    const auto got = hc::run_recurrence(in, std::vector<float>(dk * dv, 0.0f));
    const auto w = hc::abs_bound_weights(in, {}, 1.0, {});
    check(got, hc_ref::run(d, hc_ref::mat(dk, dv), 0, L).S.a, w.state, w.depth_per_token * L,
          static_cast<double>(L));
  }
  {
    auto s = hc_ref::random_selective(rng, L, dk, dv);
    for (auto* v : {&s.k, &s.v, &s.dt, &s.a}) hc_ref::round_through<float>(*v);
    const std::vector<float> k(s.k.begin(), s.k.end()), v(s.v.begin(), s.v.end()),
        dt(s.dt.begin(), s.dt.end()), a(s.a.begin(), s.a.end());
    hc::selective_inputs<float> in{L, dk, dv, k, v, dt, a};
    const auto got = hc::run_recurrence(in, std::vector<float>(dk * dv, 0.0f));
    const auto w = hc::abs_bound_weights(in, {}, 1.0, {});
    check(got, hc_ref::run(s, hc_ref::mat(dk, dv), 0, L).S.a, w.state, w.depth_per_token * L,
          static_cast<double>(L));
  }
}
