// SPDX-License-Identifier: Apache-2.0
// Host tests of the streaming softmax the device sparse-Q scoring runs
// (select/detail/online_softmax.hpp), and a host replay of that kernel's reduction order (tiles of
// 32 keys, one state per lane, butterfly merge) against the textbook reference scores.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <hybridcache/cuda/detail/scores_plan.cuh>
#include <hybridcache/select/detail/online_softmax.hpp>
#include <limits>
#include <random>
#include <vector>

#include "support/select_reference.hpp"

namespace hc = hybridcache;
namespace hd = hybridcache::detail;

namespace {
template <class Real>
std::vector<Real> logits(std::size_t n, std::mt19937_64& rng, double sd) {
  std::normal_distribution<double> d(0.0, sd);
  std::vector<Real> v(n);
  for (auto& x : v) x = static_cast<Real>(d(rng));
  return v;
}
}  // namespace

TEST_CASE_TEMPLATE("softmax_push over a sequence gives the max and the shifted exponential sum",
                   Real, float, double) {
  std::mt19937_64 rng(1);
  for (const double sd : {0.1, 3.0, 80.0}) {  // large spreads: the shift is what keeps it finite
    const auto x = logits<Real>(257, rng, sd);
    auto s = hd::softmax_identity<Real>();
    for (Real v : x) s = hd::softmax_push(s, v);
    long double m = -INFINITY, l = 0;
    for (Real v : x) m = std::max<long double>(m, v);
    for (Real v : x) l += std::exp(static_cast<long double>(v) - m);
    CHECK(static_cast<long double>(s.m) == m);
    const double tol = std::is_same_v<Real, float> ? 2e-5 : 1e-13;
    CHECK(static_cast<double>(s.l) == doctest::Approx(static_cast<double>(l)).epsilon(tol));
    long double total = 0;
    for (Real v : x) total += hd::softmax_weight(s, v);
    CHECK(static_cast<double>(total) == doctest::Approx(1.0).epsilon(tol * 10));
  }
}

TEST_CASE_TEMPLATE("softmax_merge: any split and merge order gives the sequential state", Real,
                   float, double) {
  std::mt19937_64 rng(2);
  const auto x = logits<Real>(100, rng, 5.0);
  auto seq = hd::softmax_identity<Real>();
  for (Real v : x) seq = hd::softmax_push(seq, v);
  std::uniform_int_distribution<std::size_t> cut(0, x.size());
  for (int trial = 0; trial < 50; ++trial) {
    std::size_t a = cut(rng), b = cut(rng);
    if (a > b) std::swap(a, b);
    hd::softmax_state<Real> parts[3] = {hd::softmax_identity<Real>(), hd::softmax_identity<Real>(),
                                        hd::softmax_identity<Real>()};
    for (std::size_t i = 0; i < x.size(); ++i)
      parts[i < a ? 0 : i < b ? 1 : 2] = hd::softmax_push(parts[i < a ? 0 : i < b ? 1 : 2], x[i]);
    const auto left = hd::softmax_merge(hd::softmax_merge(parts[0], parts[1]), parts[2]);
    const auto right = hd::softmax_merge(parts[2], hd::softmax_merge(parts[1], parts[0]));
    const double tol = std::is_same_v<Real, float> ? 1e-5 : 1e-13;
    CHECK(left.m == seq.m);
    CHECK(right.m == seq.m);
    CHECK(static_cast<double>(left.l) == doctest::Approx(static_cast<double>(seq.l)).epsilon(tol));
    CHECK(static_cast<double>(right.l) == doctest::Approx(static_cast<double>(seq.l)).epsilon(tol));
  }
}

TEST_CASE("softmax identity and masked logits: no NaN, weight 0 for the empty set") {
  const double ninf = -std::numeric_limits<double>::infinity();
  const auto id = hd::softmax_identity<double>();
  const auto both = hd::softmax_merge(id, id);
  CHECK(both.l == 0.0);
  CHECK(both.m == ninf);
  CHECK(hd::softmax_push(id, ninf).l == 0.0);  // a masked key is the identity
  CHECK(hd::softmax_weight(id, 1.0) == 0.0);
  const auto one = hd::softmax_push(id, 2.5);
  CHECK(one.m == 2.5);
  CHECK(one.l == 1.0);
  CHECK(hd::softmax_merge(one, id).l == 1.0);
  CHECK(hd::softmax_merge(id, one).m == 2.5);
  CHECK(hd::softmax_weight(one, 2.5) == 1.0);
  CHECK(hd::softmax_weight(one, ninf) == 0.0);
}

// The device kernel's order of operations, replayed on the host: per (head, query), lane L holds
// the state of keys L, L+32, …; the 32 lane states merge by xor-butterfly (offsets 16, 8, 4, 2,
// 1); weights are then summed per key. Compared with the textbook double-precision reference.
TEST_CASE("host replay of the scoring kernel's reduction equals the reference scores") {
  namespace cd = hybridcache::cuda::detail;
  std::mt19937_64 rng(7);
  const std::size_t t_len = 97, nq = 9, heads = 4, kv_heads = 2, d = 16, group = heads / kv_heads;
  std::normal_distribution<double> n;
  std::vector<double> q(nq * heads * d), k(t_len * kv_heads * d);
  for (auto& x : q) x = n(rng);
  for (auto& x : k) x = n(rng);
  std::vector<std::size_t> pos{3, 10, 11, 40, 41, 42, 70, 90, 96};
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  const auto want = hcref::sparse_q_scores(q, nq, heads, k, t_len, kv_heads, d, pos, scale);
  std::vector<double> acc(t_len, 0.0);
  constexpr unsigned lanes = cd::scores_key_tile;
  for (std::size_t h = 0; h < heads; ++h) {
    for (std::size_t i = 0; i < nq; ++i) {
      auto logit = [&](std::size_t j) {
        float x = 0;  // float accumulation, as the kernel does for float inputs
        for (std::size_t c = 0; c < d; ++c)
          x += static_cast<float>(q[(i * heads + h) * d + c] * scale) *
               static_cast<float>(k[(j * kv_heads + h / group) * d + c]);
        return x;
      };
      hd::softmax_state<float> lane[lanes];
      for (auto& s : lane) s = hd::softmax_identity<float>();
      for (std::size_t j = 0; j <= pos[i]; ++j)
        lane[j % lanes] = hd::softmax_push(lane[j % lanes], logit(j));
      for (unsigned off = lanes / 2; off > 0; off /= 2) {
        hd::softmax_state<float> next[lanes];
        for (unsigned l = 0; l < lanes; ++l) next[l] = hd::softmax_merge(lane[l], lane[l ^ off]);
        std::copy(next, next + lanes, lane);
      }
      for (unsigned l = 1; l < lanes; ++l) CHECK(lane[l].m == lane[0].m);
      for (std::size_t j = 0; j <= pos[i]; ++j) acc[j] += hd::softmax_weight(lane[0], logit(j));
    }
  }
  for (std::size_t j = 0; j < t_len; ++j) {
    const double got = acc[j] / static_cast<double>(heads * nq);
    CHECK(got == doctest::Approx(want[j]).epsilon(1e-5).scale(1e-3));
  }
}
