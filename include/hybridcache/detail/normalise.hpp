#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Subnormal-safe scaling of non-negative weights (shared by placement/ and overlap/).
///
/// Weights are brought to a common scale by an exact power of two s = 2^{−ilogb(max w)}, so the
/// largest becomes 1 ≤ s·max w < 2 and ratios are unchanged. For a subnormal maximum the exponent
/// −ilogb is up to 1074 and 2^1074 itself overflows a double, so s is applied as two factors
/// 2^{⌊e/2⌋} · 2^{e−⌊e/2⌋}, each finite; multiplying by a power of two is exact unless the result
/// leaves the normal range, so s·w is exact for every w that does not underflow.

#include <cmath>
#include <cstddef>
#include <span>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// The exact power-of-two scale s = hi · lo of the file comment.
struct unit_scale {
  double hi = 1.0;
  double lo = 1.0;
  [[nodiscard]] double operator()(double w) const noexcept { return w * hi * lo; }
};

/// The scale that maps `max_w` (finite, > 0) into [1, 2).
[[nodiscard]] inline unit_scale scale_to_unit(double max_w) noexcept {
  const int e = -std::ilogb(max_w);
  const int half = e / 2;
  return unit_scale{std::ldexp(1.0, half), std::ldexp(1.0, e - half)};
}

/// Divides `xs` (finite, ≥ 0) by their sum after scaling them to unit size, so all-subnormal
/// inputs give the same pmf as their normal multiples. Leaves all-zero input unchanged.
inline void normalise(std::span<double> xs) noexcept {
  double max_w = 0.0;
  for (double x : xs)
    if (x > max_w) max_w = x;
  if (!(max_w > 0.0)) return;
  const unit_scale s = scale_to_unit(max_w);
  double sum = 0.0;
  for (double& x : xs) {
    x = s(x);
    sum += x;
  }
  const double inv = 1.0 / sum;  // sum ∈ [1, 2N): finite and normal
  for (double& x : xs) x *= inv;
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
