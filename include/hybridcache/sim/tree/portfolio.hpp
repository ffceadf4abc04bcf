#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `portfolio_policy`: candidate state policies run in shadow, on metadata alone, beside the one
/// state pool the engine really has; the real pool follows the lazy leader of
/// `leader_safeguard` (tree/safeguard.hpp) with a hand-over (docs/design/tree_safeguard.md).
///
/// Each candidate c runs in a *shadow replayer* (`tree_replayer`, replay.hpp) of its own: its own
/// state pool (which nodes it would hold; no tensors) and its own copy of the engine's KV
/// bookkeeping (which blocks would be cached under the same KV rule; under unlimited KV, or a
/// separate budget for the candidates that evict KV in LRU order, the cached blocks do not depend
/// on the states held, so those shadows share one copy, `shared_kv`), driven in lockstep with the
/// real request through the causal protocol, phase by phase: match time (`resume`,
/// `plan_prefill`), the prefill, each decode block, the end. A shadow therefore sees exactly what
/// the candidate would have seen had it run the engine alone: its per-request recompute is the
/// candidate's own row, request for request, under every KV mode (under a joint KV budget the
/// states a candidate holds change which KV is cached, so the KV must be shadowed too).
///
/// Per request, at match time:
/// 1. every shadow resumes → k_c; its loss is ℓ_c = (U − k_c)·B with U the largest usable match
///    of the shadows and the real pool (a common offset: ℓ orders the candidates by the tokens
///    they would prefill, which under `unlimited` and `separate` KV is their recompute plus a
///    constant);
/// 2. the safeguard scores the losses and names the leader λ for this request;
/// 3. the real pool resumes at the deepest state it holds on the usable match (any held state is
///    exact; it may be deeper than the leader's own);
/// 4. *hand-over*: the real request announces the leader's snapshot positions beyond the real
///    resume point, plus every position on the prompt where the leader holds a state and the real
///    pool does not (re-created at no extra prefill: those tokens are computed anyway). After each
///    phase (prefill, decode block, end) the real pool adds every open node the leader now holds.
///    To make room it drops a state the leader does not hold, least recently used first, and
///    among those first the ones the runner-up (the next best score, where a switch would most
///    likely go) does not hold either, never the state the running request resumed from (pinned
///    until its end, as every engine and the library's own policy pin it: vLLM's `ref_cnt`,
///    SGLang's `lock_ref`); a state the leader holds and the pool already holds stays. A
///    switch therefore costs no prefill, only the states the new leader holds that the pool lacks
///    until a request re-creates them. Under a joint KV budget the real pool keeps no more states
///    than the leader (extras would press the shared pool); otherwise extras stay until the room is
///    needed. Under a KV budget the real engine evicts cached KV in the leader's order
///    (`tree_policy::kv_eviction`).
/// 5. *Joint KV budget: the leader's memory split.* The shadows allocate the request's KV at
///    match time, before the real engine does (their prompts are known then), so the real engine
///    gives up the states the leader gave up while allocating (to the engine's one LRU,
///    `lru_state`, or by `shed_state`), in the leader's order, before anything else; and after each
///    phase it caches no more KV blocks than the leader (the leader may have made room for a state
///    it then did not keep). With one candidate the real pool is therefore its candidate's own,
///    request for request, in every KV mode (tested), but for a state a running request resumed
///    from, which the real pool keeps pinned, and the slots an SGLang buffer mode reserves.
///    After a switch, that trim (in the leader's KV order: once no stateless leaf is left, the
///    least recently used leaf) can take a state the pool re-created for the leader, so under a
///    joint budget a lacking state may cost more than one request's recompute
///    (docs/design/tree_safeguard.md §21: 13 times for one prefix on Mooncake).
///
/// The shadows see nothing the engine would not (the causal view of the running request);
/// offline references must not be candidates.
///
/// Cost: every candidate's own replay work per request (its policy calls and its KV
/// bookkeeping, once for the shadows that share it), plus O(announced + decode blocks) for the real
/// pool; per displacing admission, a walk of the real states the leader does not hold (an ordered
/// set kept from the leader's logged held-set changes, O(log M) each, rebuilt at a switch).
/// Memory: one shadow per candidate (here the simulator's
/// dense per-node arrays; an engine keeps a held set of ≤ capacity node ids and a KV block count
/// per shadow).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/tree/recency_order.hpp"
#include "hybridcache/sim/tree/replay.hpp"
#include "hybridcache/tree/safeguard.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What the portfolio did in one replay (see `portfolio_policy::stats`).
struct portfolio_stats {
  std::vector<std::string> candidates;  ///< names, in candidate order
  std::vector<double> scores;           ///< L_c: each shadow's recompute (tokens)
  std::vector<std::size_t> led;         ///< requests each candidate led
  std::size_t switches = 0;             ///< S
  double leader_loss = 0.0;             ///< Σ ℓ_λ(t): the followed leaders' shadow recompute
  double actual_loss = 0.0;             ///< the real pool's recompute (tokens)
  double regret_bound = 0.0;            ///< Theorem 1's S·(δ* + ℓ_max) + δ*
  double handover_loss = 0.0;  ///< Σ max(0, real loss − loss of the leader it followed)
  /// With `portfolio_policy::set_profile`: the wall time (ns) inside each candidate's shadow
  /// calls, its re-plans included; all 0 without.
  std::vector<double> shadow_ns;
  std::vector<double> replan_ns;  ///< each candidate's re-plan time (ns), a part of shadow_ns
};

/// Candidate shadows + follow-the-lazy-leader + hand-over (see the file comment).
class portfolio_policy final : public tree_policy {
 public:
  /// `candidates` (≥ 1, online policies only); `name` the row; `initial` the candidate that
  /// leads before any evidence (λ(0) of `leader_safeguard`).
  /// @throws invalid_argument for no candidates, a null one, or `initial` out of range.
  explicit portfolio_policy(std::vector<std::unique_ptr<tree_policy>> candidates,
                            std::string name = "hybridcache", std::size_t initial = 0)
      : name_(std::move(name)),
        candidates_(std::move(candidates)),
        guard_(std::max<std::size_t>(candidates_.size(), 1)),
        initial_(initial),
        shadow_ns_(candidates_.size(), 0.0) {
    if (candidates_.empty())
      hybridcache::detail::throw_invalid("candidates", 0, "must name at least one policy");
    for (const auto& c : candidates_)
      if (!c)
        hybridcache::detail::throw_invalid("candidates", "null", "must not hold a null policy");
    if (initial >= candidates_.size())
      hybridcache::detail::throw_invalid("initial", initial, "must be < the number of candidates");
  }
  [[nodiscard]] std::string name() const override { return name_; }
  /// Times each shadow's calls (two clock reads per shadow and phase) into
  /// `portfolio_stats::shadow_ns`, to see where the row's request path goes per candidate. Off
  /// by default: the reads add to the row's own time. Decisions are the same either way.
  void set_profile(bool on) noexcept { profile_ = on; }

  /// @throws invalid_argument when the context has no cost model or usable matches (the
  ///         replayer sets both).
  void reset(const tree_context& ctx) override {
    if (!ctx.cost || !ctx.usable)
      hybridcache::detail::throw_invalid("ctx", "incomplete",
                                         "needs the replay's cost model and usable matches");
    ctx_ = ctx;
    shadows_.clear();
    // Unlimited KV, or a separate budget evicted in LRU order: the cached blocks do not depend
    // on the states held, so those shadows share one KV bookkeeping (`shared_kv`).
    // Under a joint budget the states held decide which KV stays, but the shadows that evict
    // KV in LRU order differ only by a threshold in one shared order (`lru_lanes`).
    kv_.reset();
    lanes_.reset();
    if (ctx.kv != kv_mode::joint) kv_ = std::make_unique<shared_kv>(*ctx.trace, *ctx.cost);
    if (ctx.kv == kv_mode::joint && ctx.begin == 0)
      lanes_ = std::make_unique<lru_lanes>(*ctx.trace);
    for (auto& c : candidates_) {
      const bool share = kv_ && (ctx.kv == kv_mode::unlimited || c->kv_eviction() == kv_order::lru);
      shadows_.push_back(
          std::make_unique<tree_replayer>(*ctx.trace, *c, ctx.budget, *ctx.usable, *ctx.cost,
                                          ctx.begin, share ? kv_.get() : nullptr, lanes_.get()));
    }
    for (auto& sh : shadows_) sh->set_timing(false);  // the row's own replayer times them
    guard_ = leader_safeguard(candidates_.size(), initial_);
    losses_.assign(candidates_.size(), 0.0);
    resumed_.assign(candidates_.size(), 0);
    shadow_ns_.assign(candidates_.size(), 0.0);
    lru_.reset(ctx.trace->node_count());
    extras_.clear();
    is_extra_.assign(ctx.trace->node_count(), 0);
    lead_log_.clear();
    shadows_[initial_]->log_states(&lead_log_);
    leader_ = initial_;
    pinned_ = tree_trace::no_parent;
    actual_loss_ = handover_loss_ = 0.0;
  }

  std::size_t resume(const tree_step& s) override {
    std::size_t top = s.usable;
    for (const auto& sh : shadows_)
      if (sh->next() != s.index)
        hybridcache::detail::throw_invalid("request", s.index, "is not the shadows' next");
    each_shadow([&](std::size_t c, tree_replayer& sh) {
      resumed_[c] = sh.begin_request();
      top = std::max(top, sh.current().usable);
    });
    const double B = static_cast<double>(ctx_.trace->block());
    for (std::size_t c = 0; c < shadows_.size(); ++c)
      losses_[c] = static_cast<double>(top - resumed_[c]) * B;
    const std::size_t before = leader_;
    leader_ = guard_.observe(losses_, static_cast<double>(top) * B);
    if (leader_ != before) follow_log(before);
    runner_ = leader_;
    const auto scores = guard_.scores();
    for (std::size_t c = 0; c < scores.size(); ++c)
      if (c != leader_ && (runner_ == leader_ || scores[c] < scores[runner_])) runner_ = c;
    const auto path = s.path();
    const std::size_t k = deepest_held(*ctx_.pool, path, s.usable);
    const double loss = static_cast<double>(top - k) * B;
    actual_loss_ += static_cast<double>(s.usable - k) * B;
    // The hand-over's price: the pool's loss beyond the leader it followed into this request.
    const double extra = std::max(0.0, loss - losses_[before]);
    handover_loss_ += extra;
    guard_.note_handover(extra);
    if (k > 0) touch(path[k - 1]);
    pinned_ = k > 0 ? path[k - 1] : tree_trace::no_parent;
    return k;
  }

  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    const auto path = s.path();
    const auto& lead = *shadows_[leader_];
    planned_.clear();
    for (auto j : lead.announced())
      if (j > s.resumed) planned_.push_back(j);
    for (std::size_t j = s.resumed + 1; j <= s.prompt_blocks; ++j) {  // hand-over: re-create
      if (lead.pool().holds(path[j - 1]) && !ctx_.pool->holds(path[j - 1])) planned_.push_back(j);
    }
    std::sort(planned_.begin(), planned_.end());
    planned_.erase(std::unique(planned_.begin(), planned_.end()), planned_.end());
    positions.insert(positions.end(), planned_.begin(), planned_.end());
    each_shadow([](std::size_t, tree_replayer& sh) { sh.allocate_prefill(); });
  }

  void after_prefill(const tree_step& s) override {
    each_shadow([](std::size_t, tree_replayer& sh) { sh.after_prefill(); });
    mirror_room();
    const auto path = s.path();
    for (auto j : planned_) follow(path[j - 1]);
    trim_actual();
  }

  void on_decode_block(const tree_step& s, std::size_t j) override {
    each_shadow([j](std::size_t, tree_replayer& sh) { sh.decode_block(j); });
    mirror_room();
    follow(s.path()[j - 1]);
    trim_actual();
  }

  void finish(const tree_step& s) override {
    each_shadow([](std::size_t, tree_replayer& sh) { sh.end_request(); });
    mirror_room();
    const auto path = s.path();
    if (!path.empty()) follow(path.back());
    trim_actual();
    pinned_ = tree_trace::no_parent;  // the request is done with its resume state
  }

  void on_dropped(std::uint32_t v) override { untrack(v); }
  /// The leader's KV order: the real engine evicts KV as the candidate it follows would (its
  /// shadow's KV is kept under that candidate's own order).
  [[nodiscard]] kv_order kv_eviction() const override {
    return candidates_[leader_]->kv_eviction();
  }

  /// The real state to give up for KV when every evictable leaf holds one: a state the leader
  /// does not hold (`extra`), else none (the least recently used leaf goes).
  std::uint32_t shed_state() override {
    const auto v = given_up(tree_replayer::state_drop::cause::shed);
    return v != tree_trace::no_parent ? v : extra();
  }
  /// Joint KV budget: a state the leader gave up to the engine's one LRU (`lru_state`, the
  /// `vllm_*` rows) while allocating this request's KV goes first here too.
  [[nodiscard]] std::pair<std::uint64_t, std::uint32_t> lru_state() const override {
    const auto v = given_up(tree_replayer::state_drop::cause::lru);
    if (v == tree_trace::no_parent) return tree_policy::lru_state();
    return {0, v};
  }

  /// The candidate the real pool follows for the running request (the lazy leader λ(t)).
  [[nodiscard]] std::uint32_t following() const override {
    return static_cast<std::uint32_t>(leader_);
  }
  /// Each candidate logs the states its own ranking gives up in its shadow, tagged with its
  /// index (`candidate` is not used: the row's own pool follows a leader and ranks nothing).
  void log_victims(std::vector<tree_victim_event>* log, std::uint32_t candidate) override {
    (void)candidate;
    for (std::size_t i = 0; i < candidates_.size(); ++i)
      candidates_[i]->log_victims(log, static_cast<std::uint32_t>(i));
  }
  /// The candidates' whole-cache work (their re-plans and tuning replays) inside the shadows.
  [[nodiscard]] double replan_ns() const override {
    double ns = 0.0;
    for (const auto& c : candidates_) ns += c->replan_ns();
    return ns;
  }

  /// The safeguard's and the hand-over's account of the replay so far.
  [[nodiscard]] portfolio_stats stats() const {
    portfolio_stats st;
    for (const auto& c : candidates_) st.candidates.push_back(c->name());
    st.scores.assign(guard_.scores().begin(), guard_.scores().end());
    st.led.assign(guard_.led().begin(), guard_.led().end());
    st.switches = guard_.switches();
    st.leader_loss = guard_.leader_loss();
    st.actual_loss = actual_loss_;
    st.regret_bound = guard_.regret_bound();
    st.handover_loss = handover_loss_;
    st.shadow_ns = shadow_ns_;
    for (const auto& c : candidates_) st.replan_ns.push_back(c->replan_ns());
    return st;
  }
  /// The candidate leading now.
  [[nodiscard]] std::size_t leader() const noexcept { return leader_; }
  /// Candidate c's shadow (its replay so far: `metrics()` is its own row).
  [[nodiscard]] const tree_replayer& shadow(std::size_t c) const { return *shadows_.at(c); }
  /// The number of candidates.
  [[nodiscard]] std::size_t candidates() const noexcept { return candidates_.size(); }
  /// The real pool's states that the leader does not hold, least recently used first: the
  /// states the hand-over gives up for room, in this order (after the runner-up's preference
  /// and the pin; see `portfolio_policy`'s file comment). Kept as the leader's held set changes,
  /// so a hand-over walks these alone rather than the whole pool.
  [[nodiscard]] std::vector<std::uint32_t> beyond_leader() {
    sync_extras();
    std::vector<std::uint32_t> out;
    out.reserve(extras_.size());
    for (const auto& [st, v] : extras_) out.push_back(v);
    return out;
  }

 private:
  /// f(c, shadow c) for every candidate in order; timed per candidate with `set_profile`.
  template <class F>
  void each_shadow(F&& f) {
    for (std::size_t c = 0; c < shadows_.size(); ++c) {
      if (!profile_) {
        f(c, *shadows_[c]);
        continue;
      }
      const auto t0 = std::chrono::steady_clock::now();
      f(c, *shadows_[c]);
      shadow_ns_[c] +=
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
  }
  void touch(std::uint32_t v) {
    const bool was = is_extra_[v] != 0;
    if (was) set_extra(v, false);
    lru_.touch(v);
    if (was) set_extra(v, true);
  }
  void untrack(std::uint32_t v) {
    if (is_extra_[v]) set_extra(v, false);
    lru_.erase(v);
  }
  /// `extras_` holds (v's recency stamp, v) exactly when `on`.
  void set_extra(std::uint32_t v, bool on) {
    is_extra_[v] = on ? 1 : 0;
    if (on)
      extras_.emplace(lru_.stamp(v), v);
    else
      extras_.erase({lru_.stamp(v), v});
  }
  /// Brings `extras_` up to date with the leader's held set: a node whose state the leader
  /// added or removed since the last call is re-read (the real pool's own changes update it
  /// where they happen: `touch`, `untrack`, `follow`).
  void sync_extras() {
    const auto& lead = shadows_[leader_]->pool();
    for (const auto v : lead_log_) {
      const bool want = lru_.contains(v) && !lead.holds(v);
      if (want != (is_extra_[v] != 0)) set_extra(v, want);
    }
    lead_log_.clear();
  }
  /// A switch from `before`: the log follows the new leader and `extras_` is rebuilt from the
  /// real pool (O(M), once per switch).
  void follow_log(std::size_t before) {
    shadows_[before]->log_states(nullptr);
    shadows_[leader_]->log_states(&lead_log_);
    lead_log_.clear();
    for (const auto& [st, v] : extras_) is_extra_[v] = 0;  // O(M), not a pass over every node
    extras_.clear();
    const auto& lead = shadows_[leader_]->pool();
    for (const auto& [st, v] : lru_)
      if (!lead.holds(v)) set_extra(v, true);
  }
  void drop_actual(std::uint32_t v) {
    ctx_.pool->remove(v);
    untrack(v);
  }
  /// The real state to drop for room: the least recently used one held by neither the leader
  /// nor the runner-up (the candidate a switch would most likely go to), else the least recently
  /// used one the leader does not hold (no_parent when none); never the running request's
  /// resume state (`pinned_`). Walks `extras_` (the real states the leader does not hold, in
  /// the real pool's recency order) rather than the whole pool.
  [[nodiscard]] std::uint32_t extra() {
    sync_extras();
    const std::uint32_t pin = pinned_;
    if (runner_ == leader_) {
      for (const auto& [st, v] : extras_)
        if (v != pin) return v;
      return tree_trace::no_parent;
    }
    // One pass: the first held by neither, else the first the leader does not hold.
    const auto& next = shadows_[runner_]->pool();
    std::uint32_t fallback = tree_trace::no_parent;
    for (const auto& [st, v] : extras_) {
      if (v == pin) continue;
      if (!next.holds(v)) return v;
      if (fallback == tree_trace::no_parent) fallback = v;
    }
    return fallback;
  }
  /// The first state the leader gave up for `why` (to the engine's one LRU, or by `shed_state`)
  /// while its engine allocated this request's KV, that the real pool still holds (no_parent when
  /// none). The real request allocates after the shadows, so the real engine gives up the same
  /// states, in the same order.
  [[nodiscard]] std::uint32_t given_up(tree_replayer::state_drop::cause why) const {
    const auto& lead = *shadows_[leader_];
    for (const auto& d : lead.allocation_drops())
      if (d.why == why && d.node != pinned_ && ctx_.pool->holds(d.node) &&
          !lead.pool().holds(d.node))
        return d.node;
    return tree_trace::no_parent;
  }
  /// Hand-over: the real pool takes the state at `v` (open now) when the leader holds it.
  void follow(std::uint32_t v) {
    auto& pool = *ctx_.pool;
    if (!shadows_[leader_]->pool().holds(v) || pool.holds(v) || !pool.is_open(v)) return;
    // Joint KV budget: hold as many states as the leader, taking room from cached KV first.
    if (pool.full() && ctx_.grow && pool.size() < shadows_[leader_]->pool().size()) ctx_.grow(1);
    if (pool.full()) {
      const auto victim = extra();
      if (victim == tree_trace::no_parent) return;
      drop_actual(victim);
    }
    pool.add(v);
    touch(v);
  }
  /// Joint KV budget, after the leader's step: the real engine gives cached KV up as the leader
  /// did: first the blocks the leader's `grow` evicted, by name (`tree_context::evict_kv_leaf`;
  /// which leaves a count would take depends on the states held at the time, and the leader's
  /// held set changes between two grows of one request), then down to as many blocks as the
  /// leader caches (its least recently used leaves, in the leader's order). Where the leader
  /// took room for a state it then kept, `follow` takes the same room (`tree_context::grow`);
  /// this also covers room it took and did not use. (Doing it only while the real pool holds
  /// exactly the leader's states changed nothing that mattered on the tuning families.)
  void mirror_room() {
    if (!ctx_.evict_kv_older) return;
    if (ctx_.evict_kv_leaf)
      for (const auto v : shadows_[leader_]->grow_evictions()) ctx_.evict_kv_leaf(v);
    const std::size_t want = shadows_[leader_]->tree().blocks();
    while (ctx_.tree->blocks() > want &&
           ctx_.evict_kv_older(std::numeric_limits<std::uint64_t>::max())) {
    }
  }
  /// Joint KV budget: no more real states than the leader holds (extras press the shared pool).
  void trim_actual() {
    if (ctx_.kv != kv_mode::joint) return;
    const std::size_t keep = shadows_[leader_]->pool().size();
    while (ctx_.pool->size() > keep) {
      const auto victim = extra();
      if (victim == tree_trace::no_parent) return;
      drop_actual(victim);
    }
  }

  std::string name_;
  std::vector<std::unique_ptr<tree_policy>> candidates_;
  std::unique_ptr<shared_kv> kv_;  ///< the KV bookkeeping the shadows share (not under joint)
  std::unique_ptr<lru_lanes> lanes_;  ///< under joint: the LRU order the LRU shadows share
  std::vector<std::unique_ptr<tree_replayer>> shadows_;
  leader_safeguard guard_;
  tree_context ctx_{};
  std::vector<double> losses_;
  std::vector<std::size_t> resumed_, planned_;
  recency_order lru_;  ///< the real pool's states, least recently used first
  /// The real pool's states the leader does not hold, as (recency stamp, node): `lru_`'s order.
  std::set<std::pair<std::uint64_t, std::uint32_t>> extras_;
  std::vector<std::uint8_t> is_extra_;   ///< per node: in `extras_`
  std::vector<std::uint32_t> lead_log_;  ///< the leader's held-set changes not yet read
  std::size_t initial_ = 0;              ///< λ(0)
  std::size_t leader_ = 0, runner_ = 0;
  /// The running request's resume state (no_parent between requests and for a cold start).
  std::uint32_t pinned_ = tree_trace::no_parent;
  double actual_loss_ = 0.0, handover_loss_ = 0.0;
  bool profile_ = false;           ///< `set_profile`
  std::vector<double> shadow_ns_;  ///< per candidate, with `profile_`
};

HYBRIDCACHE_NAMESPACE_END
