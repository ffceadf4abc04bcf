#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The naive-addition baseline and its structural error (HYPIC §3.1).
///
/// Caching only zero-start end states and adding them, S ≈ S_prev + Σ_i S_{C_i|0} (eq. 3), is
/// exact for un-gated linear attention but wrong for every variant with T ≠ I. For one suffix
/// segment the error is Δ = (T_C − I)·S_prev (eq. 5); for RetNet with decay γ it is
/// ‖Δ‖ = (1 − γ^{|C|})·‖S_prev‖ (HYPIC Table 2: 0.866 at γ = 1 − 2⁻⁷, |C| = 256).

#include <cmath>
#include <cstddef>
#include <span>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/state/compose.hpp"
#include "hybridcache/state/summary.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Norms of the naive-addition error.
struct naive_error_report {
  double error_norm = 0;     ///< ‖S_naive − S_exact‖_F
  double prefix_norm = 0;    ///< ‖S_prev‖_F
  double relative = 0;       ///< error_norm / prefix_norm (0 when the prefix is 0)
};

/// The strawman: prefix_state + Σ_i S_{C_i|0} (HYPIC eq. 3), ignoring every T_{C_i}.
/// @throws invalid_argument on shape mismatches or a bad prefix state.
template <class Real>
std::vector<Real> naive_addition(std::span<const segment_summary<Real>> run,
                                 std::span<const std::type_identity_t<Real>> prefix_state) {
  std::vector<Real> out(prefix_state.begin(), prefix_state.end());
  for (std::size_t i = 0; i < run.size(); ++i) {
    detail::check_compatible(run[0], run[i], hybridcache::detail::indexed("run", i));
    if (i == 0) detail::check_initial_state(prefix_state, run[0].dk(), run[0].dv(), "prefix_state");
    const auto s = run[i].end_state();
    for (std::size_t j = 0; j < out.size(); ++j) out[j] += s[j];
  }
  return out;
}

/// ‖naive − exact‖ for a run applied to `prefix_state`; for one segment this is
/// ‖(T_C − I)·S_prev‖ (HYPIC eq. 5). Norms are accumulated in double.
template <class Real>
naive_error_report naive_error(std::span<const segment_summary<Real>> run,
                               std::span<const std::type_identity_t<Real>> prefix_state) {
  const auto naive = naive_addition(run, prefix_state);
  const auto exact = hybridcache::apply(run, prefix_state);
  naive_error_report r;
  double e = 0, p = 0;
  for (std::size_t j = 0; j < naive.size(); ++j) {
    const double d = static_cast<double>(naive[j]) - static_cast<double>(exact[j]);
    e += d * d;
    p += static_cast<double>(prefix_state[j]) * static_cast<double>(prefix_state[j]);
  }
  r.error_norm = std::sqrt(e);
  r.prefix_norm = std::sqrt(p);
  r.relative = r.prefix_norm > 0 ? r.error_norm / r.prefix_norm : 0.0;
  return r;
}

/// One-segment form of `naive_error`.
template <class Real>
naive_error_report naive_error(const segment_summary<Real>& then,
                               std::span<const std::type_identity_t<Real>> prefix_state) {
  return naive_error(std::span<const segment_summary<Real>>(&then, 1), prefix_state);
}

HYBRIDCACHE_NAMESPACE_END
