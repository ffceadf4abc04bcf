// SPDX-License-Identifier: Apache-2.0
// The library's tree row (docs/tree.md, "Candidate shadows and the safeguard"): the exact
// ΔE[r] policy at two EW memories and every faithful engine row run in shadow; the pool follows
// the lazy leader.
// A small synthetic multi-turn trace under a joint KV pool: the engines' rows lead for a while
// (`marconi`, `trtllm`), the row switches to them and back, and ends near the best candidate
// (after 0.2.0 the exact policy itself, which takes its states' share back from spilled KV).
#include <algorithm>
#include <cstdio>
#include <hybridcache/sim/tree.hpp>
#include <memory>
#include <vector>

int main() {
  namespace hc = hybridcache;
  hc::multi_turn_options mt;
  mt.sessions = 60;
  mt.seed = 11;
  const auto trace = hc::synthetic_multi_turn(mt);

  hc::tree_options options;
  options.cost.kv.mode = hc::kv_mode::joint;  // KV and states share one pool (vLLM)
  options.cost.kv.bytes = 0.1 * static_cast<double>(trace.node_count() * trace.block()) *
                          options.cost.model.kv_bytes_per_token();
  const auto usable = hc::usable_matches(trace, options.cost);

  std::vector<std::unique_ptr<hc::tree_policy>> candidates;
  candidates.push_back(std::make_unique<hc::library_policy>());  // the initial leader
  // The same policy with its EW memory lengthened by the budget (library_policy::pool_window).
  candidates.push_back(
      std::make_unique<hc::library_policy>(hc::policy_options{}, "hybridcache_pool_memory", true));
  for (auto name : hc::faithful_tree_policy_names)
    candidates.push_back(hc::make_tree_policy(name, options));
  hc::portfolio_policy row(std::move(candidates));
  const auto m = hc::replay_tree(trace, row, /*M=*/16, usable, options.cost);

  const auto st = row.stats();
  std::printf("%zu requests: the row prefilled %.0f tokens, %zu leader switch(es)\n", m.requests,
              m.prefill_tokens, st.switches);
  for (std::size_t c = 0; c < row.candidates(); ++c)
    std::printf("  %-26s alone would prefill %8.0f tokens, led %4zu requests\n",
                st.candidates[c].c_str(), row.shadow(c).metrics().prefill_tokens, st.led[c]);
  std::printf("followed leaders' loss %.0f <= best %.0f + bound %.0f; hand-over %.0f tokens\n",
              st.leader_loss, *std::min_element(st.scores.begin(), st.scores.end()),
              st.regret_bound, st.handover_loss);
  return 0;
}
