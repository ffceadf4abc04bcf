#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The deterministic checkpoint placements of Table 1 of the sparse prefix caching paper, which
/// serving engines use today, plus `clip_to_granularity` to apply an engine's block constraint to
/// any of them. Every function returns strictly increasing positions in {1..N}.
///
/// | strategy | positions | tail recompute |
/// |---|---|---|
/// | none | ∅ | N |
/// | dense | 1, 2, …, N | 0 |
/// | balanced | ⌊i(N+1)/(M+1)⌋, i = 1..M | ⌈(N+1)/(M+1)⌉ − 1 |
/// | block | B, 2B, …, ⌊N/B⌋·B | N mod B |
/// | sqrt | block with B = ⌊√N⌋ | N mod ⌊√N⌋ |
/// | logarithmic | ⌊(N+1)^{i/(M+1)}⌋, i = 1..M, made strictly increasing | see below |
///
/// Logarithmic (the paper names it but does not define it): gaps grow geometrically from the
/// start of the prefix by the ratio ρ = (N+1)^{1/(M+1)}, so positions are evenly spaced in log t
/// between 1 and N+1. Where rounding makes two positions collide (M large relative to log N),
/// position i is raised to position i−1 plus one, and capped at N − (M − i) so all M fit.
///
/// @code
///   auto c = hybridcache::place_balanced(99, 3);   // {25, 50, 75}
/// @endcode

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// No checkpoint (the no-cache baseline; `n` is accepted for symmetry and must be ≥ 1).
inline std::vector<std::size_t> place_none(std::size_t n) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  return {};
}

/// A checkpoint at every token 1..N (E[r] = 0, the most memory).
inline std::vector<std::size_t> place_dense(std::size_t n) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  std::vector<std::size_t> c(checked_count<std::size_t>(n, "n"));
  for (std::size_t i = 0; i < c.size(); ++i) c[i] = i + 1;
  return c;
}

/// Balanced spacing ⌊i(N+1)/(M+1)⌋, i = 1..M: the optimum for uniform overlap and in the worst
/// case (Theorem 1). A budget ≥ N is clamped to N, which gives `place_dense(n)`.
inline std::vector<std::size_t> place_balanced(std::size_t n, std::size_t budget) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  const std::size_t m = budget < n ? budget : n;
  std::vector<std::size_t> c(checked_count<std::size_t>(m, "budget"));
  // ⌊i(N+1)/(M+1)⌋ = i·q + ⌊i·ρ/(M+1)⌋ with N+1 = q(M+1) + ρ (`detail::divmod_succ`: no N+1,
  // which wraps for N = SIZE_MAX); i·q ≤ N+1 and i·ρ < (M+1)² is taken in 128 bits.
  const auto [q, rho] = detail::divmod_succ(n, m + 1);
  for (std::size_t i = 1; i <= m; ++i)
    c[i - 1] = i * q + static_cast<std::size_t>(detail::uint128(i) * rho / (m + 1));
  return c;
}

/// A fixed grid B, 2B, …, ⌊N/B⌋·B (vLLM/SGLang-style block storage).
/// @throws invalid_argument if block == 0.
inline std::vector<std::size_t> place_block(std::size_t n, std::size_t block) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  if (block == 0) detail::throw_invalid("block", block, "must be >= 1");
  const std::size_t count = checked_count<std::size_t>(n / block, "n / block");
  std::vector<std::size_t> c(count);
  // i·B ≤ N for i ≤ ⌊N/B⌋: no running sum that could wrap past SIZE_MAX (`p += block` would).
  for (std::size_t i = 0; i < count; ++i) c[i] = (i + 1) * block;
  return c;
}

/// The √N grid: `place_block(n, ⌊√N⌋)`.
inline std::vector<std::size_t> place_sqrt(std::size_t n) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  auto s = static_cast<std::size_t>(std::sqrt(static_cast<double>(n)));
  // ⌊√N⌋ by integer correction, comparing s ≤ N/s instead of s·s ≤ N (which wraps near 2⁶⁴).
  while (s > 1 && s > n / s) --s;
  while (s + 1 <= n / (s + 1)) ++s;
  return place_block(n, s);
}

/// Geometrically growing gaps from the start (see the file comment). A budget ≥ N is clamped to
/// N (dense).
inline std::vector<std::size_t> place_logarithmic(std::size_t n, std::size_t budget) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  const std::size_t m = budget < n ? budget : n;
  std::vector<std::size_t> c(checked_count<std::size_t>(m, "budget"));
  const double log_span = std::log(static_cast<double>(n) + 1.0);
  std::size_t prev = 0;
  for (std::size_t i = 1; i <= m; ++i) {
    const double x = std::exp(log_span * static_cast<double>(i) / static_cast<double>(m + 1));
    auto p = static_cast<std::size_t>(x);
    if (p <= prev) p = prev + 1;
    const std::size_t cap = n - (m - i);
    if (p > cap) p = cap;
    c[i - 1] = p;
    prev = p;
  }
  return c;
}

/// Moves every position down to its block boundary (⌊c/B⌋·B, as the paper's experiments do for
/// all strategies), dropping positions that fall to 0 and duplicates.
/// @throws invalid_argument if granularity == 0.
inline std::vector<std::size_t> clip_to_granularity(std::span<const std::size_t> checkpoints,
                                                    std::size_t granularity) {
  if (granularity == 0) detail::throw_invalid("granularity", granularity, "must be >= 1");
  std::vector<std::size_t> out;
  out.reserve(checkpoints.size());
  for (std::size_t c : checkpoints) {
    const std::size_t p = c / granularity * granularity;
    if (p != 0 && (out.empty() || out.back() < p)) out.push_back(p);
  }
  return out;
}

HYBRIDCACHE_NAMESPACE_END
