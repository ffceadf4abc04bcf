// SPDX-License-Identifier: Apache-2.0
// Example 01: choose where a serving engine should store recurrent (SSM / linear-attention)
// states along a cached prefix, from the overlap depths it observes.
//
//  1. feed each request's overlap depth into an exponentially weighted histogram, which
//     re-plans the optimal checkpoints every 10 requests (the sparse prefix caching paper's loop);
//  2. compare the optimal plan with the fixed grids engines use today;
//  3. print the whole budget/recompute trade-off in one DP pass.
#include <cstdio>
#include <random>
#include <vector>

#include <hybridcache/overlap.hpp>
#include <hybridcache/placement.hpp>

int main() {
  namespace hc = hybridcache;
  const std::size_t n = 4096;    // cached prefix length (tokens)
  const std::size_t block = 64;  // engines store state only at block boundaries
  const std::size_t budget = 4;  // recurrent-state slots per cached prefix

  // 1. Online: most requests reuse the whole document (questions after it), some diverge early.
  std::vector<std::size_t> plan_positions;
  hc::refresh_policy policy(n, budget,
                            [&](const hc::placement& p) { plan_positions = p.checkpoints; },
                            {.gamma = 0.99, .interval = 10, .placement = {.granularity = block}});
  std::mt19937 rng(1);
  std::normal_distribution<double> near_end(4000.0, 30.0);
  std::uniform_int_distribution<std::size_t> early(200, 1200);
  for (int request = 0; request < 1000; ++request) {
    std::size_t depth = request % 5 == 0 ? early(rng) : static_cast<std::size_t>(near_end(rng));
    if (request % 50 == 0) depth = 0;  // a miss: counted apart, never planned for
    policy.observe(depth < n ? depth : n);
  }
  std::printf("after %zu plans, checkpoints:", policy.plans());
  for (std::size_t c : plan_positions) std::printf(" %zu", c);
  std::printf("\n");

  // 2. Offline: the same law against the fixed strategies (all moved to block boundaries).
  const std::vector<double> law = policy.histogram().pmf();
  const hc::placement best = hc::place_optimal(law, budget, {.granularity = block});
  const auto balanced = hc::clip_to_granularity(hc::place_balanced(n, budget), block);
  const auto grid = hc::place_block(n, 1024);  // "every 1024 tokens": 4 slots as well
  std::printf("E[r] tokens  optimal %.1f   balanced %.1f   every-1024 %.1f   no cache %.1f\n",
              best.expected_recompute, hc::expected_recompute(law, balanced),
              hc::expected_recompute(law, grid), hc::no_cache_recompute(law));
  std::printf("savings of the optimal plan: %.1f%%\n", 100.0 * hc::savings(law, best.checkpoints));

  // 3. The whole frontier: E[r] for budgets 0..8 from one O(N·M) pass.
  const auto frontier = hc::optimal_frontier(law, 8, {.granularity = block});
  std::printf("budget:");
  for (std::size_t m = 0; m < frontier.size(); ++m) std::printf(" %zu:%.0f", m, frontier[m]);
  std::printf("\n");

  // The plan the policy handed over is the optimum for the law it saw last.
  const bool ok = best.checkpoints == plan_positions &&
                  best.expected_recompute <= hc::expected_recompute(law, balanced) &&
                  frontier[budget] == frontier[budget] /* finite */;
  return ok ? 0 : 1;
}
