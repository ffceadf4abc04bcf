#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Result and option types of the checkpoint planner (DESIGN.md §3–4).
///
/// A cached prefix has length N; a request overlaps it to depth t ∈ {1..N} with weight w_t
/// (weights are normalised, p_t = w_t / Σ w). Checkpoints C = {c_1 < … < c_M} ⊂ {1..N}; a request
/// of depth t resumes from ℓ(t) = max({0} ∪ {c ∈ C : c ≤ t}) and recomputes r(t) = t − ℓ(t) tokens.

#include <cstddef>
#include <vector>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Which exact algorithm `place_optimal` runs. All give the same optimal expected recompute
/// (up to floating-point rounding on real weights; bit-identical on integer weights).
enum class placement_method {
  /// Pick the one expected to be faster for this (N, M): `cht` for small budgets, `lagrangian`
  /// for large ones.
  automatic,
  /// The layered DP of Theorem 2 (sparse prefix caching paper) with a monotone convex hull trick:
  /// O(N·M) time, O(N) memory; positions recovered by one Lagrangian splice (see docs).
  cht,
  /// Lagrangian relaxation ("Aliens"/WQS): a search over the per-checkpoint price λ, one O(N)
  /// penalised DP per step, O(N log U) total; exactly M positions by splicing two solutions.
  lagrangian,
};

/// Options of `place_optimal` and `optimal_frontier`.
struct placement_options {
  /// Block size B ≥ 1: checkpoints may only sit at {B, 2B, …, ⌊N/B⌋·B} (block-aligned state
  /// storage, as engines require). The DP is exact over these candidates. Depths below B can never
  /// be served by a checkpoint. Must be ≤ N.
  std::size_t granularity = 1;
  /// Algorithm; `automatic` picks the faster one.
  placement_method method = placement_method::automatic;
};

/// A checkpoint plan: strictly increasing positions in tokens (1-based depths, multiples of the
/// granularity) and the expected recompute E[r] = Σ_t p_t (t − ℓ(t)) they achieve, in tokens under
/// the normalised weights.
struct placement {
  std::vector<std::size_t> checkpoints;
  double expected_recompute = 0.0;
};

HYBRIDCACHE_NAMESPACE_END
