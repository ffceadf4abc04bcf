#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// One delta-rule token on a raw row-major matrix, shared by the per-token dense summary
/// (on the augmented [T | S]) and by run_recurrence (on S alone). No Eigen.

#include <algorithm>
#include <cstddef>

#include "hybridcache/config.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// One delta-rule token applied to the augmented dk×w matrix M (w = dk + dv for [T | S], w = dv
/// for a bare state with `value_offset` = 0): M ← D M; M ← M + k zᵀ, z = β(y − kᵀM), y = [0 | v].
/// `x` is scratch of w entries, `f` of dk. Used by the per-token summary and by run_recurrence.
template <class Real>
void delta_token(Real* m, std::size_t dk, std::size_t w, std::size_t value_offset,
                 const Real* k, const Real* v, Real beta, gate_kind gk, const Real* g, Real* x,
                 Real* f) noexcept {
  std::fill(x, x + w, Real(0));
  Real a = Real(1);
  if (gk == gate_kind::scalar) a = static_cast<Real>(decay_factor(static_cast<double>(g[0])));
  if (gk == gate_kind::diagonal) decay_factors(g, f, dk);
  for (std::size_t r = 0; r < dk; ++r) {
    Real* row = m + r * w;
    if (gk != gate_kind::none) {
      const Real fr = gk == gate_kind::diagonal ? f[r] : a;
      for (std::size_t c = 0; c < w; ++c) row[c] *= fr;
    }
    const Real kr = k[r];
    for (std::size_t c = 0; c < w; ++c) x[c] += kr * row[c];
  }
  // z = β(y − x), stored back into x.
  for (std::size_t c = 0; c < value_offset; ++c) x[c] = -beta * x[c];
  for (std::size_t c = value_offset; c < w; ++c) x[c] = beta * (v[c - value_offset] - x[c]);
  for (std::size_t r = 0; r < dk; ++r) {
    Real* row = m + r * w;
    const Real kr = k[r];
    for (std::size_t c = 0; c < w; ++c) row[c] += kr * x[c];
  }
}

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
