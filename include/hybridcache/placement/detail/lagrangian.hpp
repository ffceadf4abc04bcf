#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Single-budget exact solver by Lagrangian relaxation ("Aliens" / WQS binary search) and the
/// splice that turns two optimal plans at the same price into one with exactly M checkpoints.
///
/// A plan is a path 0 = u_0 < u_1 < … < u_m < u_{m+1} = K+1 over candidate indices whose edge
/// (u, v) costs e(u, v) = w̃(u, v−1) (candidate u serves blocks u..v−1; u = 0 means "no
/// checkpoint"). e is Monge: e(a,c) + e(b,d) ≤ e(a,d) + e(b,c) for a ≤ b ≤ c ≤ d, because
/// e(b,c) + e(a,d) − e(a,c) − e(b,d) = (b − a)·(mass of blocks c..d−1) ≥ 0. Hence V(m) (the best
/// cost with m checkpoints) is convex, and for a price λ every minimiser of cost + λ·m is optimal
/// for its own m.
///
/// Splice: let A (p checkpoints) and B (q > p) both minimise cost + λ·m for the same λ, and
/// p < M < q, d = M − p. Take the first i with B_{i+d+1} ≤ A_{i+1} (nodes, A_0 = B_0 = 0,
/// A_{p+1} = B_{q+1} = K+1; i ≤ p exists since B_{p+d+1} ≤ K+1). Then B_{i+d} ≥ A_i (or i = 0), so
/// A_i ≤ B_{i+d} < B_{i+d+1} ≤ A_{i+1}: B's edge nests in A's. C = B_0..B_{i+d}, A_{i+1}..A_{p+1}
/// has M checkpoints, D = A_0..A_i, B_{i+d+1}..B_{q+1} has p + q − M, and by the Monge inequality
/// cost(C) + cost(D) ≤ cost(A) + cost(B); with equal total counts both C and D are minimisers at
/// λ, so C is optimal for exactly M checkpoints.
///
/// The price search keeps a bracket (A: ≤ M checkpoints at λ_hi, B: > M at λ_lo) and evaluates the
/// chord price λ = (cost A − cost B)/(|B| − |A|), where both tie. If the fewest-checkpoint
/// minimiser there has |A| or |B| checkpoints, A and B are adjacent vertices of V's hull and both
/// optimal at that λ: splice. Otherwise a new vertex strictly between replaces one end. A bisection
/// step (on the binary representation of λ, ≤ 64 halvings) follows any chord step that moved the
/// same end twice, so the search is O(log U) passes of O(N) each.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/cht.hpp"
#include "hybridcache/placement/detail/problem.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// An optimal plan for some price: candidate indices (ascending) and its raw cost.
struct priced_plan {
  std::vector<std::size_t> ks;
  double cost = 0.0;
};

/// Runs the penalised pass at `lambda` and recovers the plan.
inline priced_plan solve_priced(const placement_problem& pb, double lambda, bool most,
                                std::vector<std::uint32_t>& parent, cht_workspace& ws) {
  parent.resize(pb.candidates + 1);
  const auto r = penalised_pass(pb, lambda, most, parent.data(), ws);
  priced_plan plan;
  plan.ks = trace(parent.data(), pb.candidates);
  plan.cost = r.value - lambda * static_cast<double>(plan.ks.size());
  return plan;
}

/// The splice of the file comment: `a` has fewer than m checkpoints, `b` more; candidate indices
/// in 1..K. Returns a plan with exactly m.
inline std::vector<std::size_t> splice(const std::vector<std::size_t>& a,
                                       const std::vector<std::size_t>& b, std::size_t m,
                                       std::size_t K) {
  const std::size_t p = a.size();
  const std::size_t d = m - p;
  auto node_a = [&](std::size_t i) { return i == 0 ? 0 : (i <= p ? a[i - 1] : K + 1); };
  auto node_b = [&](std::size_t i) { return i == 0 ? 0 : (i <= b.size() ? b[i - 1] : K + 1); };
  std::size_t i = 0;
  while (node_b(i + d + 1) > node_a(i + 1)) ++i;
  std::vector<std::size_t> out;
  out.reserve(m);
  for (std::size_t t = 1; t <= i + d; ++t) out.push_back(node_b(t));
  for (std::size_t t = i + 1; t <= p; ++t) out.push_back(node_a(t));
  return out;
}

/// Midpoint of two non-negative doubles in their binary representation (monotone for λ ≥ 0).
inline double bit_midpoint(double lo, double hi) {
  const auto l = std::bit_cast<std::uint64_t>(lo);
  const auto h = std::bit_cast<std::uint64_t>(hi);
  return std::bit_cast<double>(l + (h - l) / 2);
}

/// Exact single-budget plan (candidate indices) with exactly min(m, K) checkpoints (K = useful
/// candidates; all of them are optimal when m ≥ K).
inline std::vector<std::size_t> solve_lagrangian(const placement_problem& pb, std::size_t m,
                                                 cht_workspace& ws,
                                                 std::vector<std::uint32_t>& parent) {
  priced_plan hi_plan;  // ≤ m checkpoints
  hi_plan.cost = pb.no_cache_cost();
  double lam_hi = 2.0 * pb.no_cache_cost() + 1.0;
  // Every useful candidate: the unique minimiser at λ = 0⁺ (> m checkpoints unless m ≥ K).
  priced_plan lo_plan;
  lo_plan.ks.resize(pb.candidates);
  lo_plan.cost = pb.moment[0];
  for (std::size_t k = 1; k <= pb.candidates; ++k) {
    lo_plan.ks[k - 1] = k;
    lo_plan.cost += (pb.moment[k] - pb.moment[k - 1]) - pb.slope[k] * (pb.mass[k] - pb.mass[k - 1]);
  }
  double lam_lo = 0.0;
  if (lo_plan.ks.size() <= m) return lo_plan.ks;
  if (m == 0) return {};
  int last_side = 0;  // +1: moved lo, −1: moved hi
  bool bisect = false;
  for (int iter = 0; iter < 256; ++iter) {
    double lambda = 0.0;
    if (!bisect) {
      lambda = (hi_plan.cost - lo_plan.cost) /
               static_cast<double>(lo_plan.ks.size() - hi_plan.ks.size());
    }
    const bool chord = !bisect && lambda > lam_lo && lambda < lam_hi;
    if (!chord) {
      lambda = bit_midpoint(lam_lo, lam_hi);
      if (lambda == lam_lo || lambda == lam_hi) break;  // adjacent doubles: splice as is
    }
    priced_plan s = solve_priced(pb, lambda, false, parent, ws);
    const std::size_t c = s.ks.size();
    if (c == m) return std::move(s.ks);
    if (chord && (c == lo_plan.ks.size() || c == hi_plan.ks.size())) break;  // adjacent vertices
    const int side = c > m ? +1 : -1;
    if (side > 0) {
      lo_plan = std::move(s);
      lam_lo = lambda;
    } else {
      hi_plan = std::move(s);
      lam_hi = lambda;
    }
    bisect = chord && side == last_side;
    last_side = chord ? side : 0;
  }
  return splice(hi_plan.ks, lo_plan.ks, m, pb.candidates);
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
