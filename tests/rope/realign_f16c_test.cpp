// SPDX-License-Identifier: Apache-2.0
// Built with -mf16c (its own binary, so no inline function is compiled two ways in one program):
// the hardware fp16 conversion path of realign_keys must give the same bits as the portable
// conversions, which realign_test.cpp holds to the long-double reference.
#include <doctest/doctest.h>

#include <cstring>
#include <hybridcache/rope.hpp>
#include <random>
#include <vector>

namespace hc = hybridcache;

static_assert(HYBRIDCACHE_DETAIL_F16C == 1, "this test must be compiled with -mf16c");

TEST_CASE("F16C fp16 realign equals the portable per-element conversion bit for bit") {
  std::mt19937 rng(2);
  std::normal_distribution<float> n(0.0f, 4.0f);
  for (auto layout : {hc::rope_layout::half_split, hc::rope_layout::interleaved}) {
    for (std::size_t head_dim : {8u, 20u, 128u}) {  // 20: an 8-wide tail of 4
      const hc::rope_params p{.head_dim = head_dim, .rotary_dim = head_dim - head_dim % 16,
                              .base = 10000.0, .layout = layout};
      if (p.rotary_dim == 0) continue;
      const std::size_t rows = 33;
      std::vector<hc::half> src(rows * head_dim), dst(src.size()), want(src.size());
      for (auto& x : src) x = hc::half(n(rng));
      src[3] = hc::half::from_bits(0x0001);  // subnormals and extremes
      src[5] = hc::half::from_bits(0x7bff);
      src[6] = hc::half::from_bits(0x83ff);
      hc::realign_keys(p, hc::strided_view<const hc::half, 3>(src.data(), {rows, 1, head_dim}),
                       hc::strided_view<hc::half, 3>(dst.data(), {rows, 1, head_dim}), 98765);
      std::vector<float> cs(p.rotary_dim / 2), sn(p.rotary_dim / 2);
      for (std::size_t i = 0; i < cs.size(); ++i)
        hc::detail::rope_delta_sincos(98765.0, p.theta(i), &cs[i], &sn[i]);
      for (std::size_t r = 0; r < rows; ++r) {
        hc::detail::rope_rotate_row(
            &src[r * head_dim], &want[r * head_dim], head_dim, p.rotary_dim,
            layout == hc::rope_layout::interleaved, cs.data(), sn.data(),
            [](hc::half h) { return hc::detail::half_bits_to_float(h.bits); },
            [](float f) { return hc::half::from_bits(hc::detail::float_to_half_bits(f)); });
      }
      CHECK(std::memcmp(dst.data(), want.data(), dst.size() * sizeof(hc::half)) == 0);
    }
  }
}
