#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Validation of overlap weights and the block-compressed form of the placement problem that every
/// exact solver works on.
///
/// With granularity B the candidates are the multiples of B in 1..N. Keep those whose block
/// [c, c+B) carries mass, c_1 < … < c_K (c_0 = 0), and let segment j hold the depths [c_j, c_{j+1})
/// (c_{K+1} = N+1). With P̃_j = Σ_{t < c_{j+1}} w_t and T̃_j = Σ_{t < c_{j+1}} t·w_t, a checkpoint
/// at c_k that serves segments k..j costs w̃(k, j) = (T̃_j − T̃_{k−1}) − c_k (P̃_j − P̃_{k−1}): the
/// token-level cost w(s, j) of DESIGN.md §3 restricted to the candidates. Segment 0 (depths
/// below c_1) can never be served, so every plan pays T̃_0.
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
#include "hybridcache/detail/normalise.hpp"
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
    throw_invalid("weights", "all zero", "the overlap histogram needs positive mass at some depth");
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

/// The compressed problem (see the file comment). Only candidates whose block carries mass are
/// kept ("useful" candidates): a checkpoint in a massless block is never better than moving it to
/// the next block with mass, so dropping them loses no optimum, shortens zero-mass stretches to
/// nothing and keeps the exactness of the tie-breaks independent of rounding.
struct placement_problem {
  std::size_t n = 0;           ///< prefix length N
  std::size_t block = 1;       ///< granularity B
  std::size_t candidates = 0;  ///< K: number of useful candidates
  double total = 0.0;          ///< Σ scaled weights (the normaliser W)
  std::vector<std::size_t>
      where;                   ///< where[k]: position (tokens) of useful candidate k (where[0] = 0)
  std::vector<double> slope;   ///< slope[k] = where[k] as a double
  std::vector<double> mass;    ///< P̃_0..P̃_K: mass of the depths < where[j+1] (all depths for K)
  std::vector<double> moment;  ///< T̃_0..T̃_K: the same for t·w_t

  /// Position (in tokens) of candidate k (1..K).
  [[nodiscard]] std::size_t position(std::size_t k) const noexcept { return where[k]; }
  /// Cost of serving every depth without any checkpoint (raw, not normalised).
  [[nodiscard]] double no_cache_cost() const noexcept { return moment[candidates]; }
  /// The most checkpoints that still lower the cost (one per block with mass).
  [[nodiscard]] std::size_t useful() const noexcept { return candidates; }
};

/// Validates `weights` and `granularity` and builds the compressed problem.
inline placement_problem make_problem(std::span<const double> weights, std::size_t granularity) {
  const double max_w = validate_weights(weights);
  const std::size_t n = weights.size();
  validate_granularity(granularity, n);
  placement_problem pb;
  pb.n = n;
  pb.block = granularity;
  const unit_scale scale = scale_to_unit(max_w);  // exact, subnormal-safe
  pb.where.push_back(0);
  pb.mass.push_back(0.0);
  pb.moment.push_back(0.0);
  double p = 0.0;
  double t = 0.0;
  for (std::size_t depth = 1; depth <= n; ++depth) {
    const double w = scale(weights[depth - 1]);
    if (w > 0.0 && depth >= granularity) {
      const std::size_t c = depth / granularity * granularity;  // this depth's block start
      if (c != pb.where.back()) {
        // A new useful candidate: close the previous segment's sums.
        pb.mass.back() = p;
        pb.moment.back() = t;
        pb.where.push_back(c);
        pb.mass.push_back(0.0);
        pb.moment.push_back(0.0);
      }
    }
    p += w;
    t += static_cast<double>(depth) * w;
  }
  pb.mass.back() = p;
  pb.moment.back() = t;
  pb.total = p;
  pb.candidates = pb.where.size() - 1;
  pb.slope.assign(pb.where.begin(), pb.where.end());
  return pb;
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
