#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Synthetic overlap-depth laws shaped like the three data sets of the sparse prefix caching
/// paper (its Fig. 1), for demos, tests and benchmarks when no trace is at hand:
/// - `document_qa` (QuALITY-like): a sharp spike just below the full document length (questions
///   diverge after the shared document), plus a thin early tail of requests that diverge inside it;
/// - `system_prompts`: most mass at short depths (many users share only the first part of a long
///   system prompt), decaying exponentially, with a small bump at the prompt's end;
/// - `multimodal` (NarrativeQA-like): a wide spread with three modes;
/// - `uniform`: p_t = 1/N (Theorem 1's setting).
/// Each law is a fixed closed form (no randomness): w_t for t = 1..N, normalised to sum to 1.

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/detail/normalise.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The built-in overlap shapes.
enum class overlap_shape { document_qa, system_prompts, multimodal, uniform };

/// A short name for tables: "document-qa", "system-prompts", "multimodal", "uniform".
constexpr std::string_view to_string(overlap_shape s) noexcept {
  switch (s) {
    case overlap_shape::document_qa:
      return "document-qa";
    case overlap_shape::system_prompts:
      return "system-prompts";
    case overlap_shape::multimodal:
      return "multimodal";
    case overlap_shape::uniform:
      return "uniform";
  }
  return "?";
}

/// The law of `shape` on depths 1..n (see the file comment), summing to 1.
/// @throws invalid_argument if n == 0.
inline std::vector<double> synthetic_overlap(overlap_shape shape, std::size_t n) {
  if (n == 0) detail::throw_invalid("n", n, "the prefix length must be >= 1");
  std::vector<double> w(checked_count<double>(n, "n"));
  const double nn = static_cast<double>(n);
  auto bump = [](double u, double mu, double sigma) {
    const double z = (u - mu) / sigma;
    return std::exp(-0.5 * z * z);
  };
  for (std::size_t i = 0; i < n; ++i) {
    const double u = (static_cast<double>(i) + 0.5) / nn;  // depth as a fraction of N
    switch (shape) {
      case overlap_shape::document_qa:
        w[i] = 0.9 * bump(u, 0.975, 0.008) / 0.008 + 0.1;
        break;
      case overlap_shape::system_prompts:
        w[i] = std::exp(-u / 0.06) / 0.06 + 0.8 * bump(u, 0.35, 0.01) / 0.01 * 0.05 + 0.02;
        break;
      case overlap_shape::multimodal:
        w[i] = 0.4 * bump(u, 0.18, 0.05) / 0.05 + 0.35 * bump(u, 0.52, 0.08) / 0.08 +
               0.25 * bump(u, 0.86, 0.03) / 0.03 + 0.05;
        break;
      case overlap_shape::uniform:
        w[i] = 1.0;
        break;
    }
  }
  detail::normalise(w);
  return w;
}

HYBRIDCACHE_NAMESPACE_END
