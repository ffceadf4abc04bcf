// SPDX-License-Identifier: Apache-2.0
// Example 07 (docs/tree.md): plan states for a small prefix tree exactly, then drive
// state_policy the way an engine's radix cache would, over multi-turn chats of two tenants.
#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include <hybridcache/tree.hpp>

namespace hc = hybridcache;

int main() {
  // 1. The exact planner. A shared system prompt (node 1, 1024 tokens) branches into two
  //    conversations; matches end at the conversation tips (nodes 2, 3) and at the prompt.
  std::vector<std::size_t> parent{0, 0, 1, 1};
  std::vector<double> depth{0, 1024, 1536, 2048};
  std::vector<double> weight{0, 0.2, 0.5, 0.3};
  const hc::tree_view t{parent, depth, weight};
  const auto frontier = hc::optimal_tree_frontier(t, 3);
  for (std::size_t m = 0; m <= 3; ++m) {
    const auto plan = hc::place_optimal_tree(t, m);
    std::printf("M=%zu  E[r]=%7.1f tokens  states at:", m, frontier[m]);
    for (auto v : plan.checkpoints) std::printf(" %zu", v);
    std::printf("\n");
  }

  // 2. The online policy: block 16, states of 1 MiB, a pool of 8 states. (An engine whose
  //    states and cached KV share one memory pool also sets `kv_block_bytes`, one block's KV
  //    bytes, so that a state is ranked per byte of itself and of the KV its eviction frees.)
  hc::state_policy pol(
      {.block_size = 16, .state_bytes = 1 << 20, .capacity_bytes = 8u << 20, .replan_every = 10});
  const auto tenant_a = hc::namespace_key{}.with_tenant("a");
  const auto tenant_b = hc::namespace_key{}.with_tenant("b");
  // Why each state went: the policy appends one record per victim (its ΔE[r] in tokens per
  // request, its value per byte, its gap and age) to a log the engine owns, e.g. to trace it.
  std::vector<hc::tree_victim> victims;
  pol.set_victim_log(&victims);
  std::size_t evicted = 0;
  std::mt19937 rng(1);
  std::vector<hc::token_id> system(600);
  for (auto& x : system) x = rng() % 32000;
  std::vector<std::vector<hc::token_id>> chats(6, system);  // 3 chats per tenant
  std::size_t prompt_tokens = 0, replayed = 0, computed = 0, batched = 0;
  for (int turn = 0; turn < 60; ++turn) {
    const std::size_t c = rng() % chats.size();
    const auto& ns = c < 3 ? tenant_a : tenant_b;
    auto& prompt = chats[c];
    for (int i = 0; i < 200; ++i) prompt.push_back(rng() % 32000);  // the new user turn

    // Engine: look up the cached prefix; resume from the deepest state.
    const auto m = pol.match(ns, prompt);
    // Engine: its scheduler runs chunks of 256 tokens from the resume point.
    std::vector<std::size_t> chunk_ends;
    for (std::size_t p = m.resume_tokens + 256; p < prompt.size(); p += 256)
      chunk_ends.push_back(p);
    chunk_ends.push_back(prompt.size());
    auto snapshots = pol.prefill_plan(m, prompt.size(), chunk_ends);
    // The learned branch point (where later requests tend to leave a cached prompt), if any:
    // one more chunk end the scheduler must run to, snapshotted like the plan. (An engine that
    // knows where its user messages start may offer `message_branch_point(m, prompt.size(),
    // user_starts)` instead, docs/tree.md. Here, chats that only extend and never branch, that
    // costs: with the system prompt's end and this turn's start as the starts, 37128 tokens
    // computed instead of 34856.)
    const auto branch = pol.branch_point(m, prompt.size(), chunk_ends);
    if (branch) snapshots.push_back(*branch);
    // Engine: prefill runs; its radix tree gains the prompt; it keeps the snapshots it took.
    const auto path = pol.insert(ns, prompt);
    if (branch) pol.note_branch_point(path[*branch / 16 - 1]);  // its prior, before the offer
    // The snapshots of one prefill, shallowest first. When those not held yet all fit the free
    // room, admit_path books them at once (the records admit would keep, one walk of their
    // regions); otherwise nothing changed, and admit takes them one by one, evicting.
    std::sort(snapshots.begin(), snapshots.end());
    snapshots.erase(std::unique(snapshots.begin(), snapshots.end()), snapshots.end());
    std::vector<hc::node_id> nodes;
    for (std::size_t p : snapshots) nodes.push_back(path[p / 16 - 1]);
    if (nodes.empty()) {
      // nothing to keep
    } else if (pol.admit_path(nodes, 1 << 20)) {
      ++batched;
    } else {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        const auto r = pol.admit(nodes[i], 1 << 20);
        evicted += r.victims.size();
        // r.victims: states the engine frees now (never pinned, least ΔE[r] per byte first).
        // Not admitted: no room even after freeing every unpinned state, or, in a full pool, a
        // state no match has ended at that is worth no more than the first victim
        // (policy_options::admit_by_value): the engine discards the snapshot.
        if (!r.admitted) std::printf("snapshot at %zu not admitted\n", snapshots[i]);
      }
    }
    pol.unpin(m.resume_node);  // the resumed state was loaded
    prompt_tokens += prompt.size();
    replayed += m.replay_tokens;
    computed += prompt.size() - m.resume_tokens;
    for (int i = 0; i < 50; ++i) prompt.push_back(rng() % 32000);  // the model's answer
    if (pol.used_bytes() > pol.capacity_bytes()) return 1;         // never happens
  }
  std::printf("prompt tokens %zu, computed %zu (%.1f%% saved), of which cached-KV replay %zu\n",
              prompt_tokens, computed,
              100.0 * (1.0 - static_cast<double>(computed) / static_cast<double>(prompt_tokens)),
              replayed);
  std::printf("states held %zu (%zu bytes of %zu), nodes %zu, namespaces %zu, E[r] now %.1f\n",
              pol.state_count(), pol.used_bytes(), pol.capacity_bytes(), pol.node_count(),
              pol.namespace_count(), pol.expected_recompute());
  std::printf("prefills whose snapshots went in at once (admit_path): %zu of 60\n", batched);
  std::printf("victims %zu; the last three:\n", victims.size());
  for (std::size_t i = victims.size() > 3 ? victims.size() - 3 : 0; i < victims.size(); ++i) {
    const auto& v = victims[i];
    std::printf(
        "  gap %zu tokens, age %u, %u states below: dE[r] %.2f tokens/request, "
        "ranked %.3g per MiB\n",
        v.gap_tokens, v.age, v.states_below, v.expected_tokens, v.value * (1 << 20));
  }
  if (victims.size() != evicted) return 1;  // one record per victim the engine freed
  return computed < prompt_tokens ? 0 : 1;
}
