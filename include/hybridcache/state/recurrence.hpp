#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `run_recurrence`: the token-by-token recurrence S_i = T_i·S_{i−1} + u_i (HYPIC eq. 2) from a
/// given initial state. It is what a serving engine runs today on every token, the baseline the
/// composition law is measured against, and the way seam tokens are recomputed at splice time.
///
/// Per token it costs O(dk·dv) for every family (the dense transition is never formed:
/// (I − β k kᵀ)S = S − β k (kᵀS) is one mat-vec and one rank-1 update).
///
/// A bf16 overload keeps the state in bfloat16 between tokens and computes each token in fp32,
/// as engines that store states in bf16 do; its drift is measured in the tests (bf16.hpp).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/numeric.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/detail/token_step.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Advances the dk×dv state `s` (in `Real`) over tokens [begin, end) of `in`, in place.
/// Preconditions: `in` validated for `r`; `s` has dk·dv entries; `x` has dv entries and
/// `f` has dk.
template <class Real>
void advance(const token_inputs<Real>& in, transition_rule r, std::size_t begin, std::size_t end,
             Real* s, Real* x, Real* f) noexcept {
  const std::size_t dk = in.dk, dv = in.dv;
  const gate_kind gk = in.gate();
  for (std::size_t t = begin; t < end; ++t) {
    const Real* k = in.k.data() + t * dk;
    const Real* v = in.v.data() + t * dv;
    const Real* g = gk == gate_kind::none     ? nullptr
                    : gk == gate_kind::scalar ? in.log_gate.data() + t
                                              : in.log_gate.data() + t * dk;
    if (r == transition_rule::delta) {
      delta_token(s, dk, dv, 0, k, v, in.beta[t], gk, g, x, f);
      continue;
    }
    const Real a =
        gk == gate_kind::scalar ? static_cast<Real>(decay_factor(static_cast<double>(g[0]))) : Real(1);
    if (gk == gate_kind::diagonal) decay_factors(g, f, dk);
    for (std::size_t row = 0; row < dk; ++row) {
      const Real fr = gk == gate_kind::diagonal ? f[row] : a;
      Real* sr = s + row * dv;
      const Real kr = k[row];
      if (gk == gate_kind::none) {
        for (std::size_t c = 0; c < dv; ++c) sr[c] += kr * v[c];
      } else {
        for (std::size_t c = 0; c < dv; ++c) sr[c] = fr * sr[c] + kr * v[c];
      }
    }
  }
}

template <class Storage>
void check_initial_state(std::span<const Storage> s, std::size_t dk, std::size_t dv,
                         std::string_view name) {
  if (s.size() != dk * dv)
    hybridcache::detail::throw_invalid(std::string(name) + ".size()", s.size(),
                                       "must equal dk*dv = " + std::to_string(dk * dv));
  for (std::size_t i = 0; i < s.size(); ++i) {
    const double x = static_cast<double>(::hybridcache::detail::load_float(s[i]));
    if (!std::isfinite(x))
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed(name, i), x,
                                         "must be finite");
  }
}

}  // namespace detail

/// Runs the recurrence token by token from `initial_state` and returns the end state.
///
/// @param in            per-token inputs (the variant follows from their shapes).
/// @param r             the write rule.
/// @param initial_state dk·dv values, row-major (K-first).
/// @returns the dk·dv end state.
/// @throws invalid_argument on bad inputs or a non-finite / mis-sized initial state.
template <class Real>
std::vector<Real> run_recurrence(const token_inputs<Real>& in, transition_rule r,
                                 std::span<const std::type_identity_t<Real>> initial_state) {
  detail::validate(in, r);
  detail::check_initial_state(initial_state, in.dk, in.dv, "initial_state");
  std::vector<Real> s(initial_state.begin(), initial_state.end());
  std::vector<Real> x(in.dv), f(in.dk);
  detail::advance(in, r, 0, in.length, s.data(), x.data(), f.data());
  return s;
}

/// The recurrence with the state stored in bfloat16 between tokens and each token computed in
/// fp32 (load, update, round to nearest even).
/// @throws invalid_argument as the fp32 overload.
inline std::vector<bfloat16> run_recurrence(const token_inputs<float>& in, transition_rule r,
                                            std::span<const bfloat16> initial_state) {
  detail::validate(in, r);
  detail::check_initial_state(initial_state, in.dk, in.dv, "initial_state");
  std::vector<float> work(in.dk * in.dv), x(in.dv), f(in.dk);
  std::vector<bfloat16> s(initial_state.begin(), initial_state.end());
  for (std::size_t t = 0; t < in.length; ++t) {
    for (std::size_t i = 0; i < s.size(); ++i) work[i] = static_cast<float>(s[i]);
    detail::advance(in, r, t, t + 1, work.data(), x.data(), f.data());
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = bfloat16(work[i]);
  }
  return s;
}

HYBRIDCACHE_NAMESPACE_END
