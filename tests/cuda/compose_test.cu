// SPDX-License-Identifier: Apache-2.0
// Device batched apply/compose of segment summaries against double-precision loops written from
// the definitions (DESIGN.md §3: apply T·S + S₀; compose (T₂T₁, T₂S₁ + S₂)).
#include <doctest/doctest.h>

#include <cmath>
#include <hybridcache/cuda/state/compose.cuh>
#include <hybridcache/state/compose_views.hpp>
#include <limits>
#include <random>
#include <vector>

#include "common.cuh"

namespace hc = hybridcache;
using hc_cuda_test::download;
using hc_cuda_test::sync_ok;
using hc_cuda_test::upload;

namespace {

std::vector<double> normal(std::size_t n, std::mt19937_64& rng, double sd = 1.0) {
  std::normal_distribution<double> d(0.0, sd);
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Log-decays in [−3, 0], with a hard reset (−∞) in entry 0.
std::vector<double> log_decays(std::size_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-3.0, 0.0);
  std::vector<double> v(n);
  for (auto& x : v) x = u(rng);
  if (n != 0) v[0] = -std::numeric_limits<double>::infinity();
  return v;
}

template <class Real>
std::vector<Real> cast(const std::vector<double>& v) {
  return {v.begin(), v.end()};
}

template <class Real>
double tol() {
  return std::is_same_v<Real, float> ? 2e-5 : 1e-12;
}

}  // namespace

TEST_CASE_TEMPLATE("device apply/compose of scalar and diagonal summaries", Real, float, double) {
  HC_REQUIRE_GPU();
  std::mt19937_64 rng(1);
  const std::size_t B = 37, dk = 24, dv = 40;
  for (const std::size_t n1 : {std::size_t{1}, dk}) {
    for (const std::size_t n2 : {std::size_t{1}, dk}) {
      CAPTURE(n1);
      CAPTURE(n2);
      const auto l1 = log_decays(B * n1, rng), l2 = log_decays(B * n2, rng);
      const auto s1 = normal(B * dk * dv, rng), s2 = normal(B * dk * dv, rng);
      auto dl1 = upload(l1), dl2 = upload(l2);
      auto ds1 = upload(cast<Real>(s1)), ds2 = upload(cast<Real>(s2));
      const std::size_t no = std::max(n1, n2);
      hc::cuda::device_buffer<double> dlo(B * no);
      hc::cuda::device_buffer<Real> dso(B * dk * dv);
      auto l1v = hc::cuda::make_view(static_cast<const double*>(dl1.data()), {B, n1});
      auto l2v = hc::cuda::make_view(static_cast<const double*>(dl2.data()), {B, n2});
      auto s1v = hc::cuda::make_view(static_cast<const Real*>(ds1.data()), {B, dk, dv});
      auto s2v = hc::cuda::make_view(static_cast<const Real*>(ds2.data()), {B, dk, dv});
      auto sov = hc::cuda::make_view(dso.data(), {B, dk, dv});
      sync_ok(hc::cuda::compose_elementwise(
          l1v, s1v, l2v, s2v, hc::cuda::make_view(dlo.data(), {B, no}), sov, cudaStream_t{}));
      const auto lo = download(dlo);
      const auto so = download(dso);
      for (std::size_t b = 0; b < B; ++b) {
        for (std::size_t r = 0; r < no; ++r) {
          const double want = l1[b * n1 + (n1 == 1 ? 0 : r)] + l2[b * n2 + (n2 == 1 ? 0 : r)];
          CHECK(lo[b * no + r] == want);  // a sum of two doubles: exact on both sides
        }
        for (std::size_t r = 0; r < dk; ++r) {
          const double f = std::exp(l2[b * n2 + (n2 == 1 ? 0 : r)]);
          for (std::size_t c = 0; c < dv; ++c) {
            const std::size_t e = (b * dk + r) * dv + c;
            const double want = f * static_cast<double>(static_cast<Real>(s1[e])) +
                                static_cast<double>(static_cast<Real>(s2[e]));
            CHECK(static_cast<double>(so[e]) == doctest::Approx(want).epsilon(tol<Real>()));
          }
        }
      }
      // apply_elementwise is the same map with the state as `prev` (and in place on `add`).
      auto ds2_inplace = upload(cast<Real>(s2));
      auto inout = hc::cuda::make_view(ds2_inplace.data(), {B, dk, dv});
      sync_ok(hc::cuda::apply_elementwise(l2v, s1v, inout, inout, cudaStream_t{}));
      const auto applied = download(ds2_inplace);
      for (std::size_t e = 0; e < applied.size(); ++e)
        CHECK(static_cast<double>(applied[e]) ==
              doctest::Approx(static_cast<double>(so[e])).epsilon(tol<Real>()));
    }
  }
}

TEST_CASE_TEMPLATE("device apply/compose of dense summaries (batched GEMM)", Real, float, double) {
  HC_REQUIRE_GPU();
  std::mt19937_64 rng(2);
  struct shape {
    std::size_t B, dk, dv;
  };
  for (const shape s : {shape{3, 64, 64}, shape{5, 70, 33}, shape{2, 1, 1}, shape{1, 128, 256}}) {
    CAPTURE(s.dk);
    CAPTURE(s.dv);
    const std::size_t B = s.B, dk = s.dk, dv = s.dv;
    const double sd = 1.0 / std::sqrt(static_cast<double>(dk));
    const auto t1 = normal(B * dk * dk, rng, sd), t2 = normal(B * dk * dk, rng, sd);
    const auto s1 = normal(B * dk * dv, rng), s2 = normal(B * dk * dv, rng);
    auto dt1 = upload(cast<Real>(t1)), dt2 = upload(cast<Real>(t2));
    auto ds1 = upload(cast<Real>(s1)), ds2 = upload(cast<Real>(s2));
    hc::cuda::device_buffer<Real> dto(B * dk * dk), dso(B * dk * dv);
    auto v3 = [](auto& buf, std::size_t a, std::size_t b, std::size_t c) {
      return hc::cuda::make_view(buf.data(), {a, b, c});
    };
    sync_ok(hc::cuda::compose_dense(v3(dt1, B, dk, dk), v3(ds1, B, dk, dv), v3(dt2, B, dk, dk),
                                    v3(ds2, B, dk, dv), v3(dto, B, dk, dk), v3(dso, B, dk, dv),
                                    cudaStream_t{}));
    const auto to = download(dto), so = download(dso);
    auto at = [](const std::vector<double>& m, std::size_t b, std::size_t rows, std::size_t cols,
                 std::size_t i, std::size_t j) {
      return static_cast<double>(static_cast<Real>(m[(b * rows + i) * cols + j]));
    };
    std::size_t bad = 0;
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t i = 0; i < dk; ++i) {
        for (std::size_t j = 0; j < dk; ++j) {
          double want = 0, mag = 0;
          for (std::size_t x = 0; x < dk; ++x) {
            want += at(t2, b, dk, dk, i, x) * at(t1, b, dk, dk, x, j);
            mag += std::fabs(at(t2, b, dk, dk, i, x) * at(t1, b, dk, dk, x, j));
          }
          if (std::fabs(static_cast<double>(to[(b * dk + i) * dk + j]) - want) >
              tol<Real>() * (mag + 1e-30) * 4)
            ++bad;
        }
        for (std::size_t j = 0; j < dv; ++j) {
          double want = at(s2, b, dk, dv, i, j), mag = std::fabs(want);
          for (std::size_t x = 0; x < dk; ++x) {
            want += at(t2, b, dk, dk, i, x) * at(s1, b, dk, dv, x, j);
            mag += std::fabs(at(t2, b, dk, dk, i, x) * at(s1, b, dk, dv, x, j));
          }
          if (std::fabs(static_cast<double>(so[(b * dk + i) * dv + j]) - want) >
              tol<Real>() * (mag + 1e-30) * 4)
            ++bad;
        }
      }
    }
    CHECK(bad == 0);
    // apply_dense(T₂, S₁, S₂) is the state half of the composition.
    hc::cuda::device_buffer<Real> dap(B * dk * dv);
    sync_ok(hc::cuda::apply_dense(v3(dt2, B, dk, dk), v3(ds1, B, dk, dv), v3(ds2, B, dk, dv),
                                  v3(dap, B, dk, dv), cudaStream_t{}));
    CHECK(download(dap) == so);  // same kernel, same operands, same order: same bits
  }
}

TEST_CASE("device summary entry points: mismatched extents throw before launching") {
  HC_REQUIRE_GPU();
  hc::cuda::device_buffer<float> a(2 * 3 * 4), t(2 * 3 * 3);
  hc::cuda::device_buffer<double> l(2 * 3);
  auto s = hc::cuda::make_view(a.data(), {2, 3, 4});
  auto bad = hc::cuda::make_view(a.data(), {2, 4, 3});
  CHECK_THROWS_AS((void)hc::cuda::apply_elementwise(hc::cuda::make_view(l.data(), {2, 2}), s, s, s,
                                                    cudaStream_t{}),
                  hc::invalid_argument);
  CHECK_THROWS_AS((void)hc::cuda::apply_dense(hc::cuda::make_view(t.data(), {2, 3, 3}), s, bad, s,
                                              cudaStream_t{}),
                  hc::invalid_argument);
}

// The host API (state/compose_views.hpp) and its device overloads are one overload set: the
// memory space of the views picks the backend, and the device result is a cudaError_t.
namespace {
template <class... A>
using state_apply_dense_t = decltype(hc::apply_dense(std::declval<A>()...));
using dv3 = hc::strided_view<float, 3, hc::device_space>;
using cdv3 = hc::strided_view<const float, 3, hc::device_space>;
using hv3 = hc::strided_view<float, 3>;
using chv3 = hc::strided_view<const float, 3>;
static_assert(
    std::is_same_v<state_apply_dense_t<cdv3, cdv3, cdv3, dv3, cudaStream_t>, cudaError_t>);
static_assert(std::is_same_v<state_apply_dense_t<cdv3, cdv3, cdv3, dv3>, cudaError_t>);
static_assert(std::is_same_v<state_apply_dense_t<chv3, chv3, chv3, hv3>, void>);
}  // namespace

TEST_CASE_TEMPLATE("state:: view API: device overloads agree with the host overloads", Real, float,
                   double) {
  HC_REQUIRE_GPU();
  std::mt19937_64 rng(7);
  const std::size_t B = 5, dk = 16, dv = 12;
  const auto l = log_decays(B * dk, rng);
  const auto s1 = cast<Real>(normal(B * dk * dv, rng)), s2 = cast<Real>(normal(B * dk * dv, rng));
  const auto t = cast<Real>(normal(B * dk * dk, rng, 0.2));
  auto dl = upload(l);
  auto ds1 = upload(s1), ds2 = upload(s2), dt = upload(t);
  hc::cuda::device_buffer<Real> dout(B * dk * dv);
  std::vector<Real> host_out(B * dk * dv);
  const hc::strided_view<const double, 2> hl(l.data(), {B, dk});
  const hc::strided_view<const Real, 3> hs1(s1.data(), {B, dk, dv}), hs2(s2.data(), {B, dk, dv});
  const hc::strided_view<const Real, 3> ht(t.data(), {B, dk, dk});
  const hc::strided_view<Real, 3> ho(host_out.data(), {B, dk, dv});
  auto dv_of = [](auto& buf, std::size_t a, std::size_t b, std::size_t c) {
    return hc::cuda::make_view(static_cast<const Real*>(buf.data()), {a, b, c});
  };
  const auto dlv = hc::cuda::make_view(static_cast<const double*>(dl.data()), {B, dk});
  const auto dov = hc::cuda::make_view(dout.data(), {B, dk, dv});

  hc::apply_elementwise(hl, hs1, hs2, ho);
  sync_ok(hc::apply_elementwise(dlv, dv_of(ds1, B, dk, dv), dv_of(ds2, B, dk, dv), dov));
  auto got = download(dout);
  for (std::size_t e = 0; e < got.size(); ++e)
    CHECK(static_cast<double>(got[e]) ==
          doctest::Approx(static_cast<double>(host_out[e])).epsilon(tol<Real>()));

  hc::apply_dense(ht, hs1, hs2, ho);
  sync_ok(hc::apply_dense(dv_of(dt, B, dk, dk), dv_of(ds1, B, dk, dv), dv_of(ds2, B, dk, dv), dov,
                          cudaStream_t{}));
  got = download(dout);
  for (std::size_t e = 0; e < got.size(); ++e)
    CHECK(static_cast<double>(got[e]) ==
          doctest::Approx(static_cast<double>(host_out[e])).epsilon(tol<Real>()));
}
