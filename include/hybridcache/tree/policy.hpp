#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `state_policy`: where a serving engine should keep recurrent (SSM / linear-attention)
/// states in its prefix tree, learned online (DESIGN §7, docs/tree.md).
///
/// The policy mirrors the engine's radix tree at block granularity B: one node per full block,
/// keyed by the chained block key h_i of segment/keys.hpp (the namespace is in h_0, so two
/// namespaces never reach the same node; a lookup also checks the parent link, so even a digest
/// collision cannot join two paths). The engine keeps its tensors; the policy keeps, per node,
///
/// - w(v): exponentially weighted count of requests whose match ended at v,
///   ŵ(v) = (1−γ)/(1−γ^n) Σ_s γ^{n−s} [match s ended at v] (DESIGN §3's histogram on the tree),
///   stored as Σ_s γ^{−s}[…] with a renormalised common scale, so it stays finite forever;
///   plus, at the end e of an inserted sequence where no match has ended yet, the fresh-end prior
///   π(e) = p̂ · min(1, 1/((1 − γ) D̂)) observations (a fractional pseudo-observation now), p̂ the
///   EW share of such ends that a later match ended at, D̂ their mean age then; the first real
///   match at e replaces it
///   (`policy_options::fresh_prior`; a conversation's next turn resumes at its last turn's end);
///   the end of a request's prompt gets the same kind of prior, learned on its own books
///   (`prefill_prior`, `note_prefill_end`: a re-asked prompt resumes there), and a learned branch
///   point of a new prompt the same kind again (`branch_prior`, `note_branch_point`: another
///   question on a cached document leaves the earlier prompt there);
///   a node's first real match counts q = (h₂ + 1)/(n₁ + 2) observations until a second one
///   (`repeat_discount`);
/// - whether v holds a state (and its bytes, its age for P(hit | age), `age_value`), pins of
///   in-flight requests, the re-planned set.
///
/// Every constant is derived, learned online or fixed a priori with its reason written down
/// (policy_options below; docs/tree.md, "Constants"); the mechanisms that did not pay on the
/// tuning families (memory scaled to the pool, admission by value, the junction prior) were
/// removed in 0.2 (docs/tree_simulation.md, "Fewer knobs (issue #24)").
///
/// Cost model (DESIGN §7): a request whose match ends at v replays
/// r(v) = depth(v) − depth(anchor(v)) tokens, anchor(v) the deepest state on its path (the
/// namespace root, the empty prefix, is free); E[r] = Σ ŵ(v) r(v).
///
/// Engine calls, per request:
/// 1. `match(ns, prompt)` → the deepest cached node, the node to resume from (pinned) and the
///    tokens to replay; the match end is observed.
/// 2. `prefill_plan(m, prompt_len, chunk_ends)` → the positions (on the engine's chunk grid and
///    the block grid) where the engine should snapshot: planned nodes on the replayed path, the
///    junction where the request leaves the cached tree, and the deepest new position (tail);
///    `branch_point(m, prompt_len, chunk_ends)` → one more: where later requests are likely to
///    leave this prompt (the learned branch point, `branch_prior`); or, from an engine that
///    knows where the prompt's user messages start, `message_branch_point(m, prompt_len,
///    user_starts)` in its place (the deepest start past the resume).
/// 3. `insert(ns, tokens)` → node ids of the request's blocks; `admit(node, bytes)` for each
///    snapshot the engine stored → the victims to free first (by exact ΔE[r] per byte times
///    P(hit | age), never pinned) and whether it was admitted (a full pool refuses a state no
///    match has ended at that is worth no more than the first victim, `admit_by_value`; the
///    engine then discards the snapshot), with `note_prefill_end(v)` before offering the state at
///    `prefill_end(m, prompt_len)` (the prompt's usable end, where a re-ask resumes) and
///    `note_branch_point(v)` before offering the branch point's;
///    `unpin(m.resume_node)` once the state was loaded.
/// Under external pressure: `evict(bytes)`. When the engine drops KV of a leaf: `erase(node)`.
/// Node ids carry their slot's generation: any call given the id of an erased node throws
/// `stale_handle_error`, even once another namespace's node took the slot (docs/tree.md,
/// "Stale ids").
/// Every `replan_every` observations, once the blocks walked since the last re-plan reach
/// `replan_work` × the node count (so re-plans cost O(1) amortised per block), the exact tree
/// planner (placement/tree.hpp) re-solves the placement for the pool's capacity; a new plan is
/// adopted only if it lowers E[r] by more than the `hysteresis` fraction.
///
/// Structure (docs/tree.md, "Structure"): this class is a thin façade over four parts, each in
/// its own header and testable alone — `tree_index` (tree/index.hpp: keys, parent check,
/// namespaces, node ids with generations), `tree_statistics` (tree/statistics.hpp: the EW
/// match-end masses, priors, repeat discount, ages, finite forever), `tree_planner`
/// (tree/planner.hpp: the exact re-plan over placement/tree.hpp) and `tree_state_pool`
/// (tree/eviction.hpp: held states, pins, the ΔE[r]-per-byte admission and victim ranking).
///
/// Not thread-safe: call it under the engine's scheduler lock.
///
/// @code
///   hybridcache::state_policy pol({.block_size = 16, .state_bytes = 1 << 20,
///                                        .capacity_bytes = 64 << 20});
///   auto ns = hybridcache::namespace_key{}.with_tenant("org_1");
///   auto m = pol.match(ns, prompt);                  // resume from m.resume_tokens
///   auto snap = pol.prefill_plan(m, prompt.size(), chunk_ends);
///   auto path = pol.insert(ns, prompt);              // path[p / 16 - 1] is the node at p
///   for (auto p : snap) {
///     const auto r = pol.admit(path[p / 16 - 1], 1 << 20);
///     for (auto v : r.victims) free(v);
///     if (!r.admitted) discard(p);                 // no room, or refused by value
///   }

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/tree/eviction.hpp"
#include "hybridcache/tree/index.hpp"
#include "hybridcache/tree/planner.hpp"
#include "hybridcache/tree/statistics.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Construction parameters of `state_policy`. Each constant is the engine's (block_size,
/// state_bytes, capacity_bytes), learned online by the mechanism it switches on (fresh_prior,
/// repeat_discount, age_value, prefill_prior), derived, or fixed a priori for the reason given
/// with it; none was chosen on a table this project reports (docs/tree.md, "Constants"). The
/// switches exist for the simulator's ablation rows (`hybridcache_noprior`, `_norepeat`,
/// `_noage`, `_noprefill`, `_nofill`); the defaults are the policy.
struct policy_options {
  std::size_t block_size = 16;     ///< B: tokens per node (the engine's state/KV block grid)
  std::size_t state_bytes = 1;     ///< bytes of one state, for planning (admit takes actual)
  std::size_t capacity_bytes = 1;  ///< the state pool's budget; never exceeded
  /// EW decay per observation, in (0, 1]. Fixed a priori, as DESIGN §3's chain histogram: an
  /// EW memory 1/(1 − γ) of 100 observations, long enough that a prefix used a few times in a
  /// hundred requests keeps its weight, short enough that the weight of a session that moved on
  /// is gone within a few hundred (the age value below then ranks what the window still holds).
  double gamma = 0.99;
  /// Observations between automatic re-plans; 0 = manual. Fixed a priori as a cost bound, not a
  /// quality setting: with `replan_work` it only decides how often the exact plan is refreshed.
  std::size_t replan_every = 10;
  /// A new plan must lower E[r] by this fraction, in [0, 1). Fixed a priori at 2·(1 − γ) for the
  /// default γ: one observation moves a share 1 − γ = 1 % of the EW mass, so a plan must be
  /// better by what two observations can move before it replaces the current one, and plans
  /// never flip on noise.
  double hysteresis = 0.02;
  /// Admit the point where a request leaves the tree. Derived: it is the one node of a new
  /// branch that every later request sharing the prefix passes through.
  bool snapshot_junction = true;
  /// Admit the deepest new grid position of a prefill. Derived: the next turn of a conversation
  /// resumes there (its prompt extends this sequence).
  bool snapshot_tail = true;
  /// Fresh-end prior: `insert` gives the end node e of the inserted sequence, if no match has
  /// ended there yet, the pseudo-observation π = p̂ · min(1, 1/((1 − γ) D̂)) · (mass of one
  /// observation now), with p̂ = (h + 1)/(n + 2) the EW (γ per insert) share of such ends that a
  /// later match ended at and D̂ the EW mean age at that match (both learned online; the +1/+2
  /// is a uniform prior, fixed a priori); the first real match at e replaces π (docs/tree.md,
  /// "Fresh ends").
  bool fresh_prior = true;
  /// Automatic re-plans also wait until the blocks walked by `match`/`insert` since the last one
  /// reach `replan_work` × the live node count, so their amortised cost per block stays
  /// ≈ (re-plan cost per node) / replan_work; 0 = every `replan_every` observations only.
  /// Fixed a priori: 1 makes a re-plan's cost O(1) per block walked.
  double replan_work = 1.0;
  /// Repeat discount: a node's first real match counts q = (h₂ + 1)/(n₁ + 2) observations, n₁
  /// the EW (γ per first match) count of nodes matched for the first time and h₂ of those
  /// matched again since (learned online); the second match restores the first to a full
  /// observation (its weight ×1/q, q then). A conversation's turn end is matched once, by the
  /// next turn, and never again, so it stops holding weight once the conversation moved on; a
  /// system prompt's end, matched again and again, keeps its full count (docs/tree.md, "Repeat
  /// discount").
  bool repeat_discount = true;
  /// Age-conditioned value (EVA, Beckmann & Sanchez, "Maximizing Cache Performance Under
  /// Uncertainty", HPCA 2017): a held state's ΔE[r] per byte is scaled by the learned chance that
  /// its region is matched again given its age a (observations since its admission or its last
  /// resume), P(hit | a) = (H_{≥b} + s·P̄)/(H_{≥b} + E_{≥b} + s), b = bit_width(a) the log2
  /// bucket of a, H_j / E_j the EW (γ per event) counts of resumes from a state at an age in
  /// bucket j and of states evicted or dropped at such an age, P̄ = (H + s/2)/(H + E + s) the
  /// all-age share, s the mass of one event now (docs/tree.md, "Age-conditioned value"). A state
  /// whose conversation ended keeps its region weight for the whole EW window, but its age keeps
  /// growing past the ages at which states are still resumed, so it loses its rank as an LRU
  /// would drop it. On by default since 0.2; false: ΔE[r] per byte alone (the ablation row
  /// `hybridcache_noage`).
  bool age_value = true;
  /// Prefill-end prior: `note_prefill_end(v)` gives the end v of a request's prompt (its usable
  /// end, `prefill_end`: where a re-asked prompt resumes), if no match has ended there yet, the
  /// pseudo-observation π_P = p̂_P · min(1, 1/((1 − γ) D̂_P)) · (mass of one observation now),
  /// learned apart from the turn ends of `fresh_prior`: p̂_P = (h_P + 1)/(n_P + 2) the EW (γ per
  /// noted prefill end) share of such ends that a later match ended at, D̂_P their EW mean age
  /// then (learned online; the +1/+2 a uniform prior); the first real match at v replaces π_P
  /// (docs/tree.md, "Prefill ends"). On by default since 0.2 (it pays on the tuning families
  /// once the age value is on: docs/tree_simulation.md, "Fewer knobs (issue #24)"); false:
  /// `note_prefill_end` does nothing (the ablation row `hybridcache_noprefill`).
  bool prefill_prior = true;
  /// Fill free memory: while the pool has free room, admitting a state displaces nothing, so
  /// `prefill_plan` also returns up to F = ⌊(capacity_bytes − used_bytes) / state_bytes⌋ − (its
  /// other positions) further candidates (grid positions in (resume, prompt] whose node holds no
  /// state), spread evenly over them with the deepest kept: of n such candidates c_0 < … < c_{n−1}
  /// it picks c_{⌈(i+1)·n/k⌉−1}, i < k = min(F, n). They fit the free room, so admitting them
  /// evicts nothing; once held they are ranked for eviction by ΔE[r] per byte as any state (one
  /// whose region no match has ended in is worth 0 and goes first). Derived: free room costs
  /// nothing to fill. false: planned, junction and tail positions only (docs/tree.md, "Free
  /// memory").
  bool fill_free = true;
  /// Branch points (added after 0.2.0): learn where requests leave the cached tree and snapshot a
  /// new prompt where later requests are likely to leave it. Per match, the divergence D = (blocks
  /// offered) − (blocks matched) ≥ 1 is one EW event (γ per event) of the law F_j = P(D ≤ 2^j −
  /// 1 | D ≥ 1) on log2 buckets; `branch_point(m, P, chunk_ends)` returns the chunk end q beyond
  /// the match that maximises the expected tokens a later request leaving the prompt inside it
  /// saves, (q − matched)·F(u − q) (u = ⌊(P − 1)/B⌋, the prompt's usable end; F read at the
  /// bucket bounds, so it never over-counts), and `note_branch_point(v)` gives its node the
  /// branch prior π_I = p̂_I · min(1, 1/((1 − γ) D̂_I)) observations, learned like the other
  /// priors (p̂_I the EW share of branch points a later match passed through or ended at, D̂_I
  /// their mean age then); the first such match replaces π_I (docs/tree.md, "Branch points").
  /// Derived: a request that leaves a cached prompt inside it (another question on the same
  /// document) replays from the deepest state above the point where it left; the divergences
  /// of the requests seen so far are the law of where the next ones leave. false: no branch
  /// point is returned or noted (the ablation row `hybridcache_nobranch`).
  bool branch_prior = true;
  /// Joint KV charge (added after 0.2.0; last, so that positional initialisers of the fields
  /// above keep their meaning): 0, or when states and cached KV share one memory pool: the KV bytes
  /// of one block. A held state with no held state below it is then ranked by ΔE[r] per byte of
  /// itself *and* the KV of its depth gap, which its eviction frees as well (`age_scaled_value`).
  /// Derived from the pool's accounting, not tuned; the engine knows it (B · KV bytes per token).
  std::size_t kv_block_bytes = 0;
  /// Admission by value for speculative states (added after 0.2.1; last, for the positional
  /// initialisers above). A state offered to a full pool at a node where no real match has ended
  /// yet (its value rests on a prior, `fresh_prior` / `prefill_prior` / `branch_prior`, or only
  /// on the mass below it) is admitted only if its value at admission, ΔE[r] per byte times
  /// P(hit | age 0), exceeds the least value held, the first victim's; otherwise `admit` refuses
  /// it and evicts nothing. A state at a node where a match ended (the junction a request just
  /// left the tree at, or any node requests ended at before) is admitted as before, displacing
  /// the cheapest held ones. Derived, no constant: both sides are the pool's own ranking, the
  /// admission rule of TinyLFU (Einziger, Friedman & Manes, "TinyLFU: A Highly Efficient Cache
  /// Admission Policy", ACM TOS 2017: a newcomer enters only if it is worth more than the victim
  /// it would replace). Why not every state: measured, the gate on every state recomputes
  /// 0.8–1.6 % more than this one (docs/tree_simulation.md, "Admission by value for speculative
  /// states"); the likely reason is that a node's first match counts only q observations
  /// (`repeat_discount`), so a new junction would be refused for the discount meant to fade
  /// one-off ends, though every later request that leaves the tree there needs it. false: every
  /// admitted state displaces the cheapest held ones (the ablation row `hybridcache_admitall`).
  bool admit_by_value = true;
  /// Age classes (added after 0.2.1; last, for the positional initialisers above), with
  /// `age_value`: P(hit | age) is learned apart for two classes of states, as EVA classifies
  /// lines (Beckmann & Sanchez, HPCA 2017): class 1, a state admitted at a node that held a
  /// prior (a fresh end, prefill end or branch point: a bet), and class 0, every other state (a
  /// node where matches ended, or a junction); each state's value reads its class's law, the
  /// same formula on that class's resumes and ends (its own P̄). Why: most bets are never
  /// resumed, so one law for all ranks an observed junction that is reused hundreds of
  /// requests apart as if it were an old bet, and evicts it. No constant. Off by default: the
  /// library's row runs it in its long-memory candidate only, a difference between its two
  /// exact candidates rather than a default both carry, and follows whichever leads
  /// (docs/design/tree_safeguard.md §13; decided on the tuning families, checked on held-out
  /// seeds).
  bool age_classes = false;
};

/// What `match` found.
struct match_result {
  node_id node = no_node;          ///< deepest cached node on the path (namespace root if none)
  std::size_t matched_tokens = 0;  ///< depth(node) in tokens (a multiple of B)
  node_id resume_node = no_node;   ///< deepest node with a state (namespace root: empty state)
  std::size_t resume_tokens = 0;   ///< depth(resume_node)
  std::size_t replay_tokens = 0;   ///< matched − resume: cached KV whose state is recomputed
  std::vector<node_id> path;       ///< path[i] = node of block i (i < matched_tokens / B)
};

/// The online prefix-tree state policy (see the file comment). `Hash` is a segment hash policy
/// (keyed XXH3-128 by default).
template <hash_policy Hash = xxh3_hash>
class basic_state_policy {
 public:
  /// @throws invalid_argument for block_size 0, state_bytes 0 or ≥ 2^32, capacity_bytes 0,
  ///         gamma ∉ (0, 1] or hysteresis ∉ [0, 1).
  explicit basic_state_policy(policy_options opts, Hash hash = Hash{})
      : opts_(validated(opts)), hash_(std::move(hash)), stats_(statistics_options(opts)) {}

  // ---- request path -------------------------------------------------------------------------

  /// Walks the full blocks of `tokens` under namespace `ns` (creating the namespace's root on
  /// first use), records where the match ended (one EW observation) and pins the resume state.
  /// Pass `tokens` truncated as the engine requires (SGLang caps a match at input length − 1).
  /// Cost: one chained hash and one index probe per matched block.
  match_result match(const namespace_key& ns, std::span<const token_id> tokens) {
    const slot_id root = index_.root_of(hash_, ns);
    const std::size_t B = opts_.block_size;
    digest h = index_[root].key;
    match_result m;
    slot_id cur = root, anchor = root, branch = no_slot;
    for (std::size_t i = 0; (i + 1) * B <= tokens.size(); ++i) {
      h = hybridcache::chain_key(hash_, h, tokens.subspan(i * B, B));
      const slot_id id = index_.find(h, cur);
      if (id == no_slot) break;
      cur = id;
      m.path.push_back(index_.handle_of(id));
      if (index_[id].state != no_state) anchor = id;
      if (index_[id].flags & tree_node::branch_flag) branch = id;
    }
    planner_.add_work(m.path.size() + 1);
    return finish_match(std::move(m), cur, anchor, branch, tokens.size() / B);
  }

  /// `match` for an engine that already has the chained keys h_1..h_m of `block_keys`
  /// (computed with this policy's hash and `ns`).
  match_result match_keys(const namespace_key& ns, std::span<const digest> keys) {
    return match_keys(ns, keys, {});
  }

  /// `match_keys` for an engine whose own block table already names this policy's node for
  /// some of the blocks (`hints[i]`: the node `extend_keys` returned for block i, kept beside
  /// the engine's block; `no_node` or a stale id where it has none). A hint is taken after an
  /// O(1) check, one read of its record: it must be live, a child of the node matched so far,
  /// and carry key keys[i], which names exactly the node the index probe would find (keys are
  /// unique among a node's children). Any other hint falls back to the probe, so the result is
  /// `match_keys(ns, keys)`'s in every case; a correct hint saves the probe's read of the index
  /// table. `hints` may be shorter than `keys` (the rest is probed).
  match_result match_keys(const namespace_key& ns, std::span<const digest> keys,
                          std::span<const node_id> hints) {
    const slot_id root = index_.root_of(hash_, ns);
    match_result m;
    slot_id cur = root, anchor = root, branch = no_slot;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      slot_id id = no_slot;
      if (i < hints.size() && hints[i] != no_node) {
        const slot_id h = index_.live_slot(hints[i]);
        if (h != no_slot && index_[h].parent == cur && index_[h].key == keys[i]) id = h;
      }
      if (id == no_slot) id = index_.find(keys[i], cur);
      if (id == no_slot) break;
      cur = id;
      m.path.push_back(index_.handle_of(id));
      if (index_[id].state != no_state) anchor = id;
      if (index_[id].flags & tree_node::branch_flag) branch = id;
    }
    planner_.add_work(m.path.size() + 1);
    return finish_match(std::move(m), cur, anchor, branch, keys.size());
  }

  /// Positions (tokens, ascending) at which the engine should snapshot the state during the
  /// prefill that follows `m`: the candidates are the `chunk_ends` that lie on the block grid and
  /// in (m.resume_tokens, prompt_tokens]; of those it returns the re-planned nodes of the
  /// replayed path that lack a state, the junction m.matched_tokens when the prompt goes beyond
  /// it, and the deepest candidate beyond the match (the tail, the next turn's likely resume);
  /// with `fill_free`, also further candidates into the pool's free room (policy_options).
  /// @throws invalid_argument if a chunk end exceeds `prompt_tokens`, or `m` does not fit
  ///         (matched_tokens > prompt_tokens, path size ≠ matched_tokens / B).
  [[nodiscard]] std::vector<std::size_t> prefill_plan(
      const match_result& m, std::size_t prompt_tokens,
      std::span<const std::size_t> chunk_ends) const {
    const std::size_t B = opts_.block_size;
    check_fits(m, prompt_tokens);
    return tree_planner::snapshot_positions(
        index_, B,
        {.resume_tokens = m.resume_tokens, .matched_tokens = m.matched_tokens, .path = m.path},
        prompt_tokens, chunk_ends,
        {.junction = opts_.snapshot_junction,
         .tail = opts_.snapshot_tail,
         .fill_free = opts_.fill_free},
        (opts_.capacity_bytes - pool_.used_bytes()) / opts_.state_bytes);
  }

  /// Adds the full blocks of `tokens` under `ns` (existing nodes are reused).
  /// @returns the node of each full block: result[i] covers tokens [0, (i+1)·B).
  std::vector<node_id> insert(const namespace_key& ns, std::span<const token_id> tokens) {
    const slot_id root = index_.root_of(hash_, ns);
    const std::size_t B = opts_.block_size;
    std::vector<node_id> out;
    out.reserve(tokens.size() / B);
    digest h = index_[root].key;
    slot_id cur = root, anchor = root;
    for (std::size_t i = 0; (i + 1) * B <= tokens.size(); ++i) {
      h = hybridcache::chain_key(hash_, h, tokens.subspan(i * B, B));
      bool created = false;
      cur = index_.child(cur, h, created);
      out.push_back(index_.handle_of(cur));
      if (index_[cur].state != no_state) anchor = cur;
    }
    note_end(cur, anchor);
    planner_.add_work(out.size() + 1);
    return out;
  }

  /// `insert` from precomputed chained keys (see `match_keys`).
  std::vector<node_id> insert_keys(const namespace_key& ns, std::span<const digest> keys) {
    slot_id cur = index_.root_of(hash_, ns), anchor = cur;
    std::vector<node_id> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
      bool created = false;
      cur = index_.child(cur, k, created);
      out.push_back(index_.handle_of(cur));
      if (index_[cur].state != no_state) anchor = cur;
    }
    note_end(cur, anchor);
    planner_.add_work(out.size() + 1);
    return out;
  }

  // ---- a sequence inserted while it is computed (causal engines, issue #22) ----------------

  /// `insert_keys` of a sequence still being computed (the prompt after its prefill, then the
  /// output block by block): adds `keys` below `parent` (`no_node`: the root of `ns`) and
  /// returns their nodes, but notes no end (`note_sequence_end` does, once the sequence ended).
  /// @throws invalid_argument for a `parent` that is not a live node.
  std::vector<node_id> extend_keys(const namespace_key& ns, node_id parent,
                                   std::span<const digest> keys) {
    const slot_id from =
        parent == no_node ? index_.root_of(hash_, ns) : index_.resolve(parent, "parent");
    std::vector<node_id> out;
    out.reserve(keys.size());
    walk_into(from, keys, out);
    planner_.add_work(out.size() + (parent == no_node ? 1 : 0));
    return out;
  }
  /// `extend_keys(ns, parent, {key})` without the vector: the one block a decode step adds
  /// below `parent` (`no_node`: the root of `ns`). Same node, same work count.
  /// @throws invalid_argument for a `parent` that is not a live node.
  node_id extend_key(const namespace_key& ns, node_id parent, const digest& key) {
    const slot_id from =
        parent == no_node ? index_.root_of(hash_, ns) : index_.resolve(parent, "parent");
    bool created = false;
    const slot_id cur = index_.child(from, key, created);
    planner_.add_work(parent == no_node ? 2 : 1);
    return index_.handle_of(cur);
  }

  /// `extend_keys(ns, no_node, keys)` of a sequence whose first `prefix.size()` blocks a match of
  /// the same keys already found (`match_result::path` of `match_keys(ns, keys[0..k))`, k ≥
  /// prefix.size()): walks only the blocks beyond the prefix, one index probe per new block
  /// instead of one per block. Returns the same nodes, and counts the same work towards
  /// work-bounded re-plans, as the walk from the root, so decisions do not change. The prefix is
  /// checked in O(1): its first node must be a child of `ns`'s root with key keys[0], and its
  /// deepest a live node of depth prefix.size() with key keys[prefix.size() − 1] (keys are
  /// chained, so that key names the whole prefix). A prefix that fails the check (a node erased
  /// since the match, another namespace) is ignored: the walk starts at the root.
  /// @throws invalid_argument for a prefix longer than `keys`.
  std::vector<node_id> extend_keys(const namespace_key& ns, std::span<const node_id> prefix,
                                   std::span<const digest> keys) {
    if (prefix.size() > keys.size())
      hybridcache::detail::throw_invalid("prefix.size()", prefix.size(),
                                         "exceeds keys.size() = " + std::to_string(keys.size()));
    const slot_id root = index_.root_of(hash_, ns);
    const std::size_t n = prefix.size();
    slot_id from = root;
    std::vector<node_id> out;
    out.reserve(keys.size());
    if (n != 0) {
      const slot_id first = index_.live_slot(prefix.front()),
                    last = index_.live_slot(prefix.back());
      if (first != no_slot && last != no_slot && index_[first].parent == root &&
          index_[first].key == keys.front() && index_[last].blocks == n &&
          index_[last].key == keys[n - 1]) {
        out.assign(prefix.begin(), prefix.end());
        from = last;
      }
    }
    walk_into(from, keys.subspan(out.size()), out);
    planner_.add_work(keys.size() + 1);
    return out;
  }
  /// The sequence added by `extend_keys` ended at `end`: notes the end exactly as
  /// `insert_keys` of the whole sequence would (fresh-end prior).
  /// @throws invalid_argument (stale_handle_error) for a node that is not live.
  void note_sequence_end(node_id end) {
    const slot_id e = index_.resolve(end, "end");
    if (index_[e].parent == no_slot) return;
    const slot_id anchor =
        index_[e].state != no_state ? e : tree_state_pool::state_above(index_, e);
    note_end(e, anchor);
  }
  /// The pool's budget is now `bytes` (an engine whose states share one memory pool with KV, as
  /// vLLM's hybrid allocator: the room for states changes as KV grows and shrinks). Plans,
  /// re-plans and admissions use it from now on; if the states held exceed it, victims in
  /// `evict`'s order are taken off the books and returned for the engine to free.
  /// @throws invalid_argument for bytes 0.
  std::vector<node_id> set_capacity_bytes(std::size_t bytes) {
    if (bytes == 0) hybridcache::detail::throw_invalid("bytes", bytes, "must be >= 1");
    opts_.capacity_bytes = bytes;
    if (pool_.used_bytes() <= bytes) return {};
    return evict_greedy(pool_.used_bytes() - bytes);
  }

  /// The engine stored a state of `bytes` at `node`. If the pool would overflow, the victims
  /// (`evict`'s order, never a pinned state) are taken off the books and returned for the engine
  /// to free, except that with `admit_by_value` a state at a node where no real match has ended
  /// yet is refused when it is worth no more than the least valuable held state (its ΔE[r] per
  /// byte times P(hit | age 0), against the first victim's value; policy_options). If even all
  /// unpinned states would not make room, nothing changes and `admitted` is false (the engine
  /// discards the snapshot); a refusal by value changes nothing either.
  /// Admitting a node that already holds a state changes nothing.
  /// @throws stale_handle_error for the id of an erased node; invalid_argument for an id this
  ///         policy never issued, a namespace root, or bytes ∉ [1, 2^32).
  admit_result admit(node_id id, std::size_t bytes) {
    const slot_id node = index_.resolve(id, "node");
    if (index_[node].parent == no_slot)
      hybridcache::detail::throw_invalid("node", id, "a namespace root holds the free empty state");
    if (bytes == 0 || bytes > max_state_bytes)
      hybridcache::detail::throw_invalid("bytes", bytes, "must be in [1, 2^32)");
    // Admission by value: a state no match has ended at must outrank the first victim (the
    // pool compares the record `add` would make with it when a victim must go).
    if (opts_.admit_by_value && index_[node].state == no_state && speculative(node) &&
        pool_.used_bytes() + bytes > opts_.capacity_bytes && bytes <= opts_.capacity_bytes) {
      const tree_state newcomer =
          pool_.prospective(index_, node, static_cast<std::uint32_t>(bytes), now());
      return logged(pool_.admit(index_, node, bytes, opts_.capacity_bytes, now(), value_fn(),
                                end_fn(), &newcomer));
    }
    return logged(
        pool_.admit(index_, node, bytes, opts_.capacity_bytes, now(), value_fn(), end_fn()));
  }

  /// The engine stored states of `bytes` each at the nodes of `path`, each a proper descendant
  /// of the one before (the snapshots of one prefill, shallowest first). If those that hold no
  /// state yet all fit the free room (used + n · bytes ≤ capacity), admits them exactly as
  /// `admit` called for each in turn would (none evicts then; the same records, the regions bit
  /// for bit) and returns true. The regions are summed in one walk below the first node
  /// (`tree_state_pool::add_path`), where the calls would walk below each: on a fresh path of P
  /// blocks, O(P) instead of O(P²). Otherwise nothing changes and it returns false; admit them
  /// one by one then, which evicts.
  /// @throws stale_handle_error / invalid_argument as `admit`, for any node of `path`;
  ///         invalid_argument for a node that is not a proper descendant of the one before.
  bool admit_path(std::span<const node_id> path, std::size_t bytes) {
    if (bytes == 0 || bytes > max_state_bytes)
      hybridcache::detail::throw_invalid("bytes", bytes, "must be in [1, 2^32)");
    path_slots_.clear();
    slot_id prev = no_slot;
    for (const node_id id : path) {
      const slot_id v = index_.resolve(id, "path");
      if (index_[v].parent == no_slot)
        hybridcache::detail::throw_invalid("path", id,
                                           "a namespace root holds the free empty state");
      if (prev != no_slot) {
        slot_id a = v;
        while (a != no_slot && index_[a].blocks > index_[prev].blocks) a = index_[a].parent;
        if (a != prev || v == prev)
          hybridcache::detail::throw_invalid("path", id,
                                             "is not a proper descendant of the node before it");
      }
      prev = v;
      if (index_[v].state == no_state) path_slots_.push_back(v);
    }
    if (path_slots_.empty()) return true;
    if (pool_.used_bytes() + path_slots_.size() * bytes > opts_.capacity_bytes) return false;
    pool_.add_path(index_, path_slots_, static_cast<std::uint32_t>(bytes), now());
    return true;
  }

  /// Where the engine snapshots the prefill's end for the prefill-end prior (`prefill_prior`):
  /// the deepest position a re-ask of this prompt can resume at, its usable end
  ///
  ///   e = ⌊(prompt_tokens − 1)/B⌋ · B,
  ///
  /// if it lies past `m.resume_tokens`. That is the prompt's last full block unless
  /// prompt_tokens is a multiple of B: then a re-ask, which computes at least the prompt's last
  /// token, resumes one block earlier, and a state at the last full block serves only longer
  /// prompts. Snapshot e with the plan and call `note_prefill_end` on its node before `admit`.
  /// Nothing with `prefill_prior` off, for a prompt of at most B tokens, or when e ≤ the resume.
  /// O(1). @throws invalid_argument as `prefill_plan`.
  [[nodiscard]] std::optional<std::size_t> prefill_end(const match_result& m,
                                                       std::size_t prompt_tokens) const {
    check_fits(m, prompt_tokens);
    if (!opts_.prefill_prior || prompt_tokens == 0) return std::nullopt;
    const std::size_t B = opts_.block_size, e = (prompt_tokens - 1) / B * B;
    if (e <= m.resume_tokens) return std::nullopt;
    return e;
  }

  /// The engine's prefill of the current request ends at `node` (the node of `prefill_end`, a
  /// node of the last `insert`): with `prefill_prior` on and no match ended there yet (no
  /// weight, no prior), it gets the prefill-end prior π_P (policy_options::prefill_prior), so a
  /// later `admit(node, …)` values the state by the chance that the prompt is asked again.
  /// Call it before offering that state to `admit`. O(depth of node) (the state above it).
  /// @throws stale_handle_error / invalid_argument for an erased / unknown node.
  void note_prefill_end(node_id id) {
    const slot_id node = index_.resolve(id, "node");
    book_prior(node, stats_.note_prefill_end(index_, node));
  }

  /// The learned branch point of the prefill that follows `m` (policy_options::branch_prior):
  /// of the `chunk_ends` on the block grid in (max(m.matched_tokens, m.resume_tokens), u·B),
  /// u = ⌊(prompt_tokens − 1)/B⌋, the q that maximises (q − matched)·F(u − q/B), F_j = P(D ≤
  /// 2^j − 1 | D ≥ 1) the learned divergence law read at its bucket bounds (so q is the deepest
  /// candidate with u − q/B ≥ 2^j − 1 for the best j). Nothing while no divergence was seen,
  /// with `branch_prior` off, or when no candidate gains.
  ///
  /// A branch state is optional (the engine computes those tokens anyway), so q is returned only
  /// if its state would not be the pool's first victim: when the pool has no room for one more
  /// state of `state_bytes`, only if its value at admission,
  ///
  ///   (q/B − m.resume_tokens/B) · B · π_I / state_bytes · P(hit | age 0),
  ///
  /// (ΔE[r] per byte of a state whose region is its prior π_I, below the match's anchor; the
  /// eviction value of `policy_options::age_value`) exceeds the least value held (the victim its
  /// admission would free). O(|chunk_ends| + 33), plus the victim search when the pool is full.
  /// @throws invalid_argument as `prefill_plan`.
  [[nodiscard]] std::optional<std::size_t> branch_point(const match_result& m,
                                                        std::size_t prompt_tokens,
                                                        std::span<const std::size_t> chunk_ends) {
    const std::size_t B = opts_.block_size;
    check_fits(m, prompt_tokens);
    for (auto c : chunk_ends)
      if (c > prompt_tokens)
        hybridcache::detail::throw_invalid("chunk_ends", c, "exceeds prompt_tokens");
    if (!opts_.branch_prior || prompt_tokens == 0) return std::nullopt;
    const std::size_t u = (prompt_tokens - 1) / B;
    const std::size_t lo = std::max(m.matched_tokens, m.resume_tokens) / B;
    if (u <= lo + 1) return std::nullopt;
    // deepest[j]: the deepest candidate block c in (lo, u) whose distance to u, u − c, is at
    // least 2^j − 1 (so a divergence of up to 2^j − 1 blocks still reaches it): per candidate
    // its largest such j, then a suffix maximum over j. One pass, no order assumed.
    constexpr std::size_t J = tree_statistics::age_buckets;
    std::size_t deepest[J] = {};
    for (auto c : chunk_ends) {
      if (c % B != 0 || c / B <= lo || c / B >= u) continue;
      const std::size_t j =
          std::min<std::size_t>(J - 1, static_cast<std::size_t>(std::bit_width(u - c / B + 1)) - 1);
      deepest[j] = std::max(deepest[j], c / B);
    }
    for (std::size_t j = J - 1; j-- > 1;) deepest[j] = std::max(deepest[j], deepest[j + 1]);
    std::optional<std::size_t> best;
    double best_gain = 0.0, f = 0.0;
    for (std::size_t j = 1; j < J; ++j) {
      f += stats_.divergence_share(j);  // F_j
      if (deepest[j] == 0 || !(f > 0.0)) continue;
      const double gain = static_cast<double>(deepest[j] - lo) * f;
      if (gain > best_gain) {
        best_gain = gain;
        best = deepest[j] * B;
      }
    }
    if (best && !branch_state_pays(*best / B - m.resume_tokens / B)) return std::nullopt;
    return best;
  }

  /// The branch point an engine that knows its prompt's user messages offers in place of the
  /// learned one (`branch_point`): of the `user_starts` (token positions where a user message
  /// of the prompt begins, from the engine's chat template), floored to the block grid,
  ///
  ///   q = max { ⌊t/B⌋·B : t ∈ user_starts, m.resume_tokens/B < ⌊t/B⌋ < u },
  ///
  /// u = ⌊(prompt_tokens − 1)/B⌋ as in `branch_point`: the deepest message start past the
  /// resume point whose block is not the prompt's last. Requests that share a system prompt, a
  /// document or earlier turns leave the prompt where a message starts, so that start is where a
  /// later request's match most often ends. No gate: whether the state stays is decided by
  /// `admit` (`admit_by_value`), as for any snapshot. Snapshot it like the plan and call
  /// `note_branch_point` on its node before `admit`. Nothing with `branch_prior` off, for an
  /// empty prompt, or when no start qualifies. Measured: the library's simulator row takes it
  /// (docs/tree_simulation.md, "User-message starts as branch points"). O(|user_starts|).
  /// @throws invalid_argument as `prefill_plan`, or for a start ≥ prompt_tokens.
  [[nodiscard]] std::optional<std::size_t> message_branch_point(
      const match_result& m, std::size_t prompt_tokens,
      std::span<const std::size_t> user_starts) const {
    const std::size_t B = opts_.block_size;
    check_fits(m, prompt_tokens);
    for (std::size_t i = 0; i < user_starts.size(); ++i)
      if (user_starts[i] >= prompt_tokens)
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed("user_starts", i),
                                           user_starts[i], "is not below prompt_tokens");
    if (!opts_.branch_prior || prompt_tokens == 0) return std::nullopt;
    const std::size_t u = (prompt_tokens - 1) / B, lo = m.resume_tokens / B;
    std::optional<std::size_t> best;
    for (auto t : user_starts)
      if (t / B > lo && t / B < u && (!best || t / B * B > *best)) best = t / B * B;
    return best;
  }

  /// The engine will snapshot at `node`, the block of a `branch_point` of the request it just
  /// inserted: with `branch_prior` on and no match ended there yet, it gets the branch prior π_I
  /// (policy_options::branch_prior). Call it before offering that state to `admit`.
  /// @throws stale_handle_error / invalid_argument for an erased / unknown node.
  void note_branch_point(node_id id) {
    const slot_id node = index_.resolve(id, "node");
    book_prior(node, stats_.note_branch(index_, node));
  }

  /// Frees at least `bytes` (or every unpinned state): victims in increasing exact ΔE[r] per
  /// byte — Δ(c) = (depth(c) − depth(up(c))) · W(c), W(c) the weight anchored at c, recomputed
  /// after each removal (removing c raises W of the state above it and Δ of the states below).
  /// Ties: not planned first, then least recently used. Victims are taken off the books.
  std::vector<node_id> evict(std::size_t bytes) { return evict_greedy(bytes); }

  /// Appends a `tree_victim` to `log` for every state that `admit`, `evict` and
  /// `set_capacity_bytes` take from now on, in the order they go, with the figures it was ranked
  /// by: its ΔE[r] in tokens per request (ΔE[r](c) / Σ w), its value per byte, its gap, age and
  /// neighbours (docs/tree.md, "Why a state went"). nullptr stops it. The log is not owned and
  /// must outlive the calls; the policy only appends to it. With no log the request path pays
  /// one test per victim.
  void set_victim_log(std::vector<tree_victim>* log) noexcept { pool_.set_victim_log(log); }

  /// The engine lost or freed the state at `node` on its own (no-op if it holds none).
  /// @throws stale_handle_error / invalid_argument for an erased / unknown node.
  void drop(node_id id) {
    const slot_id node = index_.resolve(id, "node");
    if (index_[node].state != no_state) {
      note_state_end(node);
      pool_.remove(index_, node);
    }
  }

  /// Pins `node`'s state for an in-flight request (pins nest).
  /// @throws stale_handle_error / invalid_argument for an erased / unknown node.
  void pin(node_id id) { pool_.pin(index_, index_.resolve(id, "node")); }
  /// Releases one pin.
  /// @throws stale_handle_error / invalid_argument for an erased / unknown node, or one that is
  ///         not pinned.
  void unpin(node_id id) {
    const slot_id node = index_.resolve(id, "node");
    if (!pool_.unpin(index_, node)) hybridcache::detail::throw_invalid("node", id, "is not pinned");
  }

  /// Removes leaf `node` (the engine evicted its KV block). Its match-end mass moves to its
  /// parent (matches that ended there now end one block up) and stays there: if the parent
  /// still holds a fresh-end or prefill-end prior, its first real match replaces only the prior
  /// (docs/tree.md, "Erase"). A prior of `node` itself is dropped; its state, if any, is freed.
  /// A childless namespace root may be erased too: the namespace is forgotten and the mass of
  /// the matches that ended at its root leaves the total, so the shares of the remaining nodes
  /// still sum to 1. The slot's generation advances: `node` is stale from now on.
  /// @throws stale_handle_error / invalid_argument for an erased / unknown node;
  ///         invalid_argument for a node with children or a pinned node.
  void erase(node_id id) {
    const slot_id node = index_.resolve(id, "node");
    const tree_node& n = index_[node];
    if (n.first_child != no_slot)
      hybridcache::detail::throw_invalid("node", id, "has children (erase leaves only)");
    if (n.pinned) hybridcache::detail::throw_invalid("node", id, "is pinned");
    if (n.state != no_state) {
      note_state_end(node);
      pool_.remove(index_, node);
    }
    if (tree_statistics::has_prior(index_, node))  // n.weight: real mass now
      stats_.drop_prior(index_, node,
                        pool_.region_at(index_, tree_state_pool::state_above(index_, node)));
    stats_.forget(index_, node, index_.namespace_count() == 1);
    index_.erase(node);
  }

  // ---- planning -----------------------------------------------------------------------------

  /// Re-solves the placement exactly (`place_optimal_tree`) on the current tree and statistics
  /// for M = capacity / (mean bytes of the states held, or opts.state_bytes), and adopts it if
  /// E[r](new) < (1 − hysteresis) · E[r](old plan). Called automatically every `replan_every`
  /// observations.
  replan_result replan() {
    const auto t0 = std::chrono::steady_clock::now();
    planner_.restart();
    pool_.recompute_regions(index_);
    const replan_result r = planner_.replan(
        index_, opts_.block_size,
        [&] {
          const std::size_t per = pool_.count() > 0
                                      ? std::max<std::size_t>(1, pool_.used_bytes() / pool_.count())
                                      : opts_.state_bytes;
          return opts_.capacity_bytes / per;
        },
        opts_.hysteresis);
    if (r.adopted) pool_.sync_planned(index_);
    ++replans_;
    replan_ns_ +=
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    return r;
  }
  /// Re-plans run so far, automatic and explicit.
  [[nodiscard]] std::size_t replans() const noexcept { return replans_; }
  /// Their total wall time (ns, `steady_clock`): the whole-tree work an engine may move off the
  /// request path (its amortised share is the request path's total minus this).
  [[nodiscard]] double replan_ns() const noexcept { return replan_ns_; }

  // ---- queries ------------------------------------------------------------------------------

  /// E[r] (tokens) of the states held now, under the current statistics (0 before any match).
  [[nodiscard]] double expected_recompute() {
    return planner_.expected_recompute(index_, opts_.block_size);
  }

  // Predicates answer false for the id of an erased node (and for ids never issued); every
  // other call given one throws stale_handle_error (invalid_argument for ids never issued).
  [[nodiscard]] bool has_state(node_id v) const {
    const slot_id x = index_.live_slot(v);
    return x != no_slot && index_[x].state != no_state;
  }
  /// Bytes of the state held at `v` (0 if none).
  [[nodiscard]] std::size_t state_bytes(node_id v) const {
    const slot_id x = index_.resolve(v, "v");
    return index_[x].state == no_state ? 0 : pool_.state_at(index_, x).bytes;
  }
  [[nodiscard]] bool planned(node_id v) const {
    const slot_id x = index_.live_slot(v);
    return x != no_slot && tree_planner::planned(index_, x);
  }
  [[nodiscard]] bool pinned(node_id v) const {
    const slot_id x = index_.live_slot(v);
    return x != no_slot && index_[x].pinned;
  }
  /// Whether `v` is a live node (false for the id of an erased node, even if its slot was
  /// reused).
  [[nodiscard]] bool contains(node_id v) const { return index_.live_slot(v) != no_slot; }
  /// Depth of `v` in tokens. @throws stale_handle_error / invalid_argument for an erased /
  /// unknown node (as every call below).
  [[nodiscard]] std::size_t depth_tokens(node_id v) const {
    return static_cast<std::size_t>(index_[index_.resolve(v, "v")].blocks) * opts_.block_size;
  }
  /// Parent of `v` (`no_node` for a namespace root).
  [[nodiscard]] node_id parent(node_id v) const {
    const slot_id p = index_[index_.resolve(v, "v")].parent;
    return p == no_slot ? no_node : index_.handle_of(p);
  }
  /// ŵ(v): the EW share of matches that ended at `v` (0 before any match; finite always). The
  /// shares are a distribution: over the live nodes they sum to 1 (0 while no mass is left),
  /// after every call — `erase` moves a leaf's mass to its parent and takes an erased
  /// namespace root's out of the total.
  [[nodiscard]] double match_share(node_id v) const {
    return stats_.match_share(index_, index_.resolve(v, "v"));
  }
  /// p̂_P = (h_P + 1)/(n_P + 2): the EW share of noted prefill ends that a later match ended at
  /// (policy_options::prefill_prior; 1/2 before any).
  [[nodiscard]] double prefill_share() const noexcept { return stats_.prefill_share(); }
  /// π_P / (mass of one observation): p̂_P · min(1, 1/((1 − γ) D̂_P)), the prior a prefill end
  /// noted now would get (its own count excluded).
  [[nodiscard]] double prefill_prior_mass() const noexcept { return stats_.prefill_prior_mass(); }
  /// p̂_I = (h_I + 1)/(n_I + 2): EW share of noted branch points a later match passed through or
  /// ended at (policy_options::branch_prior; 1/2 before any).
  [[nodiscard]] double branch_share() const noexcept { return stats_.branch_share(); }
  /// F_j = P(D ≤ 2^j − 1 | D ≥ 1), the learned divergence law in blocks (0 before any).
  [[nodiscard]] double divergence_within(std::size_t j) const noexcept {
    return stats_.divergence_within(j);
  }
  /// P(hit | age) of the state held at `v` (policy_options::age_value): the learned chance that
  /// its region is matched again given the observations since its admission or last resume;
  /// 1 with `age_value` off. @throws stale_handle_error / invalid_argument for an erased /
  /// unknown node; invalid_argument for one with no state.
  [[nodiscard]] double hit_chance(node_id id) const {
    const slot_id v = index_.resolve(id, "v");
    if (index_[v].state == no_state) hybridcache::detail::throw_invalid("v", id, "holds no state");
    if (!opts_.age_value) return 1.0;
    const tree_state& s = pool_.state_at(index_, v);
    return stats_.hit_given_age_table(s.cls)[tree_statistics::age_bucket(now() - s.touched)];
  }
  [[nodiscard]] std::size_t used_bytes() const noexcept { return pool_.used_bytes(); }
  [[nodiscard]] std::size_t capacity_bytes() const noexcept { return opts_.capacity_bytes; }
  [[nodiscard]] std::size_t state_count() const noexcept { return pool_.count(); }
  /// Live nodes, namespace roots included.
  [[nodiscard]] std::size_t node_count() const noexcept { return index_.node_count(); }
  [[nodiscard]] std::size_t namespace_count() const noexcept { return index_.namespace_count(); }
  [[nodiscard]] std::uint64_t observations() const noexcept { return stats_.observations(); }
  [[nodiscard]] const policy_options& options() const noexcept { return opts_; }
  /// The hash policy of the block keys: `block_keys(pol.hash(), ns, tokens, B)` gives
  /// the keys `match_keys` / `insert_keys` expect for `tokens`.
  [[nodiscard]] const Hash& hash() const noexcept { return hash_; }
  /// Bytes of bookkeeping: node records and index slots (per node), state records (per state),
  /// the free list, the side tables (pinned nodes, carried mass);
  /// the per-namespace map and the re-plan scratch are not counted.
  [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept {
    return index_.bookkeeping_bytes() + pool_.bookkeeping_bytes() + stats_.bookkeeping_bytes();
  }
  /// Reserves room for `nodes` nodes (records and index), so growth leaves no slack.
  void reserve(std::size_t nodes) { index_.reserve(nodes); }
  /// The size of one node record (its generation included); with 4-byte index slots at load
  /// ≤ 1/2 a node costs at most 48 + 16 = 64 bytes.
  static constexpr std::size_t node_record_bytes = tree_index::node_record_bytes;

 private:
  using slot_id = tree_node::slot_id;
  static constexpr slot_id no_slot = tree_node::no_slot;
  static constexpr std::uint32_t no_state = tree_node::no_state;
  /// The nodes of `keys` below `from`, created where absent, appended to `out` (the walk of
  /// `extend_keys`).
  void walk_into(slot_id from, std::span<const digest> keys, std::vector<node_id>& out) {
    for (const auto& k : keys) {
      bool created = false;
      from = index_.child(from, k, created);
      out.push_back(index_.handle_of(from));
    }
  }

  static constexpr std::size_t max_state_bytes = std::numeric_limits<std::uint32_t>::max();

  /// The deepest state on the path to non-root `v`, v included (its namespace root if none).
  [[nodiscard]] slot_id anchor_of(slot_id v) const noexcept {
    return index_[v].state != no_state ? v : tree_state_pool::state_above(index_, v);
  }
  /// Whether a branch state `gap` blocks below the match's anchor would outrank the pool's first
  /// victim (see branch_point): always when the pool has room for one more state. Its value is
  /// the pool's own eviction value of a record with that gap, its prior as region, `state_bytes`
  /// and age 0.
  bool branch_state_pays(std::size_t gap) {
    if (pool_.used_bytes() + opts_.state_bytes <= opts_.capacity_bytes) return true;
    tree_state candidate;
    candidate.gap = static_cast<std::uint32_t>(gap);
    candidate.bytes = static_cast<std::uint32_t>(opts_.state_bytes);
    candidate.region = stats_.branch_prior_mass() * stats_.observation_mass();
    candidate.touched = now();
    candidate.cls = 1;  // a branch point holds a prior
    return outranks_first_victim(candidate);
  }
  /// Whether a state with record `candidate` (not held) is worth more, by the pool's own
  /// eviction value, than the least valuable unpinned held state (false when there is none).
  bool outranks_first_victim(const tree_state& candidate) {
    const age_scaled_value value = value_fn();
    return value(candidate) > pool_.least_value(value);
  }
  /// No real match has ended at `v`: its weight is a prior or nothing (`admit_by_value`).
  [[nodiscard]] bool speculative(slot_id v) const noexcept {
    return tree_statistics::has_prior(index_, v) || index_[v].weight == 0.0;
  }

  /// A prior just set at `node` (if any) joins W of its anchor's state.
  void book_prior(slot_id node, std::optional<double> prior) {
    if (!prior) return;
    if (double* region = pool_.region_at(index_, anchor_of(node))) *region += *prior;
  }

  /// @throws invalid_argument unless `m` fits a prompt of `prompt_tokens` (matched_tokens ≤
  ///         prompt_tokens, on the block grid, path size = matched_tokens / B).
  void check_fits(const match_result& m, std::size_t prompt_tokens) const {
    const std::size_t B = opts_.block_size;
    if (m.matched_tokens > prompt_tokens || m.path.size() != m.matched_tokens / B ||
        m.matched_tokens % B != 0)
      hybridcache::detail::throw_invalid("m.matched_tokens", m.matched_tokens,
                                         "does not fit the prompt length or the match path");
  }

  static policy_options validated(const policy_options& opts) {
    using hybridcache::detail::throw_invalid;
    if (opts.block_size == 0 || opts.block_size > (std::size_t{1} << 24))
      throw_invalid("opts.block_size", opts.block_size, "must be in [1, 2^24]");
    if (opts.state_bytes == 0 || opts.state_bytes > max_state_bytes)
      throw_invalid("opts.state_bytes", opts.state_bytes, "must be in [1, 2^32)");
    if (opts.capacity_bytes == 0) throw_invalid("opts.capacity_bytes", 0, "must be >= 1");
    if (!(opts.gamma > 0.0 && opts.gamma <= 1.0))
      throw_invalid("opts.gamma", opts.gamma, "must be in (0, 1]");
    if (!(opts.hysteresis >= 0.0 && opts.hysteresis < 1.0))
      throw_invalid("opts.hysteresis", opts.hysteresis, "must be in [0, 1)");
    if (!(opts.replan_work >= 0.0 && opts.replan_work <= 1e9))
      throw_invalid("opts.replan_work", opts.replan_work, "must be in [0, 1e9]");
    return opts;
  }
  /// The statistics' share of the (validated) options.
  static tree_statistics_options statistics_options(const policy_options& opts) {
    return {.gamma = opts.gamma,
            .fresh_prior = opts.fresh_prior,
            .repeat_discount = opts.repeat_discount,
            .age_value = opts.age_value,
            .prefill_prior = opts.prefill_prior,
            .branch_prior = opts.branch_prior,
            .age_classes = opts.age_classes};
  }
  /// The observation clock (mod 2^32) that state ages are measured on.
  [[nodiscard]] std::uint32_t now() const noexcept {
    return static_cast<std::uint32_t>(stats_.observations());
  }
  /// The eviction value of a held state: ΔE[r] per byte, times P(hit | age) with `age_value`
  /// (`age_scaled_value`, which the pool's victim search ranks without a scan of every state).
  [[nodiscard]] age_scaled_value value_fn() const {
    return {.block_size = opts_.block_size,
            .hit_by_bin = opts_.age_value ? stats_.hit_given_age_table(0) : nullptr,
            .now = now(),
            .kv_block_bytes = static_cast<double>(opts_.kv_block_bytes),
            .hit_by_bin_prior =
                opts_.age_value && opts_.age_classes ? stats_.hit_given_age_table(1) : nullptr};
  }
  /// Where a state leaving the pool at age `age` is counted.
  [[nodiscard]] auto end_fn() {
    return [this](std::uint32_t age, std::uint8_t cls) { stats_.note_end_age(age, cls); };
  }
  /// The state at `node` leaves the pool (evicted or dropped): one end at its age.
  void note_state_end(slot_id node) {
    const tree_state& s = pool_.state_at(index_, node);
    stats_.note_end_age(now() - s.touched, s.cls);
  }
  std::vector<node_id> evict_greedy(std::size_t need) {
    return logged(pool_.evict(index_, need, no_slot, now(), value_fn(), end_fn()));
  }
  /// `set_victim_log`: the records the pool just appended for `victims`, from its units to
  /// `tree_victim`'s (× B, ÷ Σ w). Returns its argument.
  template <class Result>
  Result logged(Result&& r) {
    if (std::vector<tree_victim>* log = pool_.victim_log()) {
      std::size_t n = 0;
      if constexpr (std::is_same_v<std::remove_cvref_t<Result>, admit_result>)
        n = r.victims.size();
      else
        n = r.size();
      const double B = static_cast<double>(opts_.block_size);
      const double total = stats_.total();
      const double inv = total > 0.0 ? 1.0 / total : 0.0;
      for (std::size_t i = log->size() - n; i < log->size(); ++i) {
        tree_victim& e = (*log)[i];
        e.gap_tokens *= opts_.block_size;
        e.expected_tokens *= B * inv;
        e.value *= inv;
      }
    }
    return std::forward<Result>(r);
  }

  /// `branch`: the deepest node of the path holding a branch prior (no_slot: none); `offered`:
  /// the blocks the match was given (its divergence is offered − matched).
  match_result finish_match(match_result m, slot_id cur, slot_id anchor, slot_id branch,
                            std::size_t offered) {
    const std::size_t B = opts_.block_size;
    if (pool_.pin_count(index_, anchor) == tree_state_pool::max_pins)
      throw capacity_error("hybridcache: state_policy pin count overflow (2^24 - 1)");
    m.node = index_.handle_of(cur);
    m.matched_tokens = static_cast<std::size_t>(index_[cur].blocks) * B;
    m.resume_node = index_.handle_of(anchor);
    m.resume_tokens = static_cast<std::size_t>(index_[anchor].blocks) * B;
    m.replay_tokens = m.matched_tokens - m.resume_tokens;
    if (index_[anchor].state != no_state) {  // a resume: one hit at the state's age
      tree_state& s = pool_.state_at(index_, anchor);
      stats_.note_hit_age(now() - s.touched, s.cls);
      s.touched = now();
    }
    // The request left the cached tree inside a path (its match ended at a node with children;
    // one that only extends a path at its leaf did not): its divergence is one event of the
    // law, and a branch point above it on the path was what it needed (its prior gives way).
    if (offered > m.path.size() && index_[cur].first_child != no_slot) {
      stats_.note_divergence(offered - m.path.size());
      if (branch != no_slot && branch != cur)
        stats_.branch_hit(index_, branch, pool_.region_at(index_, anchor_of(branch)));
    }
    stats_.observe(index_, cur, pool_.region_at(index_, anchor),
                   [&](double f) { pool_.scale_regions(f); });
    if (index_[anchor].state != no_state) pool_.touch(index_, anchor);
    pool_.pin(index_, anchor);
    if (planner_.due(opts_.replan_every, opts_.replan_work, index_.node_count())) replan();
    return m;
  }

  /// An inserted sequence ended at `v` (deepest state on its path: `anchor`): the fresh-end
  /// prior, counted in the anchor's region.
  void note_end(slot_id v, slot_id anchor) {
    if (const std::optional<double> prior = stats_.note_end(index_, v))
      if (double* region = pool_.region_at(index_, anchor)) *region += *prior;
  }

  policy_options opts_;
  Hash hash_;
  tree_index index_;       // the radix index: nodes, keys, namespaces, ids
  tree_statistics stats_;  // the learned law: match-end masses, the prior, discounts, ages
  tree_state_pool pool_;   // the held states, pins and the eviction ranking
  tree_planner planner_;   // the exact re-plan and its schedule
  std::size_t replans_ = 0;
  double replan_ns_ = 0.0;  // their wall time
  std::vector<slot_id> path_slots_;  // admit_path: the nodes that hold no state yet
};

/// The policy with keyed XXH3-128 block keys (a fresh secret per instance).
using state_policy = basic_state_policy<xxh3_hash>;

HYBRIDCACHE_NAMESPACE_END
