#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The empirical overlap-depth histogram p̂_t = (1/n_hit)·#{s : T_s = t}, the plug-in estimate of
/// §4.2 of the sparse prefix caching paper (Lemma 1 bounds the recompute it costs).
///
/// Depths are 0..max_depth: depth 0 is a miss (the request shares nothing with the cached prefix)
/// and is counted apart; `pmf()` is the distribution over depths 1..max_depth given a hit, the
/// planner's input.
///
/// @code
///   hybridcache::empirical_histogram h(4096);
///   h.observe(4096);  h.observe(100);  h.observe(0);
///   auto plan = hybridcache::place_optimal(h.pmf(), 2);
/// @endcode

#include <cstddef>
#include <cstdint>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Counts of observed overlap depths (every observation weighs the same).
class empirical_histogram {
 public:
  /// @throws invalid_argument if max_depth == 0.
  explicit empirical_histogram(std::size_t max_depth) {
    if (max_depth == 0) detail::throw_invalid("max_depth", max_depth, "must be >= 1");
    counts_.assign(checked_count<std::uint64_t>(max_depth, "max_depth"), 0);
  }

  /// Records one request that reused `depth` tokens (0: a miss). O(1).
  /// @throws invalid_argument if depth > max_depth (never clipped silently).
  void observe(std::size_t depth) {
    if (HYBRIDCACHE_DETAIL_UNLIKELY(depth > counts_.size())) {
      detail::throw_invalid("depth", depth,
                            "exceeds max_depth = " + std::to_string(counts_.size()));
    }
    if (depth == 0) {
      ++misses_;
    } else {
      ++counts_[depth - 1];
    }
  }

  [[nodiscard]] std::size_t max_depth() const noexcept { return counts_.size(); }
  /// All observations, misses included.
  [[nodiscard]] std::uint64_t observations() const noexcept { return hits_total() + misses_; }
  [[nodiscard]] std::uint64_t misses() const noexcept { return misses_; }
  /// Count of depth t (1..max_depth) at index t−1.
  [[nodiscard]] const std::vector<std::uint64_t>& counts() const noexcept { return counts_; }
  /// Share of misses among all observations (0 before any observation).
  [[nodiscard]] double miss_rate() const noexcept {
    const std::uint64_t n = observations();
    return n == 0 ? 0.0 : static_cast<double>(misses_) / static_cast<double>(n);
  }
  /// p̂_t for t = 1..max_depth given a hit (sums to 1; all zero before the first hit). O(N).
  [[nodiscard]] std::vector<double> pmf() const {
    std::vector<double> p(counts_.size(), 0.0);
    const std::uint64_t hits = hits_total();
    if (hits == 0) return p;
    const double inv = 1.0 / static_cast<double>(hits);
    for (std::size_t i = 0; i < counts_.size(); ++i) p[i] = static_cast<double>(counts_[i]) * inv;
    return p;
  }

 private:
  [[nodiscard]] std::uint64_t hits_total() const noexcept {
    std::uint64_t s = 0;
    for (auto c : counts_) s += c;
    return s;
  }
  std::vector<std::uint64_t> counts_;
  std::uint64_t misses_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
