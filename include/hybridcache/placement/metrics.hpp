#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Evaluating a checkpoint set against an overlap distribution (sparse prefix caching paper,
/// §3): expected recompute, savings, reduction, and Theorem 1's closed form for uniform overlap.
///
///   E[r] = Σ_t p_t (t − ℓ(t)),  ℓ(t) = max({0} ∪ {c ∈ C : c ≤ t}),  R_nc = Σ_t p_t t,
///   savings = 1 − E[r]/R_nc,    reduction = R_nc / E[r]  (+∞ when E[r] = 0),
/// with p_t = w_t / Σ w (weight i of the span is depth t = i + 1).
///
/// @code
///   std::vector<double> w(1000, 1.0);                      // uniform overlap, N = 1000
///   auto c = hybridcache::place_balanced(1000, 9);         // Theorem 1's optimum for M = 9
///   double er = hybridcache::expected_recompute(w, c);  // = uniform_optimal_recompute(1000, 9)
/// @endcode

#include <cmath>
#include <cstddef>
#include <limits>
#include <span>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/detail/normalise.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/placement/detail/problem.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

namespace detail {

/// Throws unless `checkpoints` is strictly increasing within {1..n}.
inline void validate_checkpoints(std::span<const std::size_t> checkpoints, std::size_t n) {
  std::size_t last = 0;
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    const std::size_t c = checkpoints[i];
    if (c == 0 || c > n) {
      throw_invalid(indexed("checkpoints", i), c,
                    "checkpoint positions must lie in 1..N = " + std::to_string(n));
    }
    if (c <= last) {
      throw_invalid(indexed("checkpoints", i), c,
                    "checkpoint positions must be strictly increasing");
    }
    last = c;
  }
}

/// Σ_t w_t (t − ℓ(t)) and Σ_t w_t t, both scaled by the same power of two, and Σ_t w_t.
/// Summed in depth order, so equal plans give bit-identical results.
struct recompute_sums {
  double recompute = 0.0;
  double no_cache = 0.0;
  double total = 0.0;
};

inline recompute_sums evaluate(std::span<const double> weights,
                               std::span<const std::size_t> checkpoints) {
  const double max_w = validate_weights(weights);
  validate_checkpoints(checkpoints, weights.size());
  const unit_scale scale = scale_to_unit(max_w);  // exact, subnormal-safe
  recompute_sums s;
  std::size_t next = 0;
  std::size_t last = 0;
  for (std::size_t t = 1; t <= weights.size(); ++t) {
    while (next < checkpoints.size() && checkpoints[next] <= t) last = checkpoints[next++];
    const double w = scale(weights[t - 1]);
    s.recompute += w * static_cast<double>(t - last);
    s.no_cache += w * static_cast<double>(t);
    s.total += w;
  }
  return s;
}

}  // namespace detail

/// Expected recompute E[r] (tokens) of `checkpoints` under the normalised `weights`.
/// @param weights overlap weights, weights[i] for depth i+1; finite, ≥ 0, not all zero.
/// @param checkpoints strictly increasing positions in 1..N (may be empty).
/// @throws invalid_argument naming `weights[i]` / `checkpoints[i]` on bad input.
inline double expected_recompute(std::span<const double> weights,
                                 std::span<const std::size_t> checkpoints) {
  const auto s = detail::evaluate(weights, checkpoints);
  return s.recompute / s.total;
}

/// The no-cache baseline R_nc = Σ p_t t (equivalently `expected_recompute(weights, {})`).
inline double no_cache_recompute(std::span<const double> weights) {
  const auto s = detail::evaluate(weights, {});
  return s.no_cache / s.total;
}

/// Fraction of the no-cache recompute saved: 1 − E[r]/R_nc, in [0, 1].
inline double savings(std::span<const double> weights, std::span<const std::size_t> checkpoints) {
  const auto s = detail::evaluate(weights, checkpoints);
  return 1.0 - s.recompute / s.no_cache;
}

/// R_nc / E[r] ≥ 1; +∞ when every depth with mass sits exactly on a checkpoint (E[r] = 0).
inline double reduction(std::span<const double> weights, std::span<const std::size_t> checkpoints) {
  const auto s = detail::evaluate(weights, checkpoints);
  if (s.recompute == 0.0) return std::numeric_limits<double>::infinity();
  return s.no_cache / s.recompute;
}

/// Theorem 1 (sparse prefix caching paper): the optimal E[r] under uniform overlap p_t = 1/N with
/// M checkpoints. With K = M + 1 and N + 1 = qK + ρ (0 ≤ ρ < K):
///   E[r*] = ((K − ρ)·q(q − 1)/2 + ρ·q(q + 1)/2) / N,
/// attained exactly by the balanced sets (`place_balanced`). Budgets above N are clamped to N
/// (E[r*] = 0).
/// @throws invalid_argument if n == 0.
inline double uniform_optimal_recompute(std::size_t n, std::size_t budget) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  const std::size_t m = budget < n ? budget : n;
  if (m == n) return 0.0;  // a checkpoint at every depth (and M + 1 could wrap for N = SIZE_MAX)
  // No checkpoint: E[r] = Σ t / N = (N + 1)/2 (q = N + 1 could wrap for N = SIZE_MAX).
  if (m == 0) return (static_cast<double>(n) + 1.0) / 2.0;
  const std::size_t k = m + 1;
  const auto [q, rho] = detail::divmod_succ(n, k);  // N + 1 = qK + ρ without forming N + 1
  const double qd = static_cast<double>(q);
  const double sum = static_cast<double>(k - rho) * (qd * (qd - 1.0) / 2.0) +
                     static_cast<double>(rho) * (qd * (qd + 1.0) / 2.0);
  return sum / static_cast<double>(n);
}

HYBRIDCACHE_NAMESPACE_END
