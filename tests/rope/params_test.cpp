// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cmath>
#include <hybridcache/rope.hpp>

#include "support/rope_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("θ_i matches the definitions: plain, linear and llama3 scaling") {
  for (std::size_t rot : {16u, 64u, 128u}) {
    for (int kind = 0; kind < 3; ++kind) {
      hc::rope_params p{.head_dim = 128, .rotary_dim = rot, .base = 500000.0};
      hcref::rope_ref_config c{128, rot, 500000.0L, false, kind};
      if (kind == 1) {
        p.scaling = hc::rope_scaling::linear(4.0);
        c.factor = 4;
      } else if (kind == 2) {
        p.scaling = hc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192.0);
        c.factor = 8;
      }
      const auto f = p.frequencies();
      REQUIRE(f.size() == rot / 2);
      for (std::size_t i = 0; i < f.size(); ++i) {
        const double want = static_cast<double>(hcref::rope_theta(c, i));
        CHECK(f[i] == doctest::Approx(want).epsilon(1e-14));
      }
    }
  }
  // Llama 3 keeps the high frequencies, divides the low ones by the factor, blends the middle.
  const hc::rope_params p{.head_dim = 128, .rotary_dim = 128, .base = 500000.0,
                          .scaling = hc::rope_scaling::llama3()};
  const hc::rope_params plain{.head_dim = 128, .rotary_dim = 128, .base = 500000.0};
  CHECK(p.theta(0) == plain.theta(0));
  CHECK(p.theta(63) == doctest::Approx(plain.theta(63) / 8.0));
  bool blended = false;
  for (std::size_t i = 0; i < 64; ++i) {
    const double r = p.theta(i) / plain.theta(i);
    CHECK(r <= 1.0);
    CHECK(r >= 1.0 / 8.0 - 1e-15);
    blended |= r > 1.0 / 8.0 + 1e-9 && r < 1.0 - 1e-9;
  }
  CHECK(blended);
}

TEST_CASE("the reduced angle equals Δ·θ modulo 2π to ~1e-10 rad for Δ up to 1e6") {
  const hc::rope_params p{.head_dim = 128, .rotary_dim = 128, .base = 10000.0};
  for (long long delta : {0LL, 1LL, -7LL, 4096LL, 999983LL, -1000000LL}) {
    for (std::size_t i : {0u, 1u, 17u, 63u}) {
      const double r = hc::detail::rope_reduced_angle(static_cast<double>(delta), p.theta(i));
      CHECK(std::fabs(r) <= 3.14159265358979323846 + 1e-12);
      const long double exact = static_cast<long double>(delta) *
                                static_cast<long double>(p.theta(i));  // same θ, exact product
      const long double two_pi = 6.283185307179586476925286766559L;
      long double want = std::fmod(exact, two_pi);
      if (want > two_pi / 2) want -= two_pi;
      if (want < -two_pi / 2) want += two_pi;
      CHECK(std::fabs(static_cast<long double>(r) - want) < 2e-10L);
    }
  }
}

TEST_CASE("rope_params::validate names the bad field") {
  auto fails = [](hc::rope_params p, const char* arg) {
    try {
      p.validate();
      return false;
    } catch (const hc::invalid_argument& e) {
      return e.argument() == arg;
    }
  };
  CHECK(fails({.head_dim = 0}, "head_dim"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 65}, "rotary_dim"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 128}, "rotary_dim"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 0}, "rotary_dim"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 64, .base = 1.0}, "base"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 64, .base = NAN}, "base"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 64, .scaling = hc::rope_scaling::linear(0.0)},
              "scaling.factor"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 64, .scaling = hc::rope_scaling::llama3(8, 4, 1)},
              "scaling.high_freq_factor"));
  CHECK(fails({.head_dim = 64, .rotary_dim = 64, .scaling = hc::rope_scaling::llama3(8, 1, 4, -1)},
              "scaling.original_max_position"));
  CHECK_NOTHROW(hc::rope_params{.head_dim = 64, .rotary_dim = 32}.validate());
}
