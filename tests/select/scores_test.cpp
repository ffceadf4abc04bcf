// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <hybridcache/select.hpp>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/select_reference.hpp"

namespace hc = hybridcache;

namespace {
struct instance {
  std::size_t t_len, nq, heads, kv_heads, d;
  std::vector<std::size_t> pos;
  std::vector<double> q, k;
};

instance make(std::size_t t_len, std::size_t nq, std::size_t heads, std::size_t kv_heads,
              std::size_t d, double spread, std::mt19937_64& rng) {
  instance in{t_len, nq, heads, kv_heads, d, {}, {}, {}};
  // Distinct ascending positions, biased towards the tail like real non-reuse segments.
  std::vector<std::size_t> all(t_len);
  for (std::size_t j = 0; j < t_len; ++j) all[j] = j;
  std::shuffle(all.begin(), all.end(), rng);
  in.pos.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(nq));
  std::sort(in.pos.begin(), in.pos.end());
  std::normal_distribution<double> n(0.0, spread);
  in.q.resize(nq * heads * d);
  in.k.resize(t_len * kv_heads * d);
  for (auto& x : in.q) x = n(rng);
  for (auto& x : in.k) x = n(rng);
  return in;
}
}  // namespace

TEST_CASE_TEMPLATE("sparse-Q scores match a direct double-precision computation", Scalar, float,
                   double) {
  std::mt19937_64 rng(17);
  struct shape {
    std::size_t t, nq, h, hkv, d;
    double spread;
    std::size_t block;  // workspace forcing a given query block size (0: default)
  };
  for (const shape sh : {shape{1, 1, 1, 1, 4, 1.0, 0}, shape{37, 5, 2, 2, 8, 1.0, 0},
                         shape{200, 60, 4, 2, 16, 1.5, 0},   // GQA: 2 query heads per kv head
                         shape{300, 100, 3, 1, 32, 2.0, 7},  // MQA, odd block size
                         shape{513, 200, 2, 2, 64, 0.5, 1}, shape{128, 128, 1, 1, 8, 3.0, 0}}) {
    CAPTURE(sh.t);
    CAPTURE(sh.nq);
    const auto in = make(sh.t, sh.nq, sh.h, sh.hkv, sh.d, sh.spread, rng);
    const double scale = 1.0 / std::sqrt(static_cast<double>(sh.d));
    const auto want =
        hcref::sparse_q_scores(in.q, sh.nq, sh.h, in.k, sh.t, sh.hkv, sh.d, in.pos, scale);
    std::vector<Scalar> q(in.q.begin(), in.q.end()), k(in.k.begin(), in.k.end());
    std::vector<std::int64_t> pos(in.pos.begin(), in.pos.end());
    std::vector<double> got(sh.t, -1.0);
    hc::sparse_q_options opt;
    if (sh.block) {
      opt.min_query_block = opt.max_query_block = sh.block;
    }
    hc::sparse_q_scores(hc::strided_view<const Scalar, 3>(q.data(), {sh.nq, sh.h, sh.d}),
                        hc::vector_view<const std::int64_t>(pos.data(), {sh.nq}),
                        hc::strided_view<const Scalar, 3>(k.data(), {sh.t, sh.hkv, sh.d}),
                        hc::vector_view<double>(got.data(), {sh.t}), opt);
    const double tol = std::is_same_v<Scalar, float> ? 2e-5 : 1e-12;
    double total = 0.0;
    for (std::size_t j = 0; j < sh.t; ++j) {
      total += got[j];
      CHECK(got[j] == doctest::Approx(want[j]).epsilon(tol).scale(1.0 / static_cast<double>(sh.t)));
      if (j > in.pos.back()) CHECK(got[j] == 0.0);  // causal: nothing after the last query
    }
    CHECK(total == doctest::Approx(1.0).epsilon(1e-6));
  }
}

TEST_CASE("queries in far-apart clusters (column panels) match the reference") {
  std::mt19937_64 rng(12);
  auto in = make(1500, 30, 2, 1, 16, 1.0, rng);
  for (std::size_t i = 0; i < 30; ++i) in.pos[i] = (i / 10) * 650 + 100 + i % 10 * (i < 10 ? 30 : 1);
  const auto want = hcref::sparse_q_scores(in.q, 30, 2, in.k, 1500, 1, 16, in.pos, 0.25);
  std::vector<float> q(in.q.begin(), in.q.end()), k(in.k.begin(), in.k.end());
  for (std::size_t block : {30u, 7u, 1u}) {
    std::vector<double> got(1500);
    hc::sparse_q_options opt;
    opt.min_query_block = opt.max_query_block = block;
    hc::sparse_q_scores(hc::strided_view<const float, 3>(q.data(), {30, 2, 16}),
                        hc::vector_view<const std::size_t>(in.pos.data(), {30}),
                        hc::strided_view<const float, 3>(k.data(), {1500, 1, 16}),
                        hc::vector_view<double>(got.data(), {1500}), opt);
    for (std::size_t j = 0; j < 1500; ++j)
      CHECK(got[j] == doctest::Approx(want[j]).epsilon(2e-5).scale(1.0 / 1500));
  }
}

TEST_CASE("strided keys (a KV-cache [T, heads, d] slice) and float output") {
  std::mt19937_64 rng(3);
  const auto in = make(90, 30, 2, 2, 8, 1.0, rng);
  // Keys stored with a padded row pitch: [T][2 heads][8 + 4 padding].
  std::vector<float> k(90 * 2 * 12, std::numeric_limits<float>::quiet_NaN());
  for (std::size_t t = 0; t < 90; ++t)
    for (std::size_t h = 0; h < 2; ++h)
      for (std::size_t c = 0; c < 8; ++c)
        k[(t * 2 + h) * 12 + c] = static_cast<float>(in.k[(t * 2 + h) * 8 + c]);
  std::vector<float> q(in.q.begin(), in.q.end());
  std::vector<std::uint32_t> pos(in.pos.begin(), in.pos.end());
  std::vector<float> got(90);
  hc::sparse_q_scores(hc::strided_view<const float, 3>(q.data(), {30, 2, 8}),
                      hc::vector_view<const std::uint32_t>(pos.data(), {30}),
                      hc::strided_view<const float, 3>(k.data(), {90, 2, 8}, {24, 12, 1}),
                      hc::vector_view<float>(got.data(), {90}));
  const auto want = hcref::sparse_q_scores(in.q, 30, 2, in.k, 90, 2, 8, in.pos, 1.0 / std::sqrt(8.0));
  for (std::size_t j = 0; j < 90; ++j) CHECK(got[j] == doctest::Approx(want[j]).epsilon(1e-4).scale(1e-2));
}

TEST_CASE("sparse_q_scores rejects mismatched shapes, bad positions and non-finite input") {
  std::vector<float> q(2 * 2 * 4, 0.1f), k(10 * 1 * 4, 0.2f);
  std::vector<std::int32_t> pos{3, 7};
  std::vector<double> out(10);
  auto run = [&](std::vector<std::int32_t> p, std::size_t kv_heads, std::size_t t_out,
                 hc::sparse_q_options opt = {}) {
    out.assign(t_out, 0.0);
    hc::sparse_q_scores(hc::strided_view<const float, 3>(q.data(), {2, 2, 4}),
                        hc::vector_view<const std::int32_t>(p.data(), {p.size()}),
                        hc::strided_view<const float, 3>(k.data(), {10 / kv_heads, kv_heads, 4}),
                        hc::vector_view<double>(out.data(), {t_out}), opt);
  };
  CHECK_NOTHROW(run(pos, 1, 10));
  CHECK_THROWS_AS(run({7, 3}, 1, 10), hc::invalid_argument);   // not increasing
  CHECK_THROWS_AS(run({3, 3}, 1, 10), hc::invalid_argument);   // repeated
  CHECK_THROWS_AS(run({3, 10}, 1, 10), hc::invalid_argument);  // out of range
  CHECK_THROWS_AS(run({-1, 3}, 1, 10), hc::invalid_argument);  // negative
  CHECK_THROWS_AS(run({3}, 1, 10), hc::invalid_argument);      // positions size
  CHECK_THROWS_AS(run(pos, 1, 9), hc::invalid_argument);       // output size
  CHECK_THROWS_AS(run(pos, 1, 10, {.scale = -1.0}), hc::invalid_argument);
  q[5] = std::numeric_limits<float>::infinity();
  CHECK_THROWS_AS(run(pos, 1, 10), hc::invalid_argument);
  for (double x : out) CHECK(x == 0.0);  // zeroed, not left half-written
  std::vector<float> k3(9 * 3 * 4);
  CHECK_THROWS_AS(hc::sparse_q_scores(hc::strided_view<const float, 3>(q.data(), {2, 2, 4}),
                                      hc::vector_view<const std::int32_t>(pos.data(), {2}),
                                      hc::strided_view<const float, 3>(k3.data(), {9, 3, 4}),
                                      hc::vector_view<double>(out.data(), {9})),
                  hc::invalid_argument);  // 3 kv heads do not divide 2 query heads
}

TEST_CASE("every key row must be finite, an overflowing logit is reported as overflow (#21)") {
  // Prompt of 10 tokens, queries at 3 and 7: key rows 8 and 9 lie after the last query.
  std::vector<float> q(2 * 2 * 4, 0.1f), k(10 * 1 * 4, 0.2f);
  std::vector<std::int32_t> pos{3, 7};
  std::vector<double> out(10, -1.0);
  auto run = [&] {
    out.assign(10, -1.0);
    hc::sparse_q_scores(hc::strided_view<const float, 3>(q.data(), {2, 2, 4}),
                        hc::vector_view<const std::int32_t>(pos.data(), {2}),
                        hc::strided_view<const float, 3>(k.data(), {10, 1, 4}),
                        hc::vector_view<double>(out.data(), {10}));
  };
  // The argument the error names, or "" when nothing was thrown.
  auto rejected = [&]() -> std::string {
    try {
      run();
    } catch (const hc::invalid_argument& e) {
      for (double x : out) CHECK(x == 0.0);  // zeroed, not half-written
      return e.argument();
    }
    return "";
  };
  REQUIRE(rejected().empty());
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  SUBCASE("NaN in a key row after the last query position") {
    k[9 * 4 + 2] = nan;
    CHECK(rejected() == "keys[9][0][2]");
  }
  SUBCASE("+inf in the key row right after the last query") {
    k[8 * 4 + 0] = inf;
    CHECK(rejected() == "keys[8][0][0]");
  }
  SUBCASE("a -inf key component (a -inf logit a softmax would turn into weight 0)") {
    k[2 * 4 + 1] = -inf;
    CHECK(rejected() == "keys[2][0][1]");
  }
  SUBCASE("-inf in a query") {
    q[1 * 8 + 1 * 4 + 3] = -inf;  // query 1, head 1, component 3
    CHECK(rejected() == "queries[1][1][3]");
  }
  SUBCASE("finite but huge inputs: the float logit overflows, and the message says so") {
    std::fill(q.begin(), q.end(), 1e30f);
    std::fill(k.begin(), k.end(), 1e30f);  // q·k/√d = 2e60: beyond float, finite in double
    std::string what;
    try {
      run();
    } catch (const hc::invalid_argument& e) {
      CHECK(std::string(e.argument()) == "queries[0] * keys[0]");
      what = e.what();
    }
    CHECK(what.find("overflows float") != std::string::npos);
    CHECK(what.find("must be finite") == std::string::npos);
    for (double x : out) CHECK(x == 0.0);
    // The same values in double do not overflow: accepted, uniform attention, Σ s_j = 1.
    std::vector<double> qd(q.begin(), q.end()), kd(k.begin(), k.end());
    std::vector<double> sd(10);
    hc::sparse_q_scores(hc::strided_view<const double, 3>(qd.data(), {2, 2, 4}),
                        hc::vector_view<const std::int32_t>(pos.data(), {2}),
                        hc::strided_view<const double, 3>(kd.data(), {10, 1, 4}),
                        hc::vector_view<double>(sd.data(), {10}));
    // Hand-worked: query 3 spreads 1/4 over keys 0..3, query 7 1/8 over 0..7 (equal logits).
    for (std::size_t j = 0; j < 10; ++j) {
      const double want = (j <= 3 ? 0.25 : 0.0) / 2 + (j <= 7 ? 0.125 : 0.0) / 2;
      CHECK(sd[j] == doctest::Approx(want).epsilon(1e-12));
    }
  }
}

TEST_CASE("scores drive selection end to end: the attended reused token is selected") {
  // One query at the end attends strongly to token 5 (its key equals the query direction).
  const std::size_t t_len = 40, d = 8;
  std::vector<float> k(t_len * d, 0.0f), q(d, 0.0f);
  std::mt19937_64 rng(1);
  std::normal_distribution<float> n(0.0f, 0.1f);
  for (auto& x : k) x = n(rng);
  for (std::size_t c = 0; c < d; ++c) {
    q[c] = 3.0f;
    k[5 * d + c] = 3.0f;
  }
  std::vector<std::size_t> pos{39};
  std::vector<double> s(t_len);
  hc::sparse_q_scores(hc::strided_view<const float, 3>(q.data(), {1, 1, d}),
                      hc::vector_view<const std::size_t>(pos.data(), {1}),
                      hc::strided_view<const float, 3>(k.data(), {t_len, 1, d}),
                      hc::vector_view<double>(s.data(), {t_len}));
  const std::vector<hc::token_range> reused{{0, 20}, {20, 39}};
  const auto sel = hc::select_tokens(s, reused, {.top_k = 1, .block_size = 4});
  REQUIRE(sel.key.size() == 1);
  CHECK(sel.key[0] == 5);
}
