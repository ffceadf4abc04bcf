#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The O(N) layer kernels behind the exact planners: a monotone convex hull trick (CHT) over the
/// block-compressed problem of `problem.hpp`.
///
/// Layer recurrence (Theorem 2 of the sparse prefix caching paper, in block form):
///   dp_m[j] = T̃_j + min_{1≤k≤j} ( b_k − a_k·P̃_j ),   a_k = c_k (the candidate's position),
///   b_k = dp_{m−1}[k−1] − T̃_{k−1} + a_k·P̃_{k−1},      dp_m[0] = T̃_0.
/// Lines y = b_k − a_k·x arrive with increasing a_k (decreasing slope −a_k) and are queried at the
/// nondecreasing points x = P̃_j, so a deque holds the lower envelope: a line leaves the back when
/// the newcomer makes it useless, the front when a later line is at least as low at the current
/// x. No divisions: line 2 of (1, 2, 3) is useless iff (b₂−b₁)(a₃−a₂) ≥ (b₃−b₂)(a₂−a₁).
///
/// The penalised pass (Lagrangian relaxation) uses one layer with a price λ per checkpoint:
///   g[j] = T̃_j + min( 0, min_{1≤k≤j} b_k − a_k·P̃_j ),  b_k = g[k−1] − T̃_{k−1} + a_k P̃_{k−1} + λ.
/// Ties are broken by the number of checkpoints (fewest or most) by comparing the pair
/// (value, ±count) lexicographically — the same as pricing a checkpoint at λ ± ε for an
/// infinitesimal ε; the hull test stays valid because it only uses ordered-field arithmetic.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/problem.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// A line y = b − a·x of a hull, with (Δa, Δb) = (a − a_prev, b − b_prev) against the line below
/// it, so that
/// - the front test "line h+1 is at least as low at x as line h" is Δb ≤ Δa·x (one product), and
/// - the back test "the newcomer (a, b) makes the top useless" is Δb_top·(a − a_top) ≥
///   (b − b_top)·Δa_top (two products), whose two differences are the newcomer's own (Δa, Δb).
struct hull_line {
  double a, b, da, db;
};

/// The L lower-envelope deques of the interleaved kernel, in one buffer (deque ℓ owns
/// `stride` consecutive lines). Sentinels replace the size checks: the head line's Δb is −∞ (the
/// back test can never pop it, as Δa > 0 for strictly increasing a) and the slot past the top has
/// Δb = +∞ (the front test can never step onto it). When a deque's top nears the end of its
/// region the live lines move back to the start, or all regions double when one is more than
/// half live: memory is O(L · live lines), not O(L·K).
struct hull_set {
  std::vector<hull_line> lines;
  std::size_t stride = 0;
};

/// L consecutive DP layers in one sweep over j. Layer ℓ at column j needs only layer ℓ−1 at
/// column j−1 (the intercept b_j), so the L layers advance together without skew: L independent
/// dependency chains for the out-of-order core, and the inputs are read once per L layers.
/// The first two pops and front steps are done without branches (on real histograms about 75%
/// of the inserts pop and 10–40% of the queries step; a loop would mispredict), a loop does the
/// rest. `prev` is dp_{m−1}; writes dp_{m+L−1} to `last` (may alias `prev`: index j−1 is read
/// before j is written) and V(m..m+L−1) (raw) to `values`. Needs K ≥ 1.
template <int L>
void cht_layers(const placement_problem& pb, const double* prev, double* last, double* values,
                hull_set& hs, const double* shift) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::size_t K = pb.candidates;
  const double* P = pb.mass.data();
  const double* T = pb.moment.data();
  const double* A = pb.slope.data();
  if (hs.stride < 64) {
    hs.stride = 64;
    hs.lines.assign(L * hs.stride, hull_line{0.0, 0.0, 1.0, 0.0});
  } else if (hs.lines.size() < L * hs.stride) {
    hs.lines.resize(L * hs.stride, hull_line{0.0, 0.0, 1.0, 0.0});
  }
  double dp[L];        // dp_ℓ[j−1] for each layer
  hull_line* head[L];  // front line of each deque
  hull_line* tail[L];  // one past the top line
  // Column 1: each hull gets its first line, which is the head (Δb = −∞).
  {
    const double a = A[1];
    const double x = P[1];
    double in = prev[0] + shift[1];
    for (int l = 0; l < L; ++l) {
      hull_line* base = hs.lines.data() + static_cast<std::size_t>(l) * hs.stride;
      base[0] = hull_line{a, in, 1.0, -inf};
      base[1] = hull_line{0.0, 0.0, 1.0, inf};
      head[l] = base;
      tail[l] = base + 1;
      dp[l] = in - a * x + T[1];
      in = T[0] + shift[1];  // dp_l[0] = T̃_0 for every layer
    }
  }
  double in_prev = prev[1];
  last[0] = T[0];
  last[1] = dp[L - 1];
  std::size_t next_check = 2;  // column at which some deque may run out of slots
  for (std::size_t j = 2; j <= K; ++j) {
    if (HYBRIDCACHE_DETAIL_UNLIKELY(j >= next_check)) {
      // Every column adds one line per deque: make room for the next `step` columns at once.
      const std::size_t step = std::min<std::size_t>(K - j + 1, 4096);
      std::size_t live_max = 0;
      for (int l = 0; l < L; ++l) {
        live_max = std::max<std::size_t>(live_max, static_cast<std::size_t>(tail[l] - head[l]));
      }
      const std::size_t need = live_max + step + 2;
      std::size_t stride = hs.stride;
      while (stride < 2 * need) stride *= 2;
      if (stride != hs.stride) {
        std::vector<hull_line> grown(L * stride, hull_line{0.0, 0.0, 1.0, 0.0});
        for (int l = 0; l < L; ++l) {
          const std::size_t live = static_cast<std::size_t>(tail[l] - head[l]);
          hull_line* dst = grown.data() + static_cast<std::size_t>(l) * stride;
          std::copy(head[l], tail[l] + 1, dst);  // live lines and the +∞ sentinel
          head[l] = dst;
          tail[l] = dst + live;
        }
        hs.lines.swap(grown);
        hs.stride = stride;
      } else {
        for (int l = 0; l < L; ++l) {
          hull_line* base = hs.lines.data() + static_cast<std::size_t>(l) * stride;
          if (static_cast<std::size_t>(tail[l] - base) + step + 2 > stride) {
            const std::size_t live = static_cast<std::size_t>(tail[l] - head[l]);
            std::copy(head[l], tail[l] + 1, base);
            head[l] = base;
            tail[l] = base + live;
          }
        }
      }
      next_check = j + step;
    }
    const double a = A[j];
    const double x = P[j];
    const double tj = T[j];
    const double sj = shift[j];
    double in = in_prev + sj;  // b for layer 0: dp_{m−1}[j−1] + a_j P̃_{j−1} − T̃_{j−1}
    in_prev = prev[j];
#pragma GCC unroll 8
    for (int l = 0; l < L; ++l) {
      const double b = in;
      if (l + 1 < L) in = dp[l] + sj;  // layer l+1's intercept uses dp_l[j−1]
      hull_line* h = head[l];
      hull_line* t = tail[l] - 1;  // the top line
      // Pop the top while the newcomer makes it useless.
      double na = a - t->a;
      double nb = b - t->b;
      const bool p1 = t->db * na >= nb * t->da;
      t -= p1;
      na = a - t->a;
      nb = b - t->b;
      // Re-testing an unchanged top repeats p1's answer, so p2 needs no mask.
      const bool p2 = t->db * na >= nb * t->da;
      t -= p2;
      na = a - t->a;
      nb = b - t->b;
      while (HYBRIDCACHE_DETAIL_UNLIKELY(t->db * na >= nb * t->da)) {
        --t;
        na = a - t->a;
        nb = b - t->b;
      }
      ++t;
      *t = hull_line{a, b, na, nb};
      t[1].db = inf;
      // Advance the front while the next line is at least as low at x.
      h += h[1].db <= h[1].da * x;
      h += h[1].db <= h[1].da * x;
      while (HYBRIDCACHE_DETAIL_UNLIKELY(h[1].db <= h[1].da * x)) ++h;
      h->db = -inf;
      dp[l] = h->b - h->a * x + tj;
      head[l] = h;
      tail[l] = t + 1;
    }
    last[j] = dp[L - 1];
  }
  for (int l = 0; l < L; ++l) values[l] = dp[l];
}

/// Result of one penalised pass.
struct penalised_result {
  double value = 0.0;     ///< min over plans of cost + λ·count (raw, not normalised)
  std::size_t count = 0;  ///< checkpoints of the chosen optimal plan
};

/// A hull line of the penalised pass: the `hull_line` fields plus the line's ±checkpoint count c
/// (exact small integers in a double), its difference dc to the line below, and its candidate.
struct priced_line {
  double a, b, da, db, c, dc;
  std::uint64_t k;
  std::uint64_t pad;  // 64 bytes: one cache line, and a power-of-two stride
};

/// Scratch space of the penalised pass (reused across the passes of one search).
struct cht_workspace {
  std::vector<priced_line> lines;
};

/// One penalised pass at price `lambda`; `most` selects the tie-break (most instead of fewest
/// checkpoints among the optimal plans). Writes parent[j] = the candidate serving segment j
/// (0: none) so that `trace` can recover the plan. `parent` has K+1 entries.
/// Same hull layout and sentinels as `cht_layers`, but plain loops: a single pass is one long
/// dependency chain, where correctly predicted branches let the core run ahead (branch-free
/// selects would serialise on the loads; measured 2x slower), whereas the interleaved frontier
/// kernel is throughput-bound and gains from removing mispredictions. The count decides only
/// when the values tie exactly.
inline penalised_result penalised_pass(const placement_problem& pb, double lambda, bool most,
                                       std::uint32_t* parent, cht_workspace& ws) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::size_t K = pb.candidates;
  const double* P = pb.mass.data();
  const double* T = pb.moment.data();
  const double* A = pb.slope.data();
  const double sign = most ? -1.0 : 1.0;
  if (ws.lines.size() < K + 3) ws.lines.resize(K + 3);
  priced_line* base = ws.lines.data();
  // Line 0: no checkpoint at all (slope 0, intercept 0, count 0); it starts as the head.
  base[0] = priced_line{0.0, 0.0, 1.0, -inf, 0.0, 0.0, 0, 0};
  base[1].db = inf;
  priced_line* h = base;
  priced_line* t = base;  // the top line
  double gv = T[0];       // g[j−1]: value …
  double gc = 0.0;        // … and ±count
  parent[0] = 0;
  // The back test: does (a, b, c) make the top useless? Exact ties fall back to the counts.
  auto useless = [](const priced_line* top, double na, double nb, double c) {
    const double lv = top->db * na;
    const double rv = nb * top->da;
    if (HYBRIDCACHE_DETAIL_LIKELY(lv != rv)) return lv > rv;
    return top->dc * na >= (c - top->c) * top->da;
  };
  // The front test: is the line after `hd` at least as low at x (value, then count)?
  auto steps = [](const priced_line* hd, double x) {
    const double lv = hd[1].db;
    const double rv = hd[1].da * x;
    if (HYBRIDCACHE_DETAIL_LIKELY(lv != rv)) return lv < rv;
    return hd[1].c <= hd->c;
  };
  for (std::size_t j = 1; j <= K; ++j) {
    const double a = A[j];
    const double b = gv - T[j - 1] + a * P[j - 1] + lambda;
    const double c = gc + sign;
    double na = a - t->a;
    double nb = b - t->b;
    while (useless(t, na, nb, c)) {
      --t;
      na = a - t->a;
      nb = b - t->b;
    }
    const double dc = c - t->c;
    ++t;
    *t = priced_line{a, b, na, nb, c, dc, j, 0};
    t[1].db = inf;
    const double x = P[j];
    while (steps(h, x)) ++h;
    h->db = -inf;
    gv = h->b - h->a * x + T[j];
    gc = h->c;
    parent[j] = static_cast<std::uint32_t>(h->k);
  }
  return {gv, static_cast<std::size_t>(most ? -gc : gc)};
}

/// Candidate indices (ascending) of the plan recorded in `parent` by `penalised_pass`.
inline std::vector<std::size_t> trace(const std::uint32_t* parent, std::size_t K) {
  std::vector<std::size_t> ks;
  std::size_t j = K;
  while (true) {
    const std::size_t k = parent[j];
    if (k == 0) break;
    ks.push_back(k);
    j = k - 1;
  }
  return {ks.rbegin(), ks.rend()};
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
