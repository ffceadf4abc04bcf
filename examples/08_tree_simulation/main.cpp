// SPDX-License-Identifier: Apache-2.0
// The tree scenario in a few lines (docs/tree_simulation.md): a synthetic multi-turn trace, every
// state policy at two budgets, tokens recomputed and token hit rate per policy, and request by
// request which candidate the library's row followed.
#include <cstdio>
#include <hybridcache/sim/tree.hpp>

int main() {
  namespace hc = hybridcache;
  hc::multi_turn_options mt;
  mt.sessions = 100;  // ~550 requests of multi-turn sessions over 4 shared system prompts
  const hc::tree_trace trace = hc::synthetic_multi_turn(mt);

  hc::tree_options o;
  o.budgets = {8, 32};   // states in the pool (9 MiB each for the default model)
  o.request_log = true;  // also keep every request's outcome (`simulate --tree-requests`)
  const hc::tree_result r = hc::simulate_tree(trace, o);

  std::printf("%s: %zu requests, %zu nodes of %zu tokens\n", r.trace.c_str(), r.requests, r.nodes,
              r.block);
  std::printf("%-26s %4s %14s %8s\n", "policy", "M", "recomputed", "hit");
  for (const auto& m : r.rows) {
    std::printf("%-26s %4zu %14.0f %7.1f%%\n", m.policy.c_str(), m.budget, m.recomputed_tokens,
                100.0 * m.hit_rate);
    if (m.states_peak > m.budget) return 1;  // the pool never exceeds its budget
    // Request by request: the tokens recomputed add up to the row's total.
    double recomputed = 0.0;
    for (const auto& q : m.per_request)
      recomputed += static_cast<double>(q.usable_tokens - q.resumed_tokens);
    if (m.policy != "static_optimum" && recomputed != m.recomputed_tokens) return 1;
  }
  // Which candidate the library's row followed for its last requests (M = 8).
  for (const auto& m : r.rows) {
    if (m.policy != "hybridcache" || m.budget != 8) continue;
    const std::size_t n = m.per_request.size();
    for (std::size_t i = n > 3 ? n - 3 : 0; i < n; ++i) {
      const auto& q = m.per_request[i];
      std::printf("request %zu: resumed %zu of %zu usable tokens, following %s\n", q.request,
                  q.resumed_tokens, q.usable_tokens, m.candidates[q.leader].c_str());
    }
  }
  return 0;
}
