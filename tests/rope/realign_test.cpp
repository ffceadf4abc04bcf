// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <hybridcache/rope.hpp>
#include <random>
#include <vector>

#include "support/rope_reference.hpp"

namespace hc = hybridcache;

namespace {

template <class T>
constexpr double tolerance() {  // relative to the norm of a rotation pair
  if constexpr (std::is_same_v<T, float>) return 1e-6;
  else if constexpr (std::is_same_v<T, hc::half>) return 2e-3;
  else return 1.6e-2;  // bfloat16
}

struct config_case {
  std::size_t head_dim, rotary_dim;
  bool interleaved;
  int scaling;
};

const config_case k_cases[] = {
    {64, 64, false, 0}, {64, 64, true, 0},    // full rotary, both layouts
    {96, 32, false, 0}, {96, 32, true, 0},    // partial rotary (GPT-NeoX rotary_pct, GPT-J)
    {128, 128, false, 1}, {128, 64, true, 1},  // linear scaling
    {128, 128, false, 2}, {80, 48, true, 2},   // llama3 scaling
};

hc::rope_params to_params(const config_case& c) {
  hc::rope_params p{.head_dim = c.head_dim, .rotary_dim = c.rotary_dim, .base = 10000.0,
                    .layout = c.interleaved ? hc::rope_layout::interleaved
                                            : hc::rope_layout::half_split};
  if (c.scaling == 1) p.scaling = hc::rope_scaling::linear(4.0);
  if (c.scaling == 2) p.scaling = hc::rope_scaling::llama3(8.0, 1.0, 4.0, 8192.0);
  return p;
}
hcref::rope_ref_config to_ref(const config_case& c) {
  hcref::rope_ref_config r{c.head_dim, c.rotary_dim, 10000.0L, c.interleaved, c.scaling};
  r.factor = c.scaling == 1 ? 4 : c.scaling == 2 ? 8 : 1;
  return r;
}

// Raw (unrotated) keys, tokens × heads × head_dim, standard normal.
std::vector<std::vector<double>> raw_keys(std::size_t rows, std::size_t d, std::mt19937_64& rng) {
  std::normal_distribution<double> n(0.0, 1.0);
  std::vector<std::vector<double>> k(rows, std::vector<double>(d));
  for (auto& r : k)
    for (auto& x : r) x = n(rng);
  return k;
}

// Checks `got` (row of T) against R(position)·raw computed directly in long double.
template <class T>
void check_row(const T* got, const std::vector<double>& raw, const hcref::rope_ref_config& c,
               long double position) {
  const auto want = hcref::rope_at(c, raw, position);
  for (std::size_t j = 0; j < c.head_dim; ++j) {
    const std::size_t q = hcref::rope_partner(c, j);
    const long double norm = std::sqrt(want[j] * want[j] + want[q] * want[q]);
    const double err = std::fabs(static_cast<double>(static_cast<float>(got[j])) -
                                 static_cast<double>(want[j]));
    if (err > tolerance<T>() * static_cast<double>(std::max<long double>(norm, 1e-3L))) {
      FAIL_CHECK("element " << j << ": got " << static_cast<float>(got[j]) << " want "
                            << static_cast<double>(want[j]) << " at position "
                            << static_cast<double>(position));
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("keys rotated at p and moved by Δ equal keys rotated directly at p+Δ", T, float,
                   hc::half, hc::bfloat16) {
  std::mt19937_64 rng(21);
  const std::size_t tokens = 5, heads = 3;
  for (const auto& cc : k_cases) {
    const auto params = to_params(cc);
    const auto ref = to_ref(cc);
    for (auto [p, delta] : {std::pair<long long, long long>{0, 1}, {17, 4096}, {5000, -4321},
                            {3, 1000000}, {1000000, -999999}, {123456, 654321}}) {
      CAPTURE(cc.head_dim);
      CAPTURE(cc.rotary_dim);
      CAPTURE(cc.interleaved);
      CAPTURE(cc.scaling);
      CAPTURE(delta);
      const auto raw = raw_keys(tokens * heads, cc.head_dim, rng);
      std::vector<T> src(tokens * heads * cc.head_dim), dst(src.size());
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t h = 0; h < heads; ++h) {
          const auto k = hcref::rope_at(ref, raw[t * heads + h], static_cast<long double>(p + t));
          for (std::size_t j = 0; j < cc.head_dim; ++j)
            src[(t * heads + h) * cc.head_dim + j] = T(static_cast<float>(k[j]));
        }
      const std::vector<T> src_copy = src;
      hc::strided_view<const T, 3> sv(src.data(), {tokens, heads, cc.head_dim});
      hc::strided_view<T, 3> dv(dst.data(), {tokens, heads, cc.head_dim});
      hc::realign_keys(params, sv, dv, delta);
      CHECK(std::memcmp(src.data(), src_copy.data(), src.size() * sizeof(T)) == 0);
      for (std::size_t t = 0; t < tokens; ++t)
        for (std::size_t h = 0; h < heads; ++h)
          check_row(&dst[(t * heads + h) * cc.head_dim], raw[t * heads + h], ref,
                    static_cast<long double>(p + t + delta));
      // In place gives the same bits as out of place; moving back by −Δ returns near the start.
      hc::strided_view<T, 3> iv(src.data(), {tokens, heads, cc.head_dim});
      hc::realign_keys(params, iv, iv, delta);
      CHECK(std::memcmp(src.data(), dst.data(), dst.size() * sizeof(T)) == 0);
    }
  }
}

TEST_CASE("dimensions beyond rotary_dim pass through bit for bit, strided token axis works") {
  const hc::rope_params p{.head_dim = 8, .rotary_dim = 4, .base = 10000.0};
  // Keys live every other row of a larger buffer (a non-contiguous token axis).
  std::vector<float> buf(2 * 3 * 8);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i) * 0.25f - 3.0f;
  std::vector<float> out(3 * 8, -1.0f);
  hc::strided_view<const float, 3> src(buf.data(), {3, 1, 8}, {16, 8, 1});
  hc::strided_view<float, 3> dst(out.data(), {3, 1, 8});
  hc::realign_keys(p, src, dst, 12345);
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t j = 4; j < 8; ++j) CHECK(out[t * 8 + j] == buf[t * 16 + j]);
  hc::realign_keys(p, src, dst, 0);  // Δ = 0 is the identity
  for (std::size_t t = 0; t < 3; ++t)
    for (std::size_t j = 0; j < 8; ++j) CHECK(out[t * 8 + j] == buf[t * 16 + j]);
}

TEST_CASE_TEMPLATE("paged fused copy-align: keys rotated into new blocks, values copied, rest untouched",
                   T, float, hc::half, hc::bfloat16) {
  std::mt19937_64 rng(5);
  const std::size_t blocks = 12, bs = 4, heads = 2;
  for (const auto& cc : {k_cases[1], k_cases[2], k_cases[6]}) {
    const auto params = to_params(cc);
    const auto ref = to_ref(cc);
    const std::size_t d = cc.head_dim, vd = 24;
    const std::size_t num_tokens = 10;  // 3 blocks, the last one partial
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
    const auto k_before = k;
    const auto v_before = v;
    hc::strided_view<T, 4> kv(k.data(), {blocks, bs, heads, d});
    hc::strided_view<T, 4> vv(v.data(), {blocks, bs, heads, vd});
    hc::vector_view<const std::int32_t> ot(old_table.data(), {3}), nt(new_table.data(), {3});
    hc::realign_blocks(params, hc::strided_view<const T, 4>(kv), hc::strided_view<const T, 4>(vv),
                       kv, vv, ot, nt, num_tokens, delta);
    auto kat = [&](const std::vector<T>& a, std::size_t b, std::size_t s, std::size_t h) {
      return &a[((b * bs + s) * heads + h) * d];
    };
    auto vat = [&](const std::vector<T>& a, std::size_t b, std::size_t s, std::size_t h) {
      return &a[((b * bs + s) * heads + h) * vd];
    };
    std::vector<bool> written(blocks * bs, false);
    for (std::size_t t = 0; t < num_tokens; ++t) {
      const std::size_t nb = static_cast<std::size_t>(new_table[t / bs]);
      const std::size_t ob = static_cast<std::size_t>(old_table[t / bs]);
      written[nb * bs + t % bs] = true;
      for (std::size_t h = 0; h < heads; ++h) {
        check_row(kat(k, nb, t % bs, h), raw[t * heads + h], ref,
                  static_cast<long double>(p + t + delta));
        CHECK(std::memcmp(vat(v, nb, t % bs, h), vat(v_before, ob, t % bs, h), vd * sizeof(T)) == 0);
      }
    }
    // Every slot not written (old blocks, other blocks, the partial block's tail) is unchanged.
    for (std::size_t b = 0; b < blocks; ++b)
      for (std::size_t s = 0; s < bs; ++s) {
        if (written[b * bs + s]) continue;
        for (std::size_t h = 0; h < heads; ++h) {
          CHECK(std::memcmp(kat(k, b, s, h), kat(k_before, b, s, h), d * sizeof(T)) == 0);
          CHECK(std::memcmp(vat(v, b, s, h), vat(v_before, b, s, h), vd * sizeof(T)) == 0);
        }
      }
  }
}

TEST_CASE("paged copy-align from a separate source pool, with size_t tables") {
  const hc::rope_params p{.head_dim = 4, .rotary_dim = 4, .base = 10000.0};
  std::vector<float> ks(2 * 2 * 4), vs(2 * 2 * 3), kd(3 * 2 * 4, 9.0f), vd(3 * 2 * 3, 9.0f);
  for (std::size_t i = 0; i < ks.size(); ++i) ks[i] = static_cast<float>(i);
  for (std::size_t i = 0; i < vs.size(); ++i) vs[i] = -static_cast<float>(i);
  const std::vector<std::size_t> ot{1, 0}, nt{2, 0};
  hc::realign_blocks(p, hc::strided_view<const float, 4>(ks.data(), {2, 2, 1, 4}),
                     hc::strided_view<const float, 4>(vs.data(), {2, 2, 1, 3}),
                     hc::strided_view<float, 4>(kd.data(), {3, 2, 1, 4}),
                     hc::strided_view<float, 4>(vd.data(), {3, 2, 1, 3}),
                     hc::vector_view<const std::size_t>(ot.data(), {2}),
                     hc::vector_view<const std::size_t>(nt.data(), {2}), 4, 0);
  // Δ = 0: a plain copy of old block 1 to new block 2 and old block 0 to new block 0.
  for (std::size_t j = 0; j < 8; ++j) {
    CHECK(kd[2 * 8 + j] == ks[8 + j]);
    CHECK(kd[j] == ks[j]);
  }
  for (std::size_t j = 0; j < 6; ++j) {
    CHECK(vd[2 * 6 + j] == vs[6 + j]);
    CHECK(vd[j] == vs[j]);
  }
  for (std::size_t j = 0; j < 8; ++j) CHECK(kd[8 + j] == 9.0f);  // block 1 untouched
}

TEST_CASE("realign rejects bad shapes and block tables") {
  const hc::rope_params p{.head_dim = 8, .rotary_dim = 8};
  std::vector<float> a(2 * 8), b(3 * 8);
  hc::strided_view<float, 3> va(a.data(), {2, 1, 8}), vb(b.data(), {3, 1, 8});
  CHECK_THROWS_AS(hc::realign_keys(p, va, vb, 1), hc::invalid_argument);
  hc::strided_view<float, 3> wrong_d(b.data(), {2, 1, 12});
  CHECK_THROWS_AS(hc::realign_keys(p, wrong_d, wrong_d, 1), hc::invalid_argument);
  hc::strided_view<float, 3> strided_d(b.data(), {1, 1, 8}, {8, 8, 2});
  CHECK_THROWS_AS(hc::realign_keys(p, strided_d, strided_d, 1), hc::invalid_argument);
  CHECK_THROWS_AS(hc::realign_keys(hc::rope_params{.head_dim = 8, .rotary_dim = 7}, va, va, 1),
                  hc::invalid_argument);

  std::vector<float> k(4 * 2 * 8), v(4 * 2 * 8);
  hc::strided_view<float, 4> kv(k.data(), {4, 2, 1, 8}), vv(v.data(), {4, 2, 1, 8});
  auto run = [&](std::vector<std::int32_t> ot, std::vector<std::int32_t> nt, std::size_t n) {
    hc::realign_blocks(p, kv, vv, kv, vv, hc::vector_view<const std::int32_t>(ot.data(), {ot.size()}),
                       hc::vector_view<const std::int32_t>(nt.data(), {nt.size()}), n, 3);
  };
  CHECK_NOTHROW(run({0, 1}, {2, 3}, 4));
  CHECK_NOTHROW(run({0, 1}, {0, 1}, 4));          // in place
  CHECK_THROWS_AS(run({0, 1}, {2, 3}, 5), hc::invalid_argument);   // table too short
  CHECK_THROWS_AS(run({0, 4}, {2, 3}, 4), hc::invalid_argument);   // old id out of range
  CHECK_THROWS_AS(run({0, -1}, {2, 3}, 4), hc::invalid_argument);  // negative id
  CHECK_THROWS_AS(run({0, 1}, {2, 2}, 4), hc::invalid_argument);   // duplicate new block
  CHECK_THROWS_AS(run({0, 1}, {1, 2}, 4), hc::invalid_argument);   // overwrites another's source
  CHECK_THROWS_AS(run({0, 1}, {2}, 2), hc::invalid_argument);      // table lengths differ
  try {
    run({0, 1}, {2, 2}, 4);
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "new_blocks[0]");
  }
}
