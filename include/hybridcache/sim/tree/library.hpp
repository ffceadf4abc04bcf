#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The library's own prefix-tree state policy (`tree::state_policy`, include/hybridcache/tree/,
/// docs/tree.md) driven through its public API on the replay engine, exactly as an engine that
/// already has block hashes would call it:
///
/// 1. `match_keys(ns, h_1..h_u)` with the request's chained keys truncated at the usable match
///    u (SGLang's input − 1 cap) → resume from `resume_tokens / B`;
/// 2. `insert_keys(ns, h_1..h_n)` → the policy's node of every block;
/// 3. `prefill_plan(m, n·B, grid)` with every block-grid position in (k·B, n·B] as a chunk end
///    the engine can schedule (the request's prompt and output blocks) → snapshot positions;
/// 4. `admit(node, state_bytes)` per snapshot → victims, freed from the pool first (with
///    `prefill_end`, also the prompt's last full block);
/// 5. `unpin(m.resume_node)`.
///
/// The trie node ids of the trace stand in for the engine's block hashes (one distinct 128-bit
/// key per node; the policy verifies parent links itself), and the namespace is a tenant named
/// after the trace's namespace index, so namespaces stay apart in the policy too.
///
/// `static_optimum` is the offline static reference: the exact tree placement
/// (`place_optimal_tree`, placement/tree.hpp) of M states on the whole trie, weighted by the
/// realised usable-match ends of the trace, held from the first request on. It is the least
/// recompute of any policy that keeps one fixed set of M states for the whole trace (with the
/// future known); a dynamic policy can beat it, since it may move its states as the trace moves.
///
/// The policy header lives in another component; when it is absent from the include path this
/// header defines nothing and `HYBRIDCACHE_SIM_HAS_TREE_POLICY` is 0.

#if __has_include("hybridcache/tree/policy.hpp")
#define HYBRIDCACHE_SIM_HAS_TREE_POLICY 1

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/placement/tree.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/sim/tree/replay.hpp"
#include "hybridcache/tree/policy.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Adapter of `tree::state_policy` to the replay engine (see the file comment).
class library_policy final : public tree_policy {
 public:
  /// `base`: options passed through (gamma, replan_every, hysteresis, junction/tail switches);
  /// block size, state bytes and capacity are set from the replay.
  /// `name`: the row label (ablations of the options get their own).
  /// `prefill_end`: also offer the state at the prompt's last full block (the prefill's end,
  /// before the decode extends the sequence; SGLang `extra_buffer` keeps it) to `admit`, after
  /// the prefill plan's snapshots: it is admitted while the pool has room, or when it is worth
  /// more per byte than a held state.
  explicit library_policy(tree::policy_options base = {}, std::string name = "hybridcache",
                          bool prefill_end = false)
      : base_(base), name_(std::move(name)), prefill_end_(prefill_end) {}
  [[nodiscard]] std::string name() const override { return name_; }

  void reset(const tree_context& ctx) override {
    ctx_ = ctx;
    pol_.reset();
    lib_to_node_.clear();
    state_bytes_ = static_cast<std::size_t>(ctx.state_bytes);
    if (ctx.pool->capacity() == 0) return;  // no pool: nothing to decide
    tree::policy_options o = base_;
    o.block_size = ctx.trace->block();
    o.state_bytes = state_bytes_;
    o.capacity_bytes = ctx.pool->capacity() * state_bytes_;
    pol_ = std::make_unique<tree::state_policy>(o);
  }

  std::size_t resume(const tree_step& s) override {
    if (!pol_) return 0;
    const auto path = s.path();
    keys(path, s.usable);
    m_ = pol_->match_keys(ns_of(s), keys_);
    return m_.resume_tokens / ctx_.trace->block();
  }

  void finish(const tree_step& s) override {
    if (!pol_) return;
    const auto path = s.path();
    const std::size_t B = ctx_.trace->block();
    keys(path, path.size());
    const auto lib = pol_->insert_keys(ns_of(s), keys_);
    for (std::size_t i = 0; i < lib.size(); ++i) {
      if (lib_to_node_.size() <= lib[i]) lib_to_node_.resize(lib[i] + 1, tree_trace::no_parent);
      lib_to_node_[lib[i]] = path[i];
    }
    grid_.clear();
    for (std::size_t j = s.resumed + 1; j <= path.size(); ++j) grid_.push_back(j * B);
    for (auto p : pol_->prefill_plan(m_, path.size() * B, grid_)) {
      const std::size_t j = p / B;
      const auto r = pol_->admit(lib[j - 1], state_bytes_);
      for (auto victim : r.victims) ctx_.pool->remove(lib_to_node_.at(victim));
      if (r.admitted) ctx_.pool->add(path[j - 1]);
    }
    if (prefill_end_ && s.prompt_blocks > s.resumed && s.prompt_blocks < path.size()) {
      // The prefill's own end (the request's prompt), offered like any snapshot: admitted
      // while the pool has room or when it is worth more than a held state (valued by the
      // prefill-end prior, policy_options::prefill_prior, until a match ends there).
      pol_->note_prefill_end(lib[s.prompt_blocks - 1]);
      const auto r = pol_->admit(lib[s.prompt_blocks - 1], state_bytes_);
      for (auto victim : r.victims) ctx_.pool->remove(lib_to_node_.at(victim));
      if (r.admitted && !ctx_.pool->holds(path[s.prompt_blocks - 1]))
        ctx_.pool->add(path[s.prompt_blocks - 1]);
    }
    pol_->unpin(m_.resume_node);
  }

  /// The wrapped policy (null before `reset` or with a zero budget).
  [[nodiscard]] const tree::state_policy* get() const noexcept { return pol_.get(); }

 private:
  void keys(std::span<const std::uint32_t> path, std::size_t n) {
    keys_.clear();
    for (std::size_t i = 0; i < n; ++i)
      keys_.push_back(segment::digest{path[i] + 1ULL, 0x7EE5'5111'0000'0000ULL});
  }
  segment::namespace_key ns_of(const tree_step& s) const {
    return segment::namespace_key{}.with_tenant(std::to_string(ctx_.trace->ns(s.request->root)));
  }

  tree::policy_options base_;
  std::string name_;
  bool prefill_end_ = false;
  tree_context ctx_{};
  std::unique_ptr<tree::state_policy> pol_;
  tree::match_result m_;
  std::vector<segment::digest> keys_;
  std::vector<std::size_t> grid_;
  std::vector<std::uint32_t> lib_to_node_;
  std::size_t state_bytes_ = 1;
};

/// The offline static reference (see the file comment): metrics of the optimal fixed set of
/// `budget` states for the realised usable matches `usable` of `t`.
inline tree_metrics static_optimum(const tree_trace& t, std::size_t budget,
                                   const std::vector<std::size_t>& usable,
                                   const tree_cost_model& cost = {}) {
  if (usable.size() != t.size())
    hybridcache::detail::throw_invalid("usable.size()", usable.size(), "must equal the trace size");
  const std::size_t B = t.block();
  // View: every namespace root is the view's root 0 (each namespace's empty state is free);
  // trie order is topological (a parent is created before its children).
  std::vector<std::size_t> vid(t.node_count(), 0), parent{0};
  std::vector<double> depth{0.0}, weight{0.0};
  for (std::uint32_t v = 0; v < t.node_count(); ++v) {
    if (t.parent(v) == tree_trace::no_parent) continue;
    vid[v] = parent.size();
    parent.push_back(vid[t.parent(v)]);
    depth.push_back(static_cast<double>(t.depth(v) * B));
    weight.push_back(0.0);
  }
  for (std::size_t i = 0; i < t.size(); ++i)
    weight[usable[i] == 0 ? 0 : vid[t.requests()[i].path[usable[i] - 1]]] += 1.0;
  std::vector<std::uint8_t> in(parent.size(), 0);
  if (budget > 0) {
    for (auto c : place_optimal_tree(tree_view{parent, depth, weight}, budget).checkpoints)
      in[c] = 1;
  }
  tree_metrics m;
  m.policy = "static_optimum";
  m.budget = budget;
  m.state_memory = static_cast<double>(budget) * cost.model.checkpoint_bytes();
  double ttft = 0.0;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const auto& r = t.requests()[i];
    std::size_t k = usable[i];
    while (k > 0 && !in[vid[r.path[k - 1]]]) --k;
    const double P = static_cast<double>(r.prompt_tokens), kb = static_cast<double>(k * B);
    m.prompt_tokens += P;
    m.usable_tokens += static_cast<double>(usable[i] * B);
    m.resumed_tokens += kb;
    m.recomputed_tokens += static_cast<double>((usable[i] - k) * B);
    m.prefill_tokens += P - kb;
    m.prefill_flops += cost.flops(P - kb, kb);
    ttft += cost.time.cost(r.prompt_tokens - k * B, k * B);
    ++m.requests;
  }
  m.hit_rate = m.prompt_tokens > 0 ? m.resumed_tokens / m.prompt_tokens : 0.0;
  m.ttft_ms = m.requests ? ttft / static_cast<double>(m.requests) : 0.0;
  m.states_mean = static_cast<double>(std::count(in.begin(), in.end(), std::uint8_t{1}));
  m.states_peak = static_cast<std::size_t>(m.states_mean);
  return m;
}

namespace sim {  // deprecated spellings (docs/design/namespaces.md): use hybridcache::X
using ::hybridcache::library_policy;
using ::hybridcache::static_optimum;
}  // namespace sim
HYBRIDCACHE_NAMESPACE_END

#else
#define HYBRIDCACHE_SIM_HAS_TREE_POLICY 0
#endif
