#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Reference entry points with flash-linear-attention's layouts and argument names, so a kernel
/// engineer can call the double- (or float-) precision reference on the very arrays they pass to
/// their kernel, and mamba_ssm's `selective_scan_ref` layout for Mamba1.
///
/// Layouts (FLA, fla/ops/*/chunk.py docstrings): q, k (and RWKV's r, w, a, b, KDA's g, GLA's gk)
/// are `[B, T, H, K]`, v and o `[B, T, H, V]`, per-head scalars (g of simple GLA / Gated DeltaNet,
/// beta) `[B, T, H]`; with `head_first` the time and head axes swap (`[B, H, T, K]`, `[B, H, T]`).
/// States (initial_state, final_state) are `[B, H, K, V]` in both layouts. Everything is dense,
/// row-major and contiguous. `scale` unset means K^{−1/2}. Gated DeltaProduct's k, v, beta have
/// T·num_householder time rows (interleaved, token-major), as in FLA. Grouped value heads
/// (KDA's HV ≠ H) are not modelled: H is the head count of every tensor.
///
/// Each op maps onto the library's conventions exactly (keys × values state, log-space gates on
/// the old state before the update, o_t = (scale·q_t)ᵀ S_t after token t):
///
/// | op                        | FLA file                                 | library form |
/// |---------------------------|------------------------------------------|-------------------------------|
/// | chunk_simple_gla (g opt.) | fla/ops/simple_gla/naive.py              | additive, scalar gate /
/// none  | | chunk_gla (gk)            | fla/ops/gla/naive.py                     | additive,
/// diagonal gate       | | chunk_delta_rule          | fla/ops/delta_rule/naive.py              |
/// delta, no gate                | | chunk_gated_delta_rule    | fla/ops/gated_delta_rule/naive.py
/// | delta, scalar gate            | | chunk_kda (g per key)     | fla/ops/kda/naive.py | delta,
/// diagonal gate          | | fused_recurrent_rwkv7     | fla/ops/rwkv7/fused_recurrent.py, dplr |
/// dplr_inputs (T = D(w) + b aᵀ) | | chunk_gated_delta_product |
/// fla/ops/gated_delta_product/naive.py     | delta_product_inputs          |
///
/// RetNet (chunk_retention) and Mamba2 are chunk_simple_gla with their per-head constant or
/// per-token log-decay passed as g. Mamba1 is `mamba::selective_scan`.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/delta_product.hpp"
#include "hybridcache/state/dplr.hpp"
#include "hybridcache/state/outputs.hpp"
#include "hybridcache/state/selective.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace fla {

/// Tensor dimensions shared by one call: batch B, time T, heads H, key K, value V.
struct dims {
  std::size_t B = 0, T = 0, H = 0, K = 0, V = 0;
  bool head_first = false;  ///< `[B, H, T, …]` instead of FLA's default `[B, T, H, …]`
};

/// FLA's keyword arguments; leave unused ones empty.
template <class Real>
struct args {
  std::span<const Real> q{}, k{}, v{};
  std::span<const Real> g{};     ///< log-gates: `[B, T, H]` (simple GLA, Gated DeltaNet/Product) or
                                 ///< `[B, T, H, K]` (KDA)
  std::span<const Real> gk{};    ///< GLA's per-key log-gates `[B, T, H, K]`
  std::span<const Real> beta{};  ///< `[B, T, H]` (`[B, T·n_h, H]` for Gated DeltaProduct)
  std::span<const Real> r{}, w{}, a{}, b{};  ///< RWKV-7: receptance, log-decay, rank-1 read/write
  std::optional<double> scale{};             ///< unset: K^{−1/2}
  std::span<const Real> initial_state{};     ///< `[B, H, K, V]` or empty (zeros)
  bool output_final_state = false;
  std::size_t num_householder = 1;  ///< Gated DeltaProduct's n_h
};

/// (o, final_state) as FLA returns them: o in the input layout, final_state `[B, H, K, V]`
/// (empty unless output_final_state).
template <class Real>
struct result {
  std::vector<Real> o;
  std::vector<Real> final_state;
};

namespace detail {

using ::hybridcache::detail::throw_invalid;

/// Offset of element (b, t, h, 0) of a `[B, T, H, X]` (or head-first) tensor with `steps` time
/// rows.
inline std::size_t offset(const dims& d, std::size_t steps, std::size_t x, std::size_t b,
                          std::size_t t, std::size_t h) noexcept {
  return d.head_first ? ((b * d.H + h) * steps + t) * x : ((b * steps + t) * d.H + h) * x;
}

/// One head's `steps × x` slice, gathered contiguous (token-major).
template <class Real>
std::vector<Real> gather(std::span<const Real> src, const dims& d, std::size_t steps, std::size_t x,
                         std::size_t b, std::size_t h) {
  std::vector<Real> out(steps * x);
  for (std::size_t t = 0; t < steps; ++t) {
    const Real* p = src.data() + offset(d, steps, x, b, t, h);
    for (std::size_t i = 0; i < x; ++i) out[t * x + i] = p[i];
  }
  return out;
}

template <class Real>
void require(std::string_view op, std::string_view name, std::span<const Real> s, std::size_t want,
             std::string_view shape) {
  if (s.size() != want)
    throw_invalid(std::string(name) + ".size()", s.size(),
                  std::string(op) + " needs " + std::string(name) + " of shape " +
                      std::string(shape) + " = " + std::to_string(want) + " elements");
}

template <class Real>
void forbid(std::string_view op, std::string_view name, std::span<const Real> s) {
  if (!s.empty())
    throw_invalid(std::string(name) + ".size()", s.size(),
                  std::string(op) + " takes no " + std::string(name) + " (must be empty)");
}

inline void check_dims(const dims& d) {
  if (d.B == 0) throw_invalid("B", d.B, "must be >= 1");
  if (d.H == 0) throw_invalid("H", d.H, "must be >= 1");
  if (d.K == 0) throw_invalid("K", d.K, "must be >= 1");
  if (d.V == 0) throw_invalid("V", d.V, "must be >= 1");
}

/// Runs `head(b, h, initial)` → segment_outputs for every head and scatters o and the state.
template <class Real, class Head>
result<Real> per_head(const dims& d, const args<Real>& a, Head&& head) {
  const std::size_t kv = d.K * d.V;
  if (!a.initial_state.empty())
    require("this op", "initial_state", a.initial_state, d.B * d.H * kv, "[B, H, K, V]");
  result<Real> res;
  res.o.assign(d.B * d.T * d.H * d.V, Real(0));
  if (a.output_final_state) res.final_state.assign(d.B * d.H * kv, Real(0));
  for (std::size_t b = 0; b < d.B; ++b)
    for (std::size_t h = 0; h < d.H; ++h) {
      const auto init = a.initial_state.empty() ? std::span<const Real>()
                                                : a.initial_state.subspan((b * d.H + h) * kv, kv);
      const segment_outputs<Real> out = head(b, h, init);
      for (std::size_t t = 0; t < d.T; ++t) {
        Real* p = res.o.data() + offset(d, d.T, d.V, b, t, h);
        for (std::size_t c = 0; c < d.V; ++c) p[c] = out.o[t * d.V + c];
      }
      if (a.output_final_state)
        std::copy(out.final_state.begin(), out.final_state.end(),
                  res.final_state.begin() + static_cast<std::ptrdiff_t>((b * d.H + h) * kv));
    }
  return res;
}

/// The six unified-recurrence ops: `gate` names the FLA argument holding the gate (or empty).
template <class Real>
result<Real> unified(std::string_view op, const dims& d, const args<Real>& a, transition_rule r,
                     std::string_view gate_name, bool per_key_gate) {
  check_dims(d);
  const std::size_t n = d.B * d.T * d.H;
  require(op, "q", a.q, n * d.K, "[B, T, H, K]");
  require(op, "k", a.k, n * d.K, "[B, T, H, K]");
  require(op, "v", a.v, n * d.V, "[B, T, H, V]");
  forbid(op, "r", a.r);
  forbid(op, "w", a.w);
  forbid(op, "a", a.a);
  forbid(op, "b", a.b);
  std::span<const Real> gate;
  if (gate_name == "g") {
    gate = a.g;
    forbid(op, "gk", a.gk);
  } else if (gate_name == "gk") {
    gate = a.gk;
    forbid(op, "g", a.g);
  } else {
    forbid(op, "g", a.g);
    forbid(op, "gk", a.gk);
  }
  if (!gate_name.empty() && !(op == "chunk_simple_gla" && gate.empty()))
    require(op, gate_name, gate, per_key_gate ? n * d.K : n,
            per_key_gate ? "[B, T, H, K]" : "[B, T, H]");
  if (r == transition_rule::delta)
    require(op, "beta", a.beta, n, "[B, T, H]");
  else
    forbid(op, "beta", a.beta);
  if (a.num_householder != 1)
    throw_invalid("num_householder", a.num_householder, std::string(op) + " takes 1");
  const std::size_t gx = per_key_gate ? d.K : 1;
  return per_head(d, a, [&](std::size_t b, std::size_t h, std::span<const Real> init) {
    const auto q = gather(a.q, d, d.T, d.K, b, h), k = gather(a.k, d, d.T, d.K, b, h);
    const auto v = gather(a.v, d, d.T, d.V, b, h);
    const auto beta =
        r == transition_rule::delta ? gather(a.beta, d, d.T, 1, b, h) : std::vector<Real>{};
    const auto g = gate.empty() ? std::vector<Real>{} : gather(gate, d, d.T, gx, b, h);
    token_inputs<Real> in{d.T, d.K, d.V, k, v, beta, g};
    return outputs(in, r, std::span<const Real>(q), a.scale, init);
  });
}

}  // namespace detail

/// Simple GLA / RetNet / Mamba2 (fla/ops/simple_gla): S_t = e^{g_t} S_{t−1} + k_t v_tᵀ; g may be
/// empty (plain linear attention). Needs q, k, v; g `[B, T, H]` optional.
/// @throws invalid_argument naming the argument on a missing, extra or mis-sized tensor.
template <class Real>
result<Real> chunk_simple_gla(const dims& d, const args<Real>& a) {
  return detail::unified<Real>("chunk_simple_gla", d, a, transition_rule::additive, "g", false);
}

/// GLA (fla/ops/gla): S_t = Diag(e^{gk_t}) S_{t−1} + k_t v_tᵀ. Needs q, k, v, gk `[B, T, H, K]`.
/// @throws invalid_argument as chunk_simple_gla.
template <class Real>
result<Real> chunk_gla(const dims& d, const args<Real>& a) {
  return detail::unified<Real>("chunk_gla", d, a, transition_rule::additive, "gk", true);
}

/// DeltaNet (fla/ops/delta_rule): S_t = (I − β k kᵀ) S_{t−1} + β k vᵀ. Needs q, k, v, beta.
/// @throws invalid_argument as chunk_simple_gla.
template <class Real>
result<Real> chunk_delta_rule(const dims& d, const args<Real>& a) {
  return detail::unified<Real>("chunk_delta_rule", d, a, transition_rule::delta, "", false);
}

/// Gated DeltaNet (fla/ops/gated_delta_rule): S_t = e^{g_t}(I − β k kᵀ) S_{t−1} + β k vᵀ.
/// Needs q, k, v, g `[B, T, H]`, beta.
/// @throws invalid_argument as chunk_simple_gla.
template <class Real>
result<Real> chunk_gated_delta_rule(const dims& d, const args<Real>& a) {
  return detail::unified<Real>("chunk_gated_delta_rule", d, a, transition_rule::delta, "g", false);
}

/// KDA (fla/ops/kda): S_t = (I − β k kᵀ) Diag(e^{g_t}) S_{t−1} + β k vᵀ. Needs q, k, v,
/// g `[B, T, H, K]`, beta.
/// @throws invalid_argument as chunk_simple_gla.
template <class Real>
result<Real> chunk_kda(const dims& d, const args<Real>& a) {
  return detail::unified<Real>("chunk_kda", d, a, transition_rule::delta, "g", true);
}

/// RWKV-7 (fla/ops/rwkv7/fused_recurrent.py → dplr): S_t = (Diag(e^{w_t}) + b_t a_tᵀ) S_{t−1}
/// + k_t v_tᵀ, o_t = (scale·r_t)ᵀ S_t. Needs r, w, k, v, a, b (all `[B, T, H, K]` but v).
/// @throws invalid_argument as chunk_simple_gla.
template <class Real>
result<Real> fused_recurrent_rwkv7(const dims& d, const args<Real>& x) {
  constexpr std::string_view op = "fused_recurrent_rwkv7";
  detail::check_dims(d);
  const std::size_t n = d.B * d.T * d.H;
  for (auto [name, s] : {std::pair{"r", x.r}, std::pair{"w", x.w}, std::pair{"k", x.k},
                         std::pair{"a", x.a}, std::pair{"b", x.b}})
    detail::require(op, name, s, n * d.K, "[B, T, H, K]");
  detail::require(op, "v", x.v, n * d.V, "[B, T, H, V]");
  detail::forbid(op, "q", x.q);
  detail::forbid(op, "g", x.g);
  detail::forbid(op, "gk", x.gk);
  detail::forbid(op, "beta", x.beta);
  return detail::per_head(d, x, [&](std::size_t b, std::size_t h, std::span<const Real> init) {
    const auto r = detail::gather(x.r, d, d.T, d.K, b, h),
               w = detail::gather(x.w, d, d.T, d.K, b, h);
    const auto k = detail::gather(x.k, d, d.T, d.K, b, h),
               v = detail::gather(x.v, d, d.T, d.V, b, h);
    const auto ra = detail::gather(x.a, d, d.T, d.K, b, h),
               rb = detail::gather(x.b, d, d.T, d.K, b, h);
    dplr_inputs<Real> in{d.T, d.K, d.V, k, v, ra, rb, w};
    return outputs(in, std::span<const Real>(r), x.scale, init);
  });
}

/// Gated DeltaProduct (fla/ops/gated_delta_product): per token S ← e^{g_t} S, then n_h steps
/// S ← (I − β k kᵀ) S + β k vᵀ. Needs q `[B, T, H, K]`, k `[B, T·n_h, H, K]`, v `[B, T·n_h, H, V]`,
/// beta `[B, T·n_h, H]`; g `[B, T, H]` optional.
/// @throws invalid_argument as chunk_simple_gla.
template <class Real>
result<Real> chunk_gated_delta_product(const dims& d, const args<Real>& x) {
  constexpr std::string_view op = "chunk_gated_delta_product";
  detail::check_dims(d);
  const std::size_t nh = x.num_householder;
  if (nh == 0) detail::throw_invalid("num_householder", nh, "must be >= 1");
  const std::size_t n = d.B * d.T * d.H;
  detail::require(op, "q", x.q, n * d.K, "[B, T, H, K]");
  detail::require(op, "k", x.k, n * nh * d.K, "[B, T*num_householder, H, K]");
  detail::require(op, "v", x.v, n * nh * d.V, "[B, T*num_householder, H, V]");
  detail::require(op, "beta", x.beta, n * nh, "[B, T*num_householder, H]");
  if (!x.g.empty()) detail::require(op, "g", x.g, n, "[B, T, H]");
  detail::forbid(op, "gk", x.gk);
  detail::forbid(op, "r", x.r);
  return detail::per_head(d, x, [&](std::size_t b, std::size_t h, std::span<const Real> init) {
    const std::size_t steps = d.T * nh;
    const auto q = detail::gather(x.q, d, d.T, d.K, b, h);
    const auto k = detail::gather(x.k, d, steps, d.K, b, h);
    const auto v = detail::gather(x.v, d, steps, d.V, b, h);
    const auto beta = detail::gather(x.beta, d, steps, 1, b, h);
    const auto g = x.g.empty() ? std::vector<Real>{} : detail::gather(x.g, d, d.T, 1, b, h);
    delta_product_inputs<Real> in{d.T, d.K, d.V, nh, k, v, beta, g};
    return outputs(in, std::span<const Real>(q), x.scale, init);
  });
}

}  // namespace fla

namespace mamba {

/// mamba_ssm's `selective_scan_ref` arguments (mamba_ssm/ops/selective_scan_interface.py), one
/// B/C group: u, delta `[batch, dim, L]`, A `[dim, dstate]`, B, C `[batch, dstate, L]`,
/// D `[dim]` (optional skip), delta_bias `[dim]` (optional), delta_softplus.
template <class Real>
struct scan_args {
  std::size_t batch = 0, dim = 0, seqlen = 0, dstate = 0;
  std::span<const Real> u, delta, A, B, C, D, delta_bias;
  bool delta_softplus = false;
  std::span<const Real> initial_state;  ///< `[batch, dim, dstate]` or empty (zeros)
  bool return_last_state = false;
};

/// (out `[batch, dim, L]`, last_state `[batch, dim, dstate]` or empty).
template <class Real>
struct scan_result {
  std::vector<Real> out;
  std::vector<Real> last_state;
};

/// Mamba1: Δ = softplus(delta + delta_bias) (if asked), x_t = e^{Δ_t A} ⊙ x_{t−1} + Δ_t B_t u_t,
/// y_t = C_tᵀ x_t + D ⊙ u_t, through `selective_inputs` (dk = dstate, dv = dim; Mamba's state
/// [dim, dstate] is the transpose of ours). softplus is log1p(e^{x}) in double, 20 and above
/// passed through as mamba_ssm does.
/// @throws invalid_argument naming the argument on a missing or mis-sized tensor or bad values.
template <class Real>
scan_result<Real> selective_scan(const scan_args<Real>& s) {
  using ::hybridcache::detail::throw_invalid;
  constexpr std::string_view op = "selective_scan";
  if (s.batch == 0) throw_invalid("batch", s.batch, "must be >= 1");
  if (s.dim == 0) throw_invalid("dim", s.dim, "must be >= 1");
  if (s.dstate == 0) throw_invalid("dstate", s.dstate, "must be >= 1");
  const std::size_t Bn = s.batch, Dn = s.dim, L = s.seqlen, N = s.dstate;
  fla::detail::require(op, "u", s.u, Bn * Dn * L, "[batch, dim, L]");
  fla::detail::require(op, "delta", s.delta, Bn * Dn * L, "[batch, dim, L]");
  fla::detail::require(op, "A", s.A, Dn * N, "[dim, dstate]");
  fla::detail::require(op, "B", s.B, Bn * N * L, "[batch, dstate, L]");
  fla::detail::require(op, "C", s.C, Bn * N * L, "[batch, dstate, L]");
  if (!s.D.empty()) fla::detail::require(op, "D", s.D, Dn, "[dim]");
  if (!s.delta_bias.empty()) fla::detail::require(op, "delta_bias", s.delta_bias, Dn, "[dim]");
  if (!s.initial_state.empty())
    fla::detail::require(op, "initial_state", s.initial_state, Bn * Dn * N, "[batch, dim, dstate]");
  std::vector<Real> a(N * Dn);  // keys × values: a[n·D + c] = A[c, n]
  for (std::size_t c = 0; c < Dn; ++c)
    for (std::size_t n = 0; n < N; ++n) a[n * Dn + c] = s.A[c * N + n];
  scan_result<Real> res;
  res.out.assign(Bn * Dn * L, Real(0));
  if (s.return_last_state) res.last_state.assign(Bn * Dn * N, Real(0));
  std::vector<Real> k(L * N), q(L * N), v(L * Dn), dt(L * Dn), init(N * Dn);
  for (std::size_t b = 0; b < Bn; ++b) {
    for (std::size_t t = 0; t < L; ++t) {
      for (std::size_t n = 0; n < N; ++n) {
        k[t * N + n] = s.B[(b * N + n) * L + t];
        q[t * N + n] = s.C[(b * N + n) * L + t];
      }
      for (std::size_t c = 0; c < Dn; ++c) {
        v[t * Dn + c] = s.u[(b * Dn + c) * L + t];
        double x = static_cast<double>(s.delta[(b * Dn + c) * L + t]);
        if (!s.delta_bias.empty()) x += static_cast<double>(s.delta_bias[c]);
        if (s.delta_softplus && x <= 20.0) x = std::log1p(std::exp(x));
        dt[t * Dn + c] = static_cast<Real>(x);
      }
    }
    if (!s.initial_state.empty())
      for (std::size_t c = 0; c < Dn; ++c)
        for (std::size_t n = 0; n < N; ++n)
          init[n * Dn + c] = s.initial_state[(b * Dn + c) * N + n];
    selective_inputs<Real> in{L, N, Dn, k, v, dt, a};
    const auto o =
        outputs(in, std::span<const Real>(q), 1.0,
                s.initial_state.empty() ? std::span<const Real>() : std::span<const Real>(init));
    for (std::size_t t = 0; t < L; ++t)
      for (std::size_t c = 0; c < Dn; ++c) {
        Real y = o.o[t * Dn + c];
        if (!s.D.empty()) y += s.D[c] * s.u[(b * Dn + c) * L + t];
        res.out[(b * Dn + c) * L + t] = y;
      }
    if (s.return_last_state)
      for (std::size_t c = 0; c < Dn; ++c)
        for (std::size_t n = 0; n < N; ++n)
          res.last_state[(b * Dn + c) * N + n] = o.final_state[n * Dn + c];
  }
  return res;
}

}  // namespace mamba

HYBRIDCACHE_NAMESPACE_END
