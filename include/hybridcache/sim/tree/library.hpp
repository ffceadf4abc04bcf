#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The library's own prefix-tree state policy (`state_policy`, include/hybridcache/tree/,
/// docs/tree.md) driven through its public API on the causal replay engine, exactly as an engine
/// that already has block hashes would call it, with no knowledge the engine would not have
/// (replay.hpp's protocol; the trie node ids of the trace stand in for the block hashes):
///
/// 1. match time (`resume`): `match_keys(ns, h_1..h_u)` with the chained keys truncated at the
///    usable match u (SGLang's input − 1 cap) → resume from `resume_tokens / B`;
/// 2. match time (`plan_prefill`): `prefill_plan(m, P, grid)` with every block-grid position in
///    (k·B, pb·B], the prompt only → the snapshot positions of the prefill (planned nodes, the
///    junction, the prompt's tail, and with `fill_free` free room spread over the prompt), each a
///    chunk end the engine schedules;
/// 3. after the prefill: `extend_keys` of the prompt's blocks (no end noted yet) → the policy's
///    nodes; `admit(node, state_bytes)` per planned snapshot → victims, freed from the pool first
///    (with `prefill_prior`, the default, also `note_prefill_end` and the offer of the prompt's
///    usable end ⌊(P − 1)/B⌋, where a re-ask resumes: `state_policy::prefill_end`, announced at
///    match time whenever it lies beyond the resume point);
/// 4. each decode block end j (n unknown): `extend_keys` of block j; with `fill_free`, the state
///    is offered to `admit` while the pool has free room for it beyond the one state the request
///    end will offer (so it displaces nothing: fill_free's rule, online);
/// 5. request end: `note_sequence_end` (the fresh-end prior, as `insert_keys` of the whole
///    sequence notes it), `admit` of the end block
///    (the tail, `snapshot_tail`), `unpin(m.resume_node)`.
///
/// The policy's `capacity_bytes` is the pool's capacity: M states, or with a joint KV budget the
/// room the pool has for states, which changes per request (`set_capacity_bytes` at match time
/// and again once the request's KV is allocated; the policy is built with the whole pool's
/// capacity before any KV is cached). Under a joint budget a state offered into a full pool
/// first takes its room back from the least recently used KV leaves (`tree_context::grow`; added
/// after 0.2.0: in 0.2.0, cached KV kept the M states' share once it had spilled into it), in
/// the row's KV order: with stateless leaves first (the default) only from KV that holds no
/// state, so a held state is displaced by `admit`'s ranking, never by recency (after 0.2.1), and
/// however many states are held (2026-11-30: before, only while fewer than M were); in LRU
/// order only while fewer than M are held. States the engine drops with their KV are given back
/// by `drop`, and every evicted KV leaf by `erase`.
/// Under a joint KV budget the policy asks the engine to evict the cached KV leaves that hold no
/// state first (`kv_order::stateless_first`, replay.hpp): an engine using the library knows which
/// blocks hold a state (`state_policy::has_state`), and KV below the deepest held state of its
/// path serves no resume. With a separate KV pool it keeps the engines' LRU order (see
/// `kv_eviction`). The engine rows keep their own rule (LRU leaves; see `sglang_policy` for
/// SGLang's).
/// The namespace is a tenant named after the trace's namespace index, so namespaces stay apart
/// in the policy too.
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

/// Adapter of `state_policy` to the causal replay engine (see the file comment).
class library_policy final : public tree_policy {
 public:
  /// `base`: options passed through (gamma, replan_every, hysteresis, junction/tail switches);
  /// block size, state bytes and capacity are set from the replay.
  /// `name`: the row label (ablations of the options get their own).
  /// `pool_memory`: lengthen the EW memory by the states the pool can hold, 1/(1 − γ') =
  /// 1/(1 − γ) + C (`pool_window`): C = M, or under a joint KV budget the whole pool's states
  /// (the capacity before any KV is cached); the long-memory candidate of the library's row
  /// (sim/tree/simulate.hpp).
  /// `kv`: the order the engine evicts cached KV in for this policy (`tree_policy::kv_eviction`;
  /// the default evicts the leaves that hold no state first, see the file comment).
  /// `kv_charge`: under a joint KV budget, rank states by ΔE[r] per byte of the state and of the
  /// KV its gap keeps alone (`policy_options::kv_block_bytes` = B · KV bytes per token); off, by
  /// the state's bytes alone (the row before the joint charge, added after 0.2.0;
  /// `hybridcache_nokvcharge`).
  /// `message_branch`: the engine knows where the prompt's user messages start
  /// (`tree_step::user_starts()`, from its chat template) and offers the deepest one beyond the
  /// resume point, inside the usable end and floored to the block grid
  /// (`state_policy::message_branch_point`), as the prefill's branch point
  /// (`state_policy::note_branch_point`) in place of the learned one: requests that share
  /// a system prompt or a document leave it where the next message starts. Off by default; the
  /// library's row runs it in its long-memory candidate (since 2026-11-30, tenth session; the
  /// ablation row without it is `hybridcache_nomessages`; docs/tree_simulation.md,
  /// "User-message starts as branch points").
  explicit library_policy(policy_options base = {}, std::string name = "hybridcache",
                          bool pool_memory = false, kv_order kv = kv_order::stateless_first,
                          bool kv_charge = true, bool message_branch = false)
      : base_(base),
        name_(std::move(name)),
        pool_memory_(pool_memory),
        kv_charge_(kv_charge),
        message_branch_(message_branch),
        kv_(kv) {}

  /// γ' with 1/(1 − γ') = 1/(1 − γ) + M: an EW memory of the base window plus one observation
  /// per state of the budget. Derived: a pool of M states holds prefixes down to a match share
  /// of about 1/M per request (a request ends its match at one node), and a window shorter than
  /// M observations sees such a prefix less than once, so its weight there is mostly 0; the
  /// base window (100 observations at γ = 0.99) stays the floor for small pools. γ = 1 stays 1.
  /// Under a joint KV budget M is the states the whole pool can hold (up to that many are held
  /// while KV is light), not the budget the pool was sized with.
  [[nodiscard]] static double pool_window(double gamma, std::size_t m) noexcept {
    if (!(gamma < 1.0)) return gamma;
    return 1.0 - 1.0 / (1.0 / (1.0 - gamma) + static_cast<double>(m));
  }
  [[nodiscard]] std::string name() const override { return name_; }

  void reset(const tree_context& ctx) override {
    ctx_ = ctx;
    pol_.reset();
    ns_root_ = tree_trace::no_parent;  // another trace may number its roots differently
    lib_to_node_.clear();
    node_to_lib_.assign(ctx.trace->node_count(), no_node);
    state_bytes_ = static_cast<std::size_t>(ctx.state_bytes);
    // The pool's capacity before any KV is cached: M states, or for a joint KV budget every
    // state the whole pool could hold.
    if (ctx.pool->capacity() == 0) return;  // no pool: nothing to decide
    policy_options o = base_;
    o.block_size = ctx.trace->block();
    o.state_bytes = state_bytes_;
    o.capacity_bytes = ctx.pool->capacity() * state_bytes_;
    // One pool for states and KV: a state is charged the KV of its gap that it keeps alone.
    if (kv_charge_ && ctx.kv == kv_mode::joint && ctx.cost)
      o.kv_block_bytes = static_cast<std::size_t>(static_cast<double>(ctx.trace->block()) *
                                                  ctx.cost->model.kv_bytes_per_token());
    // The states the pool can hold: M, or every state of a joint pool (KV spills into it).
    if (pool_memory_) o.gamma = pool_window(o.gamma, ctx.pool->capacity());
    pol_ = std::make_unique<state_policy>(o);
    taken_.clear();
    if (victims_) pol_->set_victim_log(&taken_);
    // The index mirrors the engine's tree: every trace node under unlimited KV, else about the
    // blocks the KV budget holds. Reserved once, its table is never rehashed while it grows.
    std::size_t nodes = ctx.trace->node_count();
    if (ctx.kv != kv_mode::unlimited && ctx.cost) {
      const double block = static_cast<double>(ctx.trace->block()) *
                           ctx.cost->model.kv_bytes_per_token(),
                   pool =
                       ctx.cost->kv.bytes + (ctx.kv == kv_mode::joint
                                                 ? static_cast<double>(ctx.budget) * ctx.state_bytes
                                                 : 0.0);
      if (block > 0.0 && pool / block < static_cast<double>(nodes))
        nodes = static_cast<std::size_t>(pool / block) + 1;
    }
    pol_->reserve(nodes);
  }

  std::size_t resume(const tree_step& s) override {
    request_ = s.index;
    if (!pol_) return 0;
    // The prompt's keys up to its usable end ⌊(P − 1)/B⌋ (SGLang's input − 1 cap), as an engine
    // passes them: the policy's index mirrors the engine's tree, so its match ends at s.usable,
    // and the blocks beyond are the request's divergence (policy_options::branch_prior).
    const std::size_t B = ctx_.trace->block();
    keys(s.path(), s.prompt_tokens == 0 ? 0 : std::min(s.prompt_blocks, (s.prompt_tokens - 1) / B));
    // The policy's node of each block the engine's own tree matched, as an engine keeps it
    // beside its block: each is checked in O(1) and saves an index probe (match_keys with
    // hints; the same match).
    hints_.clear();
    for (std::size_t i = 0; i < std::min(s.usable, keys_.size()); ++i)
      hints_.push_back(node_to_lib_[s.path()[i]]);
    m_ = pol_->match_keys(ns_of(s), keys_, hints_);
    if (m_.path.size() != s.usable)
      hybridcache::detail::throw_invalid(
          "match", m_.path.size(), "differs from the engine's usable match (index out of sync)");
    return m_.resume_tokens / B;
  }

  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    planned_.clear();
    if (!pol_) return;
    sync_capacity();
    const std::size_t B = ctx_.trace->block();
    grid_.clear();
    for (std::size_t j = s.resumed + 1; j <= s.prompt_blocks; ++j) grid_.push_back(j * B);
    for (auto p : pol_->prefill_plan(m_, s.prompt_tokens, grid_)) planned_.push_back(p / B);
    // The learned branch point (policy_options::branch_prior), announced with the plan; or,
    // with `message_branch`, the deepest user-message start the request carries.
    branch_ = 0;
    std::optional<std::size_t> point;
    if (message_branch_) point = pol_->message_branch_point(m_, s.prompt_tokens, s.user_starts());
    if (!point) point = pol_->branch_point(m_, s.prompt_tokens, grid_);
    if (const auto q = point) {
      branch_ = *q / B;
      const auto at = std::lower_bound(planned_.begin(), planned_.end(), branch_);
      if (at == planned_.end() || *at != branch_) planned_.insert(at, branch_);
    }
    // The prefill's end for the prefill-end prior: the prompt's usable end, where a re-ask
    // resumes (state_policy::prefill_end).
    end_ = 0;
    if (const auto e = pol_->prefill_end(m_, s.prompt_tokens)) {
      end_ = std::min(*e / B, s.prompt_blocks);  // a trace's path may end inside the prompt
      if (end_ > s.resumed)
        planned_.push_back(end_);
      else
        end_ = 0;
    }
    positions.insert(positions.end(), planned_.begin(), planned_.end());
  }

  void after_prefill(const tree_step& s) override {
    if (!pol_) return;
    sync_capacity();  // the request's KV is allocated: the joint pool's room for states is known
    const auto path = s.path();
    keys(path, path.size());
    // The match found the first blocks' nodes: walk only the blocks the prefill added.
    lib_ = pol_->extend_keys(ns_of(s), m_.path, keys_);
    for (std::size_t i = 0; i < lib_.size(); ++i) map(lib_[i], path[i]);
    const std::size_t end = end_;
    const std::size_t plan = end > 0 ? planned_.size() - 1 : planned_.size();
    if (branch_ != 0) pol_->note_branch_point(lib_[branch_ - 1]);
    offer_planned(plan, path);
    if (plan < planned_.size()) {
      // The prefill's own end (the request's prompt), offered like any snapshot, valued by the
      // prefill-end prior (policy_options::prefill_prior) until a match ends there.
      pol_->note_prefill_end(lib_[end - 1]);
      offer(end, path);
    }
  }

  void on_decode_block(const tree_step& s, std::size_t j) override {
    if (!pol_) return;
    const auto path = s.path();
    const node_id v =
        pol_->extend_key(ns_of(s), j > 1 ? lib_[j - 2] : no_node, block_key(path[j - 1]));
    lib_.push_back(v);
    map(v, path[j - 1]);
    // fill_free, online: a state that fits the free room beside the one the end will offer.
    if (!pol_->options().fill_free) return;
    const std::size_t reserve = pol_->options().snapshot_tail ? 1 : 0;
    const auto& pool = *ctx_.pool;
    const std::size_t lib_room = (pol_->capacity_bytes() - pol_->used_bytes()) / state_bytes_;
    const std::size_t room =
        std::min(lib_room, pool.capacity() - std::min(pool.capacity(), pool.size()));
    if (room > reserve) offer(j, path);
  }

  void finish(const tree_step& s) override {
    if (!pol_) return;
    const auto path = s.path();
    if (!path.empty()) {
      pol_->note_sequence_end(lib_.back());
      // The tail: the deepest new position (beyond the match), the next turn's likely resume.
      if (pol_->options().snapshot_tail && path.size() > s.match && path.size() > s.resumed)
        offer(path.size(), path);
    }
    pol_->unpin(m_.resume_node);
  }

  void on_dropped(std::uint32_t v) override {
    if (pol_ && node_to_lib_[v] != no_node) pol_->drop(node_to_lib_[v]);
  }
  /// The engine evicted leaf v's KV: `erase` (its match-end mass moves to the parent).
  void on_evicted(std::uint32_t v) override {
    if (!pol_ || node_to_lib_[v] == no_node) return;
    const auto lib = node_to_lib_[v];
    node_to_lib_[v] = no_node;
    pol_->erase(lib);
  }

  /// Under a joint KV budget, `kv` (by default stateless leaves first: the bytes they free go to
  /// states or to KV that a state uses); under a separate KV pool, LRU as the engines. Decided on
  /// the tuning families (docs/tree_simulation.md, "Stateless KV first"): in the joint pool the
  /// row recomputed 8–11 % less, in a separate pool 1–2 % less with more cells lost, since the
  /// KV it frees early also shortens the matches the policy learns from.
  [[nodiscard]] kv_order kv_eviction() const override {
    return ctx_.kv == kv_mode::joint ? kv_ : kv_order::lru;
  }

  /// Joint KV budget, every evictable KV leaf holding a state: the least valuable unpinned state
  /// by the policy's own ranking (`state_policy::evict` of one state's bytes: exact ΔE[r] per
  /// byte), taken off its books; the engine drops it. By that ranking it is worth no more than
  /// the state of the least recently used leaf, which the engine would drop otherwise, and it
  /// frees a whole state's bytes instead of one block's. (One victim: every state here has the
  /// same size; any further victim leaves the pool at once.)
  [[nodiscard]] std::uint32_t shed_state() override {
    if (!pol_) return tree_trace::no_parent;
    const auto victims = pol_->evict(state_bytes_);
    log_taken(tree_victim_event::cause::shed);
    if (victims.empty()) return tree_trace::no_parent;
    for (std::size_t i = 1; i < victims.size(); ++i) ctx_.pool->remove(node_of(victims[i]));
    return node_of(victims.front());
  }

  /// Every state `admit`, `evict` (`shed_state`) or `set_capacity_bytes` takes, as the policy's
  /// victim log records it (`state_policy::set_victim_log`), with trace node ids.
  void log_victims(std::vector<tree_victim_event>* log, std::uint32_t candidate) override {
    victims_ = log;
    candidate_ = candidate;
    taken_.clear();
    if (pol_) pol_->set_victim_log(log ? &taken_ : nullptr);
  }

  /// The wrapped policy's re-plans (`state_policy::replan_ns`).
  [[nodiscard]] double replan_ns() const override { return pol_ ? pol_->replan_ns() : 0.0; }

  /// The wrapped policy (null before `reset` or with a zero budget).
  [[nodiscard]] const state_policy* get() const noexcept { return pol_.get(); }

 private:
  /// The key of trace block v (trace nodes are already prefix-unique: no chaining needed).
  static digest block_key(std::uint32_t v) noexcept {
    return digest{v + 1ULL, 0x7EE5'5111'0000'0000ULL};
  }
  void keys(std::span<const std::uint32_t> path, std::size_t n) {
    keys_.clear();
    for (std::size_t i = 0; i < n; ++i) keys_.push_back(block_key(path[i]));
  }
  /// The request's namespace (its trace namespace as the tenant), built once per root: the
  /// calls of one request share it, and building it allocates.
  const namespace_key& ns_of(const tree_step& s) {
    if (s.root != ns_root_) {
      ns_ = namespace_key{}.with_tenant(std::to_string(ctx_.trace->ns(s.root)));
      ns_root_ = s.root;
    }
    return ns_;
  }
  /// The policy's ids are slot (low 32 bits) + generation (node_id): the reverse map is
  /// indexed by slot, since slots are reused after `erase` (KV eviction) and ids are not dense.
  static std::size_t slot_of(node_id lib) noexcept {
    return static_cast<std::size_t>(lib & 0xFFFF'FFFFULL);
  }
  void map(node_id lib, std::uint32_t node) {
    const auto slot = slot_of(lib);
    if (lib_to_node_.size() <= slot) lib_to_node_.resize(slot + 1, tree_trace::no_parent);
    lib_to_node_[slot] = node;
    node_to_lib_[node] = lib;
  }
  [[nodiscard]] std::uint32_t node_of(node_id lib) const { return lib_to_node_.at(slot_of(lib)); }
  /// The trace node of the policy's node `lib` if it is mapped to it, else `no_parent` (a
  /// namespace root is never mapped).
  [[nodiscard]] std::uint32_t node_or_root(node_id lib) const noexcept {
    const auto slot = slot_of(lib);
    if (slot >= lib_to_node_.size()) return tree_trace::no_parent;
    const auto v = lib_to_node_[slot];
    return v != tree_trace::no_parent && node_to_lib_[v] == lib ? v : tree_trace::no_parent;
  }
  /// `log_victims`: moves the records the policy just appended to the row's log (right after
  /// the call that took them, while their nodes are still mapped).
  void log_taken(tree_victim_event::cause why) {
    if (!victims_) return;
    const std::size_t B = ctx_.trace->block();
    for (const tree_victim& t : taken_)
      victims_->push_back({.request = request_,
                           .candidate = candidate_,
                           .why = why,
                           .node = node_of(t.node),
                           .depth_tokens = ctx_.trace->depth(node_of(t.node)) * B,
                           .up = node_or_root(t.up),
                           .gap_tokens = t.gap_tokens,
                           .expected_tokens = t.expected_tokens,
                           .value = t.value,
                           .bytes = t.bytes,
                           .age = t.age,
                           .states_below = t.states_below,
                           .planned = t.planned,
                           .prior = t.prior});
    taken_.clear();
  }
  /// The policy's budget follows the engine pool's capacity (it changes only under a joint KV
  /// budget): `set_capacity_bytes` (a capacity of 0 states is one byte: nothing fits).
  void sync_capacity() {
    const std::size_t bytes = std::max<std::size_t>(1, ctx_.pool->capacity() * state_bytes_);
    if (bytes == pol_->capacity_bytes()) return;
    for (auto victim : pol_->set_capacity_bytes(bytes)) ctx_.pool->remove(node_of(victim));
    log_taken(tree_victim_event::cause::capacity);
  }
  /// `offer` for planned_[0..n), shallowest first. When every one that holds no state fits the
  /// free room of both the policy and the engine's pool (so none evicts and none makes room from
  /// KV), they go in at once (`state_policy::admit_path`: the same records, one walk of their
  /// regions instead of one per state).
  void offer_planned(std::size_t n, std::span<const std::uint32_t> path) {
    batch_.clear();
    fresh_.clear();
    for (std::size_t i = 0; i < n; ++i) {
      const node_id v = lib_[planned_[i] - 1];
      batch_.push_back(v);
      if (!pol_->has_state(v)) fresh_.push_back(path[planned_[i] - 1]);
    }
    auto& pool = *ctx_.pool;
    if (fresh_.size() > 1 && pool.size() + fresh_.size() <= pool.capacity()) {
      if (pol_->admit_path(batch_, state_bytes_)) {
        for (const std::uint32_t v : fresh_) pool.add(v);
        return;
      }
    }
    for (std::size_t i = 0; i < n; ++i) offer(planned_[i], path);
  }
  /// Offers the state at position j (in the open window) to `admit`.
  void offer(std::size_t j, std::span<const std::uint32_t> path) {
    const auto lib = lib_[j - 1];
    if (pol_->has_state(lib)) return;
    auto& pool = *ctx_.pool;
    // Joint KV budget: the pool was sized as the KV share plus M states' bytes, and cached KV
    // spills into whatever states leave free. A state that finds the pool full first takes its
    // room back from the least recently used KV leaves, as the engine's one block pool hands a
    // new block the least recently used cached one. With stateless leaves first (the default)
    // only from those, and however many states are held: such KV serves no resume, so any
    // state is worth more than it (docs/design/tree_safeguard.md §15). In the engines' LRU
    // order (`hybridcache_lru_kv`, and the row's third candidate `hybridcache_lru`) `grow` would
    // also take leaves that hold states, by recency, so there it does so only while fewer than
    // M are held. With no such KV left the state competes within the room it has (`admit`).
    // (`grow` is set under a joint budget only, where `kv_eviction()` is `kv_`.)
    if (ctx_.grow && pool.full() &&
        (kv_ == kv_order::stateless_first || pool.size() < ctx_.budget)) {
      ctx_.grow(1);
      sync_capacity();
    }
    const auto r = pol_->admit(lib, state_bytes_);
    for (auto victim : r.victims) pool.remove(node_of(victim));
    log_taken(tree_victim_event::cause::admit);
    if (r.admitted) pool.add(path[j - 1]);
  }

  policy_options base_;
  std::string name_;
  bool pool_memory_ = false;
  bool kv_charge_ = true;
  bool message_branch_ = false;
  std::size_t end_ = 0;  ///< the planned prefill end (blocks; 0: none), last of `planned_`
  kv_order kv_ = kv_order::stateless_first;
  tree_context ctx_{};
  std::unique_ptr<state_policy> pol_;
  match_result m_;
  std::vector<digest> keys_;
  namespace_key ns_{};
  std::uint32_t ns_root_ = tree_trace::no_parent;  ///< the root `ns_` was built for
  std::vector<std::size_t> grid_, planned_;
  std::size_t branch_ = 0;    // the block of the current request's branch point (0: none)
  std::vector<node_id> lib_;  ///< the policy's node of each known block of the request
  std::vector<std::uint32_t> lib_to_node_;  ///< by the policy's slot: the trace node
  std::vector<node_id> node_to_lib_;        ///< by trace node: the policy's id (or no_node)
  std::vector<node_id> hints_;              ///< resume: node_to_lib_ along the match
  std::vector<node_id> batch_;              ///< offer_planned: the planned nodes
  std::vector<std::uint32_t> fresh_;        ///< offer_planned: their trace nodes without a state
  std::size_t state_bytes_ = 1;
  std::vector<tree_victim_event>* victims_ = nullptr;  ///< `log_victims`
  std::uint32_t candidate_ = tree_request_outcome::no_candidate;
  std::vector<tree_victim> taken_;  ///< the policy's victim log, moved out after each call
  std::size_t request_ = 0;         ///< the running request (set at `resume`)
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
  m.kv = cost.kv.mode;
  m.kv_budget_bytes = cost.kv.mode == kv_mode::unlimited ? 0.0 : cost.kv.bytes;
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

HYBRIDCACHE_NAMESPACE_END

#else
#define HYBRIDCACHE_SIM_HAS_TREE_POLICY 0
#endif
