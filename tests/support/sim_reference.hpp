// SPDX-License-Identifier: Apache-2.0
// Independent reference for the simulation tests: token-by-token LCP against every retained
// entry, Table 1 positions written out from the paper's formulas, a double-precision EW histogram
// that keeps every observation, and a brute-force optimum over all checkpoint subsets. Nothing
// here calls the code under test (only the trace container for input).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
#include <string>
#include <vector>

namespace sim_ref {

using tokens = std::vector<std::uint32_t>;

inline std::size_t lcp(const tokens& a, const tokens& b) {
  std::size_t t = 0;
  while (t < a.size() && t < b.size() && a[t] == b[t]) ++t;
  return t;
}

/// Rounds down to the grid {B, 2B, ...}, drops 0 and duplicates.
inline std::vector<std::size_t> clip(std::vector<std::size_t> c, std::size_t b) {
  std::vector<std::size_t> out;
  for (auto x : c) {
    const std::size_t p = x / b * b;
    if (p > 0 && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// Table 1 of the sparse prefix caching paper, then the block grid. kind: "last", "block",
/// "sqrt", "balanced", "none".
inline std::vector<std::size_t> positions(const std::string& kind, std::size_t len, std::size_t m, std::size_t b) {
  std::vector<std::size_t> c;
  if (len < b) return c;
  if (kind == "last") c.push_back(len);
  if (kind == "block") {
    for (std::size_t x = b; x <= len; x += b) c.push_back(x);
  }
  if (kind == "sqrt") {
    std::size_t s = 1;
    while ((s + 1) * (s + 1) <= len) ++s;
    for (std::size_t x = s; x <= len; x += s) c.push_back(x);
  }
  if (kind == "balanced") {
    const std::size_t mm = std::min(m, len);
    for (std::size_t i = 1; i <= mm; ++i) c.push_back(i * (len + 1) / (mm + 1));
  }
  return clip(c, b);
}

/// Deepest checkpoint <= t (0 if none).
inline std::size_t deepest(const std::vector<std::size_t>& c, std::size_t t) {
  std::size_t best = 0;
  for (auto x : c) {
    if (x <= t) best = std::max(best, x);
  }
  return best;
}

/// Replay of a fixed strategy through a last-K cache; reuse = max over entries of the deepest
/// checkpoint within that entry's overlap.
struct replay_result {
  std::vector<std::size_t> depths;
  double depth_tokens = 0, recomputed = 0;
};

inline replay_result replay_fixed(const std::vector<tokens>& reqs, std::size_t k, const std::string& kind,
                                  std::size_t m, std::size_t b) {
  replay_result r;
  std::deque<std::pair<tokens, std::vector<std::size_t>>> cache;
  for (const auto& x : reqs) {
    std::size_t t = 0, reuse = 0;
    for (const auto& [e, c] : cache) {
      const std::size_t l = lcp(x, e);
      t = std::max(t, l);
      reuse = std::max(reuse, deepest(c, l));
    }
    r.depths.push_back(t);
    r.depth_tokens += static_cast<double>(t);
    r.recomputed += static_cast<double>(t - reuse);
    cache.emplace_back(x, positions(kind, x.size(), m, b));
    if (cache.size() > k) cache.pop_front();
  }
  return r;
}

/// EW histogram keeping every observation: p_t ∝ Σ_s γ^{n−s} [T_s = t], t = 1..n_max.
struct ew_reference {
  double gamma;
  std::vector<std::size_t> obs;
  std::vector<double> pmf(std::size_t n_max) const {
    std::vector<double> p(n_max, 0.0);
    double sum = 0;
    for (std::size_t s = 0; s < obs.size(); ++s) {
      const double w = std::pow(gamma, static_cast<double>(obs.size() - 1 - s));
      p[obs[s] - 1] += w;
      sum += w;
    }
    if (sum > 0) {
      for (auto& x : p) x /= sum;
    }
    return p;
  }
};

/// Σ_t p_t (t − ℓ(t)) over t = 1..len.
inline double expected_recompute(const std::vector<double>& p, std::size_t len, const std::vector<std::size_t>& c) {
  double e = 0;
  for (std::size_t t = 1; t <= len; ++t) e += p[t - 1] * static_cast<double>(t - deepest(c, t));
  return e;
}

/// min over subsets of at most m block positions <= len of expected_recompute (brute force).
inline double brute_force_optimum(const std::vector<double>& p, std::size_t len, std::size_t m, std::size_t b) {
  std::vector<std::size_t> cand;
  for (std::size_t x = b; x <= len; x += b) cand.push_back(x);
  double best = std::numeric_limits<double>::infinity();
  const std::size_t n = cand.size();
  for (std::uint64_t mask = 0; mask < (std::uint64_t{1} << n); ++mask) {
    std::vector<std::size_t> c;
    for (std::size_t i = 0; i < n; ++i) {
      if (mask >> i & 1) c.push_back(cand[i]);
    }
    if (c.size() > m) continue;
    best = std::min(best, expected_recompute(p, len, c));
  }
  return best;
}

}  // namespace sim_ref
