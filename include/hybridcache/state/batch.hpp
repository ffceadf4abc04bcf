#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Batched (multi-head) paths: a layer has H heads with independent states, so summaries and
/// splices of the heads are independent and may run in parallel. A header library does not start
/// threads behind an engine's back: by default (`threads = 1`) the heads run serially on the
/// calling thread; `threads = n` runs them on n std::threads (the caller's included; 0: hardware
/// concurrency), and an `executor` hands them to the engine's own thread pool instead. Results
/// are identical to the single-head calls, head by head, whichever runs them.

#include <cstddef>
#include <functional>
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

/// A caller-supplied executor: `executor(n, task)` must call `task(i)` once for every i < n, on
/// any threads (an engine's pool), and return when every call has returned. Exceptions from
/// `task` are captured by the library and rethrown from the batched call.
using bulk_executor =
    std::function<void(std::size_t n, const std::function<void(std::size_t)>& task)>;

/// Who runs the heads of a batched call, and how each is summarised.
struct batch_options {
  /// Threads when no executor is given: 1 (default) serial on the calling thread, n > 1 that many
  /// std::threads (the caller's included), 0 std::thread::hardware_concurrency().
  std::size_t threads = 1;
  summarize_options summarize{};
  bulk_executor executor{};  ///< when set, runs the heads instead (`threads` is then ignored)
};

/// Summaries of H heads' segments (one token_inputs per head).
/// @throws invalid_argument as `summarize` (the first failing head's error).
template <class Real>
std::vector<segment_summary<Real>> summarize_heads(std::span<const token_inputs<Real>> heads,
                                                   transition_rule r,
                                                   const batch_options& opts = {}) {
  std::vector<segment_summary<Real>> out(heads.size());
  detail::parallel_for(heads.size(), opts.threads, opts.executor,
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
  detail::parallel_for(H, opts.threads, opts.executor, [&](std::size_t h) {
    const auto res = hybridcache::apply(std::span<const segment_summary<Real>>(runs[h]),
                                        prefix_states.subspan(h * n, n));
    std::copy(res.begin(), res.end(), out.begin() + static_cast<std::ptrdiff_t>(h * n));
  });
  return out;
}

HYBRIDCACHE_NAMESPACE_END
