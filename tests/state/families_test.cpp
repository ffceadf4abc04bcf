// SPDX-License-Identifier: Apache-2.0
// Issue 15's families (Mamba1 selective SSM, RWKV-7 DPLR, Gated DeltaProduct), per-token outputs
// and the FLA / mamba_ssm layout adapter against the independent double-precision references in
// tests/support/state_family_reference.hpp (explicit per-token transition matrices).
#include <doctest/doctest.h>

#include <hybridcache/state/fla.hpp>
#include <hybridcache/state/outputs.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common.hpp"
#include "support/state_family_reference.hpp"

namespace {

template <class Real>
std::vector<Real> cast(const std::vector<double>& x) {
  return std::vector<Real>(x.begin(), x.end());
}

template <class Real>
hc_ref::selective rounded(hc_ref::selective s) {
  for (auto* v : {&s.k, &s.v, &s.dt, &s.a}) hc_ref::round_through<Real>(*v);
  return s;
}
template <class Real>
hc_ref::dplr rounded(hc_ref::dplr s) {
  for (auto* v : {&s.k, &s.v, &s.a, &s.b, &s.w}) hc_ref::round_through<Real>(*v);
  return s;
}
template <class Real>
hc_ref::delta_product rounded(hc_ref::delta_product s) {
  for (auto* v : {&s.k, &s.v, &s.beta, &s.g}) hc_ref::round_through<Real>(*v);
  return s;
}

/// Owning library-typed copies of each reference input.
template <class Real>
struct own_selective {
  hc_ref::selective ref;
  std::vector<Real> k, v, dt, a;
  explicit own_selective(const hc_ref::selective& s)
      : ref(rounded<Real>(s)),
        k(cast<Real>(ref.k)),
        v(cast<Real>(ref.v)),
        dt(cast<Real>(ref.dt)),
        a(cast<Real>(ref.a)) {}
  hc::selective_inputs<Real> view() const { return {ref.L, ref.dk, ref.dv, k, v, dt, a}; }
};
template <class Real>
struct own_dplr {
  hc_ref::dplr ref;
  std::vector<Real> k, v, a, b, w;
  explicit own_dplr(const hc_ref::dplr& s)
      : ref(rounded<Real>(s)),
        k(cast<Real>(ref.k)),
        v(cast<Real>(ref.v)),
        a(cast<Real>(ref.a)),
        b(cast<Real>(ref.b)),
        w(cast<Real>(ref.w)) {}
  hc::dplr_inputs<Real> view() const { return {ref.L, ref.dk, ref.dv, k, v, a, b, w}; }
};
template <class Real>
struct own_product {
  hc_ref::delta_product ref;
  std::vector<Real> k, v, beta, g;
  explicit own_product(const hc_ref::delta_product& s)
      : ref(rounded<Real>(s)),
        k(cast<Real>(ref.k)),
        v(cast<Real>(ref.v)),
        beta(cast<Real>(ref.beta)),
        g(cast<Real>(ref.g)) {}
  hc::delta_product_inputs<Real> view() const {
    return {ref.L, ref.dk, ref.dv, ref.nh, k, v, beta, g};
  }
};

constexpr std::size_t lengths[] = {0, 1, 63, 65, 300};

}  // namespace

TEST_CASE_TEMPLATE("selective SSM: summary, recurrence, apply and splits match the reference", Real,
                   float, double) {
  std::mt19937_64 rng(15);
  for (std::size_t L : lengths) {
    CAPTURE(L);
    own_selective<Real> in(hc_ref::random_selective(rng, L, 5, 7));
    const auto s = hc::summarize(in.view());
    const auto ref0 = hc_ref::run(in.ref, hc_ref::mat(5, 7), 0, L, /*explicit_matrix=*/L <= 65);
    CHECK(s.length() == L);
    CHECK(hc_ref::rel_err(s.end_state(), ref0.S.a, 1e-12) < tol<Real>());
    std::vector<double> decay(s.log_decay().size());
    for (std::size_t i = 0; i < decay.size(); ++i) decay[i] = std::exp(s.log_decay()[i]);
    CHECK(hc_ref::rel_err(decay, ref0.E.a) < tol<Real>());

    const auto s0 = hc_ref::random_state(rng, 5, 7);
    const auto ref = hc_ref::run(in.ref, s0, 0, L);
    const auto s0r = to_real<Real>(s0);
    CHECK(hc_ref::rel_err(hc::run_recurrence(in.view(), s0r), ref.S.a) < tol<Real>());
    CHECK(hc_ref::rel_err(hc::apply(s, s0r), ref.S.a) < tol<Real>());
    // Split anywhere and compose: the same affine map.
    const std::size_t mid = L / 3;
    const auto a = hc::summarize(in.view().slice(0, mid));
    const auto b = hc::summarize(in.view().slice(mid, L));
    const auto ab = hc::compose(a, b);
    CHECK(ab.length() == L);
    CHECK(hc_ref::rel_err(hc::apply(ab, s0r), ref.S.a) < tol<Real>());
  }
}

TEST_CASE_TEMPLATE("elementwise promotion: GLA then Mamba1 then RetNet composes exactly", Real,
                   float, double) {
  std::mt19937_64 rng(16);
  const std::size_t dk = 4, dv = 3;
  auto gla = own<Real>(hc_ref::random_tokens(rng, 20, dk, dv, false, hc_ref::gate::diagonal));
  auto ret = own<Real>(hc_ref::random_tokens(rng, 20, dk, dv, false, hc_ref::gate::scalar));
  own_selective<Real> mam(hc_ref::random_selective(rng, 30, dk, dv));
  const auto s0 = hc_ref::random_state(rng, dk, dv);
  // Reference: run the three segments one after another from s0.
  auto st = hc_ref::run_state(gla.ref, s0, 0, 20);
  st = hc_ref::run(mam.ref, st, 0, 30).S;
  st = hc_ref::run_state(ret.ref, st, 0, 20);

  const auto sg = hc::summarize(gla.view(), gla.rule);
  const auto sm = hc::summarize(mam.view());
  const auto sr = hc::summarize(ret.view(), ret.rule);
  const auto all = hc::compose(hc::compose(sg, sm), sr);
  CHECK(all.length() == 70);
  CHECK(hc_ref::rel_err(hc::apply(all, to_real<Real>(s0)), st.a) < tol<Real>());

  // Elementwise and dense do not compose: a clear error, both orders.
  auto dn = own<Real>(hc_ref::random_tokens(rng, 5, dk, dv, true, hc_ref::gate::none));
  const auto sd = hc::summarize(dn.view(), dn.rule);
  CHECK_THROWS_WITH_AS(hc::compose(sd, sm), doctest::Contains("first.family()"),
                       hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::compose(sm, sd), doctest::Contains("then.family()"),
                       hybridcache::invalid_argument);
}

TEST_CASE_TEMPLATE("RWKV-7 DPLR: dense summary, recurrence, apply and splits match the reference",
                   Real, float, double) {
  std::mt19937_64 rng(17);
  for (std::size_t L : lengths) {
    CAPTURE(L);
    own_dplr<Real> in(hc_ref::random_dplr(rng, L, 6, 4));
    const auto s = hc::summarize(in.view());
    const auto ref0 = hc_ref::run(in.ref, hc_ref::mat(6, 4), 0, L);
    CHECK(s.family() == hc::transition_family::dense);
    CHECK(s.length() == L);
    CHECK(hc_ref::rel_err(s.transition(), ref0.T.a) < tol<Real>());
    CHECK(hc_ref::rel_err(s.end_state(), ref0.S.a, 1e-12) < tol<Real>());
    const auto s0 = hc_ref::random_state(rng, 6, 4);
    const auto ref = hc_ref::run(in.ref, s0, 0, L);
    const auto s0r = to_real<Real>(s0);
    CHECK(hc_ref::rel_err(hc::run_recurrence(in.view(), s0r), ref.S.a) < tol<Real>());
    const std::size_t mid = (2 * L) / 3;
    const auto ab =
        hc::compose(hc::summarize(in.view().slice(0, mid)), hc::summarize(in.view().slice(mid, L)));
    CHECK(hc_ref::rel_err(hc::apply(ab, s0r), ref.S.a) < tol<Real>());
  }
}

TEST_CASE_TEMPLATE("RWKV-7 DPLR: the chunked WY summary matches the reference at every chunk size",
                   Real, float, double) {
  std::mt19937_64 rng(23);
  for (std::size_t L :
       {std::size_t{1}, std::size_t{5}, std::size_t{16}, std::size_t{33}, std::size_t{100}}) {
    CAPTURE(L);
    hc_ref::dplr d = hc_ref::random_dplr(rng, L, 6, 4);
    if (L >= 16) {  // a token whose decay is −∞ on some keys: the chunk must give exact zeros
      d.w[7 * 6 + 1] = -INFINITY;
      d.w[9 * 6 + 4] = -INFINITY;
    }
    own_dplr<Real> in(d);
    const auto ref0 = hc_ref::run(in.ref, hc_ref::mat(6, 4), 0, L);
    for (std::size_t chunk :
         {std::size_t{1}, std::size_t{3}, std::size_t{16}, std::size_t{64}, std::size_t{256}}) {
      CAPTURE(chunk);
      const auto s = hc::summarize(in.view(), {hc::summarize_method::chunked, chunk});
      CHECK(s.family() == hc::transition_family::dense);
      CHECK(s.length() == L);
      CHECK(hc_ref::rel_err(s.transition(), ref0.T.a) < tol<Real>());
      CHECK(hc_ref::rel_err(s.end_state(), ref0.S.a, 1e-12) < tol<Real>());
      for (auto x : s.transition()) CHECK(std::isfinite(x));
    }
  }
  // Chunked summaries compose like per-token ones: [0, 40) chunked at 16, [40, 70) at 7.
  own_dplr<Real> in(hc_ref::random_dplr(rng, 70, 5, 3));
  const auto s0 = hc_ref::random_state(rng, 5, 3);
  const auto ref = hc_ref::run(in.ref, s0, 0, 70);
  const auto ab =
      hc::compose(hc::summarize(in.view().slice(0, 40), {hc::summarize_method::chunked, 16}),
                  hc::summarize(in.view().slice(40, 70), {hc::summarize_method::chunked, 7}));
  CHECK(hc_ref::rel_err(hc::apply(ab, to_real<Real>(s0)), ref.S.a) < tol<Real>());
  // The chunk length is validated.
  CHECK_THROWS_WITH_AS(hc::summarize(in.view(), {hc::summarize_method::chunked, 0}),
                       doctest::Contains("opts.chunk"), hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::summarize(in.view(), {hc::summarize_method::chunked, 257}),
                       doctest::Contains("opts.chunk"), hybridcache::invalid_argument);
}

TEST_CASE("RWKV-7 DPLR: the rank-1 term reads the old state (not the decayed one)") {
  // dk = dv = 1: T = e^{w} + b·a exactly; the decay-first reading would give e^{w}(1 + b·a).
  std::vector<double> k{0}, v{0}, a{-0.5}, b{0.5}, w{-0.7};
  const auto s = hc::summarize(hc::dplr_inputs<double>{1, 1, 1, k, v, a, b, w});
  CHECK(s.transition()[0] == doctest::Approx(std::exp(-0.7) - 0.25).epsilon(1e-15));
}

TEST_CASE_TEMPLATE("Gated DeltaProduct: summaries on both paths and several chunks match", Real,
                   float, double) {
  std::mt19937_64 rng(18);
  struct cfg {
    std::size_t L, nh;
    bool gated, per_key;
  };
  const cfg cfgs[] = {{1, 2, true, false},
                      {40, 2, true, false},
                      {33, 3, false, false},
                      {50, 3, true, true},
                      {70, 1, true, false}};
  for (const cfg& c : cfgs) {
    CAPTURE(c.L);
    CAPTURE(c.nh);
    own_product<Real> in(hc_ref::random_delta_product(rng, c.L, 6, 3, c.nh, c.gated, c.per_key));
    const auto ref0 = hc_ref::run(in.ref, hc_ref::mat(6, 3), 0, c.L);
    for (std::size_t chunk : {std::size_t{64}, std::size_t{7}, std::size_t{16}}) {
      for (auto m : {hc::summarize_method::per_token, hc::summarize_method::chunked}) {
        const auto s = hc::summarize(in.view(), {m, chunk});
        CHECK(s.family() == hc::transition_family::dense);
        CHECK(s.length() == c.L);
        CHECK(hc_ref::rel_err(s.transition(), ref0.T.a) < tol<Real>());
        CHECK(hc_ref::rel_err(s.end_state(), ref0.S.a) < tol<Real>());
      }
    }
    const auto s0 = hc_ref::random_state(rng, 6, 3);
    const auto ref = hc_ref::run(in.ref, s0, 0, c.L);
    CHECK(hc_ref::rel_err(hc::run_recurrence(in.view(), to_real<Real>(s0)), ref.S.a) < tol<Real>());
  }
}

TEST_CASE_TEMPLATE("outputs o_t = scale q_t^T S_t match the reference for every family", Real,
                   float, double) {
  std::mt19937_64 rng(19);
  const std::size_t L = 37, dk = 6, dv = 5;
  const double scale = 1.0 / std::sqrt(6.0);
  for (const variant& var : all_variants) {
    CAPTURE(std::string(var.name));
    auto in = own<Real>(hc_ref::random_tokens(rng, L, dk, dv, var.delta, var.gate));
    auto q = hc_ref::random_vector(rng, L * dk);
    hc_ref::round_through<Real>(q);
    const auto s0 = hc_ref::random_state(rng, dk, dv);
    const auto expect = hc_ref::outputs(in.ref, q, scale, s0);
    const auto qr = cast<Real>(q);
    const auto got = hc::outputs(in.view(), in.rule, qr, std::nullopt, to_real<Real>(s0));
    CHECK(hc_ref::rel_err(got.o, expect) < tol<Real>());
    CHECK(hc_ref::rel_err(got.final_state, hc_ref::run_state(in.ref, s0, 0, L).a) < tol<Real>());
    // Zero initial state by default, explicit scale honoured.
    const auto z = hc::outputs(in.view(), in.rule, qr, 2.0);
    CHECK(hc_ref::rel_err(z.o, hc_ref::outputs(in.ref, q, 2.0, hc_ref::mat(dk, dv))) < tol<Real>());
  }
  auto q = hc_ref::random_vector(rng, L * dk);
  hc_ref::round_through<Real>(q);
  const auto qr = cast<Real>(q);
  {
    own_selective<Real> in(hc_ref::random_selective(rng, L, dk, dv));
    CHECK(hc_ref::rel_err(hc::outputs(in.view(), qr, 1.0).o,
                          hc_ref::outputs(in.ref, q, 1.0, hc_ref::mat(dk, dv))) < tol<Real>());
  }
  {
    own_dplr<Real> in(hc_ref::random_dplr(rng, L, dk, dv));
    CHECK(hc_ref::rel_err(hc::outputs(in.view(), qr).o,
                          hc_ref::outputs(in.ref, q, scale, hc_ref::mat(dk, dv))) < tol<Real>());
  }
  {
    own_product<Real> in(hc_ref::random_delta_product(rng, L, dk, dv, 2, true));
    CHECK(hc_ref::rel_err(hc::outputs(in.view(), qr).o,
                          hc_ref::outputs(in.ref, q, scale, hc_ref::mat(dk, dv))) < tol<Real>());
  }
}

namespace {

/// An FLA-layout tensor [B, T, H, X] (or head-first) filled from per-(b, h) token-major blocks,
/// indexed here independently of the adapter.
struct fla_tensor {
  std::size_t B, T, H, X;
  bool head_first;
  std::vector<double> data;
  fla_tensor(std::size_t b, std::size_t t, std::size_t h, std::size_t x, bool hf)
      : B(b), T(t), H(h), X(x), head_first(hf), data(b * t * h * x) {}
  double& at(std::size_t b, std::size_t t, std::size_t h, std::size_t x) {
    return head_first ? data[((b * H + h) * T + t) * X + x] : data[((b * T + t) * H + h) * X + x];
  }
  void set_head(std::size_t b, std::size_t h, const std::vector<double>& block) {
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t x = 0; x < X; ++x) at(b, t, h, x) = block[t * X + x];
  }
  std::vector<double> head(std::size_t b, std::size_t h) {
    std::vector<double> out(T * X);
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t x = 0; x < X; ++x) out[t * X + x] = at(b, t, h, x);
    return out;
  }
};

struct fla_case {
  const char* op;
  bool delta;
  hc_ref::gate gate;
};

}  // namespace

TEST_CASE_TEMPLATE("FLA adapter: every op, both layouts, against the per-head reference", Real,
                   float, double) {
  std::mt19937_64 rng(20);
  const std::size_t B = 2, T = 9, H = 3, K = 4, V = 5;
  const fla_case cases[] = {{"chunk_simple_gla", false, hc_ref::gate::scalar},
                            {"linear (chunk_simple_gla, no g)", false, hc_ref::gate::none},
                            {"chunk_gla", false, hc_ref::gate::diagonal},
                            {"chunk_delta_rule", true, hc_ref::gate::none},
                            {"chunk_gated_delta_rule", true, hc_ref::gate::scalar},
                            {"chunk_kda", true, hc_ref::gate::diagonal}};
  for (bool hf : {false, true}) {
    for (const fla_case& c : cases) {
      CAPTURE(std::string(c.op));
      CAPTURE(hf);
      const std::size_t gx = c.gate == hc_ref::gate::diagonal ? K : 1;
      fla_tensor q(B, T, H, K, hf), k(B, T, H, K, hf), v(B, T, H, V, hf), g(B, T, H, gx, hf),
          beta(B, T, H, 1, hf);
      std::vector<double> init(B * H * K * V), expect_o(B * T * H * V);
      fla_tensor eo(B, T, H, V, hf);
      std::vector<double> expect_state(B * H * K * V);
      for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
          auto t = hc_ref::rounded<Real>(hc_ref::random_tokens(rng, T, K, V, c.delta, c.gate));
          auto qq = hc_ref::random_vector(rng, T * K);
          hc_ref::round_through<Real>(qq);
          auto s0 = hc_ref::random_state(rng, K, V);
          for (auto& x : s0.a) x = static_cast<double>(static_cast<Real>(x));
          q.set_head(b, h, qq);
          k.set_head(b, h, t.k);
          v.set_head(b, h, t.v);
          if (c.delta) beta.set_head(b, h, t.beta);
          if (c.gate != hc_ref::gate::none) g.set_head(b, h, t.log_gate);
          std::copy(s0.a.begin(), s0.a.end(), init.begin() + (b * H + h) * K * V);
          eo.set_head(b, h, hc_ref::outputs(t, qq, 1.0 / std::sqrt(double(K)), s0));
          const auto fin = hc_ref::run_state(t, s0, 0, T);
          std::copy(fin.a.begin(), fin.a.end(), expect_state.begin() + (b * H + h) * K * V);
        }
      const auto qr = cast<Real>(q.data), kr = cast<Real>(k.data), vr = cast<Real>(v.data),
                 gr = cast<Real>(g.data), br = cast<Real>(beta.data), ir = cast<Real>(init);
      hc::fla::dims d{B, T, H, K, V, hf};
      hc::fla::args<Real> a;
      a.q = qr;
      a.k = kr;
      a.v = vr;
      a.initial_state = ir;
      a.output_final_state = true;
      if (c.delta) a.beta = br;
      hc::fla::result<Real> r;
      const std::string op = c.op;
      if (c.gate == hc_ref::gate::none && !c.delta) {
        r = hc::fla::chunk_simple_gla(d, a);
      } else if (op == "chunk_simple_gla") {
        a.g = gr;
        r = hc::fla::chunk_simple_gla(d, a);
      } else if (op == "chunk_gla") {
        a.gk = gr;
        r = hc::fla::chunk_gla(d, a);
      } else if (op == "chunk_delta_rule") {
        r = hc::fla::chunk_delta_rule(d, a);
      } else if (op == "chunk_gated_delta_rule") {
        a.g = gr;
        r = hc::fla::chunk_gated_delta_rule(d, a);
      } else {
        a.g = gr;
        r = hc::fla::chunk_kda(d, a);
      }
      CHECK(hc_ref::rel_err(r.o, eo.data) < tol<Real>());
      CHECK(hc_ref::rel_err(r.final_state, expect_state) < tol<Real>());
      a.output_final_state = false;
      a.initial_state = {};
      CHECK(hc::fla::chunk_simple_gla(d, hc::fla::args<Real>{.q = qr, .k = kr, .v = vr})
                .final_state.empty());
    }
  }
}

TEST_CASE_TEMPLATE("FLA adapter: RWKV-7 and Gated DeltaProduct layouts", Real, float, double) {
  std::mt19937_64 rng(21);
  const std::size_t B = 2, T = 7, H = 2, K = 4, V = 3, nh = 2;
  for (bool hf : {false, true}) {
    CAPTURE(hf);
    fla_tensor r(B, T, H, K, hf), w(B, T, H, K, hf), k(B, T, H, K, hf), v(B, T, H, V, hf),
        a(B, T, H, K, hf), bb(B, T, H, K, hf), eo(B, T, H, V, hf);
    fla_tensor pq(B, T, H, K, hf), pk(B, T * nh, H, K, hf), pv(B, T * nh, H, V, hf),
        pb(B, T * nh, H, 1, hf), pg(B, T, H, 1, hf), po(B, T, H, V, hf);
    std::vector<double> fin(B * H * K * V), pfin(B * H * K * V);
    const double scale = 0.5;
    for (std::size_t b = 0; b < B; ++b)
      for (std::size_t h = 0; h < H; ++h) {
        const auto d = rounded<Real>(hc_ref::random_dplr(rng, T, K, V));
        auto rr = hc_ref::random_vector(rng, T * K);
        hc_ref::round_through<Real>(rr);
        r.set_head(b, h, rr);
        w.set_head(b, h, d.w);
        k.set_head(b, h, d.k);
        v.set_head(b, h, d.v);
        a.set_head(b, h, d.a);
        bb.set_head(b, h, d.b);
        eo.set_head(b, h, hc_ref::outputs(d, rr, scale, hc_ref::mat(K, V)));
        const auto f = hc_ref::run(d, hc_ref::mat(K, V), 0, T).S;
        std::copy(f.a.begin(), f.a.end(), fin.begin() + (b * H + h) * K * V);

        const auto p = rounded<Real>(hc_ref::random_delta_product(rng, T, K, V, nh, true));
        pq.set_head(b, h, rr);
        pk.set_head(b, h, p.k);
        pv.set_head(b, h, p.v);
        pb.set_head(b, h, p.beta);
        pg.set_head(b, h, p.g);
        po.set_head(b, h, hc_ref::outputs(p, rr, 1.0 / std::sqrt(double(K)), hc_ref::mat(K, V)));
        const auto pf = hc_ref::run(p, hc_ref::mat(K, V), 0, T).S;
        std::copy(pf.a.begin(), pf.a.end(), pfin.begin() + (b * H + h) * K * V);
      }
    hc::fla::dims d{B, T, H, K, V, hf};
    const auto R = cast<Real>(r.data), W = cast<Real>(w.data), Kk = cast<Real>(k.data),
               Vv = cast<Real>(v.data), A = cast<Real>(a.data), Bb = cast<Real>(bb.data);
    hc::fla::args<Real> x;
    x.r = R;
    x.w = W;
    x.k = Kk;
    x.v = Vv;
    x.a = A;
    x.b = Bb;
    x.scale = scale;
    x.output_final_state = true;
    const auto res = hc::fla::fused_recurrent_rwkv7(d, x);
    CHECK(hc_ref::rel_err(res.o, eo.data) < tol<Real>());
    CHECK(hc_ref::rel_err(res.final_state, fin) < tol<Real>());

    const auto Q = cast<Real>(pq.data), PK = cast<Real>(pk.data), PV = cast<Real>(pv.data),
               PB = cast<Real>(pb.data), PG = cast<Real>(pg.data);
    hc::fla::args<Real> y;
    y.q = Q;
    y.k = PK;
    y.v = PV;
    y.beta = PB;
    y.g = PG;
    y.num_householder = nh;
    y.output_final_state = true;
    const auto pres = hc::fla::chunk_gated_delta_product(d, y);
    CHECK(hc_ref::rel_err(pres.o, po.data) < tol<Real>());
    CHECK(hc_ref::rel_err(pres.final_state, pfin) < tol<Real>());
  }
}

TEST_CASE_TEMPLATE("mamba selective_scan layout matches selective_scan_ref conventions", Real,
                   float, double) {
  std::mt19937_64 rng(22);
  const std::size_t Bn = 2, Dn = 3, L = 11, N = 4;
  // mamba_ssm layouts: u, delta [B, D, L]; A [D, N]; B, C [B, N, L]; D [D]; state [B, D, N].
  auto u = hc_ref::random_vector(rng, Bn * Dn * L), Bm = hc_ref::random_vector(rng, Bn * N * L),
       Cm = hc_ref::random_vector(rng, Bn * N * L), Dk = hc_ref::random_vector(rng, Dn),
       bias = hc_ref::random_vector(rng, Dn), delta = hc_ref::random_vector(rng, Bn * Dn * L),
       init = hc_ref::random_vector(rng, Bn * Dn * N);
  std::vector<double> A(Dn * N);
  std::uniform_real_distribution<double> ua(-3, -0.2);
  for (auto& x : A) x = ua(rng);
  for (auto* x : {&u, &Bm, &Cm, &Dk, &bias, &delta, &init, &A}) hc_ref::round_through<Real>(*x);
  // Expected: selective_scan_ref written out directly on mamba's [D, N] state.
  std::vector<double> out(Bn * Dn * L), last(Bn * Dn * N);
  for (std::size_t b = 0; b < Bn; ++b) {
    std::vector<double> x(init.begin() + b * Dn * N, init.begin() + (b + 1) * Dn * N);
    for (std::size_t t = 0; t < L; ++t)
      for (std::size_t c = 0; c < Dn; ++c) {
        double dt = delta[(b * Dn + c) * L + t] + bias[c];
        dt = std::log1p(std::exp(dt));
        dt = static_cast<double>(static_cast<Real>(dt));
        double y = 0;
        for (std::size_t n = 0; n < N; ++n) {
          double& xs = x[c * N + n];
          xs = std::exp(dt * A[c * N + n]) * xs +
               dt * Bm[(b * N + n) * L + t] * u[(b * Dn + c) * L + t];
          y += xs * Cm[(b * N + n) * L + t];
        }
        out[(b * Dn + c) * L + t] = y + Dk[c] * u[(b * Dn + c) * L + t];
      }
    std::copy(x.begin(), x.end(), last.begin() + b * Dn * N);
  }
  const auto U = cast<Real>(u), De = cast<Real>(delta), Am = cast<Real>(A), BB = cast<Real>(Bm),
             CC = cast<Real>(Cm), DD = cast<Real>(Dk), Bi = cast<Real>(bias), I0 = cast<Real>(init);
  hc::mamba::scan_args<Real> s;
  s.batch = Bn;
  s.dim = Dn;
  s.seqlen = L;
  s.dstate = N;
  s.u = U;
  s.delta = De;
  s.A = Am;
  s.B = BB;
  s.C = CC;
  s.D = DD;
  s.delta_bias = Bi;
  s.delta_softplus = true;
  s.initial_state = I0;
  s.return_last_state = true;
  const auto r = hc::mamba::selective_scan(s);
  CHECK(hc_ref::rel_err(r.out, out) < tol<Real>());
  CHECK(hc_ref::rel_err(r.last_state, last) < tol<Real>());
}

TEST_CASE("new families and the adapter reject bad input, naming the argument") {
  std::vector<double> k{1, 0}, v{1}, dt{0.1}, a{-1, -1}, bad_a{-1, 0.5}, neg_dt{-0.1};
  using sel = hc::selective_inputs<double>;
  CHECK_THROWS_WITH_AS(hc::summarize(sel{1, 2, 1, k, v, dt, bad_a}), doctest::Contains("a[1]"),
                       hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::summarize(sel{1, 2, 1, k, v, neg_dt, a}), doctest::Contains("dt[0]"),
                       hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::summarize(sel{1, 2, 1, k, v, dt, v}), doctest::Contains("a.size()"),
                       hybridcache::invalid_argument);
  std::vector<double> w{-0.1, 0.2};
  CHECK_THROWS_WITH_AS(hc::summarize(hc::dplr_inputs<double>{1, 2, 1, k, v, k, k, w}),
                       doctest::Contains("log_gate[1]"), hybridcache::invalid_argument);
  std::vector<double> beta{0.5};
  CHECK_THROWS_WITH_AS(hc::summarize(hc::delta_product_inputs<double>{1, 2, 1, 2, k, v, beta, {}}),
                       doctest::Contains("k.size()"), hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(hc::summarize(hc::delta_product_inputs<double>{1, 2, 1, 0, k, v, beta, {}}),
                       doctest::Contains("householder"), hybridcache::invalid_argument);
  // outputs: q mis-sized, non-finite scale.
  hc::token_inputs<double> in{1, 2, 1, k, v, {}, {}};
  CHECK_THROWS_WITH_AS(hc::outputs(in, hc::transition_rule::additive, std::span<const double>(v)),
                       doctest::Contains("q.size()"), hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(
      hc::outputs(in, hc::transition_rule::additive, std::span<const double>(k), NAN),
      doctest::Contains("scale"), hybridcache::invalid_argument);
  // adapter: a missing gate, an extra beta, a wrong initial state.
  hc::fla::dims d{1, 1, 1, 2, 1, false};
  hc::fla::args<double> x;
  x.q = k;
  x.k = k;
  x.v = v;
  CHECK_THROWS_WITH_AS(hc::fla::chunk_gla(d, x), doctest::Contains("gk.size()"),
                       hybridcache::invalid_argument);
  x.beta = beta;
  CHECK_THROWS_WITH_AS(hc::fla::chunk_simple_gla(d, x), doctest::Contains("beta"),
                       hybridcache::invalid_argument);
  x.beta = {};
  x.initial_state = v;
  CHECK_THROWS_WITH_AS(hc::fla::chunk_simple_gla(d, x), doctest::Contains("initial_state"),
                       hybridcache::invalid_argument);
}
