#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The tree scenario's sweep: every policy of sim/tree/policies.hpp at every state budget on one
/// tree trace (sim/tree/trace.hpp), through the replay engine of sim/tree/replay.hpp.
///
/// `marconi` tunes its α itself, online, by the artifact's own procedure (policies.hpp).
/// `marconi_insample` is a labelled upper bound: its α is the grid value with the highest token
/// hit rate on a prefix of the same trace (the first `marconi_window` of the requests; ties: the
/// smallest α), per budget, and the full trace is then replayed with it.

#include <array>
#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/tree/library.hpp"
#include "hybridcache/sim/tree/policies.hpp"
#include "hybridcache/sim/tree/portfolio.hpp"
#include "hybridcache/sim/tree/replay.hpp"
#include "hybridcache/sim/tree/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The policies of the sweep, in report order: the library's own (`hybridcache`, when
/// include/hybridcache/tree/policy.hpp is present), the engines', the two offline references.
inline constexpr std::string_view tree_policy_names[] = {
#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
    "hybridcache",
#endif
    "vllm_align", "vllm_all", "sglang_no_buffer", "sglang_extra_buffer", "sglang_extra_buffer_cap",
    "marconi", "llamacpp", "oracle", "oracle_exact",
    // engine variants (docs/tree_simulation.md, "Engine rows: what each follows")
    "vllm_align_dense", "sglang_extra_buffer_lazy", "trtllm", "llamacpp_cache_ram",
    "marconi_insample"};

/// The faithful engine rows (docs/tree_simulation.md, "Engine rows: what each follows"): the
/// yardstick of the library's row, and the candidates it runs in shadow (`portfolio_policy`).
/// `marconi_insample` (hindsight) and the offline references are not among them.
inline constexpr std::array<std::string_view, 11> faithful_tree_policy_names{
    "vllm_align",
    "vllm_align_dense",
    "vllm_all",
    "sglang_no_buffer",
    "sglang_extra_buffer",
    "sglang_extra_buffer_lazy",
    "sglang_extra_buffer_cap",
    "marconi",
    "llamacpp",
    "llamacpp_cache_ram",
    "trtllm"};

/// Ablations of the library's policy, run only when named (`--tree-policies`):
/// `hybridcache_exact` = the exact ΔE[r] policy alone (`library_policy`, no shadows: the
/// `hybridcache` row before issue #24), `hybridcache_pool_memory` = the same with its EW memory
/// lengthened by the state budget and its age classes on (`library_policy::pool_window`,
/// `policy_options::age_classes`: the row's second library candidate, added after 0.2.0),
/// `hybridcache_one_memory` = the row with the exact policy at the
/// base memory as its only library candidate (the row of 0.2.0), `hybridcache_shadows` = the
/// engines' rows in shadow without the exact policy among the candidates; the rest vary the exact
/// policy's options, one row per remaining mechanism (docs/tree_simulation.md, "Fewer knobs
/// (issue #24)"): the default without one each, `hybridcache_noprior` (`fresh_prior`),
/// `hybridcache_norepeat` (`repeat_discount`), `hybridcache_noage` (`age_value`),
/// `hybridcache_noprefill` (`prefill_prior`, and with it the offer of the prompt's end),
/// `hybridcache_nofill` (`fill_free`), `hybridcache_nobranch` (`branch_prior`, added after
/// 0.2.0) and `hybridcache_admitall` (`admit_by_value`, added after 0.2.1); and two earlier
/// defaults, `hybridcache_prev` (the fresh-end prior and work-bounded re-plans only:
/// `repeat_discount`, `age_value`, `prefill_prior`, `fill_free`, `branch_prior` and
/// `admit_by_value` off) and `hybridcache_base` (before those too: also `fresh_prior` off,
/// `replan_work = 0`).
/// `hybridcache_lru_kv` = the row with its library candidates on the engines' KV order
/// (`kv_order::lru`: the row before the stateless-first KV order). `hybridcache_nokvcharge` = the
/// row with its library candidates ranking states by their own bytes under a joint KV budget (the
/// row before the joint KV charge, `policy_options::kv_block_bytes`). `hybridcache_prefill_both` =
/// the row with the prefill-end prior on in both library candidates (the row before the hedge:
/// since then the base-memory candidate runs without it, the long-memory one with it).
/// `hybridcache_noclasses` = the row with its long-memory candidate on one P(hit | age) law for
/// every state (`policy_options::age_classes` off: the row before age classes).
/// `hybridcache_base_first` = the row with its base-memory candidate as the first leader in every
/// KV mode (the row before the first leader was chosen per mode: the long-memory candidate leads
/// first under unlimited and separate KV). `hybridcache_nomessages` = the row with its
/// long-memory candidate on the learned branch point alone (`library_policy`'s `message_branch`
/// off: the row before it took the deepest user-message start of each prompt as its branch
/// point; the default since 2026-11-30, tenth session). `hybridcache_lru` = the row's third library
/// candidate alone (joint KV only in the row: the base-memory exact policy on the engines' LRU KV
/// order), and `hybridcache_nolru` = the row without it (the row before 2026-12-03).
/// `hybridcache_noprefill_base` = the row without its third library candidate under unlimited KV
/// (the base-memory exact policy with the prefill-end prior, `hybridcache_exact` alone: the row
/// before 2026-12-03, evening).
#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
inline constexpr std::array<std::string_view, 22> tree_policy_variants{
    "hybridcache_exact",         "hybridcache_pool_memory", "hybridcache_one_memory",
    "hybridcache_shadows",       "hybridcache_base",        "hybridcache_prev",
    "hybridcache_noprior",       "hybridcache_norepeat",    "hybridcache_noage",
    "hybridcache_noprefill",     "hybridcache_nofill",      "hybridcache_nobranch",
    "hybridcache_admitall",      "hybridcache_lru_kv",      "hybridcache_nokvcharge",
    "hybridcache_prefill_both",  "hybridcache_noclasses",   "hybridcache_base_first",
    "hybridcache_nomessages",    "hybridcache_lru",         "hybridcache_nolru",
    "hybridcache_noprefill_base"};
#else
inline constexpr std::array<std::string_view, 0> tree_policy_variants{};
#endif

/// Sweep options.
struct tree_options {
  std::vector<std::size_t> budgets{4, 16, 64, 256};  ///< M, states
  std::vector<std::string> policies{std::begin(tree_policy_names), std::end(tree_policy_names)};
  tree_cost_model cost{};
  std::size_t sglang_chunk = 8192;     ///< chunked-prefill size C (tokens)
  std::size_t sglang_path_cap = 4;     ///< states per root→leaf path of `sglang_extra_buffer_cap`
  std::size_t llamacpp_per_slot = 32;  ///< checkpoints per slot
  std::size_t llamacpp_ubatch = 512;   ///< n_ubatch
  std::vector<double> marconi_alphas{0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0};
  double marconi_window = 0.2;  ///< fraction of the trace replayed to tune α
  bool static_optimum = true;   ///< add the offline static reference (needs placement/tree.hpp)
  /// Keep every request's outcome (`tree_metrics::per_request`; not for `static_optimum`). The
  /// sweep then holds one record per request and row (56 bytes on LP64).
  bool request_log = false;
  /// Keep every state the library's rows gave up by their own ranking, with the figures it was
  /// ranked by (`tree_metrics::victims`, `tree_policy::log_victims`; other rows log nothing).
  bool victim_log = false;
};

/// One trace's sweep.
struct tree_result {
  std::string trace;
  std::size_t block = 0, nodes = 0, requests = 0;
  double prompt_tokens = 0.0;
  double state_bytes = 0.0;         ///< bytes of one state
  kv_mode kv = kv_mode::unlimited;  ///< KV accounting (tree_options::cost.kv)
  double kv_bytes = 0.0;            ///< its budget (0: unlimited)
  std::vector<tree_metrics> rows;   ///< policy-major, budgets in order
};

/// The policy called `name` (one of `tree_policy_names`), `marconi_insample` with weight `alpha`.
/// @throws invalid_argument for an unknown name.
inline std::unique_ptr<tree_policy> make_tree_policy(std::string_view name, const tree_options& o,
                                                     double alpha = 1.0) {
  if (name == "vllm_align") return std::make_unique<vllm_align_policy>();
  if (name == "vllm_align_dense") return std::make_unique<vllm_align_dense_policy>();
  if (name == "vllm_all") return std::make_unique<vllm_all_policy>();
  if (name == "sglang_no_buffer") return std::make_unique<sglang_no_buffer_policy>(o.sglang_chunk);
  if (name == "sglang_extra_buffer")
    return std::make_unique<sglang_extra_buffer_policy>(0, o.sglang_chunk);
  if (name == "sglang_extra_buffer_lazy")
    return std::make_unique<sglang_extra_buffer_lazy_policy>(0, o.sglang_chunk);
  if (name == "sglang_extra_buffer_cap")
    return std::make_unique<sglang_extra_buffer_policy>(o.sglang_path_cap, o.sglang_chunk);
  if (name == "trtllm") return std::make_unique<trtllm_policy>();
  if (name == "marconi") return std::make_unique<marconi_policy>(0.0, true, o.cost);
  if (name == "marconi_insample")
    return std::make_unique<marconi_policy>(alpha, false, o.cost, "marconi_insample");
  if (name == "llamacpp")
    return std::make_unique<llamacpp_policy>(o.llamacpp_per_slot, o.llamacpp_ubatch);
  if (name == "llamacpp_cache_ram")
    return std::make_unique<llamacpp_policy>(o.llamacpp_per_slot, o.llamacpp_ubatch, 2048, 8192, 4,
                                             0.1, true);
  if (name == "oracle") return std::make_unique<oracle_policy>();
  if (name == "oracle_exact") return std::make_unique<oracle_exact_policy>();
#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
  if (name == "hybridcache" || name == "hybridcache_shadows" || name == "hybridcache_one_memory" ||
      name == "hybridcache_lru_kv" || name == "hybridcache_nokvcharge" ||
      name == "hybridcache_prefill_both" || name == "hybridcache_noclasses" ||
      name == "hybridcache_base_first" || name == "hybridcache_nomessages" ||
      name == "hybridcache_nolru" || name == "hybridcache_noprefill_base") {
    // The library's row: the exact ΔE[r] policy and every faithful engine row, run in shadow;
    // the pool follows the lazy leader with a hand-over (sim/tree/portfolio.hpp).
    const auto kv = name == "hybridcache_lru_kv" ? kv_order::lru : kv_order::stateless_first;
    std::vector<std::unique_ptr<tree_policy>> c;
    const bool charge = name != "hybridcache_nokvcharge";
    const bool two = name != "hybridcache_one_memory" && name != "hybridcache_shadows";
    // The prefill-end prior is hedged between the two library candidates: the base-memory one
    // runs without it, the long-memory one with it (docs/tree_simulation.md, "Hedging the
    // prefill-end prior"; decided on the tuning families). One candidate keeps the default.
    policy_options base;
    base.prefill_prior = !two || name == "hybridcache_prefill_both";
    if (name != "hybridcache_shadows")
      c.push_back(std::make_unique<library_policy>(base, "hybridcache", false, kv, charge));
    // Age classes, likewise, only in the long-memory candidate (docs/design/tree_safeguard.md
    // §13; decided on the tuning families).
    policy_options longer;
    longer.age_classes = name != "hybridcache_noclasses";
    // User-message starts as branch points, in the long-memory candidate (docs/tree_simulation.md,
    // "User-message starts as branch points"; decided on the tuning families, checked on the
    // held-out seeds).
    if (two)
      c.push_back(std::make_unique<library_policy>(longer, "hybridcache_pool_memory", true, kv,
                                                   charge, name != "hybridcache_nomessages"));
    // Under a joint pool a third library candidate: the base-memory one on the engines' LRU KV
    // order, where KV, not states, decides what a request can resume (code-edit, agent loops at
    // large M; docs/design/tree_safeguard.md §22, decided on the tuning families, checked on the
    // held-out seeds). Joint only: under unlimited and separate KV every library candidate
    // already evicts KV in LRU order (`library_policy::kv_eviction`), so it would repeat
    // candidate 0. `hybridcache_lru_kv` has it already.
    if (two && o.cost.kv.mode == kv_mode::joint && name != "hybridcache_nolru" &&
        name != "hybridcache_lru_kv")
      c.push_back(
          std::make_unique<library_policy>(base, "hybridcache_lru", false, kv_order::lru, charge));
    // Under unlimited KV a third library candidate too: the base-memory exact policy *with* the
    // prefill-end prior, the one combination the hedge above leaves out. It pays where requests
    // resume at a prompt's end with the state budget tight for the long memory (agent loops at
    // M = 256 and 1024; docs/design/tree_safeguard.md §23, decided on the tuning families, checked
    // on the held-out seeds). Not under separate KV, where it gained nothing on the tuning
    // families, nor under a joint pool, whose third candidate is the one above.
    if (two && o.cost.kv.mode == kv_mode::unlimited && name != "hybridcache_noprefill_base")
      c.push_back(std::make_unique<library_policy>(policy_options{}, "hybridcache_prefill", false,
                                                   kv, charge));
    for (auto f : faithful_tree_policy_names) c.push_back(make_tree_policy(f, o));
    // The first leader, before any evidence: under a joint pool the base-memory candidate,
    // otherwise the long-memory one (the candidate that more often leads from the start there;
    // docs/design/tree_safeguard.md §16, decided on the tuning families).
    const std::size_t first =
        two && o.cost.kv.mode != kv_mode::joint && name != "hybridcache_base_first" ? 1 : 0;
    return std::make_unique<portfolio_policy>(std::move(c), std::string(name), first);
  }
  if (name == "hybridcache_exact")
    return std::make_unique<library_policy>(policy_options{}, "hybridcache_exact");
  if (name == "hybridcache_lru") {  // the row's third candidate alone (see above)
    policy_options base;
    base.prefill_prior = false;
    return std::make_unique<library_policy>(base, "hybridcache_lru", false, kv_order::lru, true);
  }
  if (name == "hybridcache_pool_memory") {
    policy_options longer;
    longer.age_classes = true;
    return std::make_unique<library_policy>(longer, "hybridcache_pool_memory", true,
                                            kv_order::stateless_first, true, true);
  }
  if (name.rfind("hybridcache_", 0) == 0) {
    policy_options b;
    bool known = true;
    if (name == "hybridcache_base" || name == "hybridcache_prev") {
      b.repeat_discount = false;
      b.age_value = false;
      b.prefill_prior = false;
      b.fill_free = false;
      b.branch_prior = false;
      b.admit_by_value = false;
      if (name == "hybridcache_base") {
        b.fresh_prior = false;
        b.replan_work = 0.0;
      }
    } else if (name == "hybridcache_noprior") {
      b.fresh_prior = false;
    } else if (name == "hybridcache_norepeat") {
      b.repeat_discount = false;
    } else if (name == "hybridcache_noage") {
      b.age_value = false;
    } else if (name == "hybridcache_noprefill") {
      b.prefill_prior = false;
    } else if (name == "hybridcache_nofill") {
      b.fill_free = false;
    } else if (name == "hybridcache_nobranch") {
      b.branch_prior = false;
    } else if (name == "hybridcache_admitall") {
      b.admit_by_value = false;
    } else {
      known = false;
    }
    if (known) return std::make_unique<library_policy>(b, std::string(name));
  }
#endif
  hybridcache::detail::throw_invalid("policy", name, "unknown tree policy");
}

/// Marconi's α for `budget`: the grid value with the best token hit rate on the tuning window.
inline double tune_marconi_alpha(const tree_trace& t, std::size_t budget,
                                 const std::vector<std::size_t>& usable, const tree_options& o) {
  if (o.marconi_alphas.empty())
    hybridcache::detail::throw_invalid("marconi_alphas", "{}", "must not be empty");
  if (!(o.marconi_window > 0.0 && o.marconi_window <= 1.0))
    hybridcache::detail::throw_invalid("marconi_window", o.marconi_window, "must be in (0, 1]");
  const auto window = std::max<std::size_t>(
      1, static_cast<std::size_t>(o.marconi_window * static_cast<double>(t.size())));
  double best = o.marconi_alphas.front(), best_hit = -1.0;
  for (double a : o.marconi_alphas) {
    marconi_policy p(a, false, o.cost);
    const auto m = replay_tree(t, p, budget, usable, o.cost, 0, window);
    if (m.hit_rate > best_hit) {
      best_hit = m.hit_rate;
      best = a;
    }
  }
  return best;
}

/// Runs every policy at every budget (see the file comment).
/// @throws invalid_argument for an empty trace, no budgets or an unknown policy.
inline tree_result simulate_tree(const tree_trace& t, const tree_options& o,
                                 const progress_fn& progress = {}) {
  if (t.size() == 0) hybridcache::detail::throw_invalid("trace", t.name(), "has no requests");
  if (o.budgets.empty()) hybridcache::detail::throw_invalid("budgets", "{}", "must not be empty");
  for (const auto& p : o.policies) (void)make_tree_policy(p, o);
  tree_result res;
  res.trace = t.name();
  res.block = t.block();
  res.nodes = t.node_count();
  res.requests = t.size();
  res.prompt_tokens = static_cast<double>(t.prompt_tokens());
  res.state_bytes = o.cost.model.checkpoint_bytes();
  res.kv = o.cost.kv.mode;
  res.kv_bytes = o.cost.kv.mode == kv_mode::unlimited ? 0.0 : o.cost.kv.bytes;
  const auto usable = usable_matches(t, o.cost);
  const std::size_t total = o.policies.size() * o.budgets.size();
  std::size_t done = 0;
  for (const auto& name : o.policies) {
    for (auto budget : o.budgets) {
      double alpha = 1.0;
      if (name == "marconi_insample") alpha = tune_marconi_alpha(t, budget, usable, o);
      auto p = make_tree_policy(name, o, alpha);
      std::vector<tree_request_outcome> log;
      std::vector<tree_victim_event> victims;
      if (o.victim_log) p->log_victims(&victims, tree_request_outcome::no_candidate);
      auto m = replay_tree(t, *p, budget, usable, o.cost, 0,
                           std::numeric_limits<std::size_t>::max(), o.request_log ? &log : nullptr);
      p->log_victims(nullptr, tree_request_outcome::no_candidate);
      m.per_request = std::move(log);
      m.victims = std::move(victims);
      if (const auto* mp = dynamic_cast<const marconi_policy*>(p.get())) m.parameter = mp->alpha();
      if (const auto* pf = dynamic_cast<const portfolio_policy*>(p.get())) {
        auto st = pf->stats();
        m.leader = st.candidates[pf->leader()];
        m.switches = static_cast<double>(st.switches);
        m.handover_tokens = st.handover_loss;
        if (o.request_log || o.victim_log) m.candidates = std::move(st.candidates);
      }
      res.rows.push_back(std::move(m));
      if (progress) progress(++done, total);
    }
  }
#if HYBRIDCACHE_SIM_HAS_TREE_POLICY
  if (o.static_optimum) {
    for (auto budget : o.budgets) res.rows.push_back(static_optimum(t, budget, usable, o.cost));
  }
#endif
  return res;
}

HYBRIDCACHE_NAMESPACE_END
