#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Per-worker send order and the combine node's wait under pipelined transfer.
///
/// HYPIC §4.4 ("Pipelining computation and transfer"): instead of shipping all of a worker's
/// segments after the last one finishes (a synchronised burst that stalls the combine node), each
/// worker finalises one segment at a time and starts its transfer at once, overlapping it with the
/// next segment's compute (a separate copy stream). For segment k in a worker's order, with compute
/// time a_k and transfer time b_k, the worker is a two-stage flow shop:
///
///     C_k = C_{k−1} + a_k                  (compute finishes)
///     D_k = max(C_k, D_{k−1}) + b_k        (outputs arrive at the combine node; one link/worker)
///
/// The combine node can start when every worker's last output has arrived: wait = max_w D_last(w).
/// Without pipelining a worker's outputs arrive at Σa + Σb. The paper orders each worker's queue
/// longest first; Johnson's rule (Johnson 1954) — segments with a < b by ascending a, then the rest
/// by descending b — minimises D_last for a worker exactly (F2||Cmax), and is offered as well.

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/dispatch/affinity.hpp"
#include "hybridcache/dispatch/lpt.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// How a worker orders its own queue.
enum class send_order {
  longest_first,  ///< descending compute time (HYPIC); ties: lower segment index
  johnson,        ///< Johnson's rule: optimal last arrival per worker
};

/// A pipelined schedule. `order[w]` lists worker w's segments in execution order;
/// `compute_done[i]` / `arrival[i]` are when segment i's compute finishes / its outputs land at the
/// combine node; `worker_ready[w]` is worker w's last arrival (0 if idle). `combine_wait` is
/// max_w worker_ready[w], the time the combine node waits for its inputs; `batched_wait` is that
/// time when every worker sends only after its last compute (no pipelining), for comparison.
struct pipeline_plan {
  std::vector<std::vector<std::size_t>> order;
  std::vector<double> compute_done;
  std::vector<double> arrival;
  std::vector<double> worker_ready;
  double combine_wait = 0.0;
  double batched_wait = 0.0;
};

namespace detail {
/// Orders one worker's segments by `rule`.
inline void order_queue(std::vector<std::size_t>& q, std::span<const double> a,
                        std::span<const double> b, send_order rule) {
  if (rule == send_order::longest_first) {
    std::stable_sort(q.begin(), q.end(), [&](std::size_t x, std::size_t y) { return a[x] > a[y]; });
    return;
  }
  // Johnson: first the set a < b by ascending a, then a >= b by descending b (stable on index).
  auto mid = std::stable_partition(q.begin(), q.end(), [&](std::size_t x) { return a[x] < b[x]; });
  std::stable_sort(q.begin(), mid, [&](std::size_t x, std::size_t y) { return a[x] < a[y]; });
  std::stable_sort(mid, q.end(), [&](std::size_t x, std::size_t y) { return b[x] > b[y]; });
}
}  // namespace detail

/// Schedules each worker's segments (compute then transfer, pipelined; see the file comment).
/// @param worker_of worker of each segment (e.g. `assignment::worker_of`).
/// @param workers   number of workers.
/// @param compute   compute time of each segment on its worker.
/// @param transfer  transfer time of each segment's outputs to the combine node.
/// @throws invalid_argument on mismatched sizes, a worker index >= `workers`, `workers == 0`, or
///         a negative/non-finite time.
inline pipeline_plan pipeline_schedule(std::span<const std::size_t> worker_of, std::size_t workers,
                                       std::span<const double> compute,
                                       std::span<const double> transfer,
                                       send_order rule = send_order::longest_first) {
  if (workers == 0) detail::throw_invalid("workers", workers, "need at least one worker");
  (void)checked_count<std::vector<std::size_t>>(workers, "workers");  // one queue per worker
  const std::size_t n = worker_of.size();
  if (compute.size() != n)
    detail::throw_invalid("compute.size()", compute.size(), "must equal worker_of.size()");
  if (transfer.size() != n)
    detail::throw_invalid("transfer.size()", transfer.size(), "must equal worker_of.size()");
  detail::check_costs(compute, "compute");
  detail::check_costs(transfer, "transfer");
  pipeline_plan out;
  out.order.assign(workers, {});
  for (std::size_t i = 0; i < n; ++i) {
    if (worker_of[i] >= workers) {
      detail::throw_invalid(detail::indexed("worker_of", i), worker_of[i],
                            "worker index out of range for " + std::to_string(workers) + " workers");
    }
    out.order[worker_of[i]].push_back(i);
  }
  out.compute_done.assign(n, 0.0);
  out.arrival.assign(n, 0.0);
  out.worker_ready.assign(workers, 0.0);
  for (std::size_t w = 0; w < workers; ++w) {
    auto& q = out.order[w];
    detail::order_queue(q, compute, transfer, rule);
    double c = 0.0, d = 0.0, sum_b = 0.0;
    for (std::size_t i : q) {
      c += compute[i];
      d = std::max(c, d) + transfer[i];
      sum_b += transfer[i];
      out.compute_done[i] = c;
      out.arrival[i] = d;
    }
    out.worker_ready[w] = d;
    out.combine_wait = std::max(out.combine_wait, d);
    out.batched_wait = std::max(out.batched_wait, c + sum_b);
  }
  return out;
}

/// `pipeline_schedule` of a cost-model dispatch (its compute and transfer stages).
inline pipeline_plan pipeline_schedule(const segment_dispatch& d,
                                       send_order rule = send_order::longest_first) {
  return pipeline_schedule(d.plan.worker_of, d.plan.load.size(), d.compute, d.transfer, rule);
}

HYBRIDCACHE_NAMESPACE_END
