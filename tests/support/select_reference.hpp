#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Independent references for selection tests: sparse-Q scores computed directly in double, one
/// query and one key at a time (SparseX eqs. 1–2), and the selection sets built with std::set from
/// the paper's wording.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <set>
#include <utility>
#include <vector>

namespace hcref {

/// s_j = mean over heads and queries of causal softmax(q·k/√d) — the textbook way, in double.
/// q: [nq][heads][d] flattened, k: [T][kv_heads][d] flattened.
inline std::vector<double> sparse_q_scores(const std::vector<double>& q, std::size_t nq,
                                           std::size_t heads, const std::vector<double>& k,
                                           std::size_t t_len, std::size_t kv_heads, std::size_t d,
                                           const std::vector<std::size_t>& pos, double scale) {
  std::vector<double> s(t_len, 0.0);
  const std::size_t group = heads / kv_heads;
  for (std::size_t h = 0; h < heads; ++h) {
    for (std::size_t i = 0; i < nq; ++i) {
      std::vector<double> logit(pos[i] + 1);
      for (std::size_t j = 0; j <= pos[i]; ++j) {
        double dot = 0.0;
        for (std::size_t c = 0; c < d; ++c)
          dot += q[(i * heads + h) * d + c] * k[(j * kv_heads + h / group) * d + c];
        logit[j] = dot * scale;
      }
      const double m = *std::max_element(logit.begin(), logit.end());
      double z = 0.0;
      for (double x : logit) z += std::exp(x - m);
      for (std::size_t j = 0; j <= pos[i]; ++j) s[j] += std::exp(logit[j] - m) / z;
    }
  }
  for (double& x : s) x /= static_cast<double>(heads * nq);
  return s;
}

struct ref_selection {
  std::set<std::size_t> non_reuse, key, overflow, tail, recompute;
};

/// Selection from the wording of SparseX §3.2–3.3, with sets. `reused` = [begin, end) pairs.
inline ref_selection select(const std::vector<double>& s,
                            const std::vector<std::pair<std::size_t, std::size_t>>& reused,
                            std::size_t k, std::size_t block, std::size_t fallback) {
  const std::size_t t_len = s.size();
  ref_selection r;
  std::set<std::size_t> reused_tokens;
  for (auto [b, e] : reused)
    for (std::size_t j = b; j < e; ++j) reused_tokens.insert(j);
  for (std::size_t j = 0; j < t_len; ++j)
    if (!reused_tokens.count(j)) r.non_reuse.insert(j);
  // Top-k: repeatedly take the best remaining reused token (highest score, then lowest index).
  std::set<std::size_t> left = reused_tokens;
  while (r.key.size() < k && !left.empty()) {
    std::size_t best = *left.begin();
    for (std::size_t j : left)
      if (s[j] > s[best]) best = j;
    r.key.insert(best);
    left.erase(best);
  }
  // Overflow: a token is in S_ov if it is reused and within `block` tokens of a non-reuse token
  // across an interval boundary, i.e. the gap to the nearest non-reuse token is <= block.
  for (std::size_t j : reused_tokens) {
    for (std::size_t nr : r.non_reuse) {
      const std::size_t dist = nr > j ? nr - j : j - nr;
      if (dist <= block) {
        r.overflow.insert(j);
        break;
      }
    }
  }
  if (!reused.empty() && reused.back().second == t_len) {
    const auto [b, e] = reused.back();
    for (std::size_t j = e - std::min(e - b, fallback); j < e; ++j) r.tail.insert(j);
  }
  r.recompute = r.non_reuse;
  r.recompute.insert(r.key.begin(), r.key.end());
  r.recompute.insert(r.overflow.begin(), r.overflow.end());
  r.recompute.insert(r.tail.begin(), r.tail.end());
  return r;
}

}  // namespace hcref
