#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The single-budget fast path of `place_optimal_tree`: a Lagrangian price with an exactness
/// certificate, and the exact DP (detail/tree_dp.hpp) only where the certificate fails
/// (derivation: docs/design/tree_dp.md §7).
///
/// For a price λ ≥ 0 the penalised problem min_S E[r](S) + λ|S| has no budget dimension: with
/// F_a(x) the least penalised cost of subtree(x) when the nearest checkpoint above x is a,
///
///     F_a(x) = min( λ + G(x),  w(x)(d(x) − d(a)) + Σ_{c child of x} F_a(c) ),
///     G(x)   = Σ_{c child of x} F_x(c),
///
/// and the optimum is G(root). Two passes compute it, with no budget factor (the DP's is
/// O(Σ_a |subtree(a)| · min(n_w(a), M))): `tree_priced`, anchors deepest first as in the DP,
/// O(Σ_a |subtree(a)|) = O(Σ_x depth(x)); and `tree_slopes`, O(m log m), which keeps F_·(x) as a
/// concave piecewise linear function of the anchor depth in mergeable heaps. `tree_lagrangian`
/// picks the first on shallow reduced trees (Σ depth ≤ m·⌈log2(m + 1)⌉), the second otherwise.
///
/// **Certificate.** If S minimises E[r] + λ|S| with λ ≥ 0 and |S| = M, then S is optimal for the
/// budget "at most M": for any S' with |S'| ≤ M, E[r](S') + λ|S'| ≥ E[r](S) + λM, so
/// E[r](S') ≥ E[r](S) + λ(M − |S'|) ≥ E[r](S). Nothing about the shape of V is assumed. V(M) is
/// not convex on trees (docs/design/tree_dp.md §1): where M is above V's lower convex hull no
/// price has a minimiser with exactly M checkpoints, and inside a hull edge (collinear values)
/// the pass may return only the edge's ends. The search then stops and the caller runs the
/// exact DP.
///
/// **Search** (as detail/lagrangian.hpp on chains): a bracket of minimisers A (< M checkpoints,
/// at price λ_hi) and B (> M, at λ_lo); the next price is the chord price where A and B tie;
/// a minimiser with exactly M certifies; one with |A| or |B|
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
#include <limits>
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
  bool slopes = false;      ///< the price search ran tree_slopes (else tree_priced)
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

/// The same penalised problem in O(m log m) per price ("slope trick"): F_x(D), the least
/// penalised cost of subtree(x) as a function of the anchor depth D, is concave, piecewise
/// linear and nonincreasing, and constant (= λ + G(x): x is a checkpoint) for D ≤ D*_x. It is
/// kept as K − Σ_b s_b·max(0, D − D_b) over breakpoints b (s_b > 0), in a mergeable leftist
/// min-heap and max-heap on D_b with lazy deletion, with the sums Σ s_b and Σ s_b·D_b:
///   - children: K, the sums and the heaps add up; breakpoints with D_b ≥ d(x) are dropped first
///     (no anchor of x is that deep), so F_c(d(x)) = K_c − (d(x)·Σ s_b − Σ s_b·D_b);
///   - S_x(D) = w(x)(d(x) − D) + Σ F_c(D) is cut at C_x = λ + G(x): the smallest breakpoints
///     are popped while S_x(D_b) ≥ C_x, and replaced by one at D*_x where S_x(D*_x) = C_x, with
///     slope w(x) + Σ popped s_b; then K = C_x.
/// Each node adds at most one breakpoint, so a pass is O(m log m). The plan: x ∈ S iff the depth
/// of its nearest chosen ancestor (the root: 0) is ≤ D*_x, top-down.
class tree_slopes {
 public:
  explicit tree_slopes(const reduced_tree& rt)
      : rt_(rt),
        k_(rt.orig.size()),
        s1_(rt.orig.size()),
        s2_(rt.orig.size()),
        bd_(rt.orig.size()),
        bs_(rt.orig.size()),
        thr_(rt.orig.size()),
        hmin_(rt.orig.size()),
        hmax_(rt.orig.size()),
        lmin_(rt.orig.size()),
        rmin_(rt.orig.size()),
        lmax_(rt.orig.size()),
        rmax_(rt.orig.size()),
        kmin_(rt.orig.size()),
        kmax_(rt.orig.size()),
        alive_(rt.orig.size()),
        ad_(rt.orig.size()),
        ck_(rt.orig.size()) {}

  /// A plan of the pass at `lambda`: its raw cost Σ w(v)(d(v) − d(anchor)) over the reduced
  /// tree (normalised weights) and its checkpoint count.
  struct plan {
    double cost = 0.0;
    std::size_t count = 0;
  };

  /// Runs the pass at `lambda` > 0 and derives its minimiser (kept for `positions`).
  plan solve(double lambda) {
    const std::size_t m = rt_.orig.size();
    const double* d = rt_.d.data();
    const double* w = rt_.w.data();
    for (std::size_t x = m; x-- > 0;) {
      const double dx = d[x];
      double kk = 0.0, s1 = 0.0, s2 = 0.0, g = 0.0;
      std::uint32_t hn = nil, hx = nil;
      for (std::size_t i = rt_.cstart[x]; i < rt_.cstart[x + 1]; ++i) {
        const std::uint32_t c = rt_.kids[i];
        // Drop the child's breakpoints no anchor of x reaches (D_b ≥ d(x)).
        g += k_[c];
        kk += k_[c];
        // A child whose smallest breakpoint is that deep is constant (a checkpoint for every
        // anchor of x): nothing to merge. The root merges nothing (it has no parent).
        std::uint32_t cn = hmin_[c];
        while (cn != nil && !alive_[cn]) cn = pop_min(cn);
        if (cn == nil || bd_[cn] >= dx) continue;
        std::uint32_t cx = hmax_[c];
        double cs1 = s1_[c], cs2 = s2_[c];
        while (cx != nil && (!alive_[cx] || bd_[cx] >= dx)) {
          if (alive_[cx]) {
            alive_[cx] = 0;
            cs1 -= bs_[cx];
            cs2 -= bs_[cx] * bd_[cx];
          }
          cx = pop_max(cx);
        }
        g -= cs1 * dx - cs2;  // live breakpoints remain: cn is one of them
        if (x == 0) continue;
        s1 += cs1;
        s2 += cs2;
        hn = merge_min(hn, cn);
        hx = merge_max(hx, cx);
      }
      if (x == 0) {
        root_value_ = g;
        break;
      }
      const double cap = lambda + g;
      // Pop the smallest breakpoints while S_x(D_b) ≥ cap.
      double p1 = 0.0, p2 = 0.0;
      const double base = kk + w[x] * dx;
      for (;;) {
        while (hn != nil && !alive_[hn]) hn = pop_min(hn);
        if (hn == nil) break;
        const double db = bd_[hn];
        const double val = base - (w[x] + p1) * db + p2;
        if (val < cap) break;
        alive_[hn] = 0;
        p1 += bs_[hn];
        p2 += bs_[hn] * db;
        s1 -= bs_[hn];
        s2 -= bs_[hn] * db;
        hn = pop_min(hn);
      }
      const double sigma = w[x] + p1;
      double t = -inf;
      if (sigma > 0.0) {
        t = (base + p2 - cap) / sigma;
        const std::uint32_t b = static_cast<std::uint32_t>(x);
        bd_[x] = t;
        bs_[x] = sigma;
        alive_[x] = 1;
        lmin_[x] = rmin_[x] = lmax_[x] = rmax_[x] = nil;
        kmin_[x] = kmax_[x] = 1;
        hn = merge_min(hn, b);
        hx = merge_max(hx, b);
        s1 += sigma;
        s2 += sigma * t;
        kk = cap;
      }
      if (hn == nil) s1 = s2 = 0.0;
      thr_[x] = t;
      k_[x] = kk;
      s1_[x] = s1;
      s2_[x] = s2;
      hmin_[x] = hn;
      hmax_[x] = hx;
    }
    // Top-down: the plan and its raw cost.
    plan p;
    ad_[0] = 0.0;
    ck_[0] = 0;
    for (std::size_t x = 1; x < m; ++x) {
      const std::size_t q = rt_.par[x];
      ad_[x] = ck_[q] ? d[q] : ad_[q];
      ck_[x] = ad_[x] <= thr_[x] ? 1 : 0;
      if (ck_[x])
        ++p.count;
      else
        p.cost += w[x] * (d[x] - ad_[x]);
    }
    return p;
  }

  /// min E[r] + λ|S| as the pass computed it (before the plan was derived).
  [[nodiscard]] double value() const noexcept { return root_value_; }

  /// The plan of the last `solve` (original ids, ascending).
  [[nodiscard]] std::vector<std::size_t> positions() const {
    std::vector<std::size_t> out;
    for (std::size_t x = 1; x < rt_.orig.size(); ++x)
      if (ck_[x]) out.push_back(rt_.orig[x]);
    return out;
  }

 private:
  static constexpr std::uint32_t nil = std::numeric_limits<std::uint32_t>::max();
  static constexpr double inf = std::numeric_limits<double>::infinity();

  std::uint32_t merge_min(std::uint32_t a, std::uint32_t b) {
    if (a == nil) return b;
    if (b == nil) return a;
    if (bd_[b] < bd_[a]) std::swap(a, b);
    rmin_[a] = merge_min(rmin_[a], b);
    const std::uint32_t l = lmin_[a], r = rmin_[a];
    if ((l == nil ? 0 : kmin_[l]) < kmin_[r]) std::swap(lmin_[a], rmin_[a]);
    kmin_[a] = (rmin_[a] == nil ? 0 : kmin_[rmin_[a]]) + 1;
    return a;
  }
  std::uint32_t merge_max(std::uint32_t a, std::uint32_t b) {
    if (a == nil) return b;
    if (b == nil) return a;
    if (bd_[b] > bd_[a]) std::swap(a, b);
    rmax_[a] = merge_max(rmax_[a], b);
    const std::uint32_t l = lmax_[a], r = rmax_[a];
    if ((l == nil ? 0 : kmax_[l]) < kmax_[r]) std::swap(lmax_[a], rmax_[a]);
    kmax_[a] = (rmax_[a] == nil ? 0 : kmax_[rmax_[a]]) + 1;
    return a;
  }
  std::uint32_t pop_min(std::uint32_t a) { return merge_min(lmin_[a], rmin_[a]); }
  std::uint32_t pop_max(std::uint32_t a) { return merge_max(lmax_[a], rmax_[a]); }

  const reduced_tree& rt_;
  std::vector<double> k_, s1_, s2_;  // per subtree: K, Σ s_b, Σ s_b·D_b over live breakpoints
  std::vector<double> bd_, bs_;      // breakpoint of node x: D*_x and its slope
  std::vector<double> thr_;          // D*_x (−inf: x is never a checkpoint)
  std::vector<std::uint32_t> hmin_, hmax_, lmin_, rmin_, lmax_, rmax_, kmin_, kmax_;
  std::vector<char> alive_;
  std::vector<double> ad_;  // depth of the nearest chosen ancestor
  std::vector<char> ck_;
  double root_value_ = 0.0;
};

/// Midpoint of two non-negative doubles in their binary representation (monotone for λ ≥ 0).
inline double tree_bit_midpoint(double lo, double hi) {
  const auto l = std::bit_cast<std::uint64_t>(lo);
  const auto h = std::bit_cast<std::uint64_t>(hi);
  return std::bit_cast<double>(l + (h - l) / 2);
}

/// Which penalised pass the price search runs.
enum class tree_pass {
  automatic,  ///< `anchors` when Σ_x depth(x) ≤ m·⌈log2(m + 1)⌉ on the reduced tree, else `slopes`
  anchors,  ///< tree_priced: O(Σ_x depth(x)) per price (shallow and wide trees)
  slopes,   ///< tree_slopes: O(m log m) per price (deep trees: long unary runs)
};

/// The price search of the file comment. `solve(λ)` returns {raw cost, count} of a minimiser at
/// λ; `plan()` the minimiser of the last `solve`.
template <class Solve, class Plan>
std::optional<std::vector<std::size_t>> tree_price_search(const reduced_tree& rt, std::size_t m,
                                                          Solve solve, Plan plan,
                                                          std::size_t& passes) {
  // Ends of the bracket: no checkpoint (optimal for every λ > V(0)), and every weighted node
  // (cost 0; a minimiser as λ → 0⁺).
  double v0 = 0.0;
  for (std::size_t x = 1; x < rt.orig.size(); ++x) v0 += rt.w[x] * rt.d[x];
  double cost_hi = v0, cost_lo = 0.0;
  std::size_t cnt_hi = 0, cnt_lo = rt.cnt[0];
  double lam_hi = 2.0 * v0 + 1.0, lam_lo = 0.0;
  int last_side = 0;
  bool bisect = false;
  for (int iter = 0; iter < 200; ++iter) {
    double lambda = 0.0;
    if (!bisect) lambda = (cost_hi - cost_lo) / static_cast<double>(cnt_lo - cnt_hi);
    const bool chord = !bisect && lambda > lam_lo && lambda < lam_hi;
    if (!chord) {
      lambda = tree_bit_midpoint(lam_lo, lam_hi);
      if (lambda == lam_lo || lambda == lam_hi) break;
    }
    const std::pair<double, std::size_t> r = solve(lambda);
    ++passes;
    if (r.second == m) {
      std::vector<std::size_t> ks = plan();
      if (ks.size() != m) break;  // never expected: the plan is the pass's minimiser
      return ks;
    }
    if (chord && (r.second == cnt_lo || r.second == cnt_hi)) break;  // adjacent hull vertices
    const int side = r.second > m ? +1 : -1;
    if (side > 0) {
      cost_lo = r.first;
      cnt_lo = r.second;
      lam_lo = lambda;
    } else {
      cost_hi = r.first;
      cnt_hi = r.second;
      lam_hi = lambda;
    }
    bisect = chord && side == last_side;
    last_side = chord ? side : 0;
  }
  return std::nullopt;
}

/// A certified optimal plan with exactly `m` checkpoints (original ids, unsorted), or nothing
/// when no price certifies m. Requires 0 < m < rt.cnt[0] (the weighted non-root nodes).
inline std::optional<std::vector<std::size_t>> tree_lagrangian(
    const reduced_tree& rt, std::size_t m, tree_solve_info* info = nullptr,
    tree_pass pass = tree_pass::automatic) {
  const std::size_t nodes = rt.orig.size();
  if (pass == tree_pass::automatic) {
    // Unit-constant comparison of the two passes' bounds (not tuned).
    std::vector<std::uint32_t> depth(nodes, 0);
    std::size_t sum = 0;
    for (std::size_t x = 1; x < nodes; ++x) {
      depth[x] = depth[rt.par[x]] + 1;
      sum += depth[x];
    }
    const std::size_t log2 = static_cast<std::size_t>(std::bit_width(nodes));
    pass = sum <= nodes * log2 ? tree_pass::anchors : tree_pass::slopes;
  }
  std::size_t passes = 0;
  std::optional<std::vector<std::size_t>> out;
  if (pass == tree_pass::anchors) {
    tree_priced pr(rt);
    out = tree_price_search(
        rt, m,
        [&](double lambda) {
          const auto r = pr.solve(lambda);
          return std::pair<double, std::size_t>{r.value - lambda * static_cast<double>(r.count),
                                                r.count};
        },
        [&] { return pr.positions(); }, passes);
  } else {
    tree_slopes pr(rt);
    out = tree_price_search(
        rt, m,
        [&](double lambda) {
          const auto r = pr.solve(lambda);
          return std::pair<double, std::size_t>{r.cost, r.count};
        },
        [&] { return pr.positions(); }, passes);
  }
  if (info != nullptr) {
    info->certified = out.has_value();
    info->passes = passes;
    info->reduced = nodes;
    info->slopes = pass == tree_pass::slopes;
  }
  return out;
}

/// Exact single-budget plan (original ids, ascending) with at most `m` checkpoints: the
/// certified Lagrangian plan when there is one, else the exact DP (`lagrangian` false: the DP
/// only, the reference path).
inline std::vector<std::size_t> solve_tree_budget(const tree_problem& pb, std::size_t m,
                                                  bool lagrangian = true,
                                                  tree_solve_info* info = nullptr,
                                                  tree_pass pass = tree_pass::automatic) {
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
    auto fast = tree_lagrangian(rt, m, &local, pass);
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
