#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The single-budget fast path of `place_optimal_tree`: a Lagrangian price with an exactness
/// certificate, and the exact DP (detail/tree_dp.hpp) only where the certificate fails
/// (derivation: docs/design/tree_dp.md §6).
///
/// For a price λ ≥ 0 the penalised problem min_S E[r](S) + λ|S| has no budget dimension: with
/// F_a(x) the least penalised cost of subtree(x) when the nearest checkpoint above x is a,
///
///     F_a(x) = min( λ + G(x),  w(x)(d(x) − d(a)) + Σ_{c child of x} F_a(c) ),
///     G(x)   = Σ_{c child of x} F_x(c),
///
/// and the optimum is G(root). Anchors are solved deepest first as in the budget DP, so one pass
/// costs O(Σ_a |subtree(a)|) = O(Σ_x (reduced depth of x)) with no budget factor, instead of the
/// DP's O(Σ_a |subtree(a)| · min(n_w(a), M)).
///
/// **Certificate.** If S minimises E[r] + λ|S| with λ ≥ 0 and |S| = M, then S is optimal for the
/// budget "at most M": for any S' with |S'| ≤ M, E[r](S') + λ|S'| ≥ E[r](S) + λM, so
/// E[r](S') ≥ E[r](S) + λ(M − |S'|) ≥ E[r](S). Nothing about the shape of V is assumed. V(M) is
/// not convex on trees (docs/design/tree_dp.md §1), and where M is not a vertex of V's lower
/// convex hull (or lies inside a hull edge whose end plans are not nested) no price has a
/// minimiser with exactly M checkpoints: the search then stops and the caller runs the exact DP.
///
/// **Search** (as detail/lagrangian.hpp on chains): a bracket of minimisers A (< M checkpoints,
/// at price λ_hi) and B (> M, at λ_lo); the next price is the chord price where A and B tie;
/// a minimiser (fewest checkpoints among ties) with exactly M certifies; one with |A| or |B|
/// checkpoints means A and B are adjacent hull vertices — no certificate; anything else replaces
/// one end. A bisection step on the bits of λ follows a chord step that moved the same end twice.
///
/// Floating point: every comparison is of rounded sums, as in the budget DP; the certificate is
/// exact for the computed values, and the tests compare the fast path's E[r] with the DP's and
/// with an independent long-double reference to 1e-12.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/tree_dp.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// How the last single-budget tree solve went (for tests and benchmarks).
struct tree_solve_info {
  bool certified = false;   ///< the Lagrangian certificate held (false: the exact DP ran)
  bool trivial = false;     ///< budget 0 or ≥ the weighted node count: neither ran
  std::size_t passes = 0;   ///< penalised passes run (the reconstruction not counted)
  std::size_t reduced = 0;  ///< nodes of the reduced tree
};

/// Penalised passes over a reduced tree (the tree is borrowed; it must outlive this object).
class tree_priced {
 public:
  explicit tree_priced(const reduced_tree& rt)
      : rt_(rt),
        cv_(rt.orig.size(), 0.0),
        av_(rt.orig.size(), 0.0),
        cc_(rt.orig.size(), 0),
        ac_(rt.orig.size(), 0),
        dec_(rt.orig.size(), 0) {}

  /// Min E[r] + λ|S| (value) and the fewest checkpoints among its minimisers (count).
  struct result {
    double value = 0.0;
    std::size_t count = 0;
  };

  /// The bottom-up pass at `lambda`; leaves G(x) (as λ + G(x), 1 + its count) for every x.
  result solve(double lambda) {
    const std::size_t m = rt_.orig.size();
    for (std::size_t a = m; a-- > 1;) {
      const result g = sweep<false>(a);
      cv_[a] = lambda + g.value;
      cc_[a] = 1 + static_cast<std::uint32_t>(g.count);
    }
    return sweep<false>(0);
  }

  /// The minimiser of the last `solve` (original ids, unsorted): the anchor passes of the chosen
  /// checkpoints are re-run top-down with the same sums, so its size is solve()'s count.
  std::vector<std::size_t> positions() {
    std::vector<std::size_t> out;
    std::vector<std::uint32_t> todo{0};
    std::vector<std::uint32_t> chosen;
    while (!todo.empty()) {
      const std::uint32_t a = todo.back();
      todo.pop_back();
      (void)sweep<true>(a);
      // Walk subtree(a) in preorder, stopping below each checkpoint (its own job).
      const std::size_t end = a + rt_.size[a];
      for (std::size_t x = a + 1; x < end;) {
        if (dec_[x]) {
          out.push_back(rt_.orig[x]);
          todo.push_back(static_cast<std::uint32_t>(x));
          x += rt_.size[x];
        } else {
          ++x;
        }
      }
    }
    return out;
  }

 private:
  /// F_a(x) for x in subtree(a) \ {a}, deepest first; returns G(a) = Σ_{c child of a} F_a(c)
  /// with its count. Ties (equal penalised cost) go to fewer checkpoints.
  template <bool Record>
  result sweep(std::size_t a) {
    const double da = rt_.d[a];
    const double* d = rt_.d.data();
    const double* w = rt_.w.data();
    const std::uint32_t* par = rt_.par.data();
    for (std::size_t x = a + rt_.size[a] - 1; x > a; --x) {
      double v = w[x] * (d[x] - da) + av_[x];
      std::uint32_t c = ac_[x];
      av_[x] = 0.0;
      ac_[x] = 0;
      const bool ck = cv_[x] < v || (cv_[x] == v && cc_[x] < c);
      if (ck) {
        v = cv_[x];
        c = cc_[x];
      }
      if constexpr (Record) dec_[x] = ck ? 1 : 0;
      av_[par[x]] += v;
      ac_[par[x]] += c;
    }
    const result g{av_[a], ac_[a]};
    av_[a] = 0.0;
    ac_[a] = 0;
    return g;
  }

  const reduced_tree& rt_;
  std::vector<double> cv_, av_;         // λ + G(x); running Σ over the children done so far
  std::vector<std::uint32_t> cc_, ac_;  // their checkpoint counts
  std::vector<char> dec_;               // x ∈ S under the anchor of the last recorded sweep
};

/// Midpoint of two non-negative doubles in their binary representation (monotone for λ ≥ 0).
inline double tree_bit_midpoint(double lo, double hi) {
  const auto l = std::bit_cast<std::uint64_t>(lo);
  const auto h = std::bit_cast<std::uint64_t>(hi);
  return std::bit_cast<double>(l + (h - l) / 2);
}

/// A certified optimal plan with exactly `m` checkpoints (original ids, unsorted), or nothing
/// when no price certifies m. Requires 0 < m < rt.cnt[0] (the weighted non-root nodes).
inline std::optional<std::vector<std::size_t>> tree_lagrangian(const reduced_tree& rt,
                                                               std::size_t m,
                                                               tree_solve_info* info = nullptr) {
  tree_priced pr(rt);
  // Ends of the bracket: no checkpoint (optimal for every λ > V(0)), and every weighted node
  // (cost 0; the unique minimiser as λ → 0⁺ among those with fewest checkpoints).
  double v0 = 0.0;
  for (std::size_t x = 1; x < rt.orig.size(); ++x) v0 += rt.w[x] * rt.d[x];
  double cost_hi = v0, cost_lo = 0.0;
  std::size_t cnt_hi = 0, cnt_lo = rt.cnt[0];
  double lam_hi = 2.0 * v0 + 1.0, lam_lo = 0.0;
  int last_side = 0;
  bool bisect = false;
  std::size_t passes = 0;
  std::optional<std::vector<std::size_t>> out;
  for (int iter = 0; iter < 200; ++iter) {
    double lambda = 0.0;
    if (!bisect) lambda = (cost_hi - cost_lo) / static_cast<double>(cnt_lo - cnt_hi);
    const bool chord = !bisect && lambda > lam_lo && lambda < lam_hi;
    if (!chord) {
      lambda = tree_bit_midpoint(lam_lo, lam_hi);
      if (lambda == lam_lo || lambda == lam_hi) break;
    }
    const auto r = pr.solve(lambda);
    ++passes;
    if (r.count == m) {
      auto ks = pr.positions();
      if (ks.size() == m) out = std::move(ks);
      break;
    }
    if (chord && (r.count == cnt_lo || r.count == cnt_hi)) break;  // adjacent hull vertices
    const double cost = r.value - lambda * static_cast<double>(r.count);
    const int side = r.count > m ? +1 : -1;
    if (side > 0) {
      cost_lo = cost;
      cnt_lo = r.count;
      lam_lo = lambda;
    } else {
      cost_hi = cost;
      cnt_hi = r.count;
      lam_hi = lambda;
    }
    bisect = chord && side == last_side;
    last_side = chord ? side : 0;
  }
  if (info != nullptr) {
    info->certified = out.has_value();
    info->passes = passes;
    info->reduced = rt.orig.size();
  }
  return out;
}

/// Exact single-budget plan (original ids, ascending) with at most `m` checkpoints: the
/// certified Lagrangian plan when there is one, else the exact DP (`lagrangian` false: the DP
/// only, the reference path).
inline std::vector<std::size_t> solve_tree_budget(const tree_problem& pb, std::size_t m,
                                                  bool lagrangian = true,
                                                  tree_solve_info* info = nullptr) {
  reduced_tree rt = reduce_tree(pb, /*compress=*/true);
  tree_solve_info local;
  local.reduced = rt.orig.size();
  const std::size_t useful = rt.cnt[0];
  std::vector<std::size_t> ks;
  if (!lagrangian) {  // the previous path, unchanged
    tree_dp dp(std::move(rt), m);
    ks = dp.positions(m);
  } else if (m == 0 || m >= useful) {
    local.trivial = true;
    local.certified = true;
    if (m > 0)  // every weighted node: E[r] = 0
      for (std::size_t x = 1; x < rt.orig.size(); ++x)
        if (rt.w[x] > 0.0) ks.push_back(rt.orig[x]);
  } else {
    auto fast = tree_lagrangian(rt, m, &local);
    if (fast) {
      ks = std::move(*fast);
    } else {
      tree_dp dp(std::move(rt), m);
      ks = dp.positions(m);
    }
  }
  std::sort(ks.begin(), ks.end());
  if (info != nullptr) *info = local;
  return ks;
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
