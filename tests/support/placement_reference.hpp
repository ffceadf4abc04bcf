#pragma once
// SPDX-License-Identifier: Apache-2.0
// Independent references for the placement tests: written from the definitions in DESIGN.md §3
// and the sparse prefix caching paper, sharing no code with include/hybridcache/placement.
//  - recompute(): E[r] by scanning for ℓ(t) token by token, in long double;
//  - brute_force(): every subset of the candidates (N ≤ 14);
//  - plain_dp(): the O(N²M) recurrence of Theorem 2 evaluated literally (w(s, j) summed term by
//  term
//    through prefix sums), over token positions, with candidate positions restricted to {B, 2B, …}.
#include <cstddef>
#include <limits>
#include <vector>

namespace hybridcache_test {

/// Σ_t w_t (t − ℓ(t)) / Σ_t w_t, with ℓ(t) found by scanning every checkpoint.
inline long double recompute(const std::vector<double>& w, const std::vector<std::size_t>& cps) {
  long double num = 0, den = 0;
  for (std::size_t t = 1; t <= w.size(); ++t) {
    std::size_t ell = 0;
    for (std::size_t c : cps) {
      if (c <= t && c > ell) ell = c;
    }
    num += static_cast<long double>(w[t - 1]) * static_cast<long double>(t - ell);
    den += w[t - 1];
  }
  return num / den;
}

struct brute_result {
  long double best = 0;    // min E[r] over plans with ≤ budget checkpoints
  std::size_t fewest = 0;  // fewest checkpoints reaching it
};

/// Minimum E[r] over all subsets of {B, 2B, …} ∩ [1, N] of size ≤ budget, for every budget
/// 0..max_budget. N/B ≤ 20.
inline std::vector<brute_result> brute_force(const std::vector<double>& w, std::size_t max_budget,
                                             std::size_t B = 1) {
  std::vector<std::size_t> cand;
  for (std::size_t c = B; c <= w.size(); c += B) cand.push_back(c);
  const std::size_t K = cand.size();
  std::vector<long double> best_of_size(K + 1, std::numeric_limits<long double>::infinity());
  for (std::size_t mask = 0; mask < (std::size_t{1} << K); ++mask) {
    std::vector<std::size_t> cps;
    for (std::size_t i = 0; i < K; ++i) {
      if (mask >> i & 1) cps.push_back(cand[i]);
    }
    const long double r = recompute(w, cps);
    if (r < best_of_size[cps.size()]) best_of_size[cps.size()] = r;
  }
  std::vector<brute_result> out(max_budget + 1);
  for (std::size_t m = 0; m <= max_budget; ++m) {
    out[m].best = std::numeric_limits<long double>::infinity();
    for (std::size_t s = 0; s <= m && s <= K; ++s) {
      // Strictly smaller (beyond rounding) needed to count as an improvement.
      if (best_of_size[s] < out[m].best - 1e-12L) {
        out[m].best = best_of_size[s];
        out[m].fewest = s;
      }
    }
  }
  return out;
}

/// V(m) = min E[r] with ≤ m checkpoints for m = 0..max_budget, by the literal O(N²M) recurrence
///   dp[0][j] = Σ_{t≤j} p_t t,
///   dp[m][j] = min( dp[m−1][j], min_{s ∈ cand, s ≤ j} dp[m−1][s−1] + Σ_{t=s..j} p_t (t − s) ).
inline std::vector<long double> plain_dp(const std::vector<double>& w, std::size_t max_budget,
                                         std::size_t B = 1) {
  const std::size_t n = w.size();
  long double total = 0;
  for (double x : w) total += x;
  std::vector<long double> P(n + 1, 0), T(n + 1, 0);
  for (std::size_t t = 1; t <= n; ++t) {
    const long double p = static_cast<long double>(w[t - 1]) / total;
    P[t] = P[t - 1] + p;
    T[t] = T[t - 1] + p * static_cast<long double>(t);
  }
  std::vector<long double> prev(T), cur(n + 1);
  std::vector<long double> out(max_budget + 1);
  out[0] = prev[n];
  for (std::size_t m = 1; m <= max_budget; ++m) {
    cur[0] = 0;
    for (std::size_t j = 1; j <= n; ++j) {
      long double best = prev[j];
      for (std::size_t s = B; s <= j; s += B) {
        const long double cost =
            prev[s - 1] + (T[j] - T[s - 1]) - static_cast<long double>(s) * (P[j] - P[s - 1]);
        if (cost < best) best = cost;
      }
      cur[j] = best;
    }
    out[m] = cur[n];
    prev.swap(cur);
  }
  return out;
}

/// Theorem 1 written out: N·E[r*] = (K − ρ)·q(q−1)/2 + ρ·q(q+1)/2 with N+1 = qK + ρ, K = M+1,
/// via the gap-decomposition of Lemma 2 (Σ over gaps of g(g−1)/2).
inline long double theorem1(std::size_t n, std::size_t m) {
  const std::size_t K = m + 1;
  const std::size_t q = (n + 1) / K, rho = (n + 1) % K;
  long double s = 0;
  for (std::size_t i = 0; i < K; ++i) {
    const long double g = static_cast<long double>(i < rho ? q + 1 : q);
    s += g * (g - 1) / 2;
  }
  return s / static_cast<long double>(n);
}

}  // namespace hybridcache_test
