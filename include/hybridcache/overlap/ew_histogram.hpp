#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Exponentially weighted overlap-depth histogram (§4.2 of the sparse prefix caching paper):
///   p̂_t = (1 − γ)/(1 − γ^n) · Σ_{s=1..n} γ^{n−s} [T_s = t],
/// which tracks a drifting overlap law (the paper uses γ = 0.99 and re-solves every 10 requests).
///
/// Implementation: instead of multiplying every bin by γ per observation (O(N)), observation s
/// adds γ^{−s'} where s' counts steps since the start of the current *epoch*; only ratios matter.
/// An epoch ends after L steps, L chosen so that γ^{−L} ≈ 2^600 (L = ∞ for γ = 1): then the scale
/// is reset to 1 and older weights are worth f = γ^L ≈ 2^−600 of their face value. Each bin
/// remembers the epoch of its last update and is rescaled lazily when next touched (×f one epoch
/// back, ×0 two or more: those weights are below 2^−1200 relative to the current increment, beneath
/// double resolution). So `observe` is O(1) worst case, and every stored number stays below
/// ~2^600/(1−γ): finite after any number of observations (no γ^{−n} growth). The increment is
/// re-anchored to exp(s'·ln(1/γ)) every 4096 steps, so its rounding error stays below ~4096 ulp.
///
/// Depth 0 is a miss and is weighed in the same way but kept apart from the depth bins;
/// `pmf()` is the distribution over depths 1..max_depth given a hit.
///
/// @code
///   hybridcache::ew_histogram h(4096);          // γ = 0.99
///   for (std::size_t d : depths) h.observe(d);  // 0 = miss
///   auto plan = hybridcache::place_optimal(h.pmf(), 8);
/// @endcode

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/detail/normalise.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Exponentially weighted histogram of overlap depths 0..max_depth (0 = miss).
class ew_histogram {
 public:
  /// Smallest accepted γ: 2⁻¹⁰²², the smallest normal double (see the constructor).
  static constexpr double min_gamma = std::numeric_limits<double>::min();

  /// @param max_depth largest depth that can be observed (the cached prefix length N), ≥ 1.
  /// @param gamma decay per observation, in [`min_gamma`, 1] = [2⁻¹⁰²², 1]; 1 gives equal weights
  ///        (the empirical law). Below 2⁻¹⁰²² (the smallest normal double) 1/γ overflows and the
  ///        newest observation's weight γ·1 underflows, so every weight would read 0.
  /// @throws invalid_argument for max_depth == 0 or gamma outside [min_gamma, 1] (NaN included).
  explicit ew_histogram(std::size_t max_depth, double gamma = 0.99) : gamma_(gamma) {
    if (max_depth == 0) detail::throw_invalid("max_depth", max_depth, "must be >= 1");
    if (!(gamma >= min_gamma && gamma <= 1.0)) {
      detail::throw_invalid("gamma", gamma,
                            "the decay must lie in [2^-1022, 1] (smaller gammas underflow every "
                            "weight to 0)");
    }
    (void)checked_count<bin>(max_depth, "max_depth");
    bins_.assign(max_depth, bin{});
    log_inv_gamma_ = -std::log(gamma);
    inv_gamma_ = 1.0 / gamma;
    if (log_inv_gamma_ > 0.0) {
      const double steps = 600.0 * std::log(2.0) / log_inv_gamma_;
      epoch_length_ = steps >= 1e18 ? std::numeric_limits<std::uint64_t>::max()
                                    : static_cast<std::uint64_t>(steps < 1.0 ? 1.0 : steps);
    }
  }

  /// Records one request that reused `depth` tokens (0: a miss). O(1).
  /// @throws invalid_argument if depth > max_depth (never clipped silently).
  void observe(std::size_t depth) {
    if (HYBRIDCACHE_DETAIL_UNLIKELY(depth > bins_.size())) {
      detail::throw_invalid("depth", depth, "exceeds max_depth = " + std::to_string(bins_.size()));
    }
    if (depth == 0) {
      miss_ += increment_;
    } else {
      bin& b = bins_[depth - 1];
      if (HYBRIDCACHE_DETAIL_UNLIKELY(b.stamp != epoch_)) {
        b.weight = b.stamp + 1 == epoch_ ? b.weight * carry_ : 0.0;
        b.stamp = epoch_;
      }
      b.weight += increment_;
    }
    ++observations_;
    ++step_;
    increment_ *= inv_gamma_;
    if (HYBRIDCACHE_DETAIL_UNLIKELY((step_ & 4095u) == 0 || step_ == epoch_length_)) advance();
  }

  [[nodiscard]] std::size_t max_depth() const noexcept { return bins_.size(); }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
  /// Number of observations so far, misses included.
  [[nodiscard]] std::uint64_t observations() const noexcept { return observations_; }

  /// Exponentially weighted share of misses, p̂_0 (0 before any observation).
  [[nodiscard]] double miss_rate() const noexcept {
    const double hits = hit_weight();
    const double total = hits + miss_;
    return total == 0.0 ? 0.0 : miss_ / total;
  }

  /// p̂_t / (1 − p̂_0) for t = 1..max_depth: the weighted law of the depth given a hit, summing to 1
  /// (all zero before the first hit). A snapshot, O(N).
  [[nodiscard]] std::vector<double> pmf() const {
    std::vector<double> p(bins_.size());
    for (std::size_t i = 0; i < bins_.size(); ++i) p[i] = current(i);
    detail::normalise(p);  // subnormal-safe
    return p;
  }

  /// The weights themselves, p̂_t (t = 1..max_depth) as in the formula of the file comment: they
  /// sum to 1 − p̂_0 (all zero before the first hit). O(N).
  [[nodiscard]] std::vector<double> weights() const {
    // Normalise bins and the miss weight together (subnormal-safe), then drop the miss.
    std::vector<double> p(bins_.size() + 1);
    for (std::size_t i = 0; i < bins_.size(); ++i) p[i] = current(i);
    p.back() = miss_;
    detail::normalise(p);
    p.pop_back();
    return p;
  }

 private:
  [[nodiscard]] double current(std::size_t i) const noexcept {
    const bin& b = bins_[i];
    if (b.stamp == epoch_) return b.weight;
    return b.stamp + 1 == epoch_ ? b.weight * carry_ : 0.0;
  }
  [[nodiscard]] double hit_weight() const noexcept {
    double s = 0.0;
    for (std::size_t i = 0; i < bins_.size(); ++i) s += current(i);
    return s;
  }
  void advance() noexcept {
    if (step_ == epoch_length_) {
      // New epoch: today's increment becomes 1; everything older is worth 1/increment.
      carry_ = 1.0 / increment_;
      miss_ *= carry_;
      increment_ = 1.0;
      step_ = 0;
      ++epoch_;
    } else {
      increment_ = std::exp(static_cast<double>(step_) * log_inv_gamma_);
    }
  }

  // A bin's weight (in the scale of its epoch) and that epoch side by side: one cache line
  // touched per observation.
  struct bin {
    double weight = 0.0;
    std::uint64_t stamp = 0;
  };
  std::vector<bin> bins_;
  double gamma_;
  double inv_gamma_ = 1.0;
  double log_inv_gamma_ = 0.0;
  double increment_ = 1.0;  // γ^{−step_}
  double carry_ = 0.0;      // factor from the previous epoch's scale to the current one
  double miss_ = 0.0;
  std::uint64_t epoch_ = 0;
  std::uint64_t step_ = 0;
  std::uint64_t epoch_length_ = std::numeric_limits<std::uint64_t>::max();
  std::uint64_t observations_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
