// SPDX-License-Identifier: Apache-2.0
// The composition-law algebra (state/compose.hpp, with the summary.hpp / summarize.hpp /
// batch.hpp / eigen.hpp it composes: one group, see tests/README.md) against the independent
// double-precision reference (tests/support/state_reference.hpp): every variant, lengths
// 1/63/65/1000, dk != dv, both dense paths, apply on random prefixes, split invariance, monoid
// laws, promotion, errors, batching.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"

namespace {

using hc_ref::gate;

struct shape {
  std::size_t L, dk, dv;
};
// dk != dv everywhere; small dk for the long sequence so the O(dk³)-per-token reference is fast.
constexpr shape shapes[] = {{1, 12, 7}, {63, 12, 7}, {65, 12, 7}, {1000, 6, 4}};

hc::transition_family expected_family(const variant& v) {
  if (v.delta) return hc::transition_family::dense;
  return v.gate == gate::diagonal ? hc::transition_family::diagonal : hc::transition_family::scalar;
}

template <class Real>
void check_summary(const hc::segment_summary<Real>& s, const hc_ref::result& ref, std::size_t L,
                   hc::transition_family fam, double tolerance) {
  CHECK(s.family() == fam);
  CHECK(s.length() == L);
  CHECK(hc_ref::rel_err(s.end_state(), ref.S.a) < tolerance);
  CHECK(hc_ref::rel_err(s.transition(), ref.T.a) < tolerance);
}

}  // namespace

TEST_CASE_TEMPLATE("summarize equals the token-by-token reference for every variant", Real, float,
                   double) {
  std::mt19937_64 rng(42);
  const hc::summarize_method methods[] = {hc::summarize_method::automatic,
                                          hc::summarize_method::per_token,
                                          hc::summarize_method::chunked};
  for (const variant& var : all_variants) {
    for (const shape& sh : shapes) {
      auto in = own<Real>(hc_ref::random_tokens(rng, sh.L, sh.dk, sh.dv, var.delta, var.gate));
      const auto ref = hc_ref::run(in.ref);
      for (auto m : methods) {
        const std::string vname(var.name);
        CAPTURE(vname);
        CAPTURE(sh.L);
        CAPTURE(static_cast<int>(m));
        const auto s = hc::summarize(in.view(), in.rule, {m, 64});
        check_summary(s, ref, sh.L, expected_family(var), tol<Real>());
      }
    }
  }
}

TEST_CASE_TEMPLATE("RetNet/Lightning: a constant gate is the scalar family with l = L*g", Real,
                   float, double) {
  std::mt19937_64 rng(3);
  auto t = hc_ref::random_tokens(rng, 300, 5, 3, false, gate::scalar);
  std::fill(t.log_gate.begin(), t.log_gate.end(), std::log(1.0 - std::ldexp(1.0, -7)));
  auto in = own<Real>(t);
  const auto s = hc::summarize(in.view(), in.rule);
  REQUIRE(s.family() == hc::transition_family::scalar);
  const long double expect = 300.0L * static_cast<long double>(in.ref.log_gate[0]);
  CHECK(s.log_decay()[0] == doctest::Approx(static_cast<double>(expect)).epsilon(1e-12));
  check_summary(s, hc_ref::run(in.ref), 300, hc::transition_family::scalar, tol<Real>());
}

TEST_CASE_TEMPLATE("chunked WY is exact for odd chunk sizes and every inverse block layout", Real,
                   float, double) {
  std::mt19937_64 rng(7);
  for (std::size_t chunk : {1u, 7u, 16u, 17u, 33u, 48u, 64u, 100u}) {
    for (gate g : {gate::none, gate::scalar, gate::diagonal}) {
      auto in = own<Real>(hc_ref::random_tokens(rng, 150, 9, 5, true, g));
      CAPTURE(chunk);
      const auto s = hc::summarize(in.view(), in.rule, {hc::summarize_method::chunked, chunk});
      check_summary(s, hc_ref::run(in.ref), 150, hc::transition_family::dense, tol<Real>());
    }
  }
}

TEST_CASE_TEMPLATE("apply and run_recurrence on random prefix states match the reference", Real,
                   float, double) {
  std::mt19937_64 rng(11);
  for (const variant& var : all_variants) {
    for (const shape& sh : shapes) {
      auto in = own<Real>(hc_ref::random_tokens(rng, sh.L, sh.dk, sh.dv, var.delta, var.gate));
      const auto p = hc_ref::random_state(rng, sh.dk, sh.dv);
      const auto pr = to_real<Real>(p);
      const auto ref = hc_ref::run(in.ref, hc_ref::mat(sh.dk, sh.dv));
      const auto ref_p = hc_ref::run(in.ref, [&] {
        hc_ref::mat q(sh.dk, sh.dv);
        q.a.assign(pr.begin(), pr.end());
        return q;
      }());
      const std::string vname(var.name);
      CAPTURE(vname);
      CAPTURE(sh.L);
      const auto s = hc::summarize(in.view(), in.rule);
      CHECK(hc_ref::rel_err(hc::apply(s, std::span<const Real>(pr)), ref_p.S.a) < tol<Real>());
      CHECK(hc_ref::rel_err(hc::run_recurrence(in.view(), in.rule, std::span<const Real>(pr)),
                            ref_p.S.a) < tol<Real>());
      // From zero, run_recurrence is the end state.
      const std::vector<Real> zero(sh.dk * sh.dv, Real(0));
      CHECK(hc_ref::rel_err(hc::run_recurrence(in.view(), in.rule, std::span<const Real>(zero)),
                            ref.S.a) < tol<Real>());
    }
  }
}

TEST_CASE_TEMPLATE("split invariance: one pass equals any split, composed either way", Real, float,
                   double) {
  std::mt19937_64 rng(19);
  for (const variant& var : all_variants) {
    auto in = own<Real>(hc_ref::random_tokens(rng, 400, 8, 5, var.delta, var.gate));
    const auto ref = hc_ref::run(in.ref);
    const auto whole = hc::summarize(in.view(), in.rule);
    for (int trial = 0; trial < 4; ++trial) {
      // Random cut points, including empty pieces and single tokens.
      std::vector<std::size_t> cuts{0, 400};
      std::uniform_int_distribution<std::size_t> u(0, 400);
      for (int c = 0; c < 2 + trial; ++c) cuts.push_back(u(rng));
      if (trial == 3) cuts.push_back(cuts.back());  // an empty piece
      std::sort(cuts.begin(), cuts.end());
      std::vector<hc::segment_summary<Real>> pieces;
      for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
        pieces.push_back(hc::summarize(in.view().slice(cuts[i], cuts[i + 1]), in.rule));
      const std::string vname(var.name);
      CAPTURE(vname);
      CAPTURE(trial);
      // left-to-right
      auto left = pieces[0];
      for (std::size_t i = 1; i < pieces.size(); ++i) left = hc::compose(left, pieces[i]);
      // right-to-left
      auto right = pieces.back();
      for (std::size_t i = pieces.size() - 1; i-- > 0;) right = hc::compose(pieces[i], right);
      const auto tree = hc::fold(pieces);
      const hc::segment_summary<Real>* results[] = {&left, &right, &tree};
      for (const auto* s : results) {
        check_summary(*s, ref, 400, whole.family(), tol<Real>());
        CHECK(hc_ref::rel_err(s->end_state(), whole.end_state()) < tol<Real>());
      }
      // apply over the run (HYPIC eq. 6) from a random prefix.
      const auto p = hc_ref::random_state(rng, 8, 5);
      const auto pr = to_real<Real>(p);
      const auto ref_p = hc_ref::run(in.ref, p);
      CHECK(hc_ref::rel_err(hc::apply(pieces, std::span<const Real>(pr)), ref_p.S.a) < tol<Real>());
    }
  }
}

TEST_CASE_TEMPLATE("monoid: identity, associativity and family promotion", Real, float, double) {
  std::mt19937_64 rng(23);
  const std::size_t dk = 6, dv = 4;
  std::vector<hc::segment_summary<Real>> by_family;
  std::vector<owned_inputs<Real>> inputs;
  for (const variant& var : {all_variants[1], all_variants[2], all_variants[4]}) {
    inputs.push_back(own<Real>(hc_ref::random_tokens(rng, 40, dk, dv, var.delta, var.gate)));
    by_family.push_back(hc::summarize(inputs.back().view(), inputs.back().rule));
  }
  REQUIRE(by_family[0].family() == hc::transition_family::scalar);
  REQUIRE(by_family[1].family() == hc::transition_family::diagonal);
  REQUIRE(by_family[2].family() == hc::transition_family::dense);
  const auto id = hc::segment_summary<Real>::identity(dk, dv);
  CHECK(id.family() == hc::transition_family::scalar);
  CHECK(id.length() == 0);
  for (const auto& s : by_family) {
    for (const auto& c : {hc::compose(id, s), hc::compose(s, id)}) {
      CHECK(c.family() == s.family());
      CHECK(c.length() == s.length());
      for (std::size_t i = 0; i < c.end_state().size(); ++i)
        CHECK(c.end_state()[i] == s.end_state()[i]);  // exact: 1·x + 0
      for (std::size_t i = 0; i < c.transition().size(); ++i)
        CHECK(c.transition()[i] == s.transition()[i]);
    }
  }
  // Promotion table and associativity over every ordered triple of families.
  for (std::size_t a = 0; a < 3; ++a)
    for (std::size_t b = 0; b < 3; ++b) {
      const auto ab = hc::compose(by_family[a], by_family[b]);
      CHECK(ab.family() == hc::promote(by_family[a].family(), by_family[b].family()));
      CHECK(static_cast<std::size_t>(ab.family()) == std::max(a, b));
      for (std::size_t c = 0; c < 3; ++c) {
        const auto l = hc::compose(ab, by_family[c]);
        const auto r = hc::compose(by_family[a], hc::compose(by_family[b], by_family[c]));
        CHECK(l.family() == r.family());
        CHECK(hc_ref::rel_err(l.end_state(), r.end_state()) < tol<Real>());
        CHECK(hc_ref::rel_err(l.transition(), r.transition()) < tol<Real>());
        // ... and both equal the reference run of the three variants in sequence.
        hc_ref::result ref{hc_ref::mat::eye(dk), hc_ref::mat(dk, dv)};
        for (std::size_t x : {a, b, c}) {
          const auto step = hc_ref::run(inputs[x].ref, ref.S);
          ref = {hc_ref::mul(step.T, ref.T), step.S};
        }
        CHECK(hc_ref::rel_err(l.end_state(), ref.S.a) < tol<Real>());
        CHECK(hc_ref::rel_err(l.transition(), ref.T.a) < tol<Real>());
      }
    }
}

TEST_CASE("empty segments are the identity of their family") {
  std::vector<double> none;
  hc::token_inputs<double> in{0, 3, 2, none, none, none, none};
  const auto a = hc::summarize(in, hc::transition_rule::additive);
  CHECK(a.family() == hc::transition_family::scalar);
  CHECK(a.log_decay()[0] == 0.0);
  const auto d = hc::summarize(in, hc::transition_rule::delta);
  CHECK(d.family() == hc::transition_family::dense);
  const auto t = d.transition();
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 3; ++c) CHECK(t[r * 3 + c] == (r == c ? 1.0 : 0.0));
  for (double x : d.end_state()) CHECK(x == 0.0);
}

TEST_CASE("factories validate and transition() materialises scalar and diagonal families") {
  auto s = hc::segment_summary<float>::scalar(3, 2, 5, std::log(0.5), std::vector<float>(6, 1));
  auto t = s.transition();
  REQUIRE(t.size() == 9);
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 3; ++c) CHECK(t[r * 3 + c] == doctest::Approx(r == c ? 0.5 : 0.0));
  auto d = hc::segment_summary<double>::diagonal(
      2, 2, 1, {0.0, -std::numeric_limits<double>::infinity()}, std::vector<double>(4, 2));
  // Concurrent first calls agree (the cache is built once).
  std::vector<double> seen(2);
  std::thread th([&] { seen[0] = d.transition()[3]; });
  seen[1] = d.transition()[0];
  th.join();
  CHECK(seen[0] == 0.0);  // e^{−∞}
  CHECK(seen[1] == 1.0);
  const auto copy = d;  // copies rebuild their own cache
  CHECK(copy.transition()[0] == 1.0);
  CHECK_THROWS_AS(hc::segment_summary<float>::scalar(3, 2, 5, 0.1, std::vector<float>(6)),
                  hybridcache::invalid_argument);
  CHECK_THROWS_AS(hc::segment_summary<float>::scalar(3, 2, 5, 0.0, std::vector<float>(5)),
                  hybridcache::invalid_argument);
  CHECK_THROWS_AS(
      hc::segment_summary<float>::dense(2, 2, 1, std::vector<float>(3), std::vector<float>(4)),
      hybridcache::invalid_argument);
  CHECK_THROWS_AS(hc::segment_summary<double>::diagonal(2, 2, 1, {0.0}, std::vector<double>(4)),
                  hybridcache::invalid_argument);
  CHECK_THROWS_AS(hc::segment_summary<double>::identity(0, 2), hybridcache::invalid_argument);
}

TEST_CASE("bad inputs are errors that name the argument and value") {
  std::vector<float> k(6, 0.5f), v(4, 1.0f), beta(2, 0.5f), g(2, -0.1f);
  auto expect = [](auto&& fn, const std::string& arg) {
    try {
      fn();
      FAIL("no exception for " << arg);
    } catch (const hybridcache::invalid_argument& e) {
      CHECK(e.argument() == arg);
    }
  };
  using in_t = hc::token_inputs<float>;
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 3, 2, k, v, {}, g}, hc::transition_rule::delta);
      },
      "beta.size()");
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 3, 2, k, v, beta, g}, hc::transition_rule::additive);
      },
      "beta.size()");
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 2, 2, k, v, {}, {}}, hc::transition_rule::additive);
      },
      "k.size()");
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 3, 2, k, v, {}, std::span<const float>(k).first(3)},
                            hc::transition_rule::additive);
      },
      "log_gate.size()");
  std::vector<float> bad = k;
  bad[4] = std::numeric_limits<float>::quiet_NaN();
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 3, 2, bad, v, {}, {}}, hc::transition_rule::additive);
      },
      "k[4]");
  std::vector<float> pos = g;
  pos[1] = 0.25f;
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 3, 2, k, v, {}, pos}, hc::transition_rule::additive);
      },
      "log_gate[1]");
  pos[1] = std::numeric_limits<float>::quiet_NaN();
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 3, 2, k, v, {}, pos}, hc::transition_rule::additive);
      },
      "log_gate[1]");
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 0, 2, k, v, {}, {}}, hc::transition_rule::additive);
      },
      "dk");
  expect(
      [&] {
        (void)hc::summarize(in_t{2, 3, 2, k, v, beta, g}, hc::transition_rule::delta,
                            {hc::summarize_method::chunked, 0});
      },
      "opts.chunk");
  const auto s = hc::summarize(in_t{2, 3, 2, k, v, {}, g}, hc::transition_rule::additive);
  const auto other = hc::segment_summary<float>::identity(2, 2);
  expect([&] { (void)hc::compose(s, other); }, "then.shape");
  expect([&] { (void)hc::compose(hc::segment_summary<float>{}, s); }, "summary.dk()");
  std::vector<float> prefix(5);
  expect([&] { (void)hc::apply(s, std::span<const float>(prefix)); }, "prefix_state.size()");
  prefix.assign(6, std::numeric_limits<float>::infinity());
  expect([&] { (void)hc::apply(s, std::span<const float>(prefix)); }, "prefix_state[0]");
  expect([&] { (void)hc::fold(std::vector<hc::segment_summary<float>>{}); }, "run.size()");
  expect([&] { (void)in_t{2, 3, 2, k, v, {}, g}.slice(1, 3); }, "slice");
}

TEST_CASE_TEMPLATE("batched heads on two threads equal the single-head calls", Real, float,
                   double) {
  std::mt19937_64 rng(31);
  const std::size_t H = 5, dk = 8, dv = 6;
  std::vector<owned_inputs<Real>> owned;
  std::vector<hc::token_inputs<Real>> heads;
  for (std::size_t h = 0; h < H; ++h)
    owned.push_back(own<Real>(hc_ref::random_tokens(rng, 70, dk, dv, true, gate::scalar)));
  for (const auto& o : owned) heads.push_back(o.view());
  const auto batch = hc::summarize_heads(std::span<const hc::token_inputs<Real>>(heads),
                                         hc::transition_rule::delta, {2});
  std::vector<std::vector<hc::segment_summary<Real>>> runs(H);
  std::vector<Real> prefixes;
  for (std::size_t h = 0; h < H; ++h) {
    const auto single = hc::summarize(heads[h], hc::transition_rule::delta);
    CHECK(std::equal(single.end_state().begin(), single.end_state().end(),
                     batch[h].end_state().begin()));
    runs[h] = {batch[h], batch[(h + 1) % H]};
    const auto p = to_real<Real>(hc_ref::random_state(rng, dk, dv));
    prefixes.insert(prefixes.end(), p.begin(), p.end());
  }
  const auto out = hc::apply_heads(std::span<const std::vector<hc::segment_summary<Real>>>(runs),
                                   std::span<const Real>(prefixes), {2});
  for (std::size_t h = 0; h < H; ++h) {
    const auto one =
        hc::apply(runs[h], std::span<const Real>(prefixes).subspan(h * dk * dv, dk * dv));
    CHECK(
        std::equal(one.begin(), one.end(), out.begin() + static_cast<std::ptrdiff_t>(h * dk * dv)));
  }
  // A failing head's error reaches the caller.
  std::vector<Real> nan_k(owned[0].k);
  nan_k[0] = std::numeric_limits<Real>::quiet_NaN();
  heads[3].k = nan_k;
  CHECK_THROWS_AS(hc::summarize_heads(std::span<const hc::token_inputs<Real>>(heads),
                                      hc::transition_rule::delta, {2}),
                  hybridcache::invalid_argument);
}

TEST_CASE("Eigen overloads view the same numbers") {
  std::mt19937_64 rng(37);
  auto in = own<double>(hc_ref::random_tokens(rng, 50, 5, 3, true, gate::diagonal));
  const auto s = hc::summarize(in.view(), in.rule);
  const hc::state_matrix<double> p = hc::state_matrix<double>::Random(5, 3);
  const auto out = hc::apply(s, p);
  const auto ref = hc::transition_matrix(s) * p + hc::end_state_matrix(s);
  CHECK((out - ref).norm() < 1e-12);
  CHECK_THROWS_AS(hc::apply(s, hc::state_matrix<double>::Zero(3, 5)),
                  hybridcache::invalid_argument);
}

TEST_CASE("host-device element-wise kernels: aliasing, broadcasting, hard resets") {
  namespace d = hybridcache::detail;
  const double ninf = -std::numeric_limits<double>::infinity();
  std::vector<float> prev{1, 2, 3, 4, 5, 6}, add{1, 1, 1, 1, 1, 1};
  d::affine_scalar(prev.data(), prev.data(), add.data(), 6, 0.5f);  // in place
  CHECK(prev == std::vector<float>{1.5f, 2, 2.5f, 3, 3.5f, 4});
  const double ld_rows[3] = {0.0, std::log(0.25), ninf};
  std::vector<float> out(6);
  d::affine_diagonal(out.data(), prev.data(), add.data(), ld_rows, 3, 2);
  CHECK(out == std::vector<float>{2.5f, 3, 1.625f, 1.75f, 1, 1});
  double ld[3];
  const double one = -1.0;
  d::compose_log_decay(ld, &one, 1, ld_rows, 3);
  CHECK(ld[0] == -1.0);
  CHECK(ld[2] == ninf);
  d::compose_log_decay(ld, ld, 3, &ninf, 1);
  CHECK(ld[0] == ninf);
  CHECK_FALSE(std::isnan(ld[1]));
  // Diagonal-family composition in one call equals the two pieces.
  std::vector<double> s1{1, 2, 3, 4}, s2{0.5, 0.5, 0.5, 0.5}, so(4);
  const double l1[1] = {std::log(0.5)}, l2[2] = {std::log(0.5), ninf};
  double lo[2];
  d::compose_diagonal_family(lo, so.data(), l1, 1, s1.data(), l2, 2, s2.data(), 2, 2);
  CHECK(so == std::vector<double>{1.0, 1.5, 0.5, 0.5});
  CHECK(lo[0] == doctest::Approx(std::log(0.25)));
  CHECK(lo[1] == ninf);
}

TEST_CASE("exp_nonpositive: within 3 ulp of exp on [-87, 0], exact 0 below and at -inf") {
  namespace d = hybridcache::detail;
  double worst = 0;
  for (float x = -87.0f; x <= 0.0f; x += 1.37e-3f) {
    const double r = std::exp(static_cast<double>(x));
    worst = std::max(worst, std::abs(d::exp_nonpositive(x) - r) / r);
  }
  CHECK(worst < 3 * 5.97e-8);
  CHECK(d::exp_nonpositive(0.0f) == 1.0f);
  CHECK(d::exp_nonpositive(-0.0f) == 1.0f);
  CHECK(d::exp_nonpositive(-88.0f) == 0.0f);
  CHECK(d::exp_nonpositive(-1e30f) == 0.0f);
  CHECK(d::exp_nonpositive(-std::numeric_limits<float>::infinity()) == 0.0f);
  const double xs[3] = {-1.0, -std::numeric_limits<double>::infinity(), -1e-7};
  float fo[3];
  double dout[3];
  d::decay_factors(xs, fo, 3);
  d::decay_factors(xs, dout, 3);
  CHECK(fo[0] == doctest::Approx(std::exp(-1.0)).epsilon(3e-7));
  CHECK(fo[1] == 0.0f);
  CHECK(dout[2] == std::exp(-1e-7));
}

TEST_CASE("the blocked unit-lower inverse is the inverse") {
  std::mt19937_64 rng(41);
  std::normal_distribution<double> nd;
  for (std::size_t n : {1u, 2u, 5u, 16u, 17u, 31u, 33u, 48u, 64u}) {
    std::vector<double> a(n * n), orig, scratch(n * n);
    for (auto& x : a) x = 0.3 * nd(rng);
    orig = a;
    hybridcache::detail::invert_unit_lower(a.data(), n, n, scratch.data());
    // (I + StrictLower(orig)) · X = I
    double worst = 0;
    for (std::size_t r = 0; r < n; ++r)
      for (std::size_t c = 0; c < n; ++c) {
        double acc = a[r * n + c];
        for (std::size_t k = 0; k < r; ++k) acc += orig[r * n + k] * a[k * n + c];
        worst = std::max(worst, std::abs(acc - (r == c ? 1.0 : 0.0)));
      }
    CAPTURE(n);
    CHECK(worst < 1e-12);
  }
}

TEST_CASE("batched heads: serial by default, or on the caller's executor") {
  // The header starts no thread unless asked: one thread (the caller's) by default.
  CHECK(hc::batch_options{}.threads == 1);
  CHECK_FALSE(hc::batch_options{}.executor);

  std::mt19937_64 rng(41);
  const std::size_t H = 4, dk = 5, dv = 3;
  std::vector<owned_inputs<double>> owned;
  std::vector<hc::token_inputs<double>> heads;
  for (std::size_t h = 0; h < H; ++h)
    owned.push_back(own<double>(hc_ref::random_tokens(rng, 30, dk, dv, true, gate::diagonal)));
  for (const auto& o : owned) heads.push_back(o.view());

  // An "engine pool": runs the tasks in reverse order on the calling thread, counting calls.
  std::size_t calls = 0, tasks = 0;
  hc::batch_options opts;
  opts.threads = 8;  // ignored once an executor is given
  opts.executor = [&](std::size_t n, const std::function<void(std::size_t)>& task) {
    ++calls;
    for (std::size_t i = n; i-- > 0;) {
      task(i);
      ++tasks;
    }
  };
  const auto batch = hc::summarize_heads(std::span<const hc::token_inputs<double>>(heads),
                                         hc::transition_rule::delta, opts);
  CHECK(calls == 1);
  CHECK(tasks == H);
  for (std::size_t h = 0; h < H; ++h) {
    // Against the independent token-by-token reference in double.
    const auto ref = hc_ref::run(owned[h].ref);
    CHECK(hc_ref::rel_err(batch[h].end_state(), ref.S.a) < 1e-12);
  }
  // A head's error, thrown inside the executor's task, reaches the caller; every task still ran.
  std::vector<double> nan_k(owned[2].k);
  nan_k[0] = std::numeric_limits<double>::quiet_NaN();
  heads[2].k = nan_k;
  tasks = 0;
  CHECK_THROWS_AS(hc::summarize_heads(std::span<const hc::token_inputs<double>>(heads),
                                      hc::transition_rule::delta, opts),
                  hybridcache::invalid_argument);
  CHECK(tasks == H);
}
