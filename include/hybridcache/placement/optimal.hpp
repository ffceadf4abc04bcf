#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `place_optimal`: the exact best M checkpoint positions for an overlap distribution (Theorem 2
/// of the sparse prefix caching paper), optionally restricted to multiples of a block size.
///
/// Two exact algorithms, chosen by `placement_options::method`:
/// - `cht`: the layered DP with a monotone convex hull trick for M+1 layers, O(N·M) time, O(N)
///   memory. It yields V(M−1), V(M), V(M+1); the positions then come from one Lagrangian splice at
///   the price λ = (V(M−1) − V(M+1))/2, a subgradient of V at M (detail/lagrangian.hpp), so no
///   N×M argmin table is stored.
/// - `lagrangian`: the price search of detail/lagrangian.hpp, O(N log U).
/// - `automatic` (default): `cht` for M ≤ 6, `lagrangian` beyond.
///
/// Budget semantics: the result has exactly min(M, useful) checkpoints, where useful is the number
/// of candidate blocks carrying mass (B = 1: depths with p_t > 0) — more checkpoints cannot lower
/// E[r], so none are wasted. Budget 0 gives no checkpoints and E[r] = R_nc; a budget ≥ useful
/// (e.g. ≥ N) gives a checkpoint on every useful candidate (E[r] = 0 when B = 1).
///
/// @code
///   std::vector<double> w(4096, 0.0);
///   w[4095] = 0.7;                      // most requests reuse the whole prefix…
///   for (int t = 100; t < 400; ++t) w[t] = 0.001;  // …some diverge early
///   auto plan = hybridcache::place_optimal(w, 4, {.granularity = 64});
///   // plan.checkpoints are multiples of 64, plan.expected_recompute is E[r] in tokens
/// @endcode

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/cht.hpp"
#include "hybridcache/placement/detail/frontier_kernel.hpp"
#include "hybridcache/placement/detail/lagrangian.hpp"
#include "hybridcache/placement/detail/problem.hpp"
#include "hybridcache/placement/metrics.hpp"
#include "hybridcache/placement/options.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

namespace detail {

/// `cht` method: frontier to M+1, then one splice at a subgradient price (falls back to the price
/// search if rounding leaves the two tie-broken plans without M between them).
inline std::vector<std::size_t> solve_cht(const placement_problem& pb, std::size_t m,
                                          cht_workspace& ws, std::vector<std::uint32_t>& parent) {
  const std::vector<double> v = frontier_values(pb, m + 1);
  const double lambda = (v[m - 1] - v[m + 1]) / 2.0;
  priced_plan fewest = solve_priced(pb, lambda, false, parent, ws);
  if (fewest.ks.size() == m) return std::move(fewest.ks);
  if (fewest.ks.size() < m) {
    priced_plan most = solve_priced(pb, lambda, true, parent, ws);
    if (most.ks.size() == m) return std::move(most.ks);
    if (most.ks.size() > m) return splice(fewest.ks, most.ks, m, pb.candidates);
  }
  return solve_lagrangian(pb, m, ws, parent);
}

/// Which method `automatic` runs. The layered DP costs M+1 interleaved layers (~0.4 of a
/// penalised pass each) plus two penalised passes; the price search needs 3–16 passes on real
/// histograms (N = 10^5..10^6, M = 1..5000; bench_placement), so it wins from M ≈ 8 up.
inline bool prefer_cht(std::size_t m) { return m <= 6; }

}  // namespace detail

/// The exact optimal plan with at most `budget` checkpoints (see the file comment for the budget
/// semantics); `opts.granularity` = B restricts positions to {B, 2B, …}.
/// @param weights overlap weights, weights[i] for depth i+1 (normalised internally).
/// @returns strictly increasing positions (multiples of B) and their E[r].
/// @throws invalid_argument for empty, non-finite, negative or all-zero weights, and for a
///         granularity of 0 or above N (the argument is named in the message).
inline placement place_optimal(std::span<const double> weights, std::size_t budget,
                               placement_options opts = {}) {
  const auto pb = detail::make_problem(weights, opts.granularity);
  const std::size_t useful = pb.useful();
  const std::size_t m = budget < useful ? budget : useful;
  detail::cht_workspace ws;
  std::vector<std::uint32_t> parent;
  std::vector<std::size_t> ks;
  if (m == 0) {
    // nothing to place
  } else if (m == useful) {
    ks.resize(m);
    for (std::size_t k = 0; k < m; ++k) ks[k] = k + 1;  // every useful candidate
  } else {
    const bool cht = opts.method == placement_method::cht ||
                     (opts.method == placement_method::automatic && detail::prefer_cht(m));
    ks = cht ? detail::solve_cht(pb, m, ws, parent) : detail::solve_lagrangian(pb, m, ws, parent);
  }
  placement out;
  out.checkpoints.reserve(ks.size());
  for (std::size_t k : ks) out.checkpoints.push_back(pb.position(k));
  out.expected_recompute = expected_recompute(weights, out.checkpoints);
  return out;
}

HYBRIDCACHE_NAMESPACE_END
