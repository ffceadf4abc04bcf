#pragma once
// SPDX-License-Identifier: Apache-2.0
// Reference for the joint placement (overlap/joint_placement.hpp), token by token in double
// precision: the expected recompute of an entry's checkpoints when other entries already cover
// some depths, and its optimum by enumerating every subset of the block grid (or, for the
// hand-over, of a given candidate set).
#include <algorithm>
#include <cstddef>
#include <limits>
#include <vector>

namespace joint_ref {

// Σ_t p_t (t − ℓ(t)) with ℓ(t) the deepest position ≤ t among `mine` and `covered` (tokens);
// p[t − 1] is the probability of depth t, normalised here over 1..L.
inline double expected_recompute(const std::vector<double>& p, const std::vector<std::size_t>& mine,
                                 const std::vector<std::size_t>& covered) {
  double z = 0.0, e = 0.0;
  for (double x : p) z += x;
  for (std::size_t t = 1; t <= p.size(); ++t) {
    std::size_t reuse = 0;
    for (std::size_t c : mine)
      if (c <= t) reuse = std::max(reuse, c);
    for (std::size_t c : covered)
      if (c <= t) reuse = std::max(reuse, c);
    e += p[t - 1] * static_cast<double>(t - reuse);
  }
  return e / z;
}

// min over every subset of {B, 2B, …, ⌊L/B⌋B} with at most m positions.
inline double brute_force_optimum(const std::vector<double>& p, std::size_t m, std::size_t b,
                                  const std::vector<std::size_t>& covered) {
  const std::size_t n = p.size() / b;
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t mask = 0; mask < (std::size_t{1} << n); ++mask) {
    std::vector<std::size_t> mine;
    for (std::size_t k = 0; k < n; ++k)
      if (mask >> k & 1U) mine.push_back((k + 1) * b);
    if (mine.size() > m) continue;
    best = std::min(best, expected_recompute(p, mine, covered));
  }
  return best;
}

// Hand-over: min over every subset of `candidates` (tokens) with at most m positions.
inline double brute_force_subset(const std::vector<double>& p, std::size_t m,
                                 const std::vector<std::size_t>& candidates,
                                 const std::vector<std::size_t>& covered) {
  const std::size_t n = candidates.size();
  double best = std::numeric_limits<double>::infinity();
  for (std::size_t mask = 0; mask < (std::size_t{1} << n); ++mask) {
    std::vector<std::size_t> mine;
    for (std::size_t k = 0; k < n; ++k)
      if (mask >> k & 1U) mine.push_back(candidates[k]);
    if (mine.size() > m) continue;
    best = std::min(best, expected_recompute(p, mine, covered));
  }
  return best;
}

}  // namespace joint_ref
