#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// RWKV-7's generalised delta rule (diagonal plus rank-1, DPLR) as a dense transition family.
///
/// flash-linear-attention writes it (fla/ops/generalized_delta_rule/dplr/naive.py,
/// fla/ops/rwkv7/fused_recurrent.py) with the state as [K, V] and the update
///   h_t = Diag(e^{w_t}) h_{t−1} + b_t (a_tᵀ h_{t−1}) + k_t v_tᵀ
/// — the rank-1 term reads the *old* state, not the decayed one. In the paper's V×K picture this
/// is S_t = S_{t−1}(Diag(e^{w_t}) + a_t b_tᵀ) + v_t k_tᵀ; transposed onto our keys × values
/// state (DESIGN.md §3) it is the unified recurrence S_t = T_t S_{t−1} + u_t with
///
///   T_t = Diag(e^{w_t}) + b_t a_tᵀ   (non-symmetric, applied to the key axis),   u_t = k_t v_tᵀ.
///
/// `w` is FLA's log-decay (`gk`, ≤ 0 or −∞). RWKV-7 itself sets a = −κ̂, b = κ̂ ⊙ α, but any a, b
/// are accepted. Summaries are dense (dk×dk T_C, see summary.hpp) and compose with every other
/// dense, scalar or diagonal summary through state/compose.hpp.
///
/// Two summary paths (`summarize_options`; `automatic` takes the per-token one):
///
/// - **per token** on the augmented matrix M = [T | S] from [I | 0]: x = aᵀM,
///   M ← Diag(e^{w})M + b xᵀ, then S-part += k vᵀ — O(dk·(dk + dv)) per token;
/// - **chunked** (WY form, as FLA's chunk_dplr): within a chunk of n tokens (0-based t, j) let
///   Γ_{t,j} = Diag(exp(Σ_{j<i<t} w_i)) be the decay between tokens (log-sums in double, so −∞
///   gates give exact zeros and no ratio ever overflows). Unrolling T_t = Diag(e^{w_t}) + b_t a_tᵀ
///   gives the chunk transition and zero-start state
///
///       T_C = Γ_{n,−1} + B̃ᵀ Y,           S_C = B̃ᵀ Z + K̃ᵀ V,
///       (I − N) Y = Ã,                  (I − N) Z = N_k V,
///
///   with rows Ã_t = a_tᵀ Γ_{t,−1}, B̃_j = (Γ_{n,j} b_j)ᵀ, K̃_j = (Γ_{n,j} k_j)ᵀ and the strictly
///   lower n×n matrices N[t, j] = a_tᵀ Γ_{t,j} b_j, N_k[t, j] = a_tᵀ Γ_{t,j} k_j (j < t): y_tᵀ =
///   a_tᵀ P_{t−1} and z_tᵀ = a_tᵀ S_{t−1} are what the rank-1 term reads, and they satisfy those
///   two unit-lower-triangular systems (one matrix, two right-hand sides: FLA's coupled solves).
///   Chunks are then folded as T ← T_C T, S ← T_C S + S_C. O(n²·dk) pair terms per chunk.

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/detail/gemm.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/summarize.hpp"
#include "hybridcache/state/summary.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// One head's DPLR (RWKV-7) inputs, token-major and contiguous.
/// @tparam Real float or double.
template <class Real>
struct dplr_inputs {
  std::size_t length = 0;          ///< tokens L
  std::size_t dk = 0;              ///< key dimension
  std::size_t dv = 0;              ///< value dimension
  std::span<const Real> k;         ///< L·dk keys
  std::span<const Real> v;         ///< L·dv values
  std::span<const Real> a;         ///< L·dk: the rank-1 term reads aᵀS (RWKV-7: −κ̂)
  std::span<const Real> b;         ///< L·dk: and writes it along b (RWKV-7: κ̂ ⊙ α)
  std::span<const Real> log_gate;  ///< L·dk log-decays w (FLA `w` / `gk`), ≤ 0 or −∞

  /// Tokens [begin, end) as a view of the same arrays.
  /// @throws invalid_argument if the range is not within [0, length].
  [[nodiscard]] dplr_inputs slice(std::size_t begin, std::size_t end) const {
    if (begin > end || end > length)
      hybridcache::detail::throw_invalid(
          "slice", std::to_string(begin) + ".." + std::to_string(end),
          "range must lie within [0, " + std::to_string(length) + "]");
    dplr_inputs r = *this;
    r.length = end - begin;
    r.k = k.subspan(begin * dk, r.length * dk);
    r.v = v.subspan(begin * dv, r.length * dv);
    r.a = a.subspan(begin * dk, r.length * dk);
    r.b = b.subspan(begin * dk, r.length * dk);
    r.log_gate = log_gate.subspan(begin * dk, r.length * dk);
    return r;
  }
};

namespace detail {

/// @throws invalid_argument naming the field and the bad value.
template <class Real>
void validate(const dplr_inputs<Real>& in) {
  check_family_shape<Real>(in.dk, in.dv,
                           {{"k", in.k.size(), in.length * in.dk, "length*dk"},
                            {"v", in.v.size(), in.length * in.dv, "length*dv"},
                            {"a", in.a.size(), in.length * in.dk, "length*dk"},
                            {"b", in.b.size(), in.length * in.dk, "length*dk"},
                            {"log_gate", in.log_gate.size(), in.length * in.dk, "length*dk"}});
  check_finite(in.k, "k");
  check_finite(in.v, "v");
  check_finite(in.a, "a");
  check_finite(in.b, "b");
  check_log_gates(in.log_gate, "log_gate");
}

/// One DPLR token on the dk×w row-major matrix `m` (w = dv for a bare state, dk + dv for
/// [T | S] with the values at `value_offset`): x = aᵀm; m ← Diag(e^{w})m + b xᵀ;
/// m[:, value_offset:] += k vᵀ. `x` is scratch of w entries, `f` of dk.
template <class Real>
void dplr_token(Real* m, std::size_t dk, std::size_t w, std::size_t value_offset, const Real* k,
                const Real* v, const Real* a, const Real* b, const Real* g, Real* x,
                Real* f) noexcept {
  for (std::size_t c = 0; c < w; ++c) x[c] = Real(0);
  for (std::size_t r = 0; r < dk; ++r) {
    const Real ar = a[r];
    const Real* row = m + r * w;
    for (std::size_t c = 0; c < w; ++c) x[c] += ar * row[c];
  }
  decay_factors(g, f, dk);
  for (std::size_t r = 0; r < dk; ++r) {
    Real* row = m + r * w;
    const Real fr = f[r], br = b[r], kr = k[r];
    for (std::size_t c = 0; c < w; ++c) row[c] = fr * row[c] + br * x[c];
    for (std::size_t c = value_offset; c < w; ++c) row[c] += kr * v[c - value_offset];
  }
}

template <class Real>
void advance(const dplr_inputs<Real>& in, std::size_t begin, std::size_t end, Real* s, Real* x,
             Real* f) noexcept {
  for (std::size_t t = begin; t < end; ++t)
    dplr_token(s, in.dk, in.dv, 0, in.k.data() + t * in.dk, in.v.data() + t * in.dv,
               in.a.data() + t * in.dk, in.b.data() + t * in.dk, in.log_gate.data() + t * in.dk, x,
               f);
}

/// The chunked (WY) summary of the file comment, chunks of `chunk` tokens (the last may be
/// shorter). Inputs already validated.
template <class Real>
segment_summary<Real> summarize_dplr_chunked(const dplr_inputs<Real>& in, std::size_t chunk) {
  using mat = row_matrix<Real>;
  const auto ix = [](std::size_t v) { return static_cast<Eigen::Index>(v); };
  const std::size_t L = in.length, dk = in.dk, dv = in.dv;
  mat T = mat::Identity(ix(dk), ix(dk)), S = mat::Zero(ix(dk), ix(dv));
  const std::size_t C = std::min(chunk, std::max<std::size_t>(L, 1));
  mat N(ix(C), ix(C)), Nk(ix(C), ix(C)), Y(ix(C), ix(dk)), Bt(ix(C), ix(dk)), Kt(ix(C), ix(dk)),
      Z(ix(C), ix(dv)), TC(ix(dk), ix(dk));
  std::vector<double> g(dk);  // running Σ w over the tokens strictly between j and t
  for (std::size_t s0 = 0; s0 < L; s0 += C) {
    const std::size_t n = std::min(C, L - s0);
    const Real* a = in.a.data() + s0 * dk;
    const Real* b = in.b.data() + s0 * dk;
    const Real* k = in.k.data() + s0 * dk;
    const Real* w = in.log_gate.data() + s0 * dk;
    N.setZero();
    Nk.setZero();
    // Ã_t = a_tᵀ Γ_{t,−1}; after the loop g = log Γ_{n,−1}, the chunk's own decay.
    std::fill(g.begin(), g.end(), 0.0);
    for (std::size_t t = 0; t < n; ++t)
      for (std::size_t r = 0; r < dk; ++r) {
        Y(ix(t), ix(r)) = a[t * dk + r] * static_cast<Real>(std::exp(g[r]));
        g[r] += static_cast<double>(w[t * dk + r]);
      }
    TC.setZero();
    for (std::size_t r = 0; r < dk; ++r) TC(ix(r), ix(r)) = static_cast<Real>(std::exp(g[r]));
    // Pair terms N, N_k (column j), then B̃_j, K̃_j with g = log Γ_{n,j}.
    for (std::size_t j = 0; j < n; ++j) {
      std::fill(g.begin(), g.end(), 0.0);
      for (std::size_t t = j + 1; t < n; ++t) {
        Real nb = 0, nk = 0;
        for (std::size_t r = 0; r < dk; ++r) {
          const Real e = a[t * dk + r] * static_cast<Real>(std::exp(g[r]));
          nb += e * b[j * dk + r];
          nk += e * k[j * dk + r];
          g[r] += static_cast<double>(w[t * dk + r]);
        }
        N(ix(t), ix(j)) = nb;
        Nk(ix(t), ix(j)) = nk;
      }
      for (std::size_t r = 0; r < dk; ++r) {
        const Real e = static_cast<Real>(std::exp(g[r]));
        Bt(ix(j), ix(r)) = e * b[j * dk + r];
        Kt(ix(j), ix(r)) = e * k[j * dk + r];
      }
    }
    const auto rows = [&](mat& m) { return m.topRows(ix(n)); };
    const const_matrix_map<Real> V(in.v.data() + s0 * dv, ix(n), ix(dv),
                                   Eigen::OuterStride<>(ix(dv)));
    rows(Z).noalias() = Nk.topLeftCorner(ix(n), ix(n)) * V;
    const mat I_minus_N = -N.topLeftCorner(ix(n), ix(n));  // unit diagonal implied
    I_minus_N.template triangularView<Eigen::UnitLower>().solveInPlace(rows(Y));
    I_minus_N.template triangularView<Eigen::UnitLower>().solveInPlace(rows(Z));
    TC.noalias() += rows(Bt).transpose() * rows(Y);
    mat SC = rows(Bt).transpose() * rows(Z);
    SC.noalias() += rows(Kt).transpose() * V;
    SC.noalias() += TC * S;
    S = std::move(SC);
    T = (TC * T).eval();
  }
  std::vector<Real> tr(T.data(), T.data() + dk * dk), st(S.data(), S.data() + dk * dv);
  return summary_access::make<Real>(transition_family::dense, L, dk, dv, {}, std::move(tr), std::move(st));
}

}  // namespace detail

/// The dense summary (T_C, S_C|0) of a DPLR segment: token by token on [T | S]
/// (`per_token`, also what `automatic` takes) or by chunks in WY form (`chunked`, chunk length
/// `opts.chunk` in 1..256) — see the file comment.
/// @returns a dense summary of `in.length` tokens (identity transition for length 0).
/// @throws invalid_argument on mismatched sizes, non-finite inputs, log-gates > 0 / NaN, or a
///         chunk length outside [1, 256].
///
/// Example (dk = 1, dv = 1: T = e^{w} + b·a):
/// @code
///   std::vector<double> k{1}, v{2}, a{-0.5}, b{0.5}, w{-0.1};
///   hybridcache::dplr_inputs<double> in{1, 1, 1, k, v, a, b, w};
///   auto s = hybridcache::summarize(in);  // T = e^{-0.1} − 0.25, S = 2
/// @endcode
template <class Real>
segment_summary<Real> summarize(const dplr_inputs<Real>& in, const summarize_options& opts = {}) {
  detail::validate(in);
  if (opts.chunk == 0 || opts.chunk > 256)
    hybridcache::detail::throw_invalid("opts.chunk", opts.chunk, "must lie in [1, 256]");
  if (opts.method == summarize_method::chunked)
    return detail::summarize_dplr_chunked(in, opts.chunk);
  const std::size_t dk = in.dk, dv = in.dv, w = dk + dv;
  std::vector<Real> m(dk * w, Real(0)), x(w), f(dk);
  for (std::size_t r = 0; r < dk; ++r) m[r * w + r] = Real(1);
  for (std::size_t t = 0; t < in.length; ++t)
    detail::dplr_token(m.data(), dk, w, dk, in.k.data() + t * dk, in.v.data() + t * dv,
                       in.a.data() + t * dk, in.b.data() + t * dk, in.log_gate.data() + t * dk,
                       x.data(), f.data());
  std::vector<Real> tr(dk * dk), st(dk * dv);
  for (std::size_t r = 0; r < dk; ++r)
    for (std::size_t c = 0; c < w; ++c)
      (c < dk ? tr[r * dk + c] : st[r * dv + c - dk]) = m[r * w + c];
  return detail::summary_access::make<Real>(transition_family::dense, in.length, dk, dv, {},
                                            std::move(tr), std::move(st));
}

/// Runs the DPLR recurrence token by token from `initial_state` (dk·dv) to the end state.
/// @throws invalid_argument on bad inputs or a mis-sized / non-finite initial state.
template <class Real>
std::vector<Real> run_recurrence(const dplr_inputs<Real>& in,
                                 std::span<const std::type_identity_t<Real>> initial_state) {
  detail::validate(in);
  detail::check_initial_state(initial_state, in.dk, in.dv, "initial_state");
  std::vector<Real> s(initial_state.begin(), initial_state.end()), x(in.dv), f(in.dk);
  detail::advance(in, 0, in.length, s.data(), x.data(), f.data());
  return s;
}

HYBRIDCACHE_NAMESPACE_END
