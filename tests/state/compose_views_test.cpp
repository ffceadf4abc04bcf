// SPDX-License-Identifier: Apache-2.0
// Batched apply/compose over host storage views (state/compose_views.hpp), checked against the
// independent double-precision reference of tests/support/state_reference.hpp: every transition
// is built as an explicit dk×dk matrix (Diag(e^{ℓ}) or a dense T) and multiplied out with plain
// loops.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

#include <hybridcache/state/compose_views.hpp>

#include "support/state_reference.hpp"

namespace hc = hybridcache;

namespace {

constexpr double inf = std::numeric_limits<double>::infinity();

/// B matrices of rows×cols in one buffer with padding between rows (ld) and entries (batch).
template <class Real>
struct batch {
  std::size_t B, rows, cols, ld, stride;
  std::vector<Real> data;
  batch(std::size_t b, std::size_t r, std::size_t c, std::size_t pad_row, std::size_t pad_batch)
      : B(b),
        rows(r),
        cols(c),
        ld(c + pad_row),
        stride(r * (c + pad_row) + pad_batch),
        data(b * stride + 1, Real(-7)) {}
  hc::strided_view<Real, 3> view() { return {data.data(), {B, rows, cols}, {stride, ld, 1}}; }
  hc::strided_view<const Real, 3> cview() const {
    return {data.data(), {B, rows, cols}, {stride, ld, 1}};
  }
  Real& at(std::size_t b, std::size_t i, std::size_t j) { return data[b * stride + i * ld + j]; }
  hc_ref::mat entry(std::size_t b) const {
    hc_ref::mat m(rows, cols);
    for (std::size_t i = 0; i < rows; ++i)
      for (std::size_t j = 0; j < cols; ++j) m(i, j) = data[b * stride + i * ld + j];
    return m;
  }
};

template <class Real>
void fill(batch<Real>& x, std::mt19937_64& rng, double scale = 1.0) {
  std::normal_distribution<double> nd(0.0, scale);
  for (std::size_t b = 0; b < x.B; ++b)
    for (std::size_t i = 0; i < x.rows; ++i)
      for (std::size_t j = 0; j < x.cols; ++j) x.at(b, i, j) = static_cast<Real>(nd(rng));
}

/// Diag(e^{ℓ}) as an explicit matrix, ℓ broadcast when n == 1.
hc_ref::mat diag_transition(const std::vector<double>& log, std::size_t b, std::size_t n,
                            std::size_t dk) {
  hc_ref::mat t(dk, dk);
  for (std::size_t r = 0; r < dk; ++r) t(r, r) = std::exp(log[b * n + (n == 1 ? 0 : r)]);
  return t;
}

template <class Real>
double tol() {
  return std::is_same_v<Real, float> ? 2e-6 : 1e-13;
}

}  // namespace

TEST_CASE_TEMPLATE("apply_elementwise over strided host views matches Diag(e^l)·prev + add", Real,
                   float, double) {
  std::mt19937_64 rng(11);
  const std::size_t B = 3, dk = 5, dv = 7;
  for (const std::size_t n : {std::size_t{1}, dk}) {
    CAPTURE(n);
    std::vector<double> log(B * n);
    std::uniform_real_distribution<double> ud(-3.0, 0.0);
    for (double& x : log) x = ud(rng);
    log[n - 1] = -inf;  // a hard reset in entry 0 (its last row, or all of it when scalar)
    batch<Real> prev(B, dk, dv, 2, 3), add(B, dk, dv, 1, 0), out(B, dk, dv, 0, 5);
    fill(prev, rng);
    fill(add, rng);
    const hc::strided_view<const double, 2> lv(log.data(), {B, n});
    hc::apply_elementwise(lv, prev.cview(), add.cview(), out.view());
    for (std::size_t b = 0; b < B; ++b) {
      const auto want =
          hc_ref::add(hc_ref::mul(diag_transition(log, b, n, dk), prev.entry(b)), add.entry(b));
      CHECK(hc_ref::rel_err(out.entry(b).a, want.a) < tol<Real>());
    }
    // The hard reset leaves exactly `add` in its rows.
    for (std::size_t j = 0; j < dv; ++j) CHECK(out.at(0, dk - 1, j) == add.at(0, dk - 1, j));
    // In place (out aliases prev) gives the same values bit for bit.
    auto in_place = prev;
    hc::apply_elementwise(lv, in_place.view(), add.cview(), in_place.view());
    for (std::size_t b = 0; b < B; ++b) CHECK(in_place.entry(b).a == out.entry(b).a);
  }
}

TEST_CASE_TEMPLATE("compose_elementwise adds log-decays and maps the first state", Real, float,
                   double) {
  std::mt19937_64 rng(12);
  const std::size_t B = 4, dk = 6, dv = 3;
  const std::size_t widths[] = {1, dk};
  for (const std::size_t n1 : widths)
    for (const std::size_t n2 : widths) {
      CAPTURE(n1);
      CAPTURE(n2);
      const std::size_t no = n1 > n2 ? n1 : n2;
      std::vector<double> l1(B * n1), l2(B * n2), lo(B * no);
      std::uniform_real_distribution<double> ud(-2.0, 0.0);
      for (double& x : l1) x = ud(rng);
      for (double& x : l2) x = ud(rng);
      l2[0] = -inf;
      batch<Real> s1(B, dk, dv, 1, 2), s2(B, dk, dv, 0, 0), so(B, dk, dv, 3, 1);
      fill(s1, rng);
      fill(s2, rng);
      hc::compose_elementwise(hc::strided_view<const double, 2>(l1.data(), {B, n1}), s1.cview(),
                              hc::strided_view<const double, 2>(l2.data(), {B, n2}), s2.cview(),
                              hc::strided_view<double, 2>(lo.data(), {B, no}), so.view());
      for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t i = 0; i < no; ++i) {
          const double want = l1[b * n1 + (n1 == 1 ? 0 : i)] + l2[b * n2 + (n2 == 1 ? 0 : i)];
          CHECK(lo[b * no + i] == want);  // a sum of two doubles: exact, −∞ stays −∞
        }
        // Reference: the product of the two explicit transitions and the affine map.
        const auto t1 = diag_transition(l1, b, n1, dk), t2 = diag_transition(l2, b, n2, dk);
        const auto want_t = hc_ref::mul(t2, t1);
        const auto got_t = diag_transition(lo, b, no, dk);
        CHECK(hc_ref::rel_err(got_t.a, want_t.a) < 1e-14);
        const auto want_s = hc_ref::add(hc_ref::mul(t2, s1.entry(b)), s2.entry(b));
        CHECK(hc_ref::rel_err(so.entry(b).a, want_s.a) < tol<Real>());
      }
    }
}

TEST_CASE_TEMPLATE("apply_dense and compose_dense match explicit matrix products", Real, float,
                   double) {
  std::mt19937_64 rng(13);
  const std::size_t B = 2, dk = 9, dv = 4;
  batch<Real> t1(B, dk, dk, 1, 0), t2(B, dk, dk, 0, 4), s1(B, dk, dv, 2, 1), s2(B, dk, dv, 0, 0);
  fill(t1, rng, 0.3);
  fill(t2, rng, 0.3);
  fill(s1, rng);
  fill(s2, rng);
  batch<Real> out(B, dk, dv, 1, 1);
  hc::apply_dense(t2.cview(), s1.cview(), s2.cview(), out.view());
  for (std::size_t b = 0; b < B; ++b) {
    const auto want = hc_ref::add(hc_ref::mul(t2.entry(b), s1.entry(b)), s2.entry(b));
    CHECK(hc_ref::rel_err(out.entry(b).a, want.a) < 10 * tol<Real>());
  }
  batch<Real> to(B, dk, dk, 0, 2), so(B, dk, dv, 0, 0);
  hc::compose_dense(t1.cview(), s1.cview(), t2.cview(), s2.cview(), to.view(), so.view());
  for (std::size_t b = 0; b < B; ++b) {
    const auto want_t = hc_ref::mul(t2.entry(b), t1.entry(b));
    const auto want_s = hc_ref::add(hc_ref::mul(t2.entry(b), s1.entry(b)), s2.entry(b));
    CHECK(hc_ref::rel_err(to.entry(b).a, want_t.a) < 10 * tol<Real>());
    CHECK(hc_ref::rel_err(so.entry(b).a, want_s.a) < 10 * tol<Real>());
  }
  // out_s may alias then_s.
  auto alias = s2;
  hc::compose_dense(t1.cview(), s1.cview(), t2.cview(), alias.cview(), to.view(), alias.view());
  for (std::size_t b = 0; b < B; ++b) CHECK(alias.entry(b).a == so.entry(b).a);
}

TEST_CASE("batched apply/compose: empty batches do nothing, bad shapes throw naming the view") {
  std::vector<float> buf(2 * 3 * 4, 1.0f), t(2 * 3 * 3, 0.0f);
  std::vector<double> log(2 * 3, -1.0);
  const hc::strided_view<float, 3> s(buf.data(), {2, 3, 4});
  const hc::strided_view<float, 3> bad(buf.data(), {2, 4, 3});
  const hc::strided_view<float, 3> empty(buf.data(), {0, 3, 4});
  const hc::strided_view<const double, 2> l(log.data(), {2, 3});
  hc::apply_elementwise(hc::strided_view<const double, 2>(log.data(), {0, 1}), empty, empty, empty);
  CHECK(buf[0] == 1.0f);
  CHECK_THROWS_WITH_AS(hc::apply_elementwise(l, s, bad, s), doctest::Contains("add.extent(1)"),
                       hc::invalid_argument);
  CHECK_THROWS_WITH_AS(
      hc::apply_elementwise(hc::strided_view<const double, 2>(log.data(), {2, 2}), s, s, s),
      doctest::Contains("log_decay.extent(1)"), hc::invalid_argument);
  const hc::strided_view<float, 3> strided_rows(buf.data(), {2, 3, 2}, {12, 4, 2});
  CHECK_THROWS_WITH_AS(hc::apply_elementwise(hc::strided_view<const double, 2>(log.data(), {2, 1}),
                                             strided_rows, strided_rows, strided_rows),
                       doctest::Contains("prev.stride(2)"), hc::invalid_argument);
  const hc::strided_view<float, 3> tv(t.data(), {2, 3, 3});
  CHECK_THROWS_WITH_AS(hc::apply_dense(tv, s, s, bad), doctest::Contains("out.extent(1)"),
                       hc::invalid_argument);
  std::vector<double> lo(2 * 2);
  CHECK_THROWS_WITH_AS(
      hc::compose_elementwise(l, s, l, s, hc::strided_view<double, 2>(lo.data(), {2, 2}), s),
      doctest::Contains("out_log"), hc::invalid_argument);
}

namespace {
template <class... A>
concept can_apply_elementwise = requires(A... a) {
  hc::apply_elementwise(a...);
};

using ld_view = hc::strided_view<const double, 2>;
using st_view = hc::strided_view<float, 3>;
using cst_view = hc::strided_view<const float, 3>;
static_assert(can_apply_elementwise<ld_view, cst_view, cst_view, st_view>);
static_assert(!can_apply_elementwise<ld_view, cst_view, cst_view, cst_view>);  // read-only out
static_assert(!can_apply_elementwise<ld_view, cst_view, cst_view,
                                     hc::strided_view<double, 3>>);  // mixed float/double
static_assert(!can_apply_elementwise<hc::strided_view<const float, 2>, cst_view, cst_view,
                                     st_view>);  // log-decays are double
}  // namespace
