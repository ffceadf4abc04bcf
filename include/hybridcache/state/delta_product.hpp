#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Gated DeltaProduct: n_h Householder (delta-rule) steps per token, one gate per token.
///
/// Following flash-linear-attention (fla/ops/gated_delta_product/naive.py and chunk.py), token t
/// carries n_h keys, values and write strengths (k, v of T·n_h rows, interleaved token-major) and
/// one log-gate g_t. The state is first decayed, then rewritten n_h times:
///
///   S ← D(g_t) S;   for j = 1..n_h:  S ← (I − β_{t,j} k_{t,j} k_{t,j}ᵀ) S + β_{t,j} k_{t,j}
///   v_{t,j}ᵀ
///
/// so T_t = H_{t,n_h} ⋯ H_{t,1} D(g_t) with H = I − β k kᵀ, a dense (dk×dk) transition, and the
/// summary of a segment is a dense `segment_summary` (summary.hpp) of `length` tokens. D(g) is
/// e^{g}I for a scalar gate (FLA's op) or Diag(e^{g}) for a per-key gate (the KDA-style variant).
///
/// A token is exactly n_h delta-rule sub-steps of the unified recurrence with the token's gate on
/// the first sub-step and log-gate 0 (decay 1, exact) on the others — which is also how FLA's
/// chunked kernel runs it (`g_interleaved`). So summaries reuse `summarize(token_inputs, delta)`,
/// including its chunked WY path at any chunk length.

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/summarize.hpp"
#include "hybridcache/state/summary.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// One head's Gated DeltaProduct inputs, token-major and contiguous.
/// @tparam Real float or double.
template <class Real>
struct delta_product_inputs {
  std::size_t length = 0;          ///< tokens L
  std::size_t dk = 0;              ///< key dimension
  std::size_t dv = 0;              ///< value dimension
  std::size_t householder = 1;     ///< n_h ≥ 1 Householder steps per token
  std::span<const Real> k;         ///< L·n_h·dk keys (sub-step j of token t at row t·n_h + j)
  std::span<const Real> v;         ///< L·n_h·dv values
  std::span<const Real> beta;      ///< L·n_h write strengths
  std::span<const Real> log_gate;  ///< empty | L (scalar, FLA's g) | L·dk (per key) log-decays
};

/// The unified-recurrence form of a Gated DeltaProduct segment: L·n_h delta-rule sub-steps with
/// the token gates spread onto the first sub-step (owning the spread gate array).
template <class Real>
struct expanded_delta_product {
  std::vector<Real> log_gate;  ///< empty, L·n_h or L·n_h·dk
  token_inputs<Real> steps;    ///< views `log_gate` above and the caller's k, v, beta
  std::size_t householder = 1;

  expanded_delta_product() = default;
  expanded_delta_product(const expanded_delta_product&) = delete;  // `steps` views `log_gate`
  expanded_delta_product& operator=(const expanded_delta_product&) = delete;
};

namespace detail {
template <class Real>
void validate(const delta_product_inputs<Real>& in) {
  if (in.householder == 0) throw_invalid("householder", in.householder, "must be >= 1");
  if (in.dk == 0) throw_invalid("dk", in.dk, "must be >= 1");
  const std::size_t n = in.length * in.householder;
  const auto need = [](std::string_view name, std::size_t got, std::size_t want,
                       std::string_view what) {
    if (got != want)
      throw_invalid(std::string(name) + ".size()", got,
                    "must equal " + std::string(what) + " = " + std::to_string(want));
  };
  need("k", in.k.size(), n * in.dk, "length*householder*dk");
  need("v", in.v.size(), n * in.dv, "length*householder*dv");
  need("beta", in.beta.size(), n, "length*householder");
  const std::size_t g = in.log_gate.size();
  if (g != 0 && g != in.length && g != in.length * in.dk)
    throw_invalid("log_gate.size()", g,
                  "must be 0 (no gate), length = " + std::to_string(in.length) +
                      " (scalar) or length*dk = " + std::to_string(in.length * in.dk) +
                      " (per key)");
  check_log_gates(in.log_gate, "log_gate");
}
}  // namespace detail

/// Spreads a Gated DeltaProduct segment into L·n_h delta-rule sub-steps (see the file comment).
/// @throws invalid_argument on mismatched sizes or log-gates > 0 / NaN.
template <class Real>
void expand(const delta_product_inputs<Real>& in, expanded_delta_product<Real>& out) {
  detail::validate(in);
  const std::size_t nh = in.householder, n = in.length * nh;
  const bool diag = !in.log_gate.empty() && in.log_gate.size() != in.length;
  const std::size_t per = diag ? in.dk : 1;
  out.householder = nh;
  out.log_gate.assign(in.log_gate.empty() ? 0 : n * per, Real(0));
  if (!in.log_gate.empty())
    for (std::size_t t = 0; t < in.length; ++t)
      for (std::size_t r = 0; r < per; ++r)
        out.log_gate[t * nh * per + r] = in.log_gate[t * per + r];
  out.steps = token_inputs<Real>{n, in.dk, in.dv, in.k, in.v, in.beta, out.log_gate};
  // dk = 1 with a gate of L entries reads as scalar; a length*dk gate with dk = 1 is the same.
}

/// The dense summary of a Gated DeltaProduct segment of `in.length` tokens.
/// @param opts per-token or chunked WY path (on the sub-steps), chunk length.
/// @throws invalid_argument on bad inputs.
///
/// Example (two Householder steps per token, scalar gate):
/// @code
///   std::vector<float> k{1, 0, 0, 1}, v{1, 2}, beta{0.5f, 0.5f}, g{-0.1f};
///   hybridcache::delta_product_inputs<float> in{1, 2, 1, 2, k, v, beta, g};
///   auto s = hybridcache::summarize(in);  // dense, length 1
/// @endcode
template <class Real>
segment_summary<Real> summarize(const delta_product_inputs<Real>& in,
                                const summarize_options& opts = {}) {
  expanded_delta_product<Real> ex;
  expand(in, ex);
  auto s = summarize(ex.steps, transition_rule::delta, opts);
  detail::summary_access::set_length(s, in.length);
  return s;
}

/// Runs Gated DeltaProduct token by token from `initial_state` (dk·dv) to the end state.
/// @throws invalid_argument on bad inputs or a mis-sized / non-finite initial state.
template <class Real>
std::vector<Real> run_recurrence(const delta_product_inputs<Real>& in,
                                 std::span<const std::type_identity_t<Real>> initial_state) {
  expanded_delta_product<Real> ex;
  expand(in, ex);
  return run_recurrence(ex.steps, transition_rule::delta, initial_state);
}

HYBRIDCACHE_NAMESPACE_END
