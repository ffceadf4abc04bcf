// SPDX-License-Identifier: Apache-2.0
// Device delta-RoPE re-alignment against the long-double reference (tests/support/
// rope_reference.hpp): keys rotated at p and moved by Δ on the GPU must equal keys rotated
// directly at p + Δ; values and untouched slots must be bit-identical.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <hybridcache/cuda/rope/realign.cuh>
#include <hybridcache/rope.hpp>
#include <random>
#include <vector>

#include "common.cuh"
#include "support/rope_reference.hpp"

namespace hc = hybridcache;
using hc_cuda_test::download;
using hc_cuda_test::sync_ok;
using hc_cuda_test::upload;

namespace {

template <class T>
constexpr double tolerance() {  // relative to the norm of a rotation pair
  if constexpr (std::is_same_v<T, float>)
    return 2e-6;
  else if constexpr (std::is_same_v<T, hc::half>)
    return 2e-3;
  else
    return 1.6e-2;
}

struct config_case {
  std::size_t head_dim, rotary_dim;
  bool interleaved;
  int scaling;
};

// Both layouts, partial rotary, both scalings, head dims whose rows are not 4-byte multiples for
// 16-bit types (5), and rows of more pairs than one group of the 32 lanes takes (576/512: each
// lane rotates 8 pairs in two groups; 300/290 interleaved: a partial last group).
const config_case k_cases[] = {
    {128, 128, false, 0}, {128, 128, true, 0}, {96, 32, false, 1},   {64, 48, true, 2},
    {5, 4, false, 0},     {5, 4, true, 0},     {576, 512, false, 0}, {300, 290, true, 1},
};

hc::rope_params to_params(const config_case& c) {
  hc::rope_params p{
      .head_dim = c.head_dim,
      .rotary_dim = c.rotary_dim,
      .base = 10000.0,
      .layout = c.interleaved ? hc::rope_layout::interleaved : hc::rope_layout::half_split};
  if (c.scaling == 1) p.scaling = hc::rope_scaling::linear(4.0);
  if (c.scaling == 2) p.scaling = hc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192.0);
  return p;
}
hcref::rope_ref_config to_ref(const config_case& c) {
  hcref::rope_ref_config r{c.head_dim, c.rotary_dim, 10000.0L, c.interleaved, c.scaling};
  r.factor = c.scaling == 1 ? 4 : c.scaling == 2 ? 8 : 1;
  return r;
}

std::vector<std::vector<double>> raw_keys(std::size_t rows, std::size_t d, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<std::vector<double>> k(rows, std::vector<double>(d));
  for (auto& r : k)
    for (auto& x : r) x = n(rng);
  return k;
}

template <class T>
std::size_t bad_elements(const T* got, const std::vector<double>& raw,
                         const hcref::rope_ref_config& c, long double position) {
  const auto want = hcref::rope_at(c, raw, position);
  std::size_t bad = 0;
  for (std::size_t j = 0; j < c.head_dim; ++j) {
    const std::size_t q = hcref::rope_partner(c, j);
    const long double norm = std::sqrt(want[j] * want[j] + want[q] * want[q]);
    const double err =
        std::fabs(static_cast<double>(static_cast<float>(got[j])) - static_cast<double>(want[j]));
    if (err > tolerance<T>() * static_cast<double>(std::max<long double>(norm, 1e-3L))) ++bad;
  }
  return bad;
}

}  // namespace

TEST_CASE_TEMPLATE("device realign_keys: moved by Δ equals rotated directly at p+Δ", T, float,
                   hc::half, hc::bfloat16) {
  HC_REQUIRE_GPU();
  std::mt19937_64 rng(21);
  const std::size_t tokens = 70, heads = 3;  // 210 rows: one work item of 128 rows, one partial
  for (const auto& cc : k_cases) {
    const auto params = to_params(cc);
    const auto ref = to_ref(cc);
    for (auto [p, delta] : {std::pair<long long, long long>{0, 1}, {5000, -4321}, {3, 1000000}}) {
      CAPTURE(cc.head_dim);
      CAPTURE(cc.rotary_dim);
      CAPTURE(cc.interleaved);
      CAPTURE(delta);
      const auto raw = raw_keys(tokens * heads, cc.head_dim, rng);
      std::vector<T> src(tokens * heads * cc.head_dim);
      for (std::size_t r = 0; r < tokens * heads; ++r) {
        const auto k = hcref::rope_at(ref, raw[r], static_cast<long double>(p + r / heads));
        for (std::size_t j = 0; j < cc.head_dim; ++j)
          src[r * cc.head_dim + j] = T(static_cast<float>(k[j]));
      }
      auto d_src = upload(src);
      hc::cuda::device_buffer<T> d_dst(src.size());
      const auto sv =
          hc::cuda::make_view(static_cast<const T*>(d_src.data()), {tokens, heads, cc.head_dim});
      const auto dv = hc::cuda::make_view(d_dst.data(), {tokens, heads, cc.head_dim});
      sync_ok(hc::realign_keys(params, sv, dv, delta, cudaStream_t{}));
      const auto out = download(d_dst);
      CHECK(std::memcmp(download(d_src).data(), src.data(), src.size() * sizeof(T)) ==
            0);  // untouched
      std::size_t bad = 0;
      for (std::size_t r = 0; r < tokens * heads; ++r)
        bad += bad_elements(&out[r * cc.head_dim], raw[r], ref,
                            static_cast<long double>(p + r / heads + delta));
      CHECK(bad == 0);
      // In place on the device gives the same bits as out of place.
      const auto iv = hc::cuda::make_view(d_src.data(), {tokens, heads, cc.head_dim});
      sync_ok(hc::realign_keys(params, iv, iv, delta));
      CHECK(std::memcmp(download(d_src).data(), out.data(), out.size() * sizeof(T)) == 0);
    }
  }
}

TEST_CASE("device realign_keys: strided token axis, pass-through dims, host-visible errors") {
  HC_REQUIRE_GPU();
  const hc::rope_params p{.head_dim = 8, .rotary_dim = 4, .base = 10000.0};
  std::vector<float> buf(2 * 3 * 8);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i) * 0.25f - 3.0f;
  auto d_buf = upload(buf);
  hc::cuda::device_buffer<float> d_out(3 * 8);
  hc::cuda::strided_view<const float, 3> src(d_buf.data(), {3, 1, 8}, {16, 8, 1});
  const auto dst = hc::cuda::make_view(d_out.data(), {3, 1, 8});
  sync_ok(hc::realign_keys(p, src, dst, 0));  // Δ = 0: identity
  const auto out = download(d_out);
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t j = 0; j < 8; ++j) CHECK(out[t * 8 + j] == buf[t * 16 + j]);
  const auto wrong = hc::cuda::make_view(d_out.data(), {3, 1, 7});
  CHECK_THROWS_AS((void)hc::realign_keys(p, hc::cuda::make_view(d_out.data(), {3, 1, 8}), wrong, 1),
                  hc::invalid_argument);
  hc::rope_params bad = p;
  bad.rotary_dim = 3;
  CHECK_THROWS_AS((void)hc::realign_keys(bad, src, dst, 1), hc::invalid_argument);
  // A cos/sin table beyond the kernels' shared-memory budget is refused before any launch.
  const hc::rope_params huge{.head_dim = 10242, .rotary_dim = 10242, .base = 10000.0};
  hc::cuda::device_buffer<float> d_wide(10242);
  const auto wide = hc::cuda::make_view(d_wide.data(), {1, 1, 10242});
  CHECK_THROWS_WITH_AS((void)hc::realign_keys(huge, wide, wide, 1),
                       doctest::Contains("params.rotary_dim"), hc::invalid_argument);
}

TEST_CASE_TEMPLATE(
    "device realign_blocks: keys rotated into new blocks, values copied, rest untouched", T, float,
    hc::half, hc::bfloat16) {
  HC_REQUIRE_GPU();
  std::mt19937_64 rng(5);
  const std::size_t blocks = 12, bs = 16, heads = 9;  // 144 rows per block: two work items
  for (const auto& cc : {k_cases[1], k_cases[2], k_cases[4], k_cases[7]}) {
    const auto params = to_params(cc);
    const auto ref = to_ref(cc);
    // Value rows of 24 elements move in 16-byte vectors (all three types), of 6 in 4-byte words
    // (16-bit; fp32 rows of 24 bytes too), of 5 element by element (16-bit).
    for (const std::size_t vd : {std::size_t{24}, std::size_t{6}, std::size_t{5}}) {
      CAPTURE(vd);
      const std::size_t d = cc.head_dim;
      const std::size_t num_tokens = 40;  // 3 blocks, the last one partial
      const std::vector<std::int32_t> old_table{7, 2, 9}, new_table{0, 5, 11};
      const long long p = 40, delta = 77777;
      const auto raw = raw_keys(num_tokens * heads, d, rng);
      std::vector<T> k(blocks * bs * heads * d), v(blocks * bs * heads * vd);
      std::normal_distribution<float> n;
      for (auto& x : k) x = T(n(rng));
      for (auto& x : v) x = T(n(rng));
      for (std::size_t t = 0; t < num_tokens; ++t)
        for (std::size_t h = 0; h < heads; ++h) {
          const auto rk = hcref::rope_at(ref, raw[t * heads + h], static_cast<long double>(p + t));
          const std::size_t blk = static_cast<std::size_t>(old_table[t / bs]);
          for (std::size_t j = 0; j < d; ++j)
            k[((blk * bs + t % bs) * heads + h) * d + j] = T(static_cast<float>(rk[j]));
        }
      auto dk = upload(k), dvv = upload(v);
      auto dot = upload(old_table), dnt = upload(new_table);
      const auto kv = hc::cuda::make_view(dk.data(), {blocks, bs, heads, d});
      const auto vv = hc::cuda::make_view(dvv.data(), {blocks, bs, heads, vd});
      const auto ot = hc::cuda::make_view(static_cast<const std::int32_t*>(dot.data()), {3});
      const auto nt = hc::cuda::make_view(static_cast<const std::int32_t*>(dnt.data()), {3});
      sync_ok(hc::realign_blocks(params, hc::cuda::strided_view<const T, 4>(kv),
                                 hc::cuda::strided_view<const T, 4>(vv), kv, vv, ot, nt, num_tokens,
                                 delta, cudaStream_t{}));
      const auto k_after = download(dk), v_after = download(dvv);
      auto kat = [&](const std::vector<T>& a, std::size_t b, std::size_t s, std::size_t h) {
        return &a[((b * bs + s) * heads + h) * d];
      };
      auto vat = [&](const std::vector<T>& a, std::size_t b, std::size_t s, std::size_t h) {
        return &a[((b * bs + s) * heads + h) * vd];
      };
      std::vector<bool> written(blocks * bs, false);
      std::size_t bad = 0;
      for (std::size_t t = 0; t < num_tokens; ++t) {
        const std::size_t nb = static_cast<std::size_t>(new_table[t / bs]);
        const std::size_t ob = static_cast<std::size_t>(old_table[t / bs]);
        written[nb * bs + t % bs] = true;
        for (std::size_t h = 0; h < heads; ++h) {
          bad += bad_elements(kat(k_after, nb, t % bs, h), raw[t * heads + h], ref,
                              static_cast<long double>(p + t + delta));
          CHECK(std::memcmp(vat(v_after, nb, t % bs, h), vat(v, ob, t % bs, h), vd * sizeof(T)) ==
                0);
        }
      }
      CHECK(bad == 0);
      for (std::size_t b = 0; b < blocks; ++b)
        for (std::size_t s = 0; s < bs; ++s) {
          if (written[b * bs + s]) continue;
          for (std::size_t h = 0; h < heads; ++h) {
            CHECK(std::memcmp(kat(k_after, b, s, h), kat(k, b, s, h), d * sizeof(T)) == 0);
            CHECK(std::memcmp(vat(v_after, b, s, h), vat(v, b, s, h), vd * sizeof(T)) == 0);
          }
        }
    }
  }
}

TEST_CASE("device realign_blocks: out-of-range block ids are skipped, never dereferenced") {
  HC_REQUIRE_GPU();
  const hc::rope_params p{.head_dim = 4, .rotary_dim = 4, .base = 10000.0};
  std::vector<float> k(2 * 2 * 4, 1.0f), v(2 * 2 * 3, 2.0f);
  auto dk = upload(k), dv = upload(v);
  const std::vector<std::int64_t> ot{-1, 5}, nt{0, 1};
  auto dot = upload(ot), dnt = upload(nt);
  const auto kv = hc::cuda::make_view(dk.data(), {2, 2, 1, 4});
  const auto vv = hc::cuda::make_view(dv.data(), {2, 2, 1, 3});
  sync_ok(hc::realign_blocks(p, kv, vv, kv, vv, hc::cuda::make_view(dot.data(), {2}),
                             hc::cuda::make_view(dnt.data(), {2}), 4, 3));
  CHECK(download(dk) == k);
  CHECK(download(dv) == v);
  // Host-visible errors throw before anything is enqueued.
  CHECK_THROWS_AS((void)hc::realign_blocks(p, kv, vv, kv, vv, hc::cuda::make_view(dot.data(), {2}),
                                           hc::cuda::make_view(dnt.data(), {2}), 5, 3),
                  hc::invalid_argument);
}

// Host-side choice of the kernels' path (runs without a GPU: the views are never dereferenced).
TEST_CASE("realign path choice: 8-pair chunks for aligned 16-bit keys, 4 where only they fit") {
  namespace cd = hc::cuda::detail;
  alignas(16) static unsigned char pool[4096];
  auto h = [&](std::size_t offset, std::size_t tokens, std::size_t heads, std::size_t d) {
    return hc::cuda::make_view(reinterpret_cast<hc::half*>(pool + offset), {tokens, heads, d});
  };
  auto f = [&](std::size_t tokens, std::size_t heads, std::size_t d) {
    return hc::cuda::make_view(reinterpret_cast<float*>(pool), {tokens, heads, d});
  };
  CHECK(cd::rope_chunk_for(h(0, 2, 2, 128), h(0, 2, 2, 128), 128) == 8);
  CHECK(cd::rope_chunk_for(h(0, 2, 2, 64), h(0, 2, 2, 64), 40) == 4);     // 20 pairs
  CHECK(cd::rope_chunk_for(h(0, 2, 2, 128), h(0, 2, 2, 128), 36) == 0);   // 18 pairs
  CHECK(cd::rope_chunk_for(h(0, 2, 2, 100), h(0, 2, 2, 100), 96) == 0);   // 200-byte rows
  CHECK(cd::rope_chunk_for(h(0, 1, 1, 100), h(0, 1, 1, 100), 96) == 8);   // one row: no stride
  CHECK(cd::rope_chunk_for(h(8, 2, 2, 128), h(0, 2, 2, 128), 128) == 0);  // src 8-byte aligned
  CHECK(cd::rope_chunk_for(f(2, 2, 128), f(2, 2, 128), 128) == 4);        // fp32: 16-byte sides
  CHECK(cd::rope_chunk_for(f(2, 2, 6), f(2, 2, 6), 4) == 0);
  // The plan follows the chunk size: 8 lanes per 128-dim 16-bit row, 16 per fp32 row.
  CHECK(cd::make_rope_row_plan(128, 128, 8).lanes_per_row == 8);
  CHECK(cd::make_rope_row_plan(128, 128, 4).lanes_per_row == 16);
}
