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
/// The summary is computed token by token on the augmented matrix M = [T | S] from [I | 0]:
/// x = aᵀM, M ← Diag(e^{w})M + b xᵀ, then S-part += k vᵀ — O(dk·(dk + dv)) per token. There is no
/// chunked (WY) path yet: FLA's chunk_dplr needs two coupled triangular solves per chunk, and
/// the per-token path is already exact.

#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/recurrence.hpp"
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
  static_assert(std::is_floating_point_v<Real>, "dplr_inputs<Real>: Real must be float or double");
  if (in.dk == 0) throw_invalid("dk", in.dk, "must be >= 1");
  if (in.dv == 0) throw_invalid("dv", in.dv, "must be >= 1");
  const auto need = [](std::string_view name, std::size_t got, std::size_t want,
                       std::string_view what) {
    if (got != want)
      throw_invalid(std::string(name) + ".size()", got,
                    "must equal " + std::string(what) + " = " + std::to_string(want));
  };
  need("k", in.k.size(), in.length * in.dk, "length*dk");
  need("v", in.v.size(), in.length * in.dv, "length*dv");
  need("a", in.a.size(), in.length * in.dk, "length*dk");
  need("b", in.b.size(), in.length * in.dk, "length*dk");
  need("log_gate", in.log_gate.size(), in.length * in.dk, "length*dk");
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

}  // namespace detail

/// The dense summary (T_C, S_C|0) of a DPLR segment, token by token on [T | S].
/// @returns a dense summary of `in.length` tokens (identity transition for length 0).
/// @throws invalid_argument on mismatched sizes, non-finite inputs or log-gates > 0 / NaN.
///
/// Example (dk = 1, dv = 1: T = e^{w} + b·a):
/// @code
///   std::vector<double> k{1}, v{2}, a{-0.5}, b{0.5}, w{-0.1};
///   hybridcache::state::dplr_inputs<double> in{1, 1, 1, k, v, a, b, w};
///   auto s = hybridcache::state::summarize(in);  // T = e^{-0.1} − 0.25, S = 2
/// @endcode
template <class Real>
segment_summary<Real> summarize(const dplr_inputs<Real>& in) {
  detail::validate(in);
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

namespace state {  // deprecated spellings (docs/design/namespaces.md): use hybridcache::X
namespace detail = ::hybridcache::detail;
using ::hybridcache::dplr_inputs;
using ::hybridcache::run_recurrence;
using ::hybridcache::summarize;
}  // namespace state
HYBRIDCACHE_NAMESPACE_END
