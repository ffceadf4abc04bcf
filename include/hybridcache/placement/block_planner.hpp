#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The block-compressed placement problem of one cache entry, built in O(L/B) from prefix sums of
/// a depth law, and its exact solution.
///
/// An entry of length L may store recurrent checkpoints only at multiples of the block size B.
/// A request that overlaps it to depth t ∈ 1..L resumes from ℓ(t) = B·ℓ'(k), k = ⌊t/B⌋, where
/// ℓ'(k) is the deepest checkpoint *index* ≤ k. So, for a law p over 1..L,
///
///     E[r] = Σ_t p_t t − B · Σ_k P_k ℓ'(k),      P_k = Σ_{t ∈ [kB, (k+1)B) ∩ [1, L]} p_t,
///
/// and minimising E[r] is minimising E'[r] = Σ_k P_k (k − ℓ'(k)) over checkpoint indices 1..⌊L/B⌋
/// at granularity 1: the same optimum, exactly (depths below B can never be served). With
/// S = Σ_k k P_k and Z = Σ_k P_k, a plan whose normalised E' is e has E[r] = R_nc − B (S − Z e).
///
/// `depth_prefix_sums` holds Σ_{s ≤ t} w_s and Σ_{s ≤ t} s·w_s of weights w_1..w_N; from them the
/// block masses of the law truncated to 1..L come out as differences:
/// - head-anchored (the paper's pooled law): p_t ∝ w_t on 1..L;
/// - tail-anchored: p_t ∝ w_{L−t+1}, i.e. w indexes u + 1 with u = L − t the distance from the
///   entry's end ("the next request shares all but the last u tokens").
///
/// ```cpp
/// std::vector<double> w(4096, 0.0);
/// w[1999] = 1.0;                                   // every hit at depth 2000
/// hybridcache::depth_prefix_sums sums(w);
/// auto law = sums.block_law(hybridcache::depth_anchor::head, 4096, 64);
/// auto plan = hybridcache::plan_entry(*law, 1);    // {1984}: the block holding depth 2000
/// ```

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/placement/frontier.hpp"
#include "hybridcache/placement/optimal.hpp"
#include "hybridcache/placement/options.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Where a depth law is anchored in an entry (file comment).
enum class depth_anchor : std::uint8_t {
  head,  ///< w indexes the depth t itself
  tail,  ///< w indexes u + 1, u = L − t tokens before the entry's end
};

/// A depth law over 1..L seen on the block grid (file comment). Every field is of the law
/// normalised over 1..L.
struct entry_block_law {
  std::size_t length = 0;       ///< L
  std::size_t granularity = 1;  ///< B
  std::vector<double> mass;     ///< mass[k − 1] = P_k, k = 1..⌊L/B⌋
  double total = 0.0;           ///< Z = Σ_k P_k: the probability that a checkpoint can help
  double moment = 0.0;          ///< S = Σ_k k·P_k
  double no_cache = 0.0;        ///< R_nc = Σ_t t·p_t

  /// E[r] in tokens of a plan whose normalised compressed cost (`place_optimal`'s
  /// expected_recompute on `mass`) is e: R_nc − B (S − Z e).
  [[nodiscard]] double tokens_of(double e) const noexcept {
    return no_cache - static_cast<double>(granularity) * (moment - total * e);
  }
};

/// Prefix sums of overlap weights w_1..w_N (file comment).
class depth_prefix_sums {
 public:
  depth_prefix_sums() = default;
  /// @param weights w_t for t = 1..N (weights[t − 1]); finite and ≥ 0 (all zero allowed).
  /// @throws invalid_argument naming `weights[i]` for a negative or non-finite weight.
  explicit depth_prefix_sums(std::span<const double> weights) { assign(weights); }

  /// Rebuilds the sums for new weights (same contract as the constructor).
  void assign(std::span<const double> weights) {
    mass_.assign(weights.size() + 1, 0.0);
    moment_.assign(weights.size() + 1, 0.0);
    for (std::size_t t = 1; t <= weights.size(); ++t) {
      const double w = weights[t - 1];
      if (!(w >= 0.0) || !(w < 1e300))
        detail::throw_invalid(detail::indexed("weights", t - 1), w, "must be finite and >= 0");
      mass_[t] = mass_[t - 1] + w;
      moment_[t] = moment_[t - 1] + static_cast<double>(t) * w;
    }
  }

  /// N, the largest depth the weights cover.
  [[nodiscard]] std::size_t size() const noexcept { return mass_.empty() ? 0 : mass_.size() - 1; }
  /// Σ_{t ≤ n} w_t (n clamped to N).
  [[nodiscard]] double mass(std::size_t n) const noexcept {
    return mass_.empty() ? 0.0 : mass_[n < size() ? n : size()];
  }
  /// Σ_{t ≤ n} t·w_t (n clamped to N).
  [[nodiscard]] double moment(std::size_t n) const noexcept {
    return moment_.empty() ? 0.0 : moment_[n < size() ? n : size()];
  }

  /// The law of `anchor` truncated to an entry of `length` tokens on the grid of `granularity`,
  /// optionally smoothed to (1 − ε) p + ε·uniform(1..L); nullopt when p has no mass on 1..L
  /// and ε < 1 — there is nothing to plan for.
  /// @throws invalid_argument for granularity 0, length 0 or ε outside [0, 1].
  [[nodiscard]] std::optional<entry_block_law> block_law(depth_anchor anchor, std::size_t length,
                                                         std::size_t granularity,
                                                         double smoothing = 0.0) const {
    if (granularity == 0) detail::throw_invalid("granularity", granularity, "must be >= 1");
    if (length == 0) detail::throw_invalid("length", length, "must be >= 1");
    if (!(smoothing >= 0.0 && smoothing <= 1.0))
      detail::throw_invalid("smoothing", smoothing, "must be in [0, 1]");
    const std::size_t b = granularity;
    const double total_mass = mass(length);
    if (!(total_mass > 0.0) && smoothing < 1.0) return std::nullopt;
    const double eps = total_mass > 0.0 ? smoothing : 1.0;
    const double len = static_cast<double>(length);
    entry_block_law out;
    out.length = length;
    out.granularity = b;
    const std::size_t k_max = length / b;
    out.mass.assign(k_max, 0.0);
    for (std::size_t k = 1; k <= k_max; ++k) {
      const std::size_t lo = k * b, hi = (k + 1) * b - 1 < length ? (k + 1) * b - 1 : length;
      // Depths lo..hi; tail-anchored they are u = L − hi .. L − lo (w indexes u + 1).
      double pk = 0.0;
      if (eps < 1.0) {
        pk = anchor == depth_anchor::tail ? (mass(length - lo + 1) - mass(length - hi)) / total_mass
                                          : (mass(hi) - mass(lo - 1)) / total_mass;
      }
      if (eps > 0.0) pk = (1.0 - eps) * pk + eps * static_cast<double>(hi - lo + 1) / len;
      out.mass[k - 1] = pk;
      out.total += pk;
      out.moment += static_cast<double>(k) * pk;
    }
    // Σ_t t·p_t; tail-anchored Σ_u (L − u)·w_{u+1} = (L + 1)·mass − Σ_i i·w_i over i = u + 1.
    double first = 0.0;
    if (eps < 1.0) {
      first = anchor == depth_anchor::tail ? (len + 1.0) - moment(length) / total_mass
                                           : moment(length) / total_mass;
    }
    out.no_cache = eps > 0.0 ? (1.0 - eps) * first + eps * (len + 1.0) / 2.0 : first;
    return out;
  }

 private:
  std::vector<double> mass_, moment_;
};

/// The exact optimal checkpoints (multiples of B) of an entry for `law` with at most `budget`
/// checkpoints, and their E[r] in tokens (Thm. 2 on the compressed problem; `place_optimal`'s
/// budget semantics). A law with no mass at depths ≥ B gives no checkpoint.
inline placement plan_entry(const entry_block_law& law, std::size_t budget) {
  placement out;
  if (!(law.total > 0.0)) {
    out.expected_recompute = law.no_cache;
    return out;
  }
  auto p = place_optimal(law.mass, budget);
  out.checkpoints = std::move(p.checkpoints);
  for (auto& x : out.checkpoints) x *= law.granularity;
  out.expected_recompute = law.tokens_of(p.expected_recompute);
  return out;
}

/// The fewest m ≤ budget checkpoints whose optimal E[r](m) is within a factor (1 + tolerance) of
/// E[r](budget) for `law` (read off `optimal_frontier`); 0 when the law has no mass a checkpoint
/// can serve.
/// @throws invalid_argument for a negative or non-finite tolerance.
inline std::size_t frontier_budget(const entry_block_law& law, std::size_t budget,
                                   double tolerance) {
  if (!(tolerance >= 0.0 && tolerance < 1e300))
    detail::throw_invalid("tolerance", tolerance, "must be finite and >= 0");
  if (!(law.total > 0.0)) return 0;  // no checkpoint can serve any depth
  const std::size_t m = budget < law.mass.size() ? budget : law.mass.size();
  if (m == 0) return 0;
  const auto f = optimal_frontier(law.mass, m);
  const double limit = (1.0 + tolerance) * law.tokens_of(f.back());
  std::size_t k = 0;
  while (k < m && law.tokens_of(f[k]) > limit * (1.0 + 1e-12)) ++k;
  return k;
}

HYBRIDCACHE_NAMESPACE_END
