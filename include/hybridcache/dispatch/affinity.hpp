#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Cost-model LPT with per-worker speed and cache-hit affinity.
///
/// HYPIC's router probes every segment's hit status and LPT-dispatches the misses (Fig. 9), while
/// hit segments are pulled from the peer that holds them. Here both kinds go through one greedy:
/// a segment of L tokens costs, on worker w,
///
///     p(i, w) = transfer(L)              if the segment is already cached on w (a hit there)
///             = cost(L) / speed_w        otherwise (prefill it from its own tokens)
///
/// Segments are visited in descending nominal cost `cost(L)` (ties: lower index) and each goes to
/// the worker that would finish it first, load_w + p(i, w) (ties: lower worker). A hit therefore
/// stays on its holder unless the holder is so busy that recomputing elsewhere finishes earlier.

#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/dispatch/cost_model.hpp"
#include "hybridcache/dispatch/lpt.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Marks a segment cached on no worker (a cold miss).
inline constexpr std::size_t no_worker = std::numeric_limits<std::size_t>::max();

/// One segment to dispatch: its token count and the worker that already caches it, if any.
struct segment_job {
  std::size_t tokens = 0;
  std::size_t cached_on = no_worker;
};

/// A dispatch under the cost model. `plan` is the assignment (loads in time units);
/// `compute[i]` is the compute time of segment i on its worker (0 when served from that worker's
/// cache), `transfer[i]` the time to ship its outputs to the combine node, `hit[i]` whether it is
/// served from cache. `compute`/`transfer` are the two stages `pipeline_schedule` takes.
struct segment_dispatch {
  assignment plan;
  std::vector<double> compute;
  std::vector<double> transfer;
  std::vector<bool> hit;
};

/// Dispatches `jobs` over workers with `speeds` under `model` (see the file comment).
/// @throws invalid_argument for an empty or non-positive `speeds`, an invalid model, or a
///         `cached_on` that is neither `no_worker` nor a valid worker index.
inline segment_dispatch dispatch_segments(std::span<const segment_job> jobs,
                                          std::span<const double> speeds,
                                          const prefill_cost_model& model) {
  detail::check_speeds(speeds);
  model.validate();
  const std::size_t n = jobs.size(), m = speeds.size();
  std::vector<double> nominal(n);
  for (std::size_t i = 0; i < n; ++i) {
    if (jobs[i].cached_on != no_worker && jobs[i].cached_on >= m) {
      detail::throw_invalid(detail::indexed("jobs", i) + ".cached_on", jobs[i].cached_on,
                            "worker index out of range for " + std::to_string(m) + " workers");
    }
    nominal[i] = model.cost(jobs[i].tokens);
  }
  segment_dispatch out;
  out.plan.worker_of.assign(n, 0);
  out.plan.load.assign(m, 0.0);
  out.compute.assign(n, 0.0);
  out.transfer.assign(n, 0.0);
  out.hit.assign(n, false);
  for (std::size_t i : detail::descending_order(nominal)) {
    const double xfer = model.transfer(jobs[i].tokens);
    std::size_t best = 0;
    double best_finish = std::numeric_limits<double>::infinity();
    for (std::size_t w = 0; w < m; ++w) {
      const double p = jobs[i].cached_on == w ? xfer : nominal[i] / speeds[w];
      const double finish = out.plan.load[w] + p;
      if (finish < best_finish) {
        best_finish = finish;
        best = w;
      }
    }
    out.plan.worker_of[i] = best;
    out.plan.load[best] = best_finish;
    out.hit[i] = jobs[i].cached_on == best;
    out.compute[i] = out.hit[i] ? 0.0 : nominal[i] / speeds[best];
    out.transfer[i] = xfer;
  }
  out.plan.makespan = detail::max_load(out.plan.load);
  return out;
}

HYBRIDCACHE_NAMESPACE_END
