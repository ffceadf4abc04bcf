// SPDX-License-Identifier: Apache-2.0
// Example 09: the reference kit. A float32 GLA computation stands in for an engine's kernel; the
// float64 reference takes the same FLA-layout arrays ([B, T, H, K], argument names of
// fla.ops.gla.chunk_gla), and every output must lie within the derived bound
// γ(depth·u)·weight + u·|ref| of state/tolerance.hpp. Exits 1 if any element does not.
#include <hybridcache/state/fla.hpp>
#include <hybridcache/state/tolerance.hpp>

#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  namespace hc = hybridcache;
  const std::size_t B = 1, T = 32, H = 2, K = 8, V = 4;
  // Inputs on a dyadic grid (exact in float32 and double): j / 64.
  auto fill = [](std::size_t n, int lo, int hi, unsigned seed) {
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) {
      seed = seed * 1103515245u + 12345u;
      x[i] = static_cast<double>(
                 lo + static_cast<int>((seed >> 8) % static_cast<unsigned>(hi - lo + 1))) /
             64.0;
    }
    return x;
  };
  const auto q = fill(B * T * H * K, -64, 64, 1), k = fill(B * T * H * K, -22, 22, 2),
             v = fill(B * T * H * V, -64, 64, 3), gk = fill(B * T * H * K, -19, -1, 4);

  // The reference, in FLA's layout and names.
  hc::fla::dims d{B, T, H, K, V};
  hc::fla::args<double> ref_args;
  ref_args.q = q;
  ref_args.k = k;
  ref_args.v = v;
  ref_args.gk = gk;
  const auto ref = hc::fla::chunk_gla(d, ref_args);

  // The "kernel": the same op in float32.
  const std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), vf(v.begin(), v.end()),
      gf(gk.begin(), gk.end());
  hc::fla::args<float> kernel_args;
  kernel_args.q = qf;
  kernel_args.k = kf;
  kernel_args.v = vf;
  kernel_args.gk = gf;
  const auto got = hc::fla::chunk_gla(d, kernel_args);

  // Bound weights per head (gathered from the [B, T, H, K] layout), then the check.
  double worst = 0;
  for (std::size_t h = 0; h < H; ++h) {
    std::vector<double> qh(T * K), kh(T * K), vh(T * V), gh(T * K);
    for (std::size_t t = 0; t < T; ++t) {
      for (std::size_t r = 0; r < K; ++r) {
        qh[t * K + r] = q[(t * H + h) * K + r];
        kh[t * K + r] = k[(t * H + h) * K + r];
        gh[t * K + r] = gk[(t * H + h) * K + r];
      }
      for (std::size_t c = 0; c < V; ++c) vh[t * V + c] = v[(t * H + h) * V + c];
    }
    hc::token_inputs<double> in{T, K, V, kh, vh, {}, gh};
    const auto w =
        hc::abs_bound_weights(in, hc::transition_rule::additive, qh, hc::default_scale(K), {});
    for (std::size_t t = 0; t < T; ++t)
      for (std::size_t c = 0; c < V; ++c) {
        const std::size_t i = (t * H + h) * V + c;
        const double tol =
            hc::element_tolerance(w.o[t * V + c], w.depth_per_token * double(t + 1) + K + 1,
                                  double(t + 1), ref.o[i], hc::error_model{});
        worst = std::max(worst, std::fabs(got.o[i] - ref.o[i]) / tol);
      }
  }
  std::printf("GLA float32 vs float64 reference: max err/tol = %.3g (must be <= 1)\n", worst);
  return worst <= 1.0 ? 0 : 1;
}
