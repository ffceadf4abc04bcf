// SPDX-License-Identifier: Apache-2.0
// Numerics of summarize/compose (state/summarize.hpp, state/compose.hpp) against the independent
// double reference: 10⁵-token segments with gates near 0 and near 1, and hard resets (-inf gates).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "common.hpp"

namespace {

using hc_ref::gate;

template <class Real>
void check_long(const hc_ref::tokens& t, const hc_ref::result& ref, const char* what) {
  auto in = own<Real>(t);
  const hc::summarize_method methods[] = {hc::summarize_method::per_token,
                                          hc::summarize_method::chunked};
  for (auto m : methods) {
    if (!t.delta && m == hc::summarize_method::per_token) continue;
    CAPTURE(what);
    CAPTURE(static_cast<int>(m));
    const auto s = hc::summarize(in.view(), in.rule, {m, 64});
    CHECK(all_finite(s.end_state()));
    CHECK(all_finite(s.transition()));
    CHECK(hc_ref::rel_err(s.end_state(), ref.S.a) < tol<Real>());
    // Transitions may be all but 0 (gates near 0); compare absolutely against ‖T‖ ≤ 1-ish.
    CHECK(hc_ref::rel_err(s.transition(), ref.T.a, 1.0) < tol<Real>());
    if (!t.delta) {
      // Log-decays are exact sums of the gates (accumulated in double even for float).
      const std::size_t n = s.log_decay().size();
      for (std::size_t r = 0; r < n; ++r) {
        long double sum = 0;
        for (std::size_t i = 0; i < t.L; ++i)
          sum += t.g == gate::scalar ? t.log_gate[i] : t.log_gate[i * t.dk + r];
        CHECK(s.log_decay()[r] == doctest::Approx(static_cast<double>(sum)).epsilon(1e-11));
      }
    }
  }
}

}  // namespace

TEST_CASE("1e5-token segments with gates near 1 and near 0: no underflow error, no NaN") {
  struct regime {
    const char* name;
    double lo, hi;
  };
  // near 1: decay e^{-1e-7}, the product over 1e5 tokens is e^{-0.01} (a float running product
  // would drift by ~1e5 ulps); near 0: decays e^{-20..-60}, the product underflows to exactly 0.
  const regime regimes[] = {{"gates near 1", -2e-7, -5e-8}, {"gates near 0", -60.0, -20.0}};
  const variant vars[] = {all_variants[1], all_variants[2], all_variants[4], all_variants[5]};
  std::uint64_t seed = 100;
  for (const regime& rg : regimes) {
    for (const variant& var : vars) {
      // 10⁵ tokens for the log-decay families; 2·10⁴ for the dense ones, whose summaries hold
      // T itself (the reference's O(dk³)-per-token cost keeps the test fast under ASan).
      const auto t =
          long_tokens(var.delta ? 20000 : 100000, 2, var.delta, var.gate, rg.lo, rg.hi, ++seed);
      const auto ref = hc_ref::run(t);
      CAPTURE(rg.name);
      const std::string vname(var.name);
      CAPTURE(vname);
      check_long<float>(t, ref, var.name);
      check_long<double>(t, ref, var.name);
    }
  }
}

TEST_CASE_TEMPLATE("a -inf gate is a hard reset: composes to -inf, never NaN", Real, float,
                   double) {
  std::mt19937_64 rng(5);
  const Real ninf = -std::numeric_limits<Real>::infinity();
  for (const variant& var : {all_variants[1], all_variants[2], all_variants[4], all_variants[5]}) {
    auto t = hc_ref::random_tokens(rng, 130, 4, 3, var.delta, var.gate);
    // Reset at token 70 (every row for a diagonal gate) and row 1 also at token 100.
    const std::size_t per = var.gate == gate::diagonal ? 4 : 1;
    for (std::size_t r = 0; r < per; ++r) t.log_gate[70 * per + r] = ninf;
    if (per == 4) t.log_gate[100 * 4 + 1] = ninf;
    auto in = own<Real>(t);
    const auto ref = hc_ref::run(in.ref);
    const std::string vname(var.name);
    CAPTURE(vname);
    for (auto m : {hc::summarize_method::per_token, hc::summarize_method::chunked}) {
      const auto s = hc::summarize(in.view(), in.rule, {m, 64});
      CHECK(all_finite(s.end_state()));
      CHECK(hc_ref::rel_err(s.end_state(), ref.S.a) < tol<Real>());
      CHECK(hc_ref::rel_err(s.transition(), ref.T.a, 1.0) < tol<Real>());
      if (!var.delta) CHECK(s.log_decay()[0] == -std::numeric_limits<double>::infinity());
      // Composing after the reset: the prefix is forgotten exactly.
      const std::vector<Real> p(12, Real(1e30));
      CHECK(hc_ref::rel_err(hc::apply(s, std::span<const Real>(p)), ref.S.a) < tol<Real>());
    }
    // Split around the reset and compose.
    const auto a = hc::summarize(in.view().slice(0, 71), in.rule);
    const auto b = hc::summarize(in.view().slice(71, 130), in.rule);
    const auto ab = hc::compose(a, b);
    CHECK(all_finite(ab.end_state()));
    CHECK(hc_ref::rel_err(ab.end_state(), ref.S.a) < tol<Real>());
  }
}
