#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Batched (multi-head) paths: a layer has H heads with independent states, so summaries and
/// splices of the heads are independent and run on several threads (std::thread; the calling
/// thread takes part). Results are identical to the single-head calls, head by head.

#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/compose.hpp"
#include "hybridcache/state/detail/parallel.hpp"
#include "hybridcache/state/summarize.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace state {

struct batch_options {
  std::size_t threads = 0;  ///< 0: std::thread::hardware_concurrency()
  summarize_options summarize{};
};

/// Summaries of H heads' segments (one token_inputs per head).
/// @throws invalid_argument as `summarize` (the first failing head's error).
template <class Real>
std::vector<segment_summary<Real>> summarize_heads(std::span<const token_inputs<Real>> heads,
                                                   rule r, const batch_options& opts = {}) {
  std::vector<segment_summary<Real>> out(heads.size());
  detail::parallel_for(heads.size(), opts.threads,
                       [&](std::size_t h) { out[h] = summarize(heads[h], r, opts.summarize); });
  return out;
}

/// HYPIC eq. 6 for H heads: head h applies runs[h] to its dk·dv slice of `prefix_states`
/// (H·dk·dv values, head-major). Returns the H·dk·dv running states.
/// @throws invalid_argument on count or shape mismatches.
template <class Real>
std::vector<Real> apply_heads(std::span<const std::vector<segment_summary<Real>>> runs,
                              std::span<const std::type_identity_t<Real>> prefix_states,
                              const batch_options& opts = {}) {
  const std::size_t H = runs.size();
  if (H == 0) return {};
  if (runs[0].empty())
    detail::throw_invalid("runs[0].size()", 0, "each head needs at least one summary");
  const std::size_t n = runs[0][0].dk() * runs[0][0].dv();
  const std::size_t total = checked_mul(H, n, "heads", "dk * dv");
  if (prefix_states.size() != total)
    detail::throw_invalid("prefix_states.size()", prefix_states.size(),
                          "must equal heads*dk*dv = " + std::to_string(total));
  std::vector<Real> out(total);
  detail::parallel_for(H, opts.threads, [&](std::size_t h) {
    const auto res = state::apply(std::span<const segment_summary<Real>>(runs[h]),
                           prefix_states.subspan(h * n, n));
    std::copy(res.begin(), res.end(), out.begin() + static_cast<std::ptrdiff_t>(h * n));
  });
  return out;
}

}  // namespace state
HYBRIDCACHE_NAMESPACE_END
