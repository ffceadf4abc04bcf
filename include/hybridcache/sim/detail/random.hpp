#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// A small, portable pseudo-random source for the trace generators.
///
/// The standard distributions (`std::exponential_distribution`, ...) are implementation-defined,
/// so the same seed gives different traces under libstdc++ and libc++. Every draw here is
/// specified bit for bit: SplitMix64 (Steele, Lea & Flood 2014) for the 64-bit stream, the top 53
/// bits for a uniform double in [0, 1), inversion for the exponential, a cumulative table for
/// Zipf. A seed therefore names one trace on every platform.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// SplitMix64: x_{k+1} = x_k + 0x9E3779B97F4A7C15, output = mix(x_{k+1}).
class rng {
 public:
  explicit rng(std::uint64_t seed) noexcept : state_(seed) {}

  std::uint64_t next() noexcept {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform integer in [0, n) for 0 < n < 2^53: ⌊U·n⌋ with the 53-bit U above.
  std::uint64_t below(std::uint64_t n) noexcept {
    const auto v = static_cast<std::uint64_t>(uniform() * static_cast<double>(n));
    return v < n ? v : n - 1;
  }
  /// Uniform integer in [lo, hi] (lo <= hi).
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) noexcept { return lo + below(hi - lo + 1); }
  /// Exponential with the given rate (> 0), by inversion: −ln(1 − U)/rate.
  double exponential(double rate) noexcept { return -std::log1p(-uniform()) / rate; }

 private:
  std::uint64_t state_;
};

/// Derives an independent stream seed from (seed, stream id).
inline std::uint64_t derive_seed(std::uint64_t seed, std::uint64_t stream) noexcept {
  rng r(seed ^ (stream * 0xD1B54A32D192ED03ULL));
  return r.next();
}

/// Zipf popularity over n items: P(i) ∝ 1 / (i + 1)^s, sampled through its cumulative table.
/// s = 0 is uniform.
class zipf {
 public:
  zipf(std::size_t n, double s) : cdf_(n) {
    double acc = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      acc += 1.0 / std::pow(static_cast<double>(i + 1), s);
      cdf_[i] = acc;
    }
    for (auto& c : cdf_) c /= acc;
  }
  std::size_t operator()(rng& r) const noexcept {
    const double u = r.uniform();
    auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
    return it == cdf_.end() ? cdf_.size() - 1 : static_cast<std::size_t>(it - cdf_.begin());
  }
  [[nodiscard]] std::size_t size() const noexcept { return cdf_.size(); }

 private:
  std::vector<double> cdf_;
};

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
