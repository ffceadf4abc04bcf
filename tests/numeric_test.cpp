// SPDX-License-Identifier: Apache-2.0
// numeric.hpp: the 16-bit storage floats against exact references (tests/support/rope_reference.hpp
// decodes every encoding independently), and splitmix64_mix against published SplitMix64 outputs.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <hybridcache/numeric.hpp>
#include <limits>
#include <random>

#include "support/rope_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("half -> float is exact for all 65536 encodings") {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const auto h = hc::half::from_bits(static_cast<std::uint16_t>(b));
    const double ref = hcref::half_value(static_cast<std::uint16_t>(b));
    const float got = static_cast<float>(h);
    if (std::isnan(ref)) {
      CHECK(std::isnan(got));
    } else {
      REQUIRE(static_cast<double>(got) == ref);
      if (ref == 0.0) CHECK(std::signbit(got) == std::signbit(ref));
    }
  }
}

TEST_CASE("bfloat16 -> float is exact for all 65536 encodings") {
  for (std::uint32_t b = 0; b < 65536; ++b) {
    const double ref = hcref::bfloat16_value(static_cast<std::uint16_t>(b));
    const float got = static_cast<float>(hc::bfloat16::from_bits(static_cast<std::uint16_t>(b)));
    if (std::isnan(ref))
      CHECK(std::isnan(got));
    else
      REQUIRE(static_cast<double>(got) == ref);
  }
}

TEST_CASE("float -> half and bfloat16 round to nearest, ties to even") {
  std::mt19937 rng(1);
  std::uniform_int_distribution<std::uint32_t> bits;
  auto check_one = [](float f) {
    if (std::isnan(f)) {
      CHECK(std::isnan(static_cast<float>(hc::half(f))));
      CHECK(std::isnan(static_cast<float>(hc::bfloat16(f))));
      return;
    }
    const std::uint16_t want_h = hcref::nearest_bits(f, 0x7bff, hcref::half_value);
    const std::uint16_t want_b = hcref::nearest_bits(f, 0x7f7f, hcref::bfloat16_value);
    INFO("f = " << f);
    REQUIRE(hc::half(f).bits == want_h);
    REQUIRE(hc::bfloat16(f).bits == want_b);
  };
  for (int i = 0; i < 200000; ++i) {
    std::uint32_t u = bits(rng);
    float f;
    std::memcpy(&f, &u, sizeof f);
    check_one(f);
    // Also values in the half range, where rounding decisions matter most.
    check_one(
        std::ldexp(static_cast<float>(u % 65536) / 65536.0f + 0.5f, static_cast<int>(u % 40) - 25));
  }
  // Exact ties between neighbours (odd/even last bits), both signs; subnormal ties; overflow edge.
  for (std::uint16_t h : {std::uint16_t{0x3c00}, std::uint16_t{0x3c01}, std::uint16_t{0x0001},
                          std::uint16_t{0x0002}, std::uint16_t{0x03ff}, std::uint16_t{0x7bfe}}) {
    const double a = hcref::half_value(h), b = hcref::half_value(static_cast<std::uint16_t>(h + 1));
    check_one(static_cast<float>((a + b) / 2));
    check_one(static_cast<float>(-(a + b) / 2));
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e10f, std::numeric_limits<float>::infinity(),
                  -std::numeric_limits<float>::infinity(), 0.0f, -0.0f, 5.96e-8f, 2.98e-8f,
                  std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::max()})
    check_one(f);
  CHECK(hc::half(65520.0f).bits == 0x7c00);  // the tie above the largest finite goes to infinity
}

TEST_CASE("splitmix64_mix reproduces SplitMix64's published stream") {
  // SplitMix64 seeded with 0: state_k = k·γ, output_k = mix(state_k). The first three outputs are
  // the reference values of Vigna's splitmix64.c (also java.util.SplittableRandom(0).nextLong()).
  std::uint64_t state = 0;
  const std::uint64_t want[] = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull,
                                0x06C45D188009454Full};
  for (const std::uint64_t w : want) {
    state += hc::splitmix64_gamma;
    CHECK(hc::splitmix64_mix(state) == w);
  }
  // A bijection fixing 0, usable in constant expressions.
  static_assert(hc::splitmix64_mix(0) == 0);
}
