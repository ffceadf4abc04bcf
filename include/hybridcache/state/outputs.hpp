#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Per-token outputs of a linear-attention head over a segment:
///
///   o_t = (scale · q_t)ᵀ S_t,   t = 1..L,   S_t the state *after* token t,
///
/// with flash-linear-attention's default scale K^{−1/2} (every `chunk_*`/`fused_recurrent_*` op
/// in fla/ops takes `scale=None` to mean `K ** -0.5` and multiplies q by it before the read-out,
/// as fla/ops/gla/naive.py and fla/ops/delta_rule/naive.py do). q is scaled first and rounded to
/// `Real`, as FLA's float code does. Mamba's read-out y_t = C_tᵀ x_t has scale 1 (pass 1.0).
///
/// One overload per input kind: `token_inputs` + rule (linear, RetNet/Mamba2, GLA, DeltaNet,
/// Gated DeltaNet, KDA), `selective_inputs` (Mamba1), `dplr_inputs` (RWKV-7) and
/// `delta_product_inputs` (Gated DeltaProduct, one output per token after all its Householder
/// steps). Each runs the token recurrence from `initial_state` and returns the L·dv outputs and
/// the final state, in O(L·dk·dv) (plus the family's own per-token cost).

#include <cmath>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/delta_product.hpp"
#include "hybridcache/state/dplr.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/selective.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The outputs of one head over a segment and the state after its last token.
template <class Real>
struct segment_outputs {
  std::vector<Real> o;            ///< L·dv, token-major
  std::vector<Real> final_state;  ///< dk·dv, keys × values
};

/// flash-linear-attention's default read-out scale, K^{−1/2}.
/// @throws invalid_argument if dk is 0.
inline double default_scale(std::size_t dk) {
  if (dk == 0) hybridcache::detail::throw_invalid("dk", dk, "must be >= 1");
  return 1.0 / std::sqrt(static_cast<double>(dk));
}

namespace detail {

/// Shared driver: validates q, the scale and the initial state, then for each token calls
/// `step(t, s)` and reads out o_t = (scale·q_t)ᵀ S_t.
template <class Real, class Step>
segment_outputs<Real> read_out(std::size_t length, std::size_t dk, std::size_t dv,
                               std::span<const Real> q, std::optional<double> scale,
                               std::span<const Real> initial_state, Step&& step) {
  if (q.size() != length * dk)
    throw_invalid("q.size()", q.size(), "must equal length*dk = " + std::to_string(length * dk));
  check_finite(q, "q");
  const double sc = scale ? *scale : default_scale(dk);
  if (!std::isfinite(sc)) throw_invalid("scale", sc, "must be finite");
  segment_outputs<Real> out;
  if (initial_state.empty()) {
    out.final_state.assign(dk * dv, Real(0));
  } else {
    check_initial_state(initial_state, dk, dv, "initial_state");
    out.final_state.assign(initial_state.begin(), initial_state.end());
  }
  out.o.assign(length * dv, Real(0));
  std::vector<Real> qs(dk);
  Real* s = out.final_state.data();
  for (std::size_t t = 0; t < length; ++t) {
    step(t, s);
    for (std::size_t r = 0; r < dk; ++r) qs[r] = static_cast<Real>(sc * q[t * dk + r]);
    Real* o = out.o.data() + t * dv;
    for (std::size_t r = 0; r < dk; ++r) {
      const Real qr = qs[r];
      const Real* row = s + r * dv;
      for (std::size_t c = 0; c < dv; ++c) o[c] += qr * row[c];
    }
  }
  return out;
}

}  // namespace detail

/// Outputs of the unified recurrence (token_inputs.hpp table) over a segment.
/// @param q             L·dk queries.
/// @param scale         read-out scale; nullopt = K^{−1/2}.
/// @param initial_state dk·dv values (empty = zeros).
/// @throws invalid_argument on bad inputs, a mis-sized q or initial state, a non-finite scale.
///
/// Example (GLA-free linear attention, dk = dv = 1):
/// @code
///   std::vector<float> q{1, 1}, k{1, 1}, v{1, 2};
///   hybridcache::token_inputs<float> in{2, 1, 1, k, v, {}, {}};
///   auto r = hybridcache::outputs(in, hybridcache::transition_rule::additive, q);
///   // r.o == {1, 3} (scale 1^{-1/2} = 1), r.final_state == {3}
/// @endcode
template <class Real>
segment_outputs<Real> outputs(const token_inputs<Real>& in, transition_rule r,
                              std::span<const std::type_identity_t<Real>> q,
                              std::optional<double> scale = std::nullopt,
                              std::span<const std::type_identity_t<Real>> initial_state = {}) {
  detail::validate(in, r);
  std::vector<Real> x(in.dv), f(in.dk);
  return detail::read_out<Real>(
      in.length, in.dk, in.dv, q, scale, initial_state,
      [&](std::size_t t, Real* s) { detail::advance(in, r, t, t + 1, s, x.data(), f.data()); });
}

/// Outputs of Mamba1's selective SSM (selective.hpp); pass scale = 1.0 for Mamba's y = Cᵀx.
/// @throws invalid_argument as above.
template <class Real>
segment_outputs<Real> outputs(const selective_inputs<Real>& in,
                              std::span<const std::type_identity_t<Real>> q,
                              std::optional<double> scale = std::nullopt,
                              std::span<const std::type_identity_t<Real>> initial_state = {}) {
  detail::validate(in);
  return detail::read_out<Real>(in.length, in.dk, in.dv, q, scale, initial_state,
                                [&](std::size_t t, Real* s) { detail::advance(in, t, t + 1, s); });
}

/// Outputs of RWKV-7's DPLR recurrence (dplr.hpp); q is RWKV's receptance r.
/// @throws invalid_argument as above.
template <class Real>
segment_outputs<Real> outputs(const dplr_inputs<Real>& in,
                              std::span<const std::type_identity_t<Real>> q,
                              std::optional<double> scale = std::nullopt,
                              std::span<const std::type_identity_t<Real>> initial_state = {}) {
  detail::validate(in);
  std::vector<Real> x(in.dv), f(in.dk);
  return detail::read_out<Real>(
      in.length, in.dk, in.dv, q, scale, initial_state,
      [&](std::size_t t, Real* s) { detail::advance(in, t, t + 1, s, x.data(), f.data()); });
}

/// Outputs of Gated DeltaProduct (delta_product.hpp): one per token, read after its n_h steps.
/// @throws invalid_argument as above.
template <class Real>
segment_outputs<Real> outputs(const delta_product_inputs<Real>& in,
                              std::span<const std::type_identity_t<Real>> q,
                              std::optional<double> scale = std::nullopt,
                              std::span<const std::type_identity_t<Real>> initial_state = {}) {
  expanded_delta_product<Real> ex;
  expand(in, ex);
  detail::validate(ex.steps, transition_rule::delta);
  std::vector<Real> x(in.dv), f(in.dk);
  const std::size_t nh = in.householder;
  return detail::read_out<Real>(in.length, in.dk, in.dv, q, scale, initial_state,
                                [&](std::size_t t, Real* s) {
                                  detail::advance(ex.steps, transition_rule::delta, t * nh,
                                                  (t + 1) * nh, s, x.data(), f.data());
                                });
}

HYBRIDCACHE_NAMESPACE_END
