// SPDX-License-Identifier: Apache-2.0
// Dispatch the cold segments of one request over 3 prefill workers (HYPIC §4.4): LPT on token
// counts, then the cost model with a quadratic attention term, a hit cached on worker 2, and the
// pipelined send order that decides when the combine node can start.
#include <cstdio>
#include <hybridcache/dispatch.hpp>
#include <vector>

int main() {
  namespace hc = hybridcache;
  // Token counts of ten passages.
  const std::vector<double> tokens{2400, 1800, 3100, 900, 2700, 1500, 2200, 1200, 600, 2000};

  // 1. Plain LPT (HYPIC eq. 9) and the exact optimum for comparison.
  const hc::assignment lpt = hc::lpt_assign(tokens, 3);
  const hc::assignment opt = hc::exact_assign(tokens, 3);
  std::printf("LPT makespan %.0f tokens, optimum %.0f (gap %.2f%%)\n", lpt.makespan, opt.makespan,
              100.0 * (lpt.makespan / opt.makespan - 1.0));
  for (std::size_t i = 0; i < tokens.size(); ++i)
    std::printf("  segment %zu (%4.0f tokens) -> worker %zu\n", i, tokens[i], lpt.worker_of[i]);

  // 2. Cost model: 1 unit/token + 5e-5 units/token² (attention layers) + 40 units of launch
  //    overhead; shipping outputs to the combine node costs 0.3 units/token. Segment 7 is
  //    already cached on worker 1; worker 2 is a slower GPU (speed 0.5).
  const hc::prefill_cost_model model{.per_token = 1.0, .per_token_sq = 5e-5, .overhead = 40.0,
                                     .transfer_per_token = 0.3};
  std::vector<hc::segment_job> jobs;
  for (double t : tokens) jobs.push_back({static_cast<std::size_t>(t), hc::no_worker});
  jobs[7].cached_on = 1;
  const std::vector<double> speeds{1.0, 1.0, 0.5};
  const hc::segment_dispatch d = hc::dispatch_segments(jobs, speeds, model);

  // 3. Pipelined transfer: each worker sends a segment as soon as it is done.
  const hc::pipeline_plan longest = hc::pipeline_schedule(d, hc::send_order::longest_first);
  const hc::pipeline_plan johnson = hc::pipeline_schedule(d, hc::send_order::johnson);
  std::printf("compute makespan %.0f; combine node waits %.0f (longest first), %.0f (Johnson), "
              "%.0f without pipelining\n",
              d.plan.makespan, longest.combine_wait, johnson.combine_wait, longest.batched_wait);
  std::printf("segment 7 %s\n", d.hit[7] ? "is served from worker 1's cache" : "is recomputed");
  return johnson.combine_wait <= longest.combine_wait && longest.combine_wait <= longest.batched_wait &&
                 lpt.makespan <= hc::lpt_ratio_bound(3) * opt.makespan
             ? 0
             : 1;
}
