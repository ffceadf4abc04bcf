// SPDX-License-Identifier: Apache-2.0
// Naive addition (state/naive.hpp) against the independent double reference: HYPIC Table 2 and a
// run of segments.
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

}  // namespace

TEST_CASE("HYPIC Table 2: naive addition errs by (1 - gamma^L) of the prefix norm for RetNet") {
  // Table 2 as printed in the paper (3 decimals); rows gamma = 1 - 2^-5, 1 - 2^-7, 1 - 2^-10.
  const double printed[3][3] = {
      {1.000, 1.000, 1.000}, {0.866, 0.982, 1.000}, {0.221, 0.394, 0.632}};
  const int exps[3] = {5, 7, 10};
  const std::size_t lengths[3] = {256, 512, 1024};
  std::mt19937_64 rng(2);
  const auto prefix = to_real<double>(hc_ref::random_state(rng, 4, 3));  // S_{C1|0}
  for (int gi = 0; gi < 3; ++gi) {
    const double gamma = 1.0 - std::ldexp(1.0, -exps[gi]);
    for (int li = 0; li < 3; ++li) {
      auto t = hc_ref::random_tokens(rng, lengths[li], 4, 3, false, gate::scalar);
      std::fill(t.log_gate.begin(), t.log_gate.end(), std::log(gamma));
      for (bool as_float : {false, true}) {
        const double closed = 1.0 - std::pow(static_cast<long double>(gamma), lengths[li]);
        double rel = 0;
        if (as_float) {
          auto in = own<float>(t);
          const std::vector<float> pf(prefix.begin(), prefix.end());
          const auto s = hc::summarize(in.view(), in.rule);
          rel = hc::naive_error(s, std::span<const float>(pf)).relative;
          CHECK(rel == doctest::Approx(closed).epsilon(1e-4));
        } else {
          auto in = own<double>(t);
          const auto s = hc::summarize(in.view(), in.rule);
          const auto rep = hc::naive_error(s, std::span<const double>(prefix));
          rel = rep.relative;
          CHECK(rel == doctest::Approx(closed).epsilon(1e-9));
          CHECK(rep.prefix_norm == doctest::Approx(hc_ref::norm(prefix)));
          // The composition law has no such error: apply == reference run from the prefix.
          hc_ref::mat p(4, 3);
          p.a = prefix;
          CHECK(hc_ref::rel_err(hc::apply(s, std::span<const double>(prefix)),
                                hc_ref::run(in.ref, p).S.a) < 1e-12);
        }
        CAPTURE(gamma);
        CAPTURE(lengths[li]);
        CHECK(std::abs(rel - printed[gi][li]) <= 0.0005 + 1e-6);
      }
    }
  }
}

TEST_CASE("naive addition over a run of segments vs the reference") {
  std::mt19937_64 rng(8);
  for (const variant& var : all_variants) {
    auto in = own<double>(hc_ref::random_tokens(rng, 90, 5, 3, var.delta, var.gate));
    std::vector<hc::segment_summary<double>> run;
    for (std::size_t b = 0; b < 90; b += 30)
      run.push_back(hc::summarize(in.view().slice(b, b + 30), in.rule));
    const auto p = hc_ref::random_state(rng, 5, 3);
    const auto exact = hc_ref::run(in.ref, p).S;
    hc_ref::mat naive = p;  // prefix + Σ S_{C_i|0}, each from zero
    for (std::size_t b = 0; b < 90; b += 30)
      naive = hc_ref::add(naive, hc_ref::run(in.ref, hc_ref::mat(5, 3), b, b + 30).S);
    const auto got = hc::naive_addition(std::span<const hc::segment_summary<double>>(run),
                                        std::span<const double>(p.a));
    CHECK(hc_ref::rel_err(got, naive.a) < 1e-12);
    double e = 0;
    for (std::size_t i = 0; i < naive.a.size(); ++i) e += std::pow(naive.a[i] - exact.a[i], 2);
    const auto rep = hc::naive_error(std::span<const hc::segment_summary<double>>(run),
                                     std::span<const double>(p.a));
    const std::string vname(var.name);
    CAPTURE(vname);
    CHECK(rep.error_norm == doctest::Approx(std::sqrt(e)).epsilon(1e-9));
    if (var.gate == gate::none && !var.delta) CHECK(rep.relative < 1e-12);  // eq. 3 is exact
  }
}
