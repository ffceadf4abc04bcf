#pragma once
// SPDX-License-Identifier: Apache-2.0
// Test glue: owning copies of reference inputs in the library's types. No algorithm here.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <hybridcache/state.hpp>

#include "support/state_reference.hpp"

namespace hc = hybridcache;

/// Owning arrays behind a token_inputs<Real>.
template <class Real>
struct owned_inputs {
  std::vector<Real> k, v, beta, g;
  hc_ref::tokens ref;  // the same numbers in double (rounded through Real)
  hc::transition_rule rule = hc::transition_rule::additive;
  hc::token_inputs<Real> view() const { return {ref.L, ref.dk, ref.dv, k, v, beta, g}; }
};

template <class Real>
owned_inputs<Real> own(const hc_ref::tokens& t) {
  owned_inputs<Real> o;
  o.ref = hc_ref::rounded<Real>(t);
  o.k.assign(o.ref.k.begin(), o.ref.k.end());
  o.v.assign(o.ref.v.begin(), o.ref.v.end());
  o.beta.assign(o.ref.beta.begin(), o.ref.beta.end());
  o.g.assign(o.ref.log_gate.begin(), o.ref.log_gate.end());
  o.rule = t.delta ? hc::transition_rule::delta : hc::transition_rule::additive;
  return o;
}

template <class Real>
std::vector<Real> to_real(const hc_ref::mat& m) {
  return std::vector<Real>(m.a.begin(), m.a.end());
}

/// The six variants of the DESIGN.md table plus plain linear attention.
struct variant {
  const char* name;
  bool delta;
  hc_ref::gate gate;
};
inline constexpr variant all_variants[] = {
    {"linear", false, hc_ref::gate::none},
    {"RetNet/Mamba2 (scalar gate)", false, hc_ref::gate::scalar},
    {"GLA (diagonal gate)", false, hc_ref::gate::diagonal},
    {"DeltaNet", true, hc_ref::gate::none},
    {"Gated DeltaNet", true, hc_ref::gate::scalar},
    {"KDA", true, hc_ref::gate::diagonal},
};

/// Tolerance on relative Frobenius errors against the double reference.
template <class Real>
constexpr double tol() {
  return std::is_same_v<Real, float> ? 2e-4 : 1e-10;
}

/// True if no element is NaN or ±inf.
inline bool all_finite(std::span<const float> x) {
  return std::all_of(x.begin(), x.end(), [](float v) { return std::isfinite(v); });
}
inline bool all_finite(std::span<const double> x) {
  return std::all_of(x.begin(), x.end(), [](double v) { return std::isfinite(v); });
}

/// Long-segment inputs whose numbers are exactly representable in float, so one double reference
/// serves the float and the double runs.
inline hc_ref::tokens long_tokens(std::size_t L, std::size_t dk, bool delta, hc_ref::gate g,
                                  double lo, double hi, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  return hc_ref::rounded<float>(hc_ref::random_tokens(rng, L, dk, 2, delta, g, lo, hi));
}
