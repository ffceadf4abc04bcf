// SPDX-License-Identifier: Apache-2.0
// Device sparse-Q scores against the textbook double-precision reference, and device key-token
// top-k against the reference selection (tests/support/select_reference.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <hybridcache/cuda/select/scores.cuh>
#include <hybridcache/cuda/select/selection.cuh>
#include <hybridcache/select.hpp>
#include <random>
#include <utility>
#include <vector>

#include "common.cuh"
#include "support/select_reference.hpp"

namespace hc = hybridcache;
using hc_cuda_test::download;
using hc_cuda_test::sync_ok;
using hc_cuda_test::upload;

namespace {
std::vector<double> normal(std::size_t n, std::mt19937_64& rng, double sd) {
  std::normal_distribution<double> d(0.0, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}
}  // namespace

TEST_CASE_TEMPLATE(
    "device sparse_q_scores equals the reference (GQA, causal, host and device positions)", Real,
    float, double) {
  HC_REQUIRE_GPU();
  std::mt19937_64 rng(3);
  struct shape {
    std::size_t t_len, nq, heads, kv_heads, d;
  };
  for (const shape s : {shape{50, 7, 4, 2, 16}, shape{300, 37, 8, 8, 64}, shape{129, 1, 2, 1, 128},
                        shape{64, 64, 1, 1, 8}}) {
    CAPTURE(s.t_len);
    CAPTURE(s.nq);
    const auto qd = normal(s.nq * s.heads * s.d, rng, 1.0);
    const auto kd = normal(s.t_len * s.kv_heads * s.d, rng, 1.0);
    // Strictly increasing positions ending anywhere (not necessarily at T − 1).
    std::vector<std::size_t> all(s.t_len);
    for (std::size_t j = 0; j < s.t_len; ++j) all[j] = j;
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<std::size_t> pos(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(s.nq));
    std::sort(pos.begin(), pos.end());
    const double scale = 1.0 / std::sqrt(static_cast<double>(s.d));
    const auto want =
        hcref::sparse_q_scores(qd, s.nq, s.heads, kd, s.t_len, s.kv_heads, s.d, pos, scale);
    const std::vector<Real> q(qd.begin(), qd.end()), k(kd.begin(), kd.end());
    auto dq = upload(q), dk = upload(k);
    hc::cuda::device_buffer<Real> dout(s.t_len);
    const std::size_t ws_bytes = hc::cuda::sparse_q_scores_workspace_bytes(s.nq, s.t_len);
    hc::cuda::device_buffer<unsigned char> ws(ws_bytes);
    const auto qv = hc::cuda::make_view(static_cast<const Real*>(dq.data()), {s.nq, s.heads, s.d});
    const auto kv =
        hc::cuda::make_view(static_cast<const Real*>(dk.data()), {s.t_len, s.kv_heads, s.d});
    const auto ov = hc::cuda::make_view(dout.data(), {s.t_len});
    const double tol = std::is_same_v<Real, float> ? 3e-5 : 1e-12;

    std::vector<std::int64_t> pos64(pos.begin(), pos.end());
    const hc::vector_view<const std::int64_t> hp(pos64.data(), {s.nq});
    sync_ok(hc::sparse_q_scores(qv, hp, kv, ov, {}, ws.data(), ws_bytes, cudaStream_t{}));
    auto got = download(dout);
    double sum = 0;
    for (std::size_t j = 0; j < s.t_len; ++j) {
      CHECK(static_cast<double>(got[j]) == doctest::Approx(want[j]).epsilon(tol).scale(1e-3));
      sum += static_cast<double>(got[j]);
    }
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-4));

    std::vector<std::int32_t> pos32(pos.begin(), pos.end());
    auto dpos = upload(pos32);
    const auto dp = hc::cuda::make_view(static_cast<const std::int32_t*>(dpos.data()), {s.nq});
    sync_ok(hc::sparse_q_scores(qv, dp, kv, ov, {}, ws.data(), ws_bytes, cudaStream_t{}));
    got = download(dout);
    for (std::size_t j = 0; j < s.t_len; ++j)
      CHECK(static_cast<double>(got[j]) == doctest::Approx(want[j]).epsilon(tol).scale(1e-3));
  }
}

TEST_CASE("device sparse_q_scores: host-visible errors and a too-small workspace throw") {
  HC_REQUIRE_GPU();
  hc::cuda::device_buffer<float> q(2 * 2 * 4), k(5 * 2 * 4), out(5);
  hc::cuda::device_buffer<unsigned char> ws(hc::cuda::sparse_q_scores_workspace_bytes(2, 5));
  const auto qv = hc::cuda::make_view(static_cast<const float*>(q.data()), {2, 2, 4});
  const auto kv = hc::cuda::make_view(static_cast<const float*>(k.data()), {5, 2, 4});
  const auto ov = hc::cuda::make_view(out.data(), {5});
  const std::vector<std::int64_t> unordered{3, 1}, fine{1, 3};
  const hc::vector_view<const std::int64_t> bad(unordered.data(), {2}), good(fine.data(), {2});
  CHECK_THROWS_AS(
      (void)hc::sparse_q_scores(qv, bad, kv, ov, {}, ws.data(), ws.size(), cudaStream_t{}),
      hc::invalid_argument);
  CHECK_THROWS_AS((void)hc::sparse_q_scores(qv, good, kv, ov, {}, ws.data(), 8, cudaStream_t{}),
                  hc::invalid_argument);
  CHECK_THROWS_AS((void)hc::sparse_q_scores(qv, good, kv, hc::cuda::make_view(out.data(), {4}), {},
                                            ws.data(), ws.size(), cudaStream_t{}),
                  hc::invalid_argument);
}

TEST_CASE("device sparse_q_scores: the host's finite-input rule, every key row (#21)") {
  HC_REQUIRE_GPU();
  // T = 10, queries at 3 and 7: key rows 8, 9 are read by no query, yet must be finite.
  std::vector<float> q(2 * 2 * 4, 0.1f), k(10 * 1 * 4, 0.2f);
  const std::vector<std::int64_t> pos{3, 7};
  const hc::vector_view<const std::int64_t> hp(pos.data(), {2});
  hc::cuda::device_buffer<float> out(10);
  hc::cuda::device_buffer<unsigned char> ws(hc::cuda::sparse_q_scores_workspace_bytes(2, 10));
  auto run = [&](const std::vector<float>& qh, const std::vector<float>& kh) {
    auto dq = upload(qh), dk = upload(kh);
    sync_ok(hc::sparse_q_scores(
        hc::cuda::make_view(static_cast<const float*>(dq.data()), {2, 2, 4}), hp,
        hc::cuda::make_view(static_cast<const float*>(dk.data()), {10, 1, 4}),
        hc::cuda::make_view(out.data(), {10}), {}, ws.data(), ws.size(), cudaStream_t{}));
    return download(out);
  };
  for (float x : run(q, k)) CHECK(std::isfinite(x));
  for (const auto& [row, v] :
       {std::pair{9, NAN}, std::pair{8, INFINITY}, std::pair{2, -INFINITY}}) {
    CAPTURE(row);
    auto bad = k;
    bad[static_cast<std::size_t>(row) * 4 + 1] = v;
    for (float x : run(q, bad)) CHECK(std::isnan(x));  // every score NaN: select_tokens rejects
  }
  auto badq = q;
  badq[5] = -INFINITY;
  for (float x : run(badq, k)) CHECK(std::isnan(x));
  for (float x : run(q, k)) CHECK(std::isfinite(x));  // the flag is reset per call
}

TEST_CASE_TEMPLATE("device select_key_tokens equals the reference top-k over reused tokens", Real,
                   float, double) {
  HC_REQUIRE_GPU();
  std::mt19937_64 rng(11);
  for (const std::size_t t_len : {1, 40, 1000, 5000}) {
    // Reused ranges: alternating runs; scores with many exact ties (small integer grid).
    std::vector<std::pair<std::size_t, std::size_t>> reused;
    std::vector<std::uint8_t> mask(t_len, 0);
    for (std::size_t b = 0; b < t_len; b += 37) {
      const std::size_t e = std::min(t_len, b + 25);
      reused.emplace_back(b, e);
      for (std::size_t j = b; j < e; ++j) mask[j] = 1;
    }
    std::uniform_int_distribution<int> grid(0, 20);
    std::vector<double> s(t_len);
    for (auto& x : s) x = grid(rng) / 64.0;
    std::size_t reused_count = 0;
    for (auto m : mask) reused_count += m;
    const std::vector<Real> sr(s.begin(), s.end());
    auto ds = upload(sr);
    auto dm = upload(mask);
    for (const std::size_t k :
         {std::size_t{0}, std::size_t{1}, std::size_t{17}, reused_count + 5}) {
      CAPTURE(t_len);
      CAPTURE(k);
      const auto ref = hcref::select(s, reused, k, 16, 64);
      hc::cuda::device_buffer<std::int64_t> dout(k == 0 ? 1 : k);
      const auto sv = hc::cuda::make_view(static_cast<const Real*>(ds.data()), {t_len});
      const auto mv = hc::cuda::make_view(static_cast<const std::uint8_t*>(dm.data()), {t_len});
      const auto ov = hc::cuda::make_view(dout.data(), {k});
      std::size_t bytes = 0;
      REQUIRE(hc::cuda::select_key_tokens(sv, mv, ov, nullptr, bytes, cudaStream_t{}) ==
              cudaSuccess);
      hc::cuda::device_buffer<unsigned char> ws(bytes);
      sync_ok(hc::cuda::select_key_tokens(sv, mv, ov, ws.data(), bytes, cudaStream_t{}));
      const auto got = download(dout);
      // Best first, ties to the lower index: compare with the host selection's ordered list.
      const std::vector<double> sd(s.begin(), s.end());
      std::vector<hc::token_range> ranges;
      for (auto [b, e] : reused) ranges.push_back({b, e});
      const auto host = hc::select_tokens(sd, ranges, {.top_k = k});
      const std::size_t n = std::min(k, reused_count);
      REQUIRE(host.key.size() == n);
      CHECK(ref.key.size() == n);
      for (std::size_t i = 0; i < n; ++i) {
        CHECK(static_cast<std::size_t>(got[i]) == host.key[i]);
        CHECK(ref.key.count(static_cast<std::size_t>(got[i])) == 1);
      }
      for (std::size_t i = n; i < k; ++i) CHECK(static_cast<std::size_t>(got[i]) == t_len);
    }
  }
}
