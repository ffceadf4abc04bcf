// SPDX-License-Identifier: Apache-2.0
// RoPE re-rotation of cached summaries (state/rope.hpp, HYPIC eq. 7) against the independent
// double reference.
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

TEST_CASE_TEMPLATE("rerotate: S_C|b = R(b - a) S_C|a for scalar-family layers", Real, float,
                   double) {
  std::mt19937_64 rng(13);
  const std::size_t dk = 8, dv = 3, L = 50;
  struct shift {
    long long a, b;
  };
  const shift shifts[] = {{0, 37}, {1000, 5}, {0, 1000000}, {123456, 2000000}, {7, 7}};
  for (const variant& var : {all_variants[0], all_variants[1]}) {
    for (auto layout :
         {hybridcache::rope_layout::half_split, hybridcache::rope_layout::interleaved}) {
      for (std::size_t rot : {8u, 4u}) {
        for (double factor : {1.0, 2.0}) {
          hybridcache::rope_params rp;
          rp.head_dim = dk;
          rp.rotary_dim = rot;
          rp.base = 10000.0;
          rp.layout = layout;
          if (factor != 1.0) rp.scaling = hybridcache::rope_scaling::linear(factor);
          const auto base_t = hc_ref::random_tokens(rng, L, dk, dv, false, var.gate);
          for (const shift& sh : shifts) {
            auto at = [&](long long start) {
              auto t = base_t;
              for (std::size_t i = 0; i < L; ++i)
                hc_ref::rope_key(&t.k[i * dk], rot, layout == hybridcache::rope_layout::half_split,
                                 10000.0, factor, start + static_cast<long long>(i));
              return t;
            };
            auto in_a = own<Real>(at(sh.a));
            const auto ref_b = hc_ref::run(hc_ref::rounded<Real>(at(sh.b)));
            const auto moved = hc::rerotate(hc::summarize(in_a.view(), in_a.rule), sh.b - sh.a, rp);
            const std::string vname(var.name);
            CAPTURE(vname);
            CAPTURE(rot);
            CAPTURE(sh.b);
            // The float inputs at a and at b round differently; allow that on top of tol.
            CHECK(hc_ref::rel_err(moved.end_state(), ref_b.S.a) <
                  (std::is_same_v<Real, float> ? 1e-5 * 50 : 1e-9));
          }
        }
      }
    }
  }
}

TEST_CASE("rerotate round trip, and refusals for non-scalar summaries and bad parameters") {
  std::mt19937_64 rng(17);
  auto in = own<float>(hc_ref::random_tokens(rng, 30, 6, 4, false, gate::scalar));
  const auto s = hc::summarize(in.view(), in.rule);
  hybridcache::rope_params rp;
  rp.head_dim = 6;
  rp.rotary_dim = 6;
  const auto back = hc::rerotate(hc::rerotate(s, 3000017, rp), -3000017, rp);
  CHECK(hc_ref::rel_err(back.end_state(), s.end_state()) < 1e-6);
  CHECK(back.log_decay()[0] == s.log_decay()[0]);
  auto diag = own<float>(hc_ref::random_tokens(rng, 30, 6, 4, false, gate::diagonal));
  auto dense = own<float>(hc_ref::random_tokens(rng, 30, 6, 4, true, gate::none));
  CHECK_THROWS_AS(hc::rerotate(hc::summarize(diag.view(), diag.rule), 5, rp),
                  hybridcache::invalid_argument);
  CHECK_THROWS_AS(hc::rerotate(hc::summarize(dense.view(), dense.rule), 5, rp),
                  hybridcache::invalid_argument);
  rp.head_dim = 8;
  rp.rotary_dim = 8;
  CHECK_THROWS_AS(hc::rerotate(s, 5, rp), hybridcache::invalid_argument);
  rp.head_dim = 6;
  rp.rotary_dim = 5;
  CHECK_THROWS_AS(hc::rerotate(s, 5, rp), hybridcache::invalid_argument);
}
