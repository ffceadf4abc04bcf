#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `tree::state_policy`: where a serving engine should keep recurrent (SSM / linear-attention)
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
///   p̂ conditioned on the end's junction J (p̂_J = (h_J + k·p̂)/(n_J + k), `junction_prior`);
///   a node's first real match counts q = (h₂ + 1)/(n₁ + 2) observations until a second one
///   (`repeat_discount`); γ is raised to max(γ, 1 − 1/(c·M + W₀)) for a pool of M states
///   (`memory_per_state`, `memory_floor`);
/// - whether v holds a state (and its bytes), pins of in-flight requests, the re-planned set.
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
///    junction where the request leaves the cached tree, and the deepest new position (tail).
/// 3. `insert(ns, tokens)` → node ids of the request's blocks; `admit(node, bytes)` for each
///    snapshot the engine stored → the victims to free first (by exact ΔE[r] per byte, never
///    pinned); `unpin(m.resume_node)` once the state was loaded.
/// Under external pressure: `evict(bytes)`. When the engine drops KV of a leaf: `erase(node)`.
/// Every `replan_every` observations, once the blocks walked since the last re-plan reach
/// `replan_work` × the node count (so re-plans cost O(1) amortised per block), the exact tree
/// planner (placement/tree.hpp) re-solves the placement for the pool's capacity; a new plan is
/// adopted only if it lowers E[r] by more than the `hysteresis` fraction.
///
/// Not thread-safe: call it under the engine's scheduler lock.
///
/// @code
///   hybridcache::tree::state_policy pol({.block_size = 16, .state_bytes = 1 << 20,
///                                        .capacity_bytes = 64 << 20});
///   auto ns = hybridcache::segment::namespace_key{}.with_tenant("org_1");
///   auto m = pol.match(ns, prompt);                  // resume from m.resume_tokens
///   auto snap = pol.prefill_plan(m, prompt.size(), chunk_ends);
///   auto path = pol.insert(ns, prompt);              // path[p / 16 - 1] is the node at p
///   for (auto p : snap) for (auto v : pol.admit(path[p / 16 - 1], 1 << 20).victims) free(v);
///   pol.unpin(m.resume_node);
/// @endcode

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/placement/tree.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/segment/token.hpp"
#include "hybridcache/tree/detail/node_index.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A node of the policy's tree. Ids are reused after `erase`.
using node_id = std::uint32_t;
/// "No node".
inline constexpr node_id no_node = std::numeric_limits<node_id>::max();

/// Construction parameters of `state_policy`.
struct policy_options {
  std::size_t block_size = 16;     ///< B: tokens per node (the engine's state/KV block grid)
  std::size_t state_bytes = 1;     ///< bytes of one state, for planning (admit takes actual)
  std::size_t capacity_bytes = 1;  ///< the state pool's budget; never exceeded
  double gamma = 0.99;             ///< EW decay per observation, in (0, 1]
  std::size_t replan_every = 10;   ///< observations between automatic re-plans; 0 = manual
  double hysteresis = 0.02;        ///< a new plan must lower E[r] by this fraction, in [0, 1)
  bool snapshot_junction = true;   ///< admit the point where a request leaves the tree
  bool snapshot_tail = true;       ///< admit the deepest new grid position of a prefill
  /// Fresh-end prior: `insert` gives the end node e of the inserted sequence, if no match has
  /// ended there yet, the pseudo-observation π = p̂ · min(1, 1/((1 − γ) D̂)) · (mass of one
  /// observation now), with p̂ = (h + 1)/(n + 2) the EW (γ per insert) share of such ends that a
  /// later match ended at and D̂ the EW mean age at that match; the first real match at e replaces
  /// π (docs/tree.md, "Fresh ends").
  bool fresh_prior = true;
  /// Automatic re-plans also wait until the blocks walked by `match`/`insert` since the last one
  /// reach `replan_work` × the live node count, so their amortised cost per block stays
  /// ≈ (re-plan cost per node) / replan_work; 0 = every `replan_every` observations only.
  double replan_work = 1.0;
  /// Junction-conditioned prior (needs `fresh_prior`): the share p̂ in π is replaced by the
  /// share learned at the end's junction J (the deepest node of its path that existed before
  /// the insert): p̂_J = (h_J + k·p̂)/(n_J + k), n_J and h_J the EW (γ per tail under J) counts
  /// of fresh ends inserted below J and of those a later match ended at, k =
  /// `junction_strength` (docs/tree.md, "Fresh ends"). A one-shot query tail under a rarely
  /// repeated system prompt then gets its junction's low share, not the population's.
  bool junction_prior = true;
  double junction_strength = 2.0;  ///< k: pseudo-count of the global share p̂, in (0, 1e9]
  /// Memory of the statistics scaled to the pool: the decay actually used is
  /// γ_eff = max(γ, 1 − 1/(c·M + W₀)), M = capacity_bytes / state_bytes, c = `memory_per_state`
  /// and W₀ = `memory_floor`, so the EW window 1/(1 − γ_eff) spans at least c observations per
  /// state the pool can hold plus W₀ (to rank M states the statistics must have seen the M-th
  /// most frequent match end; a short window forgets a rarely used shared prefix between two of
  /// its uses). Both 0: γ as given.
  double memory_per_state = 1.0;
  double memory_floor = 256.0;  ///< W₀, observations, in [0, 1e12]
  /// Repeat discount: a node's first real match counts q = (h₂ + 1)/(n₁ + 2) observations, n₁
  /// the EW (γ per first match) count of nodes matched for the first time and h₂ of those
  /// matched again since; the second match restores the first to a full observation (its weight
  /// ×1/q, q then). A conversation's turn end is matched once, by the next turn, and never
  /// again, so it stops holding weight once the conversation moved on; a system prompt's end,
  /// matched again and again, keeps its full count (docs/tree.md, "Repeat discount").
  bool repeat_discount = true;
  /// Admission by value: when the pool is full, `admit` adds the new state and frees by the
  /// same exact ΔE[r]-per-byte order with the new state among the candidates; if it is the
  /// cheapest it is not admitted (states freed before it in that order stay freed: they were
  /// cheaper still). false: the new state always displaces the cheapest held ones.
  bool admit_by_value = true;
  /// Age-conditioned value (EVA, Beckmann & Sanchez, "Maximizing Cache Performance Under
  /// Uncertainty", HPCA 2017): a held state's ΔE[r] per byte is scaled by the learned chance that
  /// its region is matched again given its age a (observations since its admission or its last
  /// resume), P(hit | a) = (H_{≥b} + s·P̄)/(H_{≥b} + E_{≥b} + s), b = bit_width(a) the log2
  /// bucket of a, H_j / E_j the EW (γ per event) counts of resumes from a state at an age in
  /// bucket j and of states evicted or dropped at such an age, P̄ = (H + s/2)/(H + E + s) the
  /// all-age share, s the mass of one event now (docs/tree.md, "Age-conditioned value"). A state
  /// whose conversation ended keeps its region weight for the whole EW window, but its age keeps
  /// growing past the ages at which states are still resumed, so it loses its rank as an LRU
  /// would drop it. false: ΔE[r] per byte alone.
  bool age_value = false;
  /// Prefill-end prior: `note_prefill_end(v)` gives the end v of a request's prompt (the
  /// prefill's end, which a re-asked prompt resumes at), if no match has ended there yet, the
  /// pseudo-observation π_P = p̂_P · min(1, 1/((1 − γ) D̂_P)) · (mass of one observation now),
  /// learned apart from the turn ends of `fresh_prior`: p̂_P = (h_P + 1)/(n_P + 2) the EW (γ per
  /// noted prefill end) share of such ends that a later match ended at, D̂_P their EW mean age
  /// then; the first real match at v replaces π_P (docs/tree.md, "Prefill ends"). false:
  /// `note_prefill_end` does nothing.
  bool prefill_prior = false;
  /// Fill free memory: while the pool has free room, admitting a state displaces nothing, so
  /// `prefill_plan` also returns up to F = ⌊(capacity_bytes − used_bytes) / state_bytes⌋ − (its
  /// other positions) further candidates (grid positions in (resume, prompt] whose node holds no
  /// state), spread evenly over them with the deepest kept: of n such candidates c_0 < … < c_{n−1}
  /// it picks c_{⌈(i+1)·n/k⌉−1}, i < k = min(F, n). They fit the free room, so admitting them
  /// evicts nothing; once held they are ranked for eviction by ΔE[r] per byte as any state (one
  /// whose region no match has ended in is worth 0 and goes first). false: planned, junction and
  /// tail positions only (docs/tree.md, "Free memory").
  bool fill_free = true;
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

/// What `admit` did.
struct admit_result {
  bool admitted = false;         ///< false: no room even after evicting every unpinned state
  std::vector<node_id> victims;  ///< states the engine must free (already off the books)
};

/// What `replan` did.
struct replan_result {
  bool adopted = false;          ///< the new plan replaced the old one
  double expected_before = 0.0;  ///< E[r] of the old plan under the current statistics
  double expected_after = 0.0;   ///< E[r] of the new optimal plan
  std::size_t planned = 0;       ///< size of the plan now in force
};

/// The online prefix-tree state policy (see the file comment). `Hash` is a segment hash policy
/// (keyed XXH3-128 by default).
template <segment::hash_policy Hash = segment::xxh3_hash>
class basic_state_policy {
 public:
  /// @throws invalid_argument for block_size 0, state_bytes 0 or ≥ 2^32, capacity_bytes 0,
  ///         gamma ∉ (0, 1] or hysteresis ∉ [0, 1).
  explicit basic_state_policy(policy_options opts, Hash hash = Hash{})
      : opts_(opts), hash_(std::move(hash)) {
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
    if (!(opts.junction_strength > 0.0 && opts.junction_strength <= 1e9))
      throw_invalid("opts.junction_strength", opts.junction_strength, "must be in (0, 1e9]");
    if (!(opts.memory_per_state >= 0.0 && opts.memory_per_state <= 1e9))
      throw_invalid("opts.memory_per_state", opts.memory_per_state, "must be in [0, 1e9]");
    if (!(opts.memory_floor >= 0.0 && opts.memory_floor <= 1e12))
      throw_invalid("opts.memory_floor", opts.memory_floor, "must be in [0, 1e12]");
    gamma_ = opts.gamma;
    if (opts.memory_per_state > 0.0 || opts.memory_floor > 0.0) {
      const double m = static_cast<double>(opts.capacity_bytes / opts.state_bytes);
      gamma_ = std::max(gamma_, 1.0 - 1.0 / (opts.memory_per_state * m + opts.memory_floor));
    }
    inv_gamma_ = 1.0 / gamma_;
  }

  // ---- request path -------------------------------------------------------------------------

  /// Walks the full blocks of `tokens` under namespace `ns` (creating the namespace's root on
  /// first use), records where the match ended (one EW observation) and pins the resume state.
  /// Pass `tokens` truncated as the engine requires (SGLang caps a match at input length − 1).
  /// Cost: one chained hash and one index probe per matched block.
  match_result match(const segment::namespace_key& ns, std::span<const token_id> tokens) {
    const node_id root = root_of(ns);
    const std::size_t B = opts_.block_size;
    segment::digest h = nodes_[root].key;
    match_result m;
    node_id cur = root, anchor = root;
    for (std::size_t i = 0; (i + 1) * B <= tokens.size(); ++i) {
      h = segment::chain_key(hash_, h, tokens.subspan(i * B, B));
      const node_id id = index_.find(nodes_, h, cur);
      if (id == detail::empty_slot) break;
      cur = id;
      m.path.push_back(id);
      if (nodes_[id].state != no_state) anchor = id;
    }
    work_ += m.path.size() + 1;
    return finish_match(std::move(m), cur, anchor);
  }

  /// `match` for an engine that already has the chained keys h_1..h_m of `segment::block_keys`
  /// (computed with this policy's hash and `ns`).
  match_result match_keys(const segment::namespace_key& ns, std::span<const segment::digest> keys) {
    const node_id root = root_of(ns);
    match_result m;
    node_id cur = root, anchor = root;
    for (const auto& k : keys) {
      const node_id id = index_.find(nodes_, k, cur);
      if (id == detail::empty_slot) break;
      cur = id;
      m.path.push_back(id);
      if (nodes_[id].state != no_state) anchor = id;
    }
    work_ += m.path.size() + 1;
    return finish_match(std::move(m), cur, anchor);
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
    using hybridcache::detail::throw_invalid;
    const std::size_t B = opts_.block_size;
    if (m.matched_tokens > prompt_tokens || m.path.size() != m.matched_tokens / B ||
        m.matched_tokens % B != 0)
      throw_invalid("m.matched_tokens", m.matched_tokens,
                    "does not fit the prompt length or the match path");
    std::vector<std::size_t> out;
    std::size_t tail = 0;
    for (std::size_t i = 0; i < chunk_ends.size(); ++i) {
      const std::size_t p = chunk_ends[i];
      if (p > prompt_tokens)
        throw_invalid(hybridcache::detail::indexed("chunk_ends", i), p,
                      "beyond prompt_tokens = " + std::to_string(prompt_tokens));
      if (p % B != 0 || p <= m.resume_tokens || p == 0) continue;
      if (p <= m.matched_tokens) {
        const node_id v = m.path[p / B - 1];
        if (!live(v) || nodes_[v].state != no_state) continue;
        const bool junction =
            opts_.snapshot_junction && p == m.matched_tokens && prompt_tokens > m.matched_tokens;
        if (junction || (nodes_[v].flags & planned_flag)) out.push_back(p);
      } else if (opts_.snapshot_tail) {
        tail = std::max(tail, p);
      }
    }
    if (tail != 0) out.push_back(tail);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (opts_.fill_free) fill_free_room(m, prompt_tokens, chunk_ends, out);
    return out;
  }

  /// Adds the full blocks of `tokens` under `ns` (existing nodes are reused).
  /// @returns the node of each full block: result[i] covers tokens [0, (i+1)·B).
  std::vector<node_id> insert(const segment::namespace_key& ns, std::span<const token_id> tokens) {
    const node_id root = root_of(ns);
    const std::size_t B = opts_.block_size;
    std::vector<node_id> out;
    out.reserve(tokens.size() / B);
    segment::digest h = nodes_[root].key;
    node_id cur = root, anchor = root, junction = no_node;
    for (std::size_t i = 0; (i + 1) * B <= tokens.size(); ++i) {
      h = segment::chain_key(hash_, h, tokens.subspan(i * B, B));
      const node_id prev = cur;
      cur = child(cur, h);
      if (junction == no_node && fresh_child_) junction = prev;
      out.push_back(cur);
      if (nodes_[cur].state != no_state) anchor = cur;
    }
    note_end(cur, anchor, junction);
    work_ += out.size() + 1;
    return out;
  }

  /// `insert` from precomputed chained keys (see `match_keys`).
  std::vector<node_id> insert_keys(const segment::namespace_key& ns,
                                   std::span<const segment::digest> keys) {
    node_id cur = root_of(ns), anchor = cur, junction = no_node;
    std::vector<node_id> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
      const node_id prev = cur;
      cur = child(cur, k);
      if (junction == no_node && fresh_child_) junction = prev;
      out.push_back(cur);
      if (nodes_[cur].state != no_state) anchor = cur;
    }
    note_end(cur, anchor, junction);
    work_ += out.size() + 1;
    return out;
  }

  // ---- a sequence inserted while it is computed (causal engines, issue #22) ----------------

  /// `insert_keys` of a sequence still being computed (the prompt after its prefill, then the
  /// output block by block): adds `keys` below `parent` (`no_node`: the root of `ns`) and
  /// returns their nodes, but notes no end. `junction`, when still `no_node`, is set to the
  /// parent of the first node created (what `insert_keys` calls the junction); pass the same
  /// variable through every call of one sequence and then to `note_sequence_end`.
  /// @throws invalid_argument for a `parent` that is not a live node.
  std::vector<node_id> extend_keys(const segment::namespace_key& ns, node_id parent,
                                   std::span<const segment::digest> keys, node_id& junction) {
    node_id cur = parent;
    if (cur == no_node) {
      cur = root_of(ns);
    } else {
      check_node(cur, "parent");
    }
    std::vector<node_id> out;
    out.reserve(keys.size());
    for (const auto& k : keys) {
      const node_id prev = cur;
      cur = child(cur, k);
      if (junction == no_node && fresh_child_) junction = prev;
      out.push_back(cur);
    }
    work_ += out.size() + (parent == no_node ? 1 : 0);
    return out;
  }
  /// The sequence added by `extend_keys` ended at `end` (its junction as they left it): notes
  /// the end exactly as `insert_keys` of the whole sequence would (fresh-end prior).
  /// @throws invalid_argument for an unknown node.
  void note_sequence_end(node_id end, node_id junction) {
    check_node(end, "end");
    if (nodes_[end].parent == no_node) return;
    const node_id anchor = nodes_[end].state != no_state ? end : state_above(end);
    note_end(end, anchor, junction);
  }
  /// The pool's budget is now `bytes` (an engine whose states share one memory pool with KV, as
  /// vLLM's hybrid allocator: the room for states changes as KV grows and shrinks). Plans,
  /// re-plans and admissions use it from now on (the EW window of `memory_per_state` keeps the
  /// capacity given at construction); if the states held exceed it, victims in `evict`'s order
  /// are taken off the books and returned for the engine to free.
  /// @throws invalid_argument for bytes 0.
  std::vector<node_id> set_capacity_bytes(std::size_t bytes) {
    if (bytes == 0) hybridcache::detail::throw_invalid("bytes", bytes, "must be >= 1");
    opts_.capacity_bytes = bytes;
    if (used_bytes_ <= bytes) return {};
    return evict_greedy(used_bytes_ - bytes, no_node);
  }

  /// The engine stored a state of `bytes` at `node`. If the pool would overflow, the victims
  /// (`evict`'s order, never a pinned state) are taken off the books and returned for the engine
  /// to free; with `admit_by_value` the new state is a candidate too, and if it is the cheapest
  /// per byte it is not admitted (`admitted` false: the engine discards the snapshot). If even
  /// all unpinned states would not make room, nothing changes and `admitted` is false.
  /// Admitting a node that already holds a state changes nothing.
  /// @throws invalid_argument for an unknown node, a namespace root, or bytes ∉ [1, 2^32).
  admit_result admit(node_id node, std::size_t bytes) {
    check_node(node, "node");
    if (nodes_[node].parent == no_node)
      hybridcache::detail::throw_invalid("node", node,
                                         "a namespace root holds the free empty state");
    if (bytes == 0 || bytes > max_state_bytes)
      hybridcache::detail::throw_invalid("bytes", bytes, "must be in [1, 2^32)");
    admit_result r;
    if (nodes_[node].state != no_state) {
      r.admitted = true;
      return r;
    }
    if (bytes > opts_.capacity_bytes) return r;
    if (used_bytes_ + bytes > opts_.capacity_bytes) {
      const std::size_t need = used_bytes_ + bytes - opts_.capacity_bytes;
      std::size_t evictable = 0;
      for (const auto& st : states_v_)
        if (st.node != no_node && st.node != node && nodes_[st.node].pins == 0)
          evictable += st.bytes;
      if (evictable < need) return r;
      if (opts_.admit_by_value) {  // the new state competes with the held ones
        add_state(node, static_cast<std::uint32_t>(bytes));
        r.victims = evict_greedy(need, no_node, node);
        const auto it = std::find(r.victims.begin(), r.victims.end(), node);
        r.admitted = it == r.victims.end();
        if (!r.admitted) r.victims.erase(it);
        return r;
      }
      r.victims = evict_greedy(need, node);
    }
    add_state(node, static_cast<std::uint32_t>(bytes));
    r.admitted = true;
    return r;
  }

  /// The engine's prefill of the current request ends at `node` (the prompt's last full block,
  /// a node of the last `insert`): with `prefill_prior` on and no match ended there yet (no
  /// weight, no prior), it gets the prefill-end prior π_P (policy_options::prefill_prior), so a
  /// later `admit(node, …)` values the state by the chance that the prompt is asked again.
  /// Call it before offering that state to `admit`. O(depth of node) (the state above it).
  /// @throws invalid_argument for an unknown node.
  void note_prefill_end(node_id node) {
    check_node(node, "node");
    if (!opts_.prefill_prior || nodes_[node].parent == no_node) return;
    node_rec& n = nodes_[node];
    if ((n.flags & fresh_flag) || n.weight > 0.0) return;
    pre_ends_ = pre_ends_ * gamma_ + 1.0;
    pre_hit_ *= gamma_;
    const double prior = prefill_prior_mass() * scale_;
    n.weight = prior;
    n.flags |= fresh_flag | prefill_flag;
    total_ += prior;
    const node_id anchor = n.state != no_state ? node : state_above(node);
    if (nodes_[anchor].state != no_state) states_v_[nodes_[anchor].state].region += prior;
  }

  /// Frees at least `bytes` (or every unpinned state): victims in increasing exact ΔE[r] per
  /// byte — Δ(c) = (depth(c) − depth(up(c))) · W(c), W(c) the weight anchored at c, recomputed
  /// after each removal (removing c raises W of the state above it and Δ of the states below).
  /// Ties: not planned first, then least recently used. Victims are taken off the books.
  std::vector<node_id> evict(std::size_t bytes) { return evict_greedy(bytes, no_node); }

  /// The engine lost or freed the state at `node` on its own (no-op if it holds none).
  void drop(node_id node) {
    check_node(node, "node");
    if (nodes_[node].state != no_state) {
      note_state_end(node);
      remove_state(node);
    }
  }

  /// Pins `node`'s state for an in-flight request (pins nest).
  void pin(node_id node) {
    check_node(node, "node");
    if (nodes_[node].pins == max_pins)
      throw capacity_error("hybridcache: tree::state_policy pin count overflow (2^24 - 1)");
    ++nodes_[node].pins;
  }
  /// Releases one pin. @throws invalid_argument if `node` is not pinned.
  void unpin(node_id node) {
    check_node(node, "node");
    if (nodes_[node].pins == 0) hybridcache::detail::throw_invalid("node", node, "is not pinned");
    --nodes_[node].pins;
  }

  /// Removes leaf `node` (the engine evicted its KV block). Its match-end mass moves to its
  /// parent (matches that ended there now end one block up); its state, if any, is freed.
  /// A childless namespace root may be erased too (the namespace is forgotten).
  /// @throws invalid_argument for an unknown node, a node with children or a pinned node.
  void erase(node_id node) {
    check_node(node, "node");
    node_rec& n = nodes_[node];
    if (n.first_child != no_node)
      hybridcache::detail::throw_invalid("node", node, "has children (erase leaves only)");
    if (n.pins != 0) hybridcache::detail::throw_invalid("node", node, "is pinned");
    if (n.state != no_state) {
      note_state_end(node);
      remove_state(node);
    }
    if (n.flags & fresh_flag) drop_prior(node, state_above(node));
    if (n.flags & junction_flag) junctions_.erase(node);
    if (n.parent == no_node) {
      for (auto it = roots_.begin(); it != roots_.end(); ++it)
        if (it->second == node) {
          roots_.erase(it);
          break;
        }
    } else {
      node_rec& p = nodes_[n.parent];
      p.weight += n.weight;
      if (p.first_child == node) {
        p.first_child = n.next_sibling;
      } else {
        node_id s = p.first_child;
        while (nodes_[s].next_sibling != node) s = nodes_[s].next_sibling;
        nodes_[s].next_sibling = n.next_sibling;
      }
      index_.erase(nodes_, node);
    }
    n = node_rec{};
    free_.push_back(node);
    --live_;
  }

  // ---- planning -----------------------------------------------------------------------------

  /// Re-solves the placement exactly (`place_optimal_tree`) on the current tree and statistics
  /// for M = capacity / (mean bytes of the states held, or opts.state_bytes), and adopts it if
  /// E[r](new) < (1 − hysteresis) · E[r](old plan). Called automatically every `replan_every`
  /// observations.
  replan_result replan() {
    since_plan_ = 0;
    work_ = 0;
    replan_result r;
    recompute_regions();
    build_view();
    if (!(view_total_ > 0.0)) return r;
    const std::size_t per =
        states_ > 0 ? std::max<std::size_t>(1, used_bytes_ / states_) : opts_.state_bytes;
    const std::size_t budget = opts_.capacity_bytes / per;
    const tree_view tv{vparent_, vdepth_, vweight_};
    const tree_placement best = place_optimal_tree(tv, budget);
    std::vector<std::size_t> old;
    for (std::size_t i = 1; i < vnode_.size(); ++i)
      if (nodes_[vnode_[i]].flags & planned_flag) old.push_back(i);
    r.expected_after = best.expected_recompute;
    r.expected_before = expected_recompute_tree(tv, old);
    const bool adopt =
        !has_plan_ || r.expected_after < (1.0 - opts_.hysteresis) * r.expected_before;
    if (adopt) {
      for (std::size_t i : old) nodes_[vnode_[i]].flags &= static_cast<std::uint8_t>(~planned_flag);
      for (std::size_t i : best.checkpoints) nodes_[vnode_[i]].flags |= planned_flag;
      has_plan_ = true;
      plan_size_ = best.checkpoints.size();
    }
    r.adopted = adopt;
    r.planned = plan_size_;
    return r;
  }

  // ---- queries ------------------------------------------------------------------------------

  /// E[r] (tokens) of the states held now, under the current statistics (0 before any match).
  [[nodiscard]] double expected_recompute() {
    build_view();
    if (!(view_total_ > 0.0)) return 0.0;
    std::vector<std::size_t> held;
    for (std::size_t i = 1; i < vnode_.size(); ++i)
      if (nodes_[vnode_[i]].state != no_state) held.push_back(i);
    return expected_recompute_tree({vparent_, vdepth_, vweight_}, held);
  }

  [[nodiscard]] bool has_state(node_id v) const { return live(v) && nodes_[v].state != no_state; }
  /// Bytes of the state held at `v` (0 if none).
  [[nodiscard]] std::size_t state_bytes(node_id v) const {
    check_node(v, "v");
    return nodes_[v].state == no_state ? 0 : states_v_[nodes_[v].state].bytes;
  }
  [[nodiscard]] bool planned(node_id v) const {
    return live(v) && (nodes_[v].flags & planned_flag);
  }
  [[nodiscard]] bool pinned(node_id v) const { return live(v) && nodes_[v].pins != 0; }
  [[nodiscard]] bool contains(node_id v) const { return live(v); }
  /// Depth of `v` in tokens. @throws invalid_argument for an unknown node.
  [[nodiscard]] std::size_t depth_tokens(node_id v) const {
    check_node(v, "v");
    return static_cast<std::size_t>(nodes_[v].blocks) * opts_.block_size;
  }
  /// Parent of `v` (`no_node` for a namespace root).
  [[nodiscard]] node_id parent(node_id v) const {
    check_node(v, "v");
    return nodes_[v].parent;
  }
  /// ŵ(v): the EW share of matches that ended at `v` (0 before any match; finite always).
  [[nodiscard]] double match_share(node_id v) const {
    check_node(v, "v");
    return total_ > 0.0 ? nodes_[v].weight / total_ : 0.0;
  }
  /// p̂_P = (h_P + 1)/(n_P + 2): the EW share of noted prefill ends that a later match ended at
  /// (policy_options::prefill_prior; 1/2 before any).
  [[nodiscard]] double prefill_share() const noexcept {
    return (pre_hit_ + 1.0) / (pre_ends_ + 2.0);
  }
  /// π_P / (mass of one observation): p̂_P · min(1, 1/((1 − γ) D̂_P)), the prior a prefill end
  /// noted now would get (its own count excluded).
  [[nodiscard]] double prefill_prior_mass() const noexcept {
    return delay_discounted(prefill_share(), pre_delay_sum_, pre_delay_n_);
  }
  /// P(hit | age) of the state held at `v` (policy_options::age_value): the learned chance that
  /// its region is matched again given the observations since its admission or last resume;
  /// 1 with `age_value` off. @throws invalid_argument for an unknown node or one with no state.
  [[nodiscard]] double hit_chance(node_id v) const {
    check_node(v, "v");
    if (nodes_[v].state == no_state) hybridcache::detail::throw_invalid("v", v, "holds no state");
    return opts_.age_value ? hit_given_age(states_v_[nodes_[v].state].touched) : 1.0;
  }
  [[nodiscard]] std::size_t used_bytes() const noexcept { return used_bytes_; }
  [[nodiscard]] std::size_t capacity_bytes() const noexcept { return opts_.capacity_bytes; }
  [[nodiscard]] std::size_t state_count() const noexcept { return states_; }
  /// Live nodes, namespace roots included.
  [[nodiscard]] std::size_t node_count() const noexcept { return live_; }
  [[nodiscard]] std::size_t namespace_count() const noexcept { return roots_.size(); }
  [[nodiscard]] std::uint64_t observations() const noexcept { return observations_; }
  [[nodiscard]] const policy_options& options() const noexcept { return opts_; }
  /// The decay in use, γ_eff = max(γ, 1 − 1/(c·M)) (policy_options::memory_per_state).
  [[nodiscard]] double effective_gamma() const noexcept { return gamma_; }
  /// The hash policy of the block keys: `segment::block_keys(pol.hash(), ns, tokens, B)` gives
  /// the keys `match_keys` / `insert_keys` expect for `tokens`.
  [[nodiscard]] const Hash& hash() const noexcept { return hash_; }
  /// Bytes of bookkeeping: node records and index slots (per node), state records (per state),
  /// the free list; the per-namespace map and the re-plan scratch are not counted.
  [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept {
    return nodes_.capacity() * sizeof(node_rec) + index_.slot_count() * sizeof(std::uint32_t) +
           free_.capacity() * sizeof(node_id) + states_v_.capacity() * sizeof(state_rec) +
           free_states_.capacity() * sizeof(std::uint32_t) +
           junctions_.size() *
               (sizeof(std::pair<const node_id, junction_stat>) + 2 * sizeof(void*)) +
           junctions_.bucket_count() * sizeof(void*);
  }
  /// Reserves room for `nodes` nodes (records and index), so growth leaves no slack.
  void reserve(std::size_t nodes) {
    nodes_.reserve(nodes);
    index_.reserve(nodes_, nodes);
  }
  /// The size of one node record; with 4-byte index slots at load ≤ 1/2 a node costs at most
  /// 48 + 16 = 64 bytes.
  static constexpr std::size_t node_record_bytes = 48;

 private:
  static constexpr std::size_t max_state_bytes = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t max_pins = (1u << 24) - 1;
  static constexpr std::uint32_t no_state = std::numeric_limits<std::uint32_t>::max();
  static constexpr std::uint32_t live_flag = 1, planned_flag = 2, fresh_flag = 4, junction_flag = 8,
                                 once_flag = 16, repeat_flag = 32, junction_hit_flag = 64,
                                 prefill_flag = 128;  // with fresh_flag: the prior is π_P

  /// EW counts at a junction J (see policy_options::junction_prior).
  struct junction_stat {
    double ends = 0.0;  // n_J: fresh ends inserted below J (×γ per such end)
    double hits = 0.0;  // h_J: of those, ends a later match ended at
  };

  struct node_rec {
    segment::digest key{};     // chained block key h_i (h_0 for a namespace root)
    node_id parent = no_node;  // no_node: namespace root
    node_id first_child = no_node;
    node_id next_sibling = no_node;
    std::uint32_t blocks = 0;        // depth in blocks
    double weight = 0.0;             // Σ_s γ^{−s}[match s ended here], common scale
    std::uint32_t state = no_state;  // index into states_v_
    std::uint32_t pins : 24 = 0;
    std::uint32_t flags : 8 = 0;
  };
  static_assert(sizeof(node_rec) <= node_record_bytes);

  /// One held state. `up` is the nearest proper ancestor holding a state (or the namespace
  /// root); `region` = W(c), the weight of the nodes whose anchor is this state.
  struct state_rec {
    node_id node = no_node;
    node_id up = no_node;
    std::uint32_t bytes = 0;
    std::uint32_t last_use = 0;  // clock of the last admit/resume (LRU tie-break)
    std::uint32_t touched = 0;   // observations_ (mod 2^32) at the last admit/resume: its age
    double region = 0.0;
  };

  [[nodiscard]] bool live(node_id v) const noexcept {
    return v < nodes_.size() && (nodes_[v].flags & live_flag);
  }
  void check_node(node_id v, const char* name) const {
    if (!live(v)) hybridcache::detail::throw_invalid(name, v, "is not a live node of this policy");
  }

  node_id new_node() {
    node_id id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
    } else {
      if (nodes_.size() >= static_cast<std::size_t>(no_node) - 1)
        throw capacity_error("hybridcache: tree::state_policy node ids exhausted (2^32 - 1)");
      id = static_cast<node_id>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[id] = node_rec{};
    nodes_[id].flags = live_flag;
    ++live_;
    return id;
  }

  node_id root_of(const segment::namespace_key& ns) {
    const std::string_view b = ns.bytes();
    auto it = roots_.find(std::string(b));
    if (it != roots_.end()) return it->second;
    const node_id id = new_node();
    nodes_[id].key = segment::root_key(hash_, ns);
    roots_.emplace(std::string(b), id);
    return id;
  }

  /// The child of `cur` with key `h`, created if absent (`fresh_child_` says which).
  node_id child(node_id cur, const segment::digest& h) {
    const node_id found = index_.find(nodes_, h, cur);
    fresh_child_ = found == detail::empty_slot;
    if (!fresh_child_) return found;
    if (nodes_[cur].blocks == std::numeric_limits<std::uint32_t>::max())
      throw capacity_error("hybridcache: tree::state_policy path deeper than 2^32 - 1 blocks");
    const node_id id = new_node();
    node_rec& n = nodes_[id];
    n.key = h;
    n.parent = cur;
    n.blocks = nodes_[cur].blocks + 1;
    n.next_sibling = nodes_[cur].first_child;
    nodes_[cur].first_child = id;
    index_.insert(nodes_, id);
    return id;
  }

  match_result finish_match(match_result m, node_id cur, node_id anchor) {
    const std::size_t B = opts_.block_size;
    if (nodes_[anchor].pins == max_pins)
      throw capacity_error("hybridcache: tree::state_policy pin count overflow (2^24 - 1)");
    m.node = cur;
    m.matched_tokens = static_cast<std::size_t>(nodes_[cur].blocks) * B;
    m.resume_node = anchor;
    m.resume_tokens = static_cast<std::size_t>(nodes_[anchor].blocks) * B;
    m.replay_tokens = m.matched_tokens - m.resume_tokens;
    if (nodes_[anchor].state != no_state) {  // a resume: one hit at the state's age
      state_rec& s = states_v_[nodes_[anchor].state];
      const auto now = static_cast<std::uint32_t>(observations_);
      age_event(age_hits_, now - s.touched);
      s.touched = now;
    }
    observe(cur, anchor);
    if (nodes_[anchor].state != no_state) states_v_[nodes_[anchor].state].last_use = ++clock_;
    ++nodes_[anchor].pins;
    if (opts_.replan_every != 0 && ++since_plan_ >= opts_.replan_every &&
        static_cast<double>(work_) >= opts_.replan_work * static_cast<double>(live_))
      replan();
    return m;
  }

  /// One EW observation at v (whose anchor is `anchor`): weights are kept as Σ γ^{−s}; the
  /// common scale is folded back into every weight before it could overflow (so every value
  /// stays finite; O(n) every ~log(1e150)/log(1/γ) observations, O(1) amortised).
  /// The age, in observations, of a prior π that has decayed to `ratio` = w / π of its value:
  /// w = π · γ^age, so age = log(ratio) / log γ (0 when γ = 1 or the ratio is not in (0, 1)).
  [[nodiscard]] double prior_age(double ratio) const noexcept {
    return (gamma_ < 1.0 && ratio > 0.0 && ratio < 1.0) ? std::log(ratio) / std::log(gamma_) : 0.0;
  }

  void observe(node_id v, node_id anchor) {
    double* region =
        nodes_[anchor].state != no_state ? &states_v_[nodes_[anchor].state].region : nullptr;
    if ((nodes_[v].flags & (fresh_flag | prefill_flag)) == (fresh_flag | prefill_flag)) {
      // The first real match at a prefill end replaces π_P; its age from π_P's decay.
      const double age = prior_age(nodes_[v].weight / scale_ / prefill_share());
      pre_delay_sum_ = pre_delay_sum_ * gamma_ + age;
      pre_delay_n_ = pre_delay_n_ * gamma_ + 1.0;
      drop_prior(v, anchor);
      pre_hit_ += 1.0;
    } else if (nodes_[v].flags & fresh_flag) {  // the first real match at a fresh end replaces π
      // Its age in observations, from π's decay: w / scale = p̂_insert · γ^age, p̂_insert ≈ p̂.
      const node_id j = junction_of(v);
      const double age = prior_age(nodes_[v].weight / scale_ / junction_share(j));
      delay_sum_ = delay_sum_ * gamma_ + age;
      delay_n_ = delay_n_ * gamma_ + 1.0;
      drop_prior(v, anchor);
      ends_hit_ += 1.0;
      if (j != no_node) credit_junction(j);
    }
    scale_ *= inv_gamma_;
    if (scale_ > 1e150) {
      const double f = 1.0 / scale_;
      for (auto& n : nodes_) n.weight *= f;
      for (auto& st : states_v_) st.region *= f;
      total_ *= f;
      scale_ = 1.0;
    }
    double add = scale_;
    node_rec& n = nodes_[v];
    if (opts_.repeat_discount && n.parent != no_node && !(n.flags & repeat_flag)) {
      if (!(n.flags & once_flag)) {  // first real match: q observations
        once_n_ = once_n_ * gamma_ + 1.0;
        once_hit_ *= gamma_;
        add = repeat_share() * scale_;
        n.flags |= once_flag;
      } else {  // second: the first becomes a full observation
        const double extra = n.weight * (1.0 / repeat_share() - 1.0);
        once_hit_ += 1.0;
        n.weight += extra;
        if (region) *region += extra;
        total_ += extra;
        n.flags = static_cast<std::uint8_t>((n.flags & ~once_flag) | repeat_flag);
      }
    }
    n.weight += add;
    if (region) *region += add;
    total_ += add;
    ++observations_;
  }

  /// q = (h₂ + 1)/(n₁ + 2): EW share of first matches at a node followed by a second one.
  [[nodiscard]] double repeat_share() const noexcept { return (once_hit_ + 1.0) / (once_n_ + 2.0); }

  /// p̂ = (h + 1)/(n + 2): EW share of fresh ends that a later match ended at.
  [[nodiscard]] double fresh_share() const noexcept { return (ends_hit_ + 1.0) / (ends_ + 2.0); }
  /// The counts (n_J, h_J) of junction `j`. A junction with one tail so far has no table entry:
  /// its counts are exactly (1, 0) or (1, 1), the latter flagged junction_hit (the counts decay
  /// only when a tail is added), so the table holds only junctions with ≥ 2 tails (or 2 hits).
  [[nodiscard]] junction_stat counts_of(node_id j) const {
    const auto it = junctions_.find(j);
    if (it != junctions_.end()) return it->second;
    return {1.0, (nodes_[j].flags & junction_hit_flag) ? 1.0 : 0.0};
  }
  /// p̂_J = min(1, (h_J + k·p̂)/(n_J + k)) of junction `j` (p̂ for no_node).
  [[nodiscard]] double junction_share(node_id j) const {
    const double p = fresh_share();
    if (j == no_node) return p;
    const junction_stat js = counts_of(j);
    const double k = opts_.junction_strength;
    return std::min(1.0, (js.hits + k * p) / (js.ends + k));
  }
  /// h_J += 1 for junction `j`.
  void credit_junction(node_id j) {
    const auto it = junctions_.find(j);
    if (it != junctions_.end()) {
      it->second.hits += 1.0;
    } else if (!(nodes_[j].flags & junction_hit_flag)) {
      nodes_[j].flags |= junction_hit_flag;
    } else {
      junctions_.emplace(j, junction_stat{1.0, 2.0});
    }
  }
  /// The junction that fresh end `v` was inserted under: the nearest proper ancestor flagged as
  /// a junction (no_node without one, or with `junction_prior` off). O(depth of v − depth of J);
  /// called at v's first match only, whose path was just walked.
  [[nodiscard]] node_id junction_of(node_id v) const {
    if (!opts_.junction_prior) return no_node;
    for (node_id a = nodes_[v].parent; a != no_node; a = nodes_[a].parent)
      if (nodes_[a].flags & junction_flag) return a;
    return no_node;
  }
  /// The prior's size in observations: p̂ · min(1, 1 / ((1 − γ) D̂)), D̂ the EW mean age at which
  /// fresh ends were first matched — a match expected within the EW memory 1/(1 − γ) counts as
  /// one observation, a later one as its rate p̂ / D̂ per observation times that memory.
  [[nodiscard]] double fresh_prior() const noexcept {
    return delay_discounted(fresh_share(), delay_sum_, delay_n_);
  }
  /// p · min(1, 1 / ((1 − γ) D̂)) with D̂ = delay_sum / delay_n the EW mean age at the first
  /// match (p unchanged before any first match or with γ = 1).
  [[nodiscard]] double delay_discounted(double p, double delay_sum, double delay_n) const noexcept {
    if (!(gamma_ < 1.0) || !(delay_n > 0.0)) return p;
    const double spread = (1.0 - gamma_) * (delay_sum / delay_n);
    return spread > 1.0 ? p / spread : p;
  }

  /// `insert` ended at `v` (deepest state on the path: `anchor`; deepest node that existed
  /// before: `junction`, or no_node when v existed): a node no match has ended at yet gets the
  /// prior pseudo-observation π = p̂_J · min(1, 1/((1 − γ) D̂)) · scale (policy_options::
  /// fresh_prior, junction_prior), p̂_J from J's counts before this end is counted.
  void note_end(node_id v, node_id anchor, node_id junction) {
    if (!opts_.fresh_prior || nodes_[v].parent == no_node) return;
    node_rec& n = nodes_[v];
    if ((n.flags & fresh_flag) || n.weight > 0.0) return;
    ends_ = ends_ * gamma_ + 1.0;
    ends_hit_ *= gamma_;
    double prior = fresh_prior() * scale_;
    if (opts_.junction_prior) {
      if (junction == no_node) junction = n.parent;
      if (!(nodes_[junction].flags & junction_flag)) {  // first tail: n_J = h_J = 0, p̂_J = p̂
        nodes_[junction].flags |= junction_flag;        // now (1, 0), kept in the flags
      } else {
        prior *= junction_share(junction) / fresh_share();
        const junction_stat before = counts_of(junction);
        junction_stat& js = junctions_[junction];
        js.ends = before.ends * gamma_ + 1.0;
        js.hits = before.hits * gamma_;
      }
    }
    n.weight = prior;
    n.flags |= fresh_flag;
    total_ += prior;
    if (nodes_[anchor].state != no_state) states_v_[nodes_[anchor].state].region += prior;
  }

  /// Removes the prior of fresh end `v` (its whole weight: no real match ended there since)
  /// from v, the total and the region of `anchor`.
  void drop_prior(node_id v, node_id anchor) {
    node_rec& n = nodes_[v];
    const double prior = n.weight;
    n.weight = 0.0;
    n.flags &= static_cast<std::uint8_t>(~(fresh_flag | prefill_flag));
    total_ = std::max(0.0, total_ - prior);
    if (nodes_[anchor].state != no_state) {
      double& r = states_v_[nodes_[anchor].state].region;
      r = std::max(0.0, r - prior);
    }
  }

  /// Σ weight over the region of `c` (c and its descendants not below another state); calls
  /// `boundary(s)` for each state met at the region's lower boundary. O(region size).
  template <class F>
  double region_of(node_id c, F&& boundary) {
    double sum = nodes_[c].weight;
    auto& st = stack_;
    st.clear();
    for (node_id x = nodes_[c].first_child; x != no_node; x = nodes_[x].next_sibling)
      st.push_back(x);
    while (!st.empty()) {
      const node_id x = st.back();
      st.pop_back();
      if (nodes_[x].state != no_state) {
        boundary(nodes_[x].state);
        continue;
      }
      sum += nodes_[x].weight;
      for (node_id y = nodes_[x].first_child; y != no_node; y = nodes_[y].next_sibling)
        st.push_back(y);
    }
    return sum;
  }

  /// Nearest proper ancestor of v holding a state, else v's namespace root. O(depth).
  [[nodiscard]] node_id state_above(node_id v) const noexcept {
    node_id a = nodes_[v].parent;
    while (nodes_[a].parent != no_node && nodes_[a].state == no_state) a = nodes_[a].parent;
    return a;
  }

  /// Marks a state at `node`: its region and the states below it are found by one walk of the
  /// region (O(region)); the region above shrinks by the same amount.
  void add_state(node_id node, std::uint32_t bytes) {
    std::uint32_t id;
    if (!free_states_.empty()) {
      id = free_states_.back();
      free_states_.pop_back();
    } else {
      id = static_cast<std::uint32_t>(states_v_.size());
      states_v_.emplace_back();
    }
    const node_id up = state_above(node);
    nodes_[node].state = id;
    state_rec& s = states_v_[id];
    s.node = node;
    s.up = up;
    s.bytes = bytes;
    s.last_use = ++clock_;
    s.touched = static_cast<std::uint32_t>(observations_);
    s.region = region_of(node, [&](std::uint32_t b) { states_v_[b].up = node; });
    // The region above loses exactly what c now anchors. Rounding of this difference is
    // ~ulp(W(up)); re-plans recompute every region from the node weights.
    if (nodes_[up].state != no_state) {
      double& r = states_v_[nodes_[up].state].region;
      r = std::max(0.0, r - s.region);
    }
    used_bytes_ += bytes;
    ++states_;
  }

  /// Unmarks the state at `node`: its region joins the state above, the states below it now
  /// fall back to that state.
  void remove_state(node_id node) {
    const std::uint32_t id = nodes_[node].state;
    state_rec& s = states_v_[id];
    const node_id up = s.up;
    const double region = s.region;
    nodes_[node].state = no_state;
    used_bytes_ -= s.bytes;
    --states_;
    s = state_rec{};
    free_states_.push_back(id);
    (void)region_of(node, [&](std::uint32_t b) { states_v_[b].up = up; });
    if (nodes_[up].state != no_state) states_v_[nodes_[up].state].region += region;
  }

  /// Every region recomputed from the node weights (one walk of the tree; re-plans call it so
  /// rounding from incremental updates never accumulates).
  void recompute_regions() {
    for (auto& st : states_v_)
      if (st.node != no_node) st.region = region_of(st.node, [](std::uint32_t) {});
  }

  /// ΔE[r] per byte of dropping state `s` (unnormalised weights, tokens).
  [[nodiscard]] double delta_per_byte(const state_rec& s) const noexcept {
    const double gap = static_cast<double>(nodes_[s.node].blocks - nodes_[s.up].blocks) *
                       static_cast<double>(opts_.block_size);
    const double d = gap * s.region / static_cast<double>(s.bytes);
    return opts_.age_value ? d * hit_given_age(s.touched) : d;
  }

  /// bit_width(a): bucket 0 holds age 0, bucket j ≥ 1 the ages [2^{j−1}, 2^j).
  static constexpr std::size_t age_buckets = 33;
  [[nodiscard]] static std::size_t age_bucket(std::uint32_t age) noexcept {
    return static_cast<std::size_t>(std::bit_width(age));
  }
  /// One EW event of age `age` in `bins` (hits or ends): every bin decays by γ per event, kept
  /// as Σ γ^{−t} with a common scale folded back before it could overflow (finite forever).
  void age_event(double* bins, std::uint32_t age) {
    if (!opts_.age_value) return;
    age_scale_ *= inv_gamma_;
    if (age_scale_ > 1e150) {
      const double f = 1.0 / age_scale_;
      for (std::size_t j = 0; j < age_buckets; ++j) {
        age_hits_[j] *= f;
        age_ends_[j] *= f;
      }
      age_scale_ = 1.0;
    }
    bins[age_bucket(age)] += age_scale_;
    age_dirty_ = true;
  }
  /// The state at `node` leaves the pool (evicted or dropped): one end at its age.
  void note_state_end(node_id node) {
    const state_rec& s = states_v_[nodes_[node].state];
    age_event(age_ends_, static_cast<std::uint32_t>(observations_) - s.touched);
  }
  /// P(hit | age of a state touched at `touched`), see policy_options::age_value. The suffix
  /// table is rebuilt (33 bins) only after a new event.
  [[nodiscard]] double hit_given_age(std::uint32_t touched) const noexcept {
    if (age_dirty_) {
      double h = 0.0, n = 0.0;
      for (std::size_t j = age_buckets; j-- > 0;) {
        h += age_hits_[j];
        n += age_hits_[j] + age_ends_[j];
        age_suffix_h_[j] = h;
        age_suffix_n_[j] = n;
      }
      age_dirty_ = false;
    }
    const double s = age_scale_;
    const double all = (age_suffix_h_[0] + 0.5 * s) / (age_suffix_n_[0] + s);
    const std::size_t b = age_bucket(static_cast<std::uint32_t>(observations_) - touched);
    return (age_suffix_h_[b] + s * all) / (age_suffix_n_[b] + s);
  }

  /// `fill_free`: adds to the sorted `out` up to F = free states − |out| further candidates of
  /// `prefill_plan` (grid positions in (resume, prompt], no state at their node if on the match),
  /// evenly spread, the deepest kept (see policy_options::fill_free).
  void fill_free_room(const match_result& m, std::size_t prompt_tokens,
                      std::span<const std::size_t> chunk_ends,
                      std::vector<std::size_t>& out) const {
    const std::size_t B = opts_.block_size;
    const std::size_t room = (opts_.capacity_bytes - used_bytes_) / opts_.state_bytes;
    if (room <= out.size()) return;
    const std::size_t free_slots = room - out.size();
    std::vector<std::size_t> cand;
    for (const std::size_t p : chunk_ends) {
      if (p % B != 0 || p <= m.resume_tokens || p == 0 || p > prompt_tokens) continue;
      if (p <= m.matched_tokens) {
        const node_id v = m.path[p / B - 1];
        if (!live(v) || nodes_[v].state != no_state) continue;
      }
      if (!std::binary_search(out.begin(), out.end(), p)) cand.push_back(p);
    }
    std::sort(cand.begin(), cand.end());
    cand.erase(std::unique(cand.begin(), cand.end()), cand.end());
    const std::size_t n = cand.size(), k = std::min(free_slots, n);
    if (k == 0) return;
    for (std::size_t i = 0; i < k; ++i) out.push_back(cand[((i + 1) * n + k - 1) / k - 1]);
    std::sort(out.begin(), out.end());
  }

  /// A candidate victim: ordered by ΔE[r] per byte, then unplanned first, then LRU, then id.
  struct victim_entry {
    double per_byte;
    bool planned;
    std::uint32_t last_use;
    node_id v;
    bool operator>(const victim_entry& o) const {
      if (per_byte != o.per_byte) return per_byte > o.per_byte;
      if (planned != o.planned) return planned;
      if (last_use != o.last_use) return last_use > o.last_use;
      return v > o.v;
    }
  };

  /// Greedy exact victims (see `evict`) until `need` bytes are freed or no unpinned state other
  /// than `exclude` is left. O(K log K + Σ victim regions), K = states held.
  /// Every victim but `fresh` (a state admitted in this call and refused by value: it never
  /// served) counts as an end at its age, recorded after the loop so that P(hit | age) is the
  /// same for every comparison of one call.
  std::vector<node_id> evict_greedy(std::size_t need, node_id exclude, node_id fresh = no_node) {
    std::vector<node_id> out;
    if (need == 0 || states_ == 0) return out;
    using entry = victim_entry;
    heap_.clear();
    for (const auto& st : states_v_) {
      if (st.node == no_node || st.node == exclude || nodes_[st.node].pins != 0) continue;
      heap_.push_back(
          {delta_per_byte(st), (nodes_[st.node].flags & planned_flag) != 0, st.last_use, st.node});
    }
    auto cmp = std::greater<>{};
    auto less_urgent = [&](const entry& a, const entry& b) { return cmp(a, b); };
    std::make_heap(heap_.begin(), heap_.end(), less_urgent);
    std::size_t freed = 0;
    while (freed < need && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), less_urgent);
      entry e = heap_.back();
      heap_.pop_back();
      const double now = delta_per_byte(states_v_[nodes_[e.v].state]);
      if (now != e.per_byte) {  // Δ only grows as victims go: re-queue the stale entry
        e.per_byte = now;
        heap_.push_back(e);
        std::push_heap(heap_.begin(), heap_.end(), less_urgent);
        continue;
      }
      const state_rec& s = states_v_[nodes_[e.v].state];
      freed += s.bytes;
      if (e.v != fresh) ended_.push_back(static_cast<std::uint32_t>(observations_) - s.touched);
      remove_state(e.v);
      out.push_back(e.v);
    }
    for (std::uint32_t age : ended_) age_event(age_ends_, age);
    ended_.clear();
    return out;
  }

  /// The tree_view of the live tree: index 0 = a super-root standing for every namespace root
  /// (all at depth 0, all free), other nodes in DFS order. Fills vnode_/vparent_/vdepth_/vweight_.
  void build_view() {
    vnode_.assign(1, no_node);
    vparent_.assign(1, 0);
    vdepth_.assign(1, 0.0);
    vweight_.assign(1, 0.0);
    view_total_ = 0.0;
    struct frame {
      node_id v;
      std::size_t vparent;
    };
    std::vector<frame> st;
    for (const auto& [key, root] : roots_) {
      vweight_[0] += nodes_[root].weight;
      for (node_id c = nodes_[root].first_child; c != no_node; c = nodes_[c].next_sibling)
        st.push_back({c, 0});
      while (!st.empty()) {
        const frame f = st.back();
        st.pop_back();
        const std::size_t i = vnode_.size();
        vnode_.push_back(f.v);
        vparent_.push_back(f.vparent);
        vdepth_.push_back(static_cast<double>(nodes_[f.v].blocks) *
                          static_cast<double>(opts_.block_size));
        vweight_.push_back(nodes_[f.v].weight);
        for (node_id c = nodes_[f.v].first_child; c != no_node; c = nodes_[c].next_sibling)
          st.push_back({c, i});
      }
    }
    for (double w : vweight_) view_total_ += w;
  }

  policy_options opts_;
  Hash hash_;
  double gamma_ = 1.0, inv_gamma_ = 1.0;
  std::vector<node_rec> nodes_;
  std::vector<node_id> free_;
  std::vector<state_rec> states_v_;
  std::vector<std::uint32_t> free_states_;
  detail::node_index index_;
  std::unordered_map<std::string, node_id> roots_;
  std::unordered_map<node_id, junction_stat> junctions_;  // junctions with ≥ 2 tails (or hits)
  double scale_ = 1.0, total_ = 0.0;
  std::uint64_t observations_ = 0;
  double once_n_ = 0.0, once_hit_ = 0.0;    // EW counts of first matches / of those repeated
  double ends_ = 0.0, ends_hit_ = 0.0;      // EW counts of fresh ends and of those matched later
  double delay_sum_ = 0.0, delay_n_ = 0.0;  // EW sum / count of their ages at the first match
  double pre_ends_ = 0.0, pre_hit_ = 0.0;   // the same for noted prefill ends (prefill_prior)
  double pre_delay_sum_ = 0.0, pre_delay_n_ = 0.0;
  std::size_t work_ = 0;  // blocks walked since the last re-plan
  // Age-conditioned value: EW hits / ends per log2 age bucket, common scale, suffix sums.
  double age_hits_[age_buckets] = {}, age_ends_[age_buckets] = {};
  double age_scale_ = 1.0;
  mutable double age_suffix_h_[age_buckets] = {}, age_suffix_n_[age_buckets] = {};
  mutable bool age_dirty_ = true;
  std::vector<std::uint32_t> ended_;
  std::size_t since_plan_ = 0, used_bytes_ = 0, states_ = 0, live_ = 0, plan_size_ = 0;
  std::uint32_t clock_ = 0;
  bool has_plan_ = false, fresh_child_ = false;
  // scratch
  std::vector<node_id> stack_;
  std::vector<victim_entry> heap_;
  std::vector<node_id> vnode_;
  std::vector<std::size_t> vparent_;
  std::vector<double> vdepth_, vweight_;
  double view_total_ = 0.0;
};

/// The policy with keyed XXH3-128 block keys (a fresh secret per instance).
using state_policy = basic_state_policy<segment::xxh3_hash>;

namespace tree {  // deprecated spellings (docs/design/namespaces.md): use hybridcache::X
using ::hybridcache::admit_result;
using ::hybridcache::basic_state_policy;
using ::hybridcache::match_result;
using ::hybridcache::no_node;
using ::hybridcache::node_id;
using ::hybridcache::policy_options;
using ::hybridcache::replan_result;
using ::hybridcache::state_policy;
}  // namespace tree
HYBRIDCACHE_NAMESPACE_END
