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

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/detail/problem.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Scratch space for the layer kernels (reused across layers and calls to avoid allocation).
struct cht_workspace {
  std::vector<double> slope;      // a of the hull lines
  std::vector<double> intercept;  // b of the hull lines
  std::vector<double> count;      // ±checkpoint count of the lines (penalised pass)
  std::vector<std::uint32_t> index;
  void reserve(std::size_t lines) {
    if (slope.size() < lines) {
      slope.resize(lines);
      intercept.resize(lines);
      count.resize(lines);
      index.resize(lines);
    }
  }
};

/// One DP layer: cur[j] = dp_m[j] from prev[j] = dp_{m−1}[j], j = 0..K.
inline void cht_layer(const placement_problem& pb, const double* prev, double* cur,
                      cht_workspace& ws) {
  const std::size_t K = pb.candidates;
  const double* P = pb.mass.data();
  const double* T = pb.moment.data();
  const double* A = pb.slope.data();
  ws.reserve(K + 1);
  double* ha = ws.slope.data();
  double* hb = ws.intercept.data();
  std::size_t head = 0;
  std::size_t tail = 0;
  cur[0] = prev[0];
  for (std::size_t j = 1; j <= K; ++j) {
    const double a = A[j];
    const double b = prev[j - 1] - T[j - 1] + a * P[j - 1];
    while (tail - head >= 2) {
      const double a1 = ha[tail - 2], b1 = hb[tail - 2], a2 = ha[tail - 1], b2 = hb[tail - 1];
      if ((b2 - b1) * (a - a2) >= (b - b2) * (a2 - a1)) {
        --tail;
      } else {
        break;
      }
    }
    ha[tail] = a;
    hb[tail] = b;
    ++tail;
    const double x = P[j];
    while (tail - head >= 2 && hb[head + 1] - ha[head + 1] * x <= hb[head] - ha[head] * x) ++head;
    cur[j] = hb[head] - ha[head] * x + T[j];
  }
}

/// Result of one penalised pass.
struct penalised_result {
  double value = 0.0;        ///< min over plans of cost + λ·count (raw, not normalised)
  std::size_t count = 0;     ///< checkpoints of the chosen optimal plan
};

/// One penalised pass at price `lambda`; `most` selects the tie-break (most instead of fewest
/// checkpoints among the optimal plans). Writes parent[j] = the candidate serving block j's
/// deepest segment (0: none) so that `trace` can recover the plan. `parent` has K+1 entries.
inline penalised_result penalised_pass(const placement_problem& pb, double lambda, bool most,
                                       std::uint32_t* parent, cht_workspace& ws) {
  const std::size_t K = pb.candidates;
  const double* P = pb.mass.data();
  const double* T = pb.moment.data();
  const double* A = pb.slope.data();
  const double sign = most ? -1.0 : 1.0;
  ws.reserve(K + 1);
  double* ha = ws.slope.data();
  double* hb = ws.intercept.data();
  double* hc = ws.count.data();
  std::uint32_t* hk = ws.index.data();
  // Line 0: no checkpoint at all (slope 0, intercept 0, count 0).
  ha[0] = 0.0;
  hb[0] = 0.0;
  hc[0] = 0.0;
  hk[0] = 0;
  std::size_t head = 0;
  std::size_t tail = 1;
  double gv = T[0];  // g[j−1] (value)
  double gc = 0.0;   // its ±count
  parent[0] = 0;
  for (std::size_t j = 1; j <= K; ++j) {
    const double a = A[j];
    const double b = gv - T[j - 1] + a * P[j - 1] + lambda;
    const double c = gc + sign;
    while (tail - head >= 2) {
      const double a1 = ha[tail - 2], a2 = ha[tail - 1];
      const double lv = (hb[tail - 1] - hb[tail - 2]) * (a - a2);
      const double rv = (b - hb[tail - 1]) * (a2 - a1);
      if (lv > rv || (lv == rv && (hc[tail - 1] - hc[tail - 2]) * (a - a2) >=
                                      (c - hc[tail - 1]) * (a2 - a1))) {
        --tail;
      } else {
        break;
      }
    }
    ha[tail] = a;
    hb[tail] = b;
    hc[tail] = c;
    hk[tail] = static_cast<std::uint32_t>(j);
    ++tail;
    const double x = P[j];
    while (tail - head >= 2) {
      const double v1 = hb[head + 1] - ha[head + 1] * x;
      const double v0 = hb[head] - ha[head] * x;
      if (v1 < v0 || (v1 == v0 && hc[head + 1] <= hc[head])) {
        ++head;
      } else {
        break;
      }
    }
    gv = hb[head] - ha[head] * x + T[j];
    gc = hc[head];
    parent[j] = hk[head];
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
