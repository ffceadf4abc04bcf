#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Validation of overlap weights and the block-compressed form of the placement problem that every
/// exact solver works on.
///
/// With granularity B the candidates are c_k = k·B, k = 1..K, K = ⌊N/B⌋. Block j ∈ {0..K} holds the
/// depths [j·B, (j+1)·B − 1] ∩ [1, N]; every depth of block j resumes from the deepest candidate
/// ≤ j. With P̃_j = Σ_{t < (j+1)B} w_t and T̃_j = Σ_{t < (j+1)B} t·w_t (t ≤ N), a checkpoint at c_k
/// that serves blocks k..j costs w̃(k, j) = (T̃_j − T̃_{k−1}) − c_k (P̃_j − P̃_{k−1}): the token-level
/// cost w(s, j) of DESIGN.md §3 restricted to block boundaries. B = 1 is the token problem
/// (block 0 is empty). Block 0 can never be served, so every plan pays T̃_0.
///
/// The weights are multiplied by a power of two so that the largest is in [1, 2): exact in
/// binary floating point (integer weights keep every partial sum an exact integer as long as
/// it stays below 2^53), and no sum can overflow.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Throws `invalid_argument` unless `weights` is non-empty, finite, non-negative and not all zero.
/// Returns the largest weight.
inline double validate_weights(std::span<const double> weights) {
  if (weights.empty()) throw_invalid("weights", "[]", "the overlap histogram must not be empty");
  double max_w = 0.0;
  for (std::size_t i = 0; i < weights.size(); ++i) {
    const double w = weights[i];
    if (!std::isfinite(w) || w < 0.0) {
      throw_invalid(indexed("weights", i), w, "weights must be finite and >= 0");
    }
    if (w > max_w) max_w = w;
  }
  if (max_w == 0.0) {
    throw_invalid("weights", "all zero",
                  "the overlap histogram needs positive mass at some depth");
  }
  return max_w;
}

/// Throws `invalid_argument` unless 1 ≤ granularity ≤ n.
inline void validate_granularity(std::size_t granularity, std::size_t n) {
  if (granularity == 0) throw_invalid("granularity", granularity, "must be >= 1");
  if (granularity > n) {
    throw_invalid("granularity", granularity,
                  "must be <= the prefix length N = " + std::to_string(n));
  }
}

/// The block-compressed problem (see the file comment).
struct placement_problem {
  std::size_t n = 0;          ///< prefix length N
  std::size_t block = 1;      ///< granularity B
  std::size_t candidates = 0; ///< K = ⌊N/B⌋
  double total = 0.0;         ///< Σ scaled weights (the normaliser W)
  std::vector<double> mass;   ///< P̃_0..P̃_K
  std::vector<double> moment; ///< T̃_0..T̃_K

  /// Position (in tokens) of candidate k.
  [[nodiscard]] std::size_t position(std::size_t k) const noexcept { return k * block; }
  /// Cost of serving every depth without any checkpoint (raw, not normalised).
  [[nodiscard]] double no_cache_cost() const noexcept { return moment[candidates]; }
  /// Number of candidates whose block has positive mass: the most checkpoints that still help.
  [[nodiscard]] std::size_t useful() const noexcept {
    std::size_t u = 0;
    for (std::size_t j = 1; j <= candidates; ++j) u += mass[j] > mass[j - 1] ? 1 : 0;
    return u;
  }
};

/// Validates `weights` and `granularity` and builds the compressed problem.
inline placement_problem make_problem(std::span<const double> weights, std::size_t granularity) {
  const double max_w = validate_weights(weights);
  const std::size_t n = weights.size();
  validate_granularity(granularity, n);
  placement_problem pb;
  pb.n = n;
  pb.block = granularity;
  pb.candidates = n / granularity;
  const double scale = std::ldexp(1.0, -std::ilogb(max_w));
  pb.mass.assign(pb.candidates + 1, 0.0);
  pb.moment.assign(pb.candidates + 1, 0.0);
  double p = 0.0;
  double t = 0.0;
  std::size_t depth = 1;
  for (std::size_t j = 0; j <= pb.candidates; ++j) {
    const std::size_t end = std::min(n, (j + 1) * granularity - 1);
    for (; depth <= end; ++depth) {
      const double w = weights[depth - 1] * scale;
      p += w;
      t += static_cast<double>(depth) * w;
    }
    pb.mass[j] = p;
    pb.moment[j] = t;
  }
  pb.total = p;
  return pb;
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
