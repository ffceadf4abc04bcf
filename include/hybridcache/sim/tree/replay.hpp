#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The replay engine of the tree scenario: a block-granular radix tree of attention KV, one pool
/// of recurrent states, and a policy that decides where states are taken and which are dropped,
/// driven through a *causal* protocol: a policy learns a request's blocks only as an engine
/// would, and may store a state only where it said so before the tokens were computed.
///
/// Per request r with path p_1 … p_n (nodes of its full blocks, prompt and output), prompt P
/// tokens, block size B and pb = ⌊P/B⌋ prompt blocks:
///
///     match  m  = number of leading prompt blocks p_1 … p_pb present in the tree
///     usable u  = min(m, ⌊(P − 1)/B⌋)            at least one prompt token is computed
///     resume k  = policy.resume(r) <= u,          p_k holds a state (k = 0: the namespace root)
///     recomputed tokens   = (u − k) · B          KV cached, state missing: replayed
///     prefill tokens      = P − k · B
///     token hit rate      = Σ k·B / Σ P
///     prefill FLOPs       = f_tok · n + f_pair · (n·p + n(n+1)/2),   n = P − kB, p = kB
///     modelled TTFT (ms)  = prefill_cost_model::cost(n, p)            (sim/model.hpp)
///
/// The protocol (`tree_policy`), in order; `tree_step::path()` shows only the blocks known then:
///
/// 1. `resume(s)` at match time (path = p_1 … p_pb);
/// 2. `plan_prefill(s, positions)` at match time, before any token is computed: the block
///    positions j in (k, pb] it will snapshot during the prefill. Each is a chunk end the engine
///    must schedule; those with j·B < P split the prefill and are counted as *extra chunk
///    boundaries* (`tree_metrics::chunk_boundaries`);
/// 3. the engine allocates KV for the request's blocks (inserting p_1 … p_n into the tree) and,
///    under a KV budget, evicts (below);
/// 4. `after_prefill(s)`: the pool accepts `add(p_j)` only at the announced positions;
/// 5. `on_decode_block(s, j)` for j = pb+1 … n (path = p_1 … p_j, n unknown): only `add(p_j)`;
/// 6. `finish(s)` (path = p_1 … p_n): only `add(p_n)`, the running state at the request end (the
///    block grid's stand-in for the state after the last token).
///
/// `state_pool::add` throws for any other node, so no policy can snapshot what it did not
/// announce before the tokens were computed, nor beyond the budget; evictions (`remove`) are
/// allowed at any time. Offline references (oracle*) may read the future through
/// `tree_context::usable` and the trace; they still obey the pool's windows. Decision time is
/// the wall time spent in the policy's calls.
///
/// **KV budget** (`kv_budget`, in the cost model; default unlimited: every block ever computed
/// stays cached). A present block costs B · kv_bytes_per_token bytes (model_shape). When the
/// request's blocks are allocated (step 3), the tree is trimmed by evicting its least recently
/// used *leaf* block not on the running request's path (a request's allocation touches all its
/// blocks, root to leaf), repeatedly, until the budget holds; a state at an evicted block is
/// dropped (its prefix KV is gone, so it is useless) and the policy told (`on_dropped`), and
/// every evicted block is reported (`on_evicted`). The match then counts only present blocks, so
/// no request can resume from a state whose KV is gone (the engine checks it too).
/// - `separate` (SGLang: a KV pool and a state pool): KV bytes ≤ `bytes`; the state pool keeps
///   its budget of M states.
/// - `joint` (vLLM's hybrid allocator: KV blocks and states share one pool): one budget of
///   `bytes` + M · state_bytes bytes (the same total memory as `separate` with M states). Blocks
///   are evicted while KV bytes + held states' bytes exceed it; if no leaf off the running path
///   is left, held states are dropped in the LRU order of their blocks. A policy that keeps its
///   states in the engine's one LRU (`tree_policy::lru_state`: the `vllm_*` rows, as vLLM's
///   `BlockPool` keeps one free queue for KV and state blocks) is asked first: while its least
///   recently used evictable state is older than the least recently used evictable KV leaf, the
///   state goes instead (`on_dropped`). The state pool's
///   capacity for the request is then ⌊(total − KV bytes) / state_bytes⌋, fixed from step 4 to
///   the request's end (it may exceed M when KV is light). The request's whole KV (prompt and
///   output) is allocated at step 3; its own blocks are never evicted while it runs (if they
///   alone exceed the budget, KV runs over it and the state capacity is 0).
/// The rule is the engine's, the same for every policy, with one choice a row may make
/// (`tree_policy::kv_eviction`): `kv_order::stateless_first` evicts the least recently used leaf
/// that holds no state before any leaf that holds one. Such a leaf's KV serves no resume, and
/// SGLang's `MambaRadixCache` keeps none at all: it deletes a leaf left without a state
/// together with its KV (`_iteratively_delete_tombstone_leaf`, the invariant "leaf nodes are
/// not tombstone", python/sglang/srt/mem_cache/mamba_radix_cache.py @ 00df707e). The SGLang rows
/// ask for it, and the library's row under a joint KV budget (sim/tree/library.hpp); every other
/// engine row keeps `kv_order::lru`. Under a joint budget with that order, when every evictable
/// leaf holds a state, the row may name a state to give up instead of the least recently used
/// leaf's state and block (`tree_policy::shed_state`; the library's row names its least valuable
/// one).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/model.hpp"
#include "hybridcache/sim/tree/lanes.hpp"
#include "hybridcache/sim/tree/stamp_heap.hpp"
#include "hybridcache/sim/tree/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

class block_tree;

/// The pool of recurrent states: which nodes hold one, under a budget of `capacity` states.
/// Only the engine opens a window (the nodes a state may be taken at right now, see the file
/// comment); a policy may add a state only at a node of the open window and only while the pool
/// is below capacity.
class state_pool {
 public:
  void reset(std::size_t nodes, std::size_t capacity) {
    held_.assign(nodes, 0);
    stamp_.assign(nodes, 0);
    epoch_ = 0;
    size_ = 0;
    peak_ = 0;
    capacity_ = capacity;
  }
  [[nodiscard]] bool holds(std::uint32_t v) const noexcept {
    return v < held_.size() && held_[v] != 0;
  }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] std::size_t peak() const noexcept { return peak_; }
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  [[nodiscard]] bool full() const noexcept { return size_ >= capacity_; }
  /// Whether a state can be taken at `v` now (v is in the open window).
  [[nodiscard]] bool computable(std::uint32_t v) const noexcept {
    return v < stamp_.size() && stamp_[v] == epoch_ && epoch_ != 0;
  }
  /// Same as `computable`.
  [[nodiscard]] bool is_open(std::uint32_t v) const noexcept { return computable(v); }

  /// Stores a state at `v`. @returns false when `v` already holds one.
  /// @throws capacity_error when the pool is full; invalid_argument when `v` is not open now
  ///         (not announced / not the current decode block / not the request end).
  bool add(std::uint32_t v) {
    if (!computable(v))
      hybridcache::detail::throw_invalid(
          "node", v, "is not open (not announced before its tokens were computed)");
    if (held_[v]) return false;
    if (size_ >= capacity_)
      throw capacity_error("hybridcache: state pool full (evict before adding)");
    held_[v] = 1;
    ++size_;
    peak_ = std::max(peak_, size_);
    notify(v, true);
    return true;
  }
  /// Drops the state at `v`. @throws invalid_argument when `v` holds none.
  void remove(std::uint32_t v) {
    if (!holds(v)) hybridcache::detail::throw_invalid("node", v, "holds no state");
    held_[v] = 0;
    --size_;
    notify(v, false);
  }

  /// Engine: opens the window `nodes` (closes the previous one).
  void open(std::span<const std::uint32_t> nodes) {
    ++epoch_;
    for (auto v : nodes) stamp_[v] = epoch_;
  }
  /// Engine: closes the window.
  void close() noexcept { ++epoch_; }
  /// Engine: a new capacity (the joint KV budget). Does not drop states.
  void set_capacity(std::size_t capacity) noexcept { capacity_ = capacity; }
  /// The KV tree told of every state added or removed (its stateless leaves, `block_tree::watch`).
  void observe(block_tree* tree) noexcept { tree_ = tree; }
  /// From now on every state added or removed appends its node to `*log` (nullptr: no log).
  /// A reader that keeps a set derived from this pool's held set (the portfolio's states the
  /// leader does not hold) re-reads only the logged nodes instead of the whole pool.
  void log_to(std::vector<std::uint32_t>* log) noexcept { log_ = log; }

 private:
  inline void notify(std::uint32_t v, bool held);

  block_tree* tree_ = nullptr;
  std::vector<std::uint32_t>* log_ = nullptr;
  std::vector<std::uint8_t> held_;
  std::vector<std::uint64_t> stamp_;
  std::uint64_t epoch_ = 0;
  std::size_t size_ = 0, peak_ = 0, capacity_ = 0;
};

/// The radix tree of cached KV blocks: presence, child counts and, when `track` is on, the LRU
/// order of its leaves (for a KV budget; see the file comment). Present nodes are always closed
/// under parents (paths are inserted from the root, only leaves are evicted).
class block_tree {
 public:
  void reset(std::size_t nodes, bool track = false) {
    present_.assign(nodes, 0);
    children_.assign(nodes, 0);
    stamp_.assign(track ? nodes : 0, 0);
    leaves_.reset(track ? nodes : 0);
    bare_.reset(0);
    pool_ = nullptr;
    track_ = track;
    clock_ = 0;
    blocks_ = 0;
    lanes_ = nullptr;
  }
  /// Makes this tree a lane of `lanes` (an LRU order under a joint budget kept once for several
  /// replayers, see `lru_lanes`): from now on every call answers from there. Only the LRU order
  /// (`evict_lru_leaf`) is kept; child counts are not (`has_children` is).
  /// @throws invalid_argument when the tree does not track (no KV budget).
  void join(lru_lanes& lanes) {
    if (!track_) hybridcache::detail::throw_invalid("tree", "untracked", "cannot join lanes");
    lane_ = lanes.add_lane();
    lanes_ = &lanes;
  }
  /// Whether the tree is a lane of an `lru_lanes`.
  [[nodiscard]] bool shared() const noexcept { return lanes_ != nullptr; }
  [[nodiscard]] bool present(std::uint32_t v) const noexcept {
    return lanes_ ? lanes_->present(lane_, v) : present_[v] != 0;
  }
  /// Children of `v` present in the tree.
  /// @throws invalid_argument for a lane (`has_children` answers there).
  [[nodiscard]] std::uint32_t children(std::uint32_t v) const {
    if (lanes_)
      hybridcache::detail::throw_invalid("tree", "lane", "keeps no child counts (has_children)");
    return children_[v];
  }
  /// Whether present node `v` has a present child.
  [[nodiscard]] bool has_children(std::uint32_t v) const noexcept {
    return lanes_ ? lanes_->has_children(lane_, v) : children_[v] != 0;
  }
  /// Present blocks.
  [[nodiscard]] std::size_t blocks() const noexcept {
    return lanes_ ? lanes_->blocks(lane_) : blocks_;
  }
  /// Leading nodes of `path` (root to leaf) present. Present nodes are closed under parents, so
  /// along a root-to-leaf path they are a prefix: its length by binary search, O(log |path|).
  [[nodiscard]] std::size_t match(std::span<const std::uint32_t> path) const noexcept {
    std::size_t lo = 0, hi = path.size();
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (present(path[mid]))
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }
  /// Inserts `path` (root to leaf); with tracking, every node of it becomes the most recently
  /// used, the leaf last. @returns the first stamp of this insertion (nodes stamped at or after
  /// it are the running path, see `evict_lru_leaf`). Without tracking the present prefix needs no
  /// update, so the walk starts after it.
  std::uint64_t insert(const tree_trace& t, std::span<const std::uint32_t> path) {
    if (lanes_) return lanes_->insert(lane_, path);
    const std::uint64_t first = clock_ + 1;
    if (!track_) path = path.subspan(match(path));
    for (std::size_t i = 0; i < path.size(); ++i) {
      const auto v = path[i];
      if (!present_[v]) {
        present_[v] = 1;
        ++blocks_;
        const auto p = t.parent(v);
        if (p != tree_trace::no_parent) {
          // (The path's previous node, path[i − 1] = p, never joined the leaves: see below.)
          if (track_ && i == 0 && present_[p] && children_[p] == 0) leave(p);
          ++children_[p];
        }
      } else if (track_ && children_[v] == 0) {
        leave(v);
      }
      if (!track_) continue;
      stamp_[v] = ++clock_;
      // Every node of the path but the last gains a child in this insertion (the next one, new
      // or already present), so only the last can be a leaf afterwards: the others do not join
      // the leaf orders only to leave them at the next step.
      if (i + 1 == path.size() && children_[v] == 0) enter(v);
    }
    return first;
  }
  /// Evicts the least recently used leaf stamped before `guard` (not on the running path).
  /// Needs tracking. @returns it, or `tree_trace::no_parent` when there is none.
  std::uint32_t evict_lru_leaf(const tree_trace& t, std::uint64_t guard) {
    if (lanes_) return lanes_->evict_lru_leaf(lane_, guard);
    if (leaves_.empty() || leaves_.top().first >= guard) return tree_trace::no_parent;
    return evict(t, leaves_.top().second);
  }
  /// Evicts `v` if it is a present leaf stamped before `guard` (not on the running path). Needs
  /// tracking; not for a lane. @returns whether it did.
  bool evict_leaf_at(const tree_trace& t, std::uint32_t v, std::uint64_t guard) {
    if (lanes_ || !track_ || !present_[v] || children_[v] != 0 || stamp_[v] >= guard) return false;
    evict(t, v);
    return true;
  }
  /// Starts keeping the leaves that hold no state in `pool` in their own LRU order (for
  /// `kv_order::stateless_first`), and has the pool report every state added or removed. Built
  /// from the leaves present on the first call (later calls do nothing), so a replay whose row
  /// never asks for that order pays nothing for it. Needs tracking.
  inline void watch(state_pool& pool);
  /// `kv_order::stateless_first`: evicts the least recently used leaf stamped before `guard`
  /// that holds no state, else (none left) the least recently used leaf as `evict_lru_leaf`.
  /// Needs `watch`. @returns it, or `tree_trace::no_parent`.
  std::uint32_t evict_stateless_leaf(const tree_trace& t, std::uint64_t guard) {
    if (!bare_.empty() && bare_.top().first < guard) return evict(t, bare_.top().second);
    return evict_lru_leaf(t, guard);
  }
  /// Whether a leaf stamped before `guard` holds no state (needs `watch`).
  [[nodiscard]] bool has_stateless_leaf(std::uint64_t guard) const noexcept {
    return !bare_.empty() && bare_.top().first < guard;
  }
  /// The watched pool added (`held`) or removed a state at `v` (it reports only changes).
  void held_changed(std::uint32_t v, bool held) noexcept {
    if (pool_ == nullptr || !present_[v] || children_[v] != 0) return;  // not watched, no leaf
    if (held)
      bare_.erase(v);
    else
      bare_.insert(v, stamp_[v]);
  }
  /// Stamp of the least recently used leaf stamped before `guard` (the one `evict_lru_leaf`
  /// would take), or the largest stamp value when there is none. Needs tracking.
  [[nodiscard]] std::uint64_t lru_leaf_stamp(std::uint64_t guard) const noexcept {
    if (lanes_) return lanes_->lru_leaf_stamp(lane_, guard);
    if (leaves_.empty() || leaves_.top().first >= guard)
      return std::numeric_limits<std::uint64_t>::max();
    return leaves_.top().first;
  }
  /// The next stamp of the LRU clock, for a use of something other than a block (a held state
  /// in the engine's one LRU, see `tree_context::lru_tick`). Stamps are shared with `insert`.
  std::uint64_t tick() { return lanes_ ? lanes_->tick(lane_) : ++clock_; }
  /// LRU stamp of `v` (tracking only; 0 otherwise).
  [[nodiscard]] std::uint64_t stamp(std::uint32_t v) const noexcept {
    if (lanes_) return lanes_->stamp(v);
    return track_ ? stamp_[v] : 0;
  }

 private:
  /// Whether `v` belongs in the stateless order (watched, and the pool holds no state there).
  [[nodiscard]] inline bool bare(std::uint32_t v) const noexcept;
  /// Present leaf `v` (stamped) joins the leaf orders.
  void enter(std::uint32_t v) {
    leaves_.insert(v, stamp_[v]);
    if (bare(v)) bare_.insert(v, stamp_[v]);
  }
  /// `v` stops being a leaf (it gains a child, is re-stamped or evicted).
  void leave(std::uint32_t v) {
    leaves_.erase(v);
    if (bare(v)) bare_.erase(v);
  }
  /// Evicts leaf `v` (a member of `leaves_`); its parent may become a leaf. @returns v.
  /// The parent takes the evicted leaf's place in each order (`stamp_heap::replace`). A path is
  /// stamped root first, so the parent is usually older than the leaf (not when a later path
  /// through a sibling, since evicted, re-stamped it); then, when the leaf was the least, the
  /// parent is the least now and nothing moves, where leaving then entering would sift both
  /// down and up the heap.
  std::uint32_t evict(const tree_trace& t, std::uint32_t v) {
    present_[v] = 0;
    --blocks_;
    const auto p = t.parent(v);
    if (p == tree_trace::no_parent || --children_[p] != 0 || !present_[p]) {
      leave(v);
      return v;
    }
    leaves_.replace(v, p, stamp_[p]);
    const bool was = bare(v), is = bare(p);
    if (was && is)
      bare_.replace(v, p, stamp_[p]);
    else if (was)
      bare_.erase(v);
    else if (is)
      bare_.insert(p, stamp_[p]);
    return v;
  }

  std::vector<std::uint8_t> present_;
  std::vector<std::uint32_t> children_;
  std::vector<std::uint64_t> stamp_;
  // The present leaves by (stamp, node), least recently used first (tracking only), and the
  // watched ones that hold no state (an ordered set of pairs before 2026-11: stamp_heap.hpp).
  stamp_heap leaves_;
  stamp_heap bare_;
  const state_pool* pool_ = nullptr;                        ///< the watched pool, or none
  bool track_ = false;
  std::uint64_t clock_ = 0;
  std::size_t blocks_ = 0;
  lru_lanes* lanes_ = nullptr;  ///< set by `join`: the tree is lane `lane_` of it
  std::size_t lane_ = 0;
};

inline void state_pool::notify(std::uint32_t v, bool held) {
  if (tree_ != nullptr) tree_->held_changed(v, held);
  if (log_ != nullptr) log_->push_back(v);
}
inline bool block_tree::bare(std::uint32_t v) const noexcept {
  return pool_ != nullptr && !pool_->holds(v);
}
inline void block_tree::watch(state_pool& pool) {
  if (lanes_)
    hybridcache::detail::throw_invalid("tree", "lane", "keeps the LRU order only (not stateless)");
  if (pool_ != nullptr || !track_) return;
  pool_ = &pool;
  pool.observe(this);
  bare_.reset(present_.size());
  leaves_.for_each([&](std::uint64_t st, std::uint32_t v) {
    if (!pool.holds(v)) bare_.insert(v, st);
  });
}

/// How KV memory is counted (see the file comment).
enum class kv_mode : std::uint8_t {
  unlimited,  ///< every computed block stays cached (the state-only sweep)
  separate,   ///< a KV pool of `bytes`, the state pool apart (SGLang)
  joint,      ///< one pool of `bytes` + M · state_bytes for KV and states (vLLM hybrid)
};

/// The name of a KV mode ("unlimited", "separate", "joint").
[[nodiscard]] constexpr std::string_view to_string(kv_mode m) noexcept {
  return m == kv_mode::separate ? "separate" : m == kv_mode::joint ? "joint" : "unlimited";
}

/// A KV budget (see the file comment).
struct kv_budget {
  kv_mode mode = kv_mode::unlimited;
  double bytes = 0.0;  ///< the KV pool (separate) or the KV share of the joint pool
};

/// Prefill cost: FLOPs and modelled TTFT (see the file comment), plus the KV budget. The FLOP
/// constants are assumptions for a ≈Qwen3.5-0.8B stack: f_tok = 2 · 0.8e9 (two FLOPs per weight
/// per token), f_pair = 4 · 6 attention layers · 8 query heads · 256 head dim (QKᵀ and AV per
/// pair).
struct tree_cost_model {
  model_shape model = qwen3_5_0_8b;
  prefill_cost_model time = hypic_fig14_prefill();
  double flops_per_token = 2.0 * 0.8e9;
  double flops_per_pair = 4.0 * 6.0 * 8.0 * 256.0;
  kv_budget kv{};  ///< KV memory (default unlimited); bytes per token from `model`
  [[nodiscard]] double flops(double n, double p) const noexcept {
    return flops_per_token * n + flops_per_pair * (n * p + n * (n + 1.0) / 2.0);
  }
};

/// What a policy sees of one request. `path()` is the causal view: the blocks known now.
struct tree_step {
  std::size_t index = 0;  ///< request number in the trace
  /// The whole request (future included): offline references only; an online policy reads
  /// `path()`, `prompt_tokens`, `user_starts()` and `root` (and the output's length once the
  /// request ends).
  const tree_request* request = nullptr;
  std::uint32_t root = 0;         ///< the namespace's root node
  std::size_t prompt_tokens = 0;  ///< P
  std::size_t match = 0;          ///< m: leading prompt blocks in the tree (m <= pb)
  std::size_t usable = 0;         ///< u = min(m, ⌊(P − 1)/B⌋)
  std::size_t prompt_blocks = 0;  ///< pb = ⌊P/B⌋
  std::size_t resumed = 0;        ///< k (set after `resume`)
  std::size_t known = 0;          ///< blocks known now (pb until the decode)
  /// p_1 … p_known: the blocks known at this moment (see the file comment).
  [[nodiscard]] std::span<const std::uint32_t> path() const noexcept {
    return std::span<const std::uint32_t>(request->path).first(known);
  }
  [[nodiscard]] std::size_t blocks_known() const noexcept { return known; }
  /// Where the prompt's user messages start, as the trace knows them (part of the prompt, so
  /// known at match time; `tree_request::user_starts`).
  [[nodiscard]] std::span<const std::size_t> user_starts() const noexcept {
    return request->user_starts;
  }
};

/// Everything a policy may read: the trace, the pool it manages, the tree (before the
/// request's blocks are allocated during `resume` and `plan_prefill`, with them afterwards), the
/// cost model and, for offline policies only, the usable match of every request (future
/// knowledge).
struct tree_context {
  const tree_trace* trace = nullptr;
  state_pool* pool = nullptr;
  const block_tree* tree = nullptr;
  const std::vector<std::size_t>* usable = nullptr;  ///< per request: u (offline knowledge)
  double state_bytes = 0.0;                          ///< bytes of one state
  std::size_t budget = 0;  ///< M, the row's state budget (the pool's capacity but for `joint`)
  kv_mode kv = kv_mode::unlimited;  ///< the replay's KV accounting
  const tree_cost_model* cost = nullptr;  ///< the replay's cost model (KV budget included)
  std::size_t begin = 0;  ///< the first replayed request (those before it only warm the tree)
  /// Joint KV budget only (else empty): `grow(n)` makes room for n more states by evicting
  /// cached KV, least recently used leaf first and never the running request's blocks, as the
  /// engine's one block pool gives a new state block the least recently used cached block
  /// (vLLM's hybrid allocator); it raises the pool's capacity and returns the free room in
  /// states (which may stay below n when no evictable KV is left). Evicted blocks and the states
  /// they held are reported as for the prefill's allocation (`on_dropped`, `on_evicted`).
  /// A row that asks for `kv_order::stateless_first` grows only into KV that holds no state:
  /// when every evictable leaf holds one, the room stays as it is and the row's own ranking
  /// decides whether the new state displaces a held one (docs/design/tree_safeguard.md §5).
  std::function<std::size_t(std::size_t)> grow;
  /// Joint KV budget only (else empty): the engine's one LRU over cached KV blocks and held
  /// states (vLLM's `BlockPool` free queue). `lru_tick()` returns the next stamp of the clock the
  /// KV blocks are stamped with (a block's stamp is its last allocation); a policy that keeps its
  /// states in this LRU stamps each use of a state with it and reports its least recently used
  /// evictable state through `tree_policy::lru_state`.
  std::function<std::uint64_t()> lru_tick;
  /// Joint KV budget only (else empty): `evict_kv_older(stamp)` evicts the least recently used
  /// cached KV leaf off the running path if its stamp is older than `stamp` (reported as for the
  /// prefill's allocation: `on_dropped` for a state it held, `on_evicted`), raises the pool's
  /// capacity by the room freed and returns true; false (nothing evicted) otherwise. A policy in
  /// the one LRU calls it with its own least recently used state's stamp before evicting that
  /// state, so a new state takes the globally least recently used cached block.
  std::function<bool(std::uint64_t)> evict_kv_older;
  /// Joint KV budget only (else empty): `evict_kv_leaf(v)` evicts the cached KV of `v` if it is
  /// a leaf off the running path (reported as `evict_kv_older`'s, the pool's capacity raised
  /// by the room freed) and returns whether it did. A row that follows another replay's pool
  /// uses it to evict the blocks that replay's `grow` evicted (`tree_replayer::grow_evictions`).
  /// Throws `invalid_argument` for a node the trace does not have.
  std::function<bool(std::uint32_t)> evict_kv_leaf;
  std::function<double(double, double)> flops;  ///< prefill FLOPs(n new, p cached)
};

/// The order in which the engine evicts cached KV leaves under a KV budget (see the file
/// comment); a row chooses it (`tree_policy::kv_eviction`).
enum class kv_order : std::uint8_t {
  lru,              ///< the least recently used leaf (vLLM, TRT-LLM, Marconi, llama.cpp rows)
  stateless_first,  ///< the LRU leaf that holds no state, else the LRU leaf (SGLang rows)
};

/// One replayed request as the replayer counted it (`tree_replayer::set_request_log`,
/// `tree_options::request_log`). Over the trace these sum to the row's `tree_metrics`: Σ P =
/// `prompt_tokens`, Σ u·B = `usable_tokens`, Σ k·B = `resumed_tokens`; the request recomputed
/// (u − k)·B and prefilled P − k·B tokens.
struct tree_request_outcome {
  /// `leader` of a row that follows no candidate.
  static constexpr std::uint32_t no_candidate = 0xFFFFFFFFu;
  std::size_t request = 0;         ///< index in the trace
  std::size_t prompt_tokens = 0;   ///< P
  std::size_t usable_tokens = 0;   ///< u·B: KV cached and resumable at match time
  std::size_t resumed_tokens = 0;  ///< k·B
  std::size_t states = 0;          ///< states held after the request
  std::size_t kv_blocks = 0;       ///< KV blocks cached after the request
  /// The candidate whose decisions the row followed for this request (`tree_policy::following`;
  /// `tree_metrics::candidates` names it), or `no_candidate`.
  std::uint32_t leader = no_candidate;
};

/// A state that a row ranking its states with the library's policy gave up
/// (`tree_policy::log_victims`, `tree_options::victim_log`): the library's `tree_victim`
/// (tree/eviction.hpp, docs/tree.md "Why a state went") with the trace's node ids, the request
/// it went in and the call that took it.
struct tree_victim_event {
  /// The call that took it: `admit` displaced it for a new state; `shed` gave it up for KV
  /// (joint pool, `tree_policy::shed_state`); `capacity` took it when the pool's room for
  /// states shrank (joint pool: the request's KV took the room).
  enum class cause : std::uint8_t { admit, shed, capacity };
  std::size_t request = 0;  ///< the request being served (index in the trace)
  /// The row's candidate whose pool it left (`tree_metrics::candidates` names it), or
  /// `tree_request_outcome::no_candidate` for a policy replayed alone.
  std::uint32_t candidate = tree_request_outcome::no_candidate;
  cause why = cause::admit;
  std::uint32_t node = tree_trace::no_parent;  ///< the state's node
  std::size_t depth_tokens = 0;                ///< depth(node), tokens
  /// The held state above it when it went, or `tree_trace::no_parent` for its namespace root.
  std::uint32_t up = tree_trace::no_parent;
  std::size_t gap_tokens = 0;      ///< depth(node) − depth(up), tokens
  double expected_tokens = 0.0;    ///< ΔE[r] / Σ w: the tokens per request its loss adds
  double value = 0.0;              ///< its rank: expected tokens per byte freed × P(hit | age)
  std::size_t bytes = 0;           ///< the state's own bytes
  std::uint32_t age = 0;           ///< observations since its admission or last resume
  std::uint32_t states_below = 0;  ///< held states whose `up` it was
  bool planned = false;            ///< the policy's plan placed a state at its node
  bool prior = false;              ///< admitted on a prior (age class 1)
};

/// `tree_victim_event::cause` as the CSV writes it.
[[nodiscard]] constexpr std::string_view to_string(tree_victim_event::cause c) noexcept {
  switch (c) {
    case tree_victim_event::cause::admit:
      return "admit";
    case tree_victim_event::cause::shed:
      return "shed";
    case tree_victim_event::cause::capacity:
      return "capacity";
  }
  return "?";
}

/// A state policy on the causal protocol (see the file comment for the order of the calls).
class tree_policy {
 public:
  virtual ~tree_policy() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// Starts a replay; the pool is empty and sized.
  virtual void reset(const tree_context& ctx) = 0;
  /// Match time. k <= s.usable with pool.holds(path[k−1]) when k > 0; s.path() = p_1 … p_pb.
  /// A hit is where a policy refreshes what it wants.
  virtual std::size_t resume(const tree_step& s) = 0;
  /// Match time, after `resume` (s.resumed = k), before any token is computed: appends the block
  /// positions j in (k, pb] it will snapshot during the prefill (each a scheduled chunk end).
  virtual void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) {
    (void)s;
    (void)positions;
  }
  /// After the prefill: the pool accepts `add` only at the announced positions; evict as needed.
  virtual void after_prefill(const tree_step& s) { (void)s; }
  /// Block j in (pb, n] was just completed by the decode: the pool accepts add(path[j−1]) only.
  /// s.path() = p_1 … p_j; n is unknown.
  virtual void on_decode_block(const tree_step& s, std::size_t j) {
    (void)s;
    (void)j;
  }
  /// Request end: s.path() = p_1 … p_n; the pool accepts add(path[n−1]). Evict as needed.
  virtual void finish(const tree_step& s) { (void)s; }
  /// The engine dropped the state at `v` because its KV was evicted (already off the pool).
  virtual void on_dropped(std::uint32_t v) { (void)v; }
  /// The engine evicted the KV of leaf block `v` (after `on_dropped` if it held a state).
  virtual void on_evicted(std::uint32_t v) { (void)v; }
  /// Joint KV budget: the policy's least recently used state the engine may evict, as (stamp on
  /// the `tree_context::lru_tick` clock, node), for the engine's one LRU over KV blocks and
  /// states (see the file comment). The default, (largest stamp, `tree_trace::no_parent`), keeps
  /// the policy's states out of that LRU: the engine then evicts KV first and drops states only
  /// when no KV leaf is left. The engine drops the state it names through `on_dropped`.
  [[nodiscard]] virtual std::pair<std::uint64_t, std::uint32_t> lru_state() const {
    return {std::numeric_limits<std::uint64_t>::max(), tree_trace::no_parent};
  }
  /// The order the engine evicts cached KV leaves in for this row (asked at each eviction; the
  /// default, `kv_order::lru`, is the engines'). A KV leaf that holds no state serves no resume
  /// (a resume at k needs the state at k and the KV of blocks 1 … k, and no state lies at or
  /// below a leaf but its own), so `stateless_first` gives up only match length that no held
  /// state can use.
  [[nodiscard]] virtual kv_order kv_eviction() const { return kv_order::lru; }
  /// Joint KV budget, `kv_order::stateless_first`, and every evictable KV leaf holds a state:
  /// the state the row gives up instead of the least recently used leaf's state and block
  /// (its bytes go to KV), or `tree_trace::no_parent` to let the leaf go. The engine drops it
  /// (`on_dropped`). Default: none.
  [[nodiscard]] virtual std::uint32_t shed_state() { return tree_trace::no_parent; }
  /// Wall time (ns) spent since `reset` on whole-cache work that runs inside the calls above but
  /// off the request's own path: periodic exact re-plans, a tuning replay. The replayer reports
  /// it apart (`tree_metrics::replan_ns_per_block`), so the request path's cost is the rest.
  /// Default: 0.
  [[nodiscard]] virtual double replan_ns() const { return 0.0; }
  /// A row that follows one of several candidates (`portfolio_policy`): the index of the one it
  /// follows for the running request, read at the request's end (`tree_request_outcome::leader`).
  /// Default: `tree_request_outcome::no_candidate`.
  [[nodiscard]] virtual std::uint32_t following() const {
    return tree_request_outcome::no_candidate;
  }
  /// From now on (this replay and the next), append every state the row's own ranking gives up
  /// to `*log`, tagged `candidate` (nullptr: stop). Rows that rank with the library's policy
  /// (`library_policy`; `portfolio_policy` passes it to its candidates, each tagged with its
  /// index) log; the default logs nothing. The engine's drops (a state whose KV was evicted)
  /// are not the row's choice and are not logged.
  virtual void log_victims(std::vector<tree_victim_event>* log, std::uint32_t candidate) {
    (void)log;
    (void)candidate;
  }
};

/// Deepest k in [0, limit] with path[k−1] held (0 when none).
inline std::size_t deepest_held(const state_pool& pool, std::span<const std::uint32_t> path,
                                std::size_t limit) noexcept {
  for (std::size_t k = std::min(limit, path.size()); k > 0; --k) {
    if (pool.holds(path[k - 1])) return k;
  }
  return 0;
}

/// Metrics of one (policy, budget) replay.
struct tree_metrics {
  std::string policy;
  std::size_t budget = 0;     ///< M, states
  double state_memory = 0.0;  ///< M · checkpoint bytes
  std::size_t requests = 0;
  double prompt_tokens = 0.0;          ///< Σ P
  double usable_tokens = 0.0;          ///< Σ u·B (KV cached and resumable)
  double resumed_tokens = 0.0;         ///< Σ k·B
  double recomputed_tokens = 0.0;      ///< Σ (u − k)·B
  double prefill_tokens = 0.0;         ///< Σ (P − k·B)
  double hit_rate = 0.0;               ///< Σ k·B / Σ P
  double prefill_flops = 0.0;          ///< Σ FLOPs
  double ttft_ms = 0.0;                ///< mean modelled TTFT
  double states_mean = 0.0;            ///< mean pool size after each request
  std::size_t states_peak = 0;         ///< largest pool size seen
  double decision_ns = 0.0;            ///< mean policy time per request
  double decision_ns_per_block = 0.0;  ///< … per path block
  /// … of it, the share of whole-cache work (re-plans, tuning; `tree_policy::replan_ns`)
  double replan_ns_per_block = 0.0;
  double parameter = std::numeric_limits<double>::quiet_NaN();  ///< a tuned knob (Marconi's α)
  double chunk_boundaries = 0.0;    ///< Σ extra chunk boundaries (announced j with j·B < P)
  kv_mode kv = kv_mode::unlimited;  ///< KV accounting of the run
  double kv_budget_bytes = 0.0;     ///< kv_budget::bytes (0: unlimited)
  double kv_evicted_blocks = 0.0;   ///< blocks whose KV was evicted
  double states_dropped = 0.0;      ///< states dropped with their KV (or for the joint pool)
  double kv_blocks_mean = 0.0;      ///< mean present blocks after each request
  /// The library's row (`portfolio_policy`) only: the candidate leading at the end, the leader
  /// switches S and the hand-over loss in tokens (sim/tree/portfolio.hpp); empty / NaN otherwise.
  std::string leader;
  double switches = std::numeric_limits<double>::quiet_NaN();
  double handover_tokens = std::numeric_limits<double>::quiet_NaN();
  /// With `tree_options::request_log`: every request of the replay, in order (empty otherwise,
  /// and for `static_optimum`); with either log, for the library's row, the names its `leader`
  /// and its victims' `candidate` index.
  std::vector<tree_request_outcome> per_request;
  /// With `tree_options::victim_log`: every state the row's own ranking gave up, in order
  /// (`tree_policy::log_victims`; empty for rows that do not rank with the library's policy).
  std::vector<tree_victim_event> victims;
  std::vector<std::string> candidates;
  /// Extra chunk boundaries per request.
  [[nodiscard]] double chunk_boundaries_per_request() const noexcept {
    return requests ? chunk_boundaries / static_cast<double>(requests) : 0.0;
  }
};

/// Per request: the usable match u with unlimited KV (policy-independent: the tree holds every
/// block ever seen).
inline std::vector<std::size_t> usable_matches(const tree_trace& t) {
  block_tree tree;
  tree.reset(t.node_count());
  std::vector<std::size_t> out;
  out.reserve(t.size());
  for (const auto& r : t.requests()) {
    out.push_back(std::min(tree.match(r.path), r.usable_blocks(t.block())));
    tree.insert(t, r.path);
  }
  return out;
}

/// Per request: the usable match u under `cost.kv`, with KV alone in the budget (no states):
/// exact for `separate` and `unlimited`; for `joint` the matches when the states take their
/// M share, an approximation (the real ones depend on the states a policy holds). The offline
/// references' future knowledge.
inline std::vector<std::size_t> usable_matches(const tree_trace& t, const tree_cost_model& cost) {
  if (cost.kv.mode == kv_mode::unlimited) return usable_matches(t);
  const double block_bytes = static_cast<double>(t.block()) * cost.model.kv_bytes_per_token();
  block_tree tree;
  tree.reset(t.node_count(), true);
  std::vector<std::size_t> out;
  out.reserve(t.size());
  for (const auto& r : t.requests()) {
    const std::size_t pb = r.prompt_blocks(t.block());
    out.push_back(std::min(std::min(tree.match(r.path), pb), r.usable_blocks(t.block())));
    const auto guard = tree.insert(t, r.path);
    while (static_cast<double>(tree.blocks()) * block_bytes > cost.kv.bytes &&
           tree.evict_lru_leaf(t, guard) != tree_trace::no_parent) {
    }
  }
  return out;
}

/// The KV bookkeeping of several replayers of one trace whose cached blocks do not depend on
/// the states they hold: unlimited KV, or a separate KV budget evicted in LRU order
/// (`kv_order::lru`). Such replayers would each insert every request's blocks and evict the same
/// leaves in the same order; sharing one `block_tree` does that once. The first replayer to reach
/// an allocation performs it and logs the leaves it evicted; every replayer then applies the log
/// to its own state pool and policy (drop, `on_dropped`, `on_evicted`, in eviction order), as its
/// own eviction loop would have. (That loop consults nothing but the tree under LRU order, and no
/// policy reads the tree while it is told of drops, so the results are the same; the portfolio's
/// shadows use it, sim/tree/portfolio.hpp.) Not for a joint budget: there the states decide
/// which KV stays.
class shared_kv {
 public:
  /// @throws invalid_argument for a joint KV budget, or a separate one that is negative or not
  ///         finite.
  shared_kv(const tree_trace& t, const tree_cost_model& cost) : t_(t), cost_(cost) {
    if (cost.kv.mode == kv_mode::joint)
      hybridcache::detail::throw_invalid("kv.mode", "joint", "cannot share KV bookkeeping");
    if (cost.kv.mode != kv_mode::unlimited &&
        !(cost.kv.bytes >= 0.0 && std::isfinite(cost.kv.bytes)))
      hybridcache::detail::throw_invalid("kv.bytes", cost.kv.bytes, "must be finite and >= 0");
    block_bytes_ = static_cast<double>(t.block()) * cost.model.kv_bytes_per_token();
    tree_.reset(t.node_count(), cost.kv.mode != kv_mode::unlimited);
    offsets_.push_back(0);
  }
  shared_kv(const shared_kv&) = delete;
  shared_kv& operator=(const shared_kv&) = delete;

  /// The trace and cost model it was built for.
  [[nodiscard]] const tree_trace& trace() const noexcept { return t_; }
  [[nodiscard]] const tree_cost_model& cost() const noexcept { return cost_; }
  /// The shared tree.
  [[nodiscard]] block_tree& tree() noexcept { return tree_; }
  /// Allocation n (1-based, in order) of `path`: performed when n is the next one, else
  /// (n already performed) only looked up. @returns (the allocation's first LRU stamp, the leaves
  /// it evicted in order).
  /// @throws invalid_argument when n skips ahead.
  std::pair<std::uint64_t, std::span<const std::uint32_t>> allocate(
      std::size_t n, std::span<const std::uint32_t> path) {
    if (n == guards_.size() + 1) {
      paths_.push_back(path.data());
      guards_.push_back(tree_.insert(t_, path));
      if (cost_.kv.mode == kv_mode::separate) {
        while (static_cast<double>(tree_.blocks()) * block_bytes_ > cost_.kv.bytes) {
          const auto v = tree_.evict_lru_leaf(t_, guards_.back());
          if (v == tree_trace::no_parent) break;
          evicted_.push_back(v);
        }
      }
      offsets_.push_back(evicted_.size());
    } else if (n == 0 || n > guards_.size()) {
      hybridcache::detail::throw_invalid("allocation", n, "skips ahead of the shared KV");
    } else if (paths_[n - 1] != path.data()) {
      hybridcache::detail::throw_invalid("allocation", n, "is of another request's path");
    }
    return {guards_[n - 1], std::span<const std::uint32_t>(evicted_).subspan(
                                offsets_[n - 1], offsets_[n] - offsets_[n - 1])};
  }

 private:
  const tree_trace& t_;
  tree_cost_model cost_;
  double block_bytes_ = 0.0;
  block_tree tree_;
  std::vector<const std::uint32_t*> paths_;  ///< per allocation: the path (the trace's own)
  std::vector<std::uint64_t> guards_;        ///< per allocation: its first stamp
  std::vector<std::size_t> offsets_;         ///< per allocation: its evictions in `evicted_`
  std::vector<std::uint32_t> evicted_;       ///< all evicted leaves, in order (O(trace) in all)
};

/// Replays a tree trace through one policy, one request at a time, on the causal protocol (see
/// the file comment). Requests before `begin` are inserted into the tree (their KV is cached,
/// within the KV budget) with no state held: a cold state pool over a warm tree.
class tree_replayer {
 public:
  /// `usable` = usable_matches(t, cost) (passed in so sweeps compute it once; the offline
  /// references' knowledge). `budget`: M states (see kv_budget for the joint pool). `kv`: KV
  /// bookkeeping shared with other replayers of `t` under the same KV budget (`shared_kv`; the
  /// policy must evict KV in LRU order), or none (the replayer keeps its own). `lanes`: under a
  /// joint budget, the LRU order shared with other replayers of `t` stepped in lockstep from the
  /// first request (`lru_lanes`); used when the policy evicts KV in LRU order, else ignored.
  /// @throws invalid_argument when `usable` does not match the trace, the KV budget is negative
  ///         or not finite, `kv` was built for another trace or KV budget, or `lanes` is given
  ///         for another trace, another KV mode than joint, or with `begin` > 0.
  tree_replayer(const tree_trace& t, tree_policy& policy, std::size_t budget,
                const std::vector<std::size_t>& usable, const tree_cost_model& cost = {},
                std::size_t begin = 0, shared_kv* kv = nullptr, lru_lanes* lanes = nullptr)
      : t_(t),
        policy_(policy),
        usable_(usable),
        cost_(cost),
        budget_(budget),
        tree_(kv ? kv->tree() : own_tree_),
        kv_(kv),
        next_(std::min(begin, t.size())) {
    if (usable.size() != t.size())
      hybridcache::detail::throw_invalid("usable.size()", usable.size(),
                                         "must equal the trace size");
    if (cost.kv.mode != kv_mode::unlimited &&
        !(cost.kv.bytes >= 0.0 && std::isfinite(cost.kv.bytes)))
      hybridcache::detail::throw_invalid("kv.bytes", cost.kv.bytes, "must be finite and >= 0");
    if (kv && (&kv->trace() != &t || kv->cost().kv.mode != cost.kv.mode ||
               (cost.kv.mode != kv_mode::unlimited && kv->cost().kv.bytes != cost.kv.bytes) ||
               kv->cost().model.kv_bytes_per_token() != cost.model.kv_bytes_per_token()))
      hybridcache::detail::throw_invalid("kv", "shared", "was built for another trace or budget");
    state_bytes_ = cost.model.checkpoint_bytes();
    block_bytes_ = static_cast<double>(t.block()) * cost.model.kv_bytes_per_token();
    pool_.reset(t.node_count(), budget);
    if (!kv_) tree_.reset(t.node_count(), cost.kv.mode != kv_mode::unlimited);
    ctx_.trace = &t;
    ctx_.pool = &pool_;
    ctx_.tree = &tree_;
    ctx_.usable = &usable_;
    ctx_.state_bytes = state_bytes_;
    ctx_.budget = budget;
    ctx_.kv = cost.kv.mode;
    ctx_.cost = &cost_;
    ctx_.begin = next_;
    if (cost.kv.mode == kv_mode::joint) {
      ctx_.grow = [this](std::size_t n) { return grow(n); };
      ctx_.lru_tick = [this] { return tree_.tick(); };
      ctx_.evict_kv_older = [this](std::uint64_t stamp) { return evict_kv_older(stamp); };
      ctx_.evict_kv_leaf = [this](std::uint32_t v) { return evict_kv_leaf(v); };
    }
    ctx_.flops = [cost](double n, double p) { return cost.flops(n, p); };
    if (cost.kv.mode == kv_mode::joint) pool_.set_capacity(joint_capacity());
    if (lanes && (&lanes->trace() != &t || cost.kv.mode != kv_mode::joint || next_ != 0))
      hybridcache::detail::throw_invalid("lanes", "shared",
                                         "need the same trace, a joint KV budget and begin 0");
    policy.reset(ctx_);
    if (lanes && policy.kv_eviction() == kv_order::lru) own_tree_.join(*lanes);
    for (std::size_t i = 0; i < next_; ++i) allocate(t.requests()[i].path);
    m_.policy = policy.name();
    m_.budget = budget;
    m_.state_memory = static_cast<double>(budget) * ctx_.state_bytes;
    m_.kv = cost.kv.mode;
    m_.kv_budget_bytes = cost.kv.mode == kv_mode::unlimited ? 0.0 : cost.kv.bytes;
  }

  /// Replays the next request. @returns false when the trace is done.
  /// @throws invalid_argument when the policy resumes past the usable match or from a node
  ///         without a state (or without KV), announces a position outside (k, pb], or adds a
  ///         state outside the open window; capacity_error when it leaves the pool over budget.
  bool step() {
    if (next_ >= t_.size()) return false;
    begin_request();
    prefill();
    const std::size_t n = t_.requests()[s_.index].path.size();
    for (std::size_t j = s_.prompt_blocks + 1; j <= n; ++j) decode_block(j);
    end_request();
    return true;
  }

  /// The phases of `step`, for replayers driven in lockstep (sim/tree/portfolio.hpp): match time
  /// of the next request (`resume`, `plan_prefill`). @returns k.
  /// @throws invalid_argument when the trace is done, or as `step`.
  std::size_t begin_request() {
    using hybridcache::detail::throw_invalid;
    if (next_ >= t_.size()) throw_invalid("request", next_, "is past the trace's end");
    const std::size_t i = next_++;
    const auto& r = t_.requests()[i];
    const std::size_t B = t_.block();
    s_ = tree_step{};
    s_.index = i;
    s_.request = &r;
    s_.root = r.root;
    s_.prompt_tokens = r.prompt_tokens;
    s_.prompt_blocks = r.prompt_blocks(B);
    s_.known = s_.prompt_blocks;
    s_.match = tree_.match(s_.path());
    s_.usable = std::min(s_.match, r.usable_blocks(B));
    req_ns_ = 0.0;
    std::size_t k = 0;
    timed([&] { k = policy_.resume(s_); });
    if (k > s_.usable) throw_invalid("resume", k, "exceeds the usable match");
    if (k > 0 && !pool_.holds(r.path[k - 1])) throw_invalid("resume", k, "node holds no state");
    if (k > 0 && !tree_.present(r.path[k - 1])) throw_invalid("resume", k, "node's KV was evicted");
    s_.resumed = k;
    announced_.clear();
    timed([&] { policy_.plan_prefill(s_, announced_); });
    std::sort(announced_.begin(), announced_.end());
    announced_.erase(std::unique(announced_.begin(), announced_.end()), announced_.end());
    window_.clear();
    for (auto j : announced_) {
      if (j <= k || j > s_.prompt_blocks)
        throw_invalid("announced position", j,
                      "outside (resume, prompt blocks] = (" + std::to_string(k) + ", " +
                          std::to_string(s_.prompt_blocks) + "]");
      if (j * B < r.prompt_tokens) m_.chunk_boundaries += 1.0;
      window_.push_back(r.path[j - 1]);
    }
    return k;
  }
  /// Allocates the request's KV (trimming to the KV budget) and runs `after_prefill`: the two
  /// halves below, in order.
  void prefill() {
    allocate_prefill();
    after_prefill();
  }
  /// The prefill's first half: allocates the request's KV (trimming to the KV budget; the
  /// evictions and drops it makes are reported to the policy as they happen).
  void allocate_prefill() { allocate(s_.request->path); }
  /// The prefill's second half, after `allocate_prefill`: the computed blocks open and the
  /// policy's `after_prefill` runs.
  void after_prefill() {
    grown_.clear();
    pool_.open(window_);
    timed([&] { policy_.after_prefill(s_); });
  }
  /// Decode block j in (pb, n] of the running request: `on_decode_block`.
  void decode_block(std::size_t j) {
    s_.known = j;
    grown_.clear();
    pool_.open(std::span<const std::uint32_t>(s_.request->path).subspan(j - 1, 1));
    timed([&] { policy_.on_decode_block(s_, j); });
  }
  /// Request end: `finish`, the budget check and the request's metrics.
  void end_request() {
    const auto& r = *s_.request;
    const std::size_t B = t_.block();
    const std::size_t n = r.path.size();
    const std::size_t k = s_.resumed;
    s_.known = n;
    grown_.clear();
    if (n > 0)
      pool_.open(std::span<const std::uint32_t>(r.path).subspan(n - 1, 1));
    else
      pool_.close();
    timed([&] { policy_.finish(s_); });
    pool_.close();
    if (pool_.size() > pool_.capacity())
      throw capacity_error("hybridcache: policy " + policy_.name() + " exceeded its budget");
    last_resume_ = k;
    ns_ += req_ns_;
    blocks_ += static_cast<double>(n);
    const double Bd = static_cast<double>(B);
    const double P = static_cast<double>(r.prompt_tokens);
    const double kb = static_cast<double>(k) * Bd;
    m_.prompt_tokens += P;
    m_.usable_tokens += static_cast<double>(s_.usable) * Bd;
    m_.resumed_tokens += kb;
    m_.recomputed_tokens += static_cast<double>(s_.usable - k) * Bd;
    m_.prefill_tokens += P - kb;
    m_.prefill_flops += cost_.flops(P - kb, kb);
    ttft_ += cost_.time.cost(r.prompt_tokens - k * B, k * B);
    states_ += static_cast<double>(pool_.size());
    kv_blocks_ += static_cast<double>(tree_.blocks());
    ++m_.requests;
    if (log_)
      log_->push_back({.request = s_.index,
                       .prompt_tokens = r.prompt_tokens,
                       .usable_tokens = s_.usable * B,
                       .resumed_tokens = k * B,
                       .states = pool_.size(),
                       .kv_blocks = tree_.blocks(),
                       .leader = policy_.following()});
  }
  /// The running request's step (valid from `begin_request` to the next one).
  [[nodiscard]] const tree_step& current() const noexcept { return s_; }
  /// The running request's announced positions (sorted).
  [[nodiscard]] std::span<const std::size_t> announced() const noexcept { return announced_; }
  /// A state the engine dropped, and why: with its evicted block (or, under a joint budget with
  /// no block left to evict, for room), or given up by the policy (`lru_state`, `shed_state`).
  struct state_drop {
    enum class cause : std::uint8_t { block, lru, shed };
    std::uint32_t node = tree_trace::no_parent;
    cause why = cause::block;
  };
  /// The states the engine dropped while it allocated the running request's KV, in order.
  [[nodiscard]] std::span<const state_drop> allocation_drops() const noexcept { return drops_; }
  /// The KV leaves `grow` evicted in the policy's last call (`after_prefill`, `on_decode_block`
  /// or `finish`), in order.
  [[nodiscard]] std::span<const std::uint32_t> grow_evictions() const noexcept { return grown_; }
  /// The policy replayed.
  [[nodiscard]] const tree_policy& policy() const noexcept { return policy_; }
  /// The next request to replay.
  [[nodiscard]] std::size_t next() const noexcept { return next_; }
  /// Replays up to request `end` (exclusive).
  void run(std::size_t end = std::numeric_limits<std::size_t>::max()) {
    while (next_ < std::min(end, t_.size())) step();
  }

  /// From the next request on, each replayed request appends its outcome to `*log` (nullptr:
  /// stop). The sums of the logged outcomes are the `metrics()` of those requests.
  void set_request_log(std::vector<tree_request_outcome>* log) noexcept { log_ = log; }

  [[nodiscard]] const state_pool& pool() const noexcept { return pool_; }
  /// Every later change of this replay's held set appends its node to `*log` (nullptr: stop;
  /// `state_pool::log_to`).
  void log_states(std::vector<std::uint32_t>* log) noexcept { pool_.log_to(log); }
  [[nodiscard]] const block_tree& tree() const noexcept { return tree_; }
  /// k of the last replayed request.
  [[nodiscard]] std::size_t last_resume() const noexcept { return last_resume_; }
  /// Bytes of KV now cached.
  [[nodiscard]] double kv_bytes() const noexcept {
    return static_cast<double>(tree_.blocks()) * block_bytes_;
  }
  /// Times the policy's calls (`decision_ns`, `decision_ns_per_block`) when `on` (the
  /// default). A replay run inside another policy — a candidate shadow, a tuning replay — is
  /// timed by its caller already; switching its own clock reads off removes their cost (two
  /// `steady_clock::now()` per call) and changes nothing else.
  void set_timing(bool on) noexcept { timing_ = on; }
  /// Metrics of the requests replayed so far.
  [[nodiscard]] tree_metrics metrics() const {
    tree_metrics m = m_;
    const double n = static_cast<double>(std::max<std::size_t>(m.requests, 1));
    m.hit_rate = m.prompt_tokens > 0 ? m.resumed_tokens / m.prompt_tokens : 0.0;
    m.ttft_ms = ttft_ / n;
    m.states_mean = states_ / n;
    m.states_peak = pool_.peak();
    m.decision_ns = ns_ / n;
    m.decision_ns_per_block = blocks_ > 0 ? ns_ / blocks_ : 0.0;
    m.replan_ns_per_block = timing_ && blocks_ > 0 ? policy_.replan_ns() / blocks_ : 0.0;
    m.kv_blocks_mean = kv_blocks_ / n;
    return m;
  }

 private:
  /// Total bytes of the joint pool.
  [[nodiscard]] double joint_total() const noexcept {
    return cost_.kv.bytes + static_cast<double>(budget_) * state_bytes_;
  }
  /// States that fit the joint pool beside the KV now cached.
  [[nodiscard]] std::size_t joint_capacity() const noexcept {
    const double room = joint_total() - kv_bytes();
    if (!(room > 0.0) || !(state_bytes_ > 0.0)) return 0;
    return static_cast<std::size_t>(std::floor(room / state_bytes_ + 1e-9));
  }
  [[nodiscard]] bool over_budget() const noexcept {
    switch (cost_.kv.mode) {
      case kv_mode::separate:
        return kv_bytes() > cost_.kv.bytes;
      case kv_mode::joint:
        return kv_bytes() + static_cast<double>(pool_.size()) * state_bytes_ > joint_total();
      case kv_mode::unlimited:
        break;
    }
    return false;
  }
  template <class F>
  void timed(F&& f) {
    if (!timing_) {
      f();
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    f();
    req_ns_ +=
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
  void drop_state(std::uint32_t v) {
    pool_.remove(v);
    m_.states_dropped += 1.0;
    if (allocating_) drops_.push_back({v, state_drop::cause::block});
    policy_.on_dropped(v);
  }
  /// Whether the row asks for `kv_order::stateless_first` now; the tree starts watching the
  /// pool the first time it does.
  bool stateless_first() {
    if (policy_.kv_eviction() != kv_order::stateless_first) return false;
    tree_.watch(pool_);
    return true;
  }
  /// Evicts a KV leaf off the running path (stamped before `guard`) in the row's order
  /// (`tree_policy::kv_eviction`), dropping the state it held first. @returns the leaf, or
  /// `no_parent` when none is left.
  std::uint32_t evict_leaf(std::uint64_t guard) {
    const auto v = stateless_first() ? tree_.evict_stateless_leaf(t_, guard)
                                     : tree_.evict_lru_leaf(t_, guard);
    if (v != tree_trace::no_parent) report_evicted(v);
    return v;
  }
  /// Leaf v's KV was evicted: counted, the state it held dropped, the policy told.
  void report_evicted(std::uint32_t v) {
    m_.kv_evicted_blocks += 1.0;
    if (pool_.holds(v)) drop_state(v);
    policy_.on_evicted(v);
  }
  /// `tree_context::grow` (joint KV budget): evicts KV leaves off the running path in the row's
  /// order until n more states fit; with `kv_order::stateless_first` only leaves that hold no
  /// state. @returns the free room in states.
  std::size_t grow(std::size_t n) {
    const bool stateless_only = stateless_first();
    while (joint_capacity() < pool_.size() + n) {
      // A leaf that holds a state would trade a held state, chosen by recency, for the new one;
      // a row that ranks its states (`admit`) decides that trade itself.
      if (stateless_only && !tree_.has_stateless_leaf(guard_)) break;
      const auto v = evict_leaf(guard_);
      if (v == tree_trace::no_parent) break;
      grown_.push_back(v);
    }
    const std::size_t cap = joint_capacity();
    pool_.set_capacity(std::max(cap, pool_.capacity()));
    return pool_.capacity() - std::min(pool_.capacity(), pool_.size());
  }
  /// `tree_context::evict_kv_older` (joint KV budget): evicts the LRU KV leaf off the running
  /// path if it is older than `stamp`. @returns whether it did.
  bool evict_kv_older(std::uint64_t stamp) {
    if (tree_.lru_leaf_stamp(guard_) >= stamp) return false;
    evict_leaf(guard_);
    pool_.set_capacity(std::max(joint_capacity(), pool_.capacity()));
    return true;
  }
  /// `tree_context::evict_kv_leaf` (joint KV budget): evicts leaf `v` off the running path.
  /// @throws invalid_argument when `v` is not a node of the trace.
  bool evict_kv_leaf(std::uint32_t v) {
    if (v >= t_.node_count())
      hybridcache::detail::throw_invalid("v", v, "is not a node of the trace");
    if (!tree_.evict_leaf_at(t_, v, guard_)) return false;
    report_evicted(v);
    pool_.set_capacity(std::max(joint_capacity(), pool_.capacity()));
    return true;
  }
  /// Step 3 of the protocol: the request's blocks are allocated (inserted, most recently used)
  /// and the tree trimmed to the KV budget (see the file comment).
  void allocate(std::span<const std::uint32_t> path) {
    drops_.clear();
    allocating_ = true;
    if (kv_)
      apply_shared(path);
    else
      allocate_and_trim(path);
    allocating_ = false;
  }
  /// `allocate` on shared KV: the shared tree's allocation (performed by the first replayer to
  /// get here), its evictions applied to this pool and policy as `evict_leaf` would.
  void apply_shared(std::span<const std::uint32_t> path) {
    const auto [guard, evicted] = kv_->allocate(++allocations_, path);
    guard_ = guard;
    for (const auto v : evicted) {
      if (policy_.kv_eviction() != kv_order::lru)
        hybridcache::detail::throw_invalid("kv", "shared",
                                           "needs a policy that evicts KV in LRU order");
      report_evicted(v);
    }
  }
  /// `allocate`'s work: insert, then evict until the KV budget holds.
  void allocate_and_trim(std::span<const std::uint32_t> path) {
    const auto guard = tree_.insert(t_, path);
    guard_ = guard;
    if (cost_.kv.mode == kv_mode::unlimited) return;
    while (over_budget()) {
      if (cost_.kv.mode == kv_mode::joint) {  // the one LRU: an older state goes first
        std::pair<std::uint64_t, std::uint32_t> st;
        timed([&] { st = policy_.lru_state(); });
        if (st.second != tree_trace::no_parent && st.first < tree_.lru_leaf_stamp(guard)) {
          drop_state(st.second);
          drops_.back().why = state_drop::cause::lru;
          continue;
        }
      }
      if (cost_.kv.mode == kv_mode::joint && stateless_first() &&
          !tree_.has_stateless_leaf(guard)) {
        // Every evictable leaf holds a state: the row may give up its least valuable state
        // (all of a state's bytes) rather than the least recently used leaf's state and block.
        std::uint32_t v = tree_trace::no_parent;
        timed([&] { v = policy_.shed_state(); });
        if (v != tree_trace::no_parent && pool_.holds(v)) {
          drop_state(v);
          drops_.back().why = state_drop::cause::shed;
          continue;
        }
      }
      if (evict_leaf(guard) == tree_trace::no_parent) break;
    }
    if (cost_.kv.mode != kv_mode::joint) return;
    const std::size_t cap = joint_capacity();
    if (pool_.size() > cap) {  // no leaf left off the running path: states go, LRU block first
      std::vector<std::pair<std::uint64_t, std::uint32_t>> held;
      for (std::uint32_t v = 0; v < t_.node_count(); ++v)
        if (pool_.holds(v)) held.emplace_back(tree_.stamp(v), v);
      std::sort(held.begin(), held.end());
      for (std::size_t i = 0; pool_.size() > cap; ++i) drop_state(held[i].second);
    }
    pool_.set_capacity(cap);
  }

  const tree_trace& t_;
  tree_policy& policy_;
  const std::vector<std::size_t>& usable_;
  tree_cost_model cost_;
  std::size_t budget_ = 0;
  double state_bytes_ = 0.0, block_bytes_ = 0.0;
  state_pool pool_;
  block_tree own_tree_;
  block_tree& tree_;  ///< own_tree_, or the shared one
  shared_kv* kv_ = nullptr;
  std::size_t allocations_ = 0;  ///< allocations made on the shared KV
  tree_context ctx_;
  tree_metrics m_;
  std::vector<std::size_t> announced_;
  std::vector<std::uint32_t> window_;
  std::vector<state_drop> drops_;  ///< the states the last allocation dropped, in order
  std::vector<std::uint32_t> grown_;  ///< the KV leaves `grow` evicted in the policy's last call
  bool allocating_ = false;        ///< inside `allocate` (drops are recorded)
  std::size_t next_ = 0, last_resume_ = 0;
  tree_step s_{};
  std::uint64_t guard_ = 0;  ///< the running request's first LRU stamp (its blocks are kept)
  double req_ns_ = 0.0;
  bool timing_ = true;
  std::vector<tree_request_outcome>* log_ = nullptr;  ///< `set_request_log`
  double ns_ = 0.0, blocks_ = 0.0, states_ = 0.0, ttft_ = 0.0, kv_blocks_ = 0.0;
};

/// Replays requests [begin, end) of `t` through `policy` with a budget of `budget` states and
/// returns their metrics (see `tree_replayer`); with `log`, each request's outcome is appended to
/// it too (`tree_replayer::set_request_log`).
inline tree_metrics replay_tree(const tree_trace& t, tree_policy& policy, std::size_t budget,
                                const std::vector<std::size_t>& usable,
                                const tree_cost_model& cost = {}, std::size_t begin = 0,
                                std::size_t end = std::numeric_limits<std::size_t>::max(),
                                std::vector<tree_request_outcome>* log = nullptr) {
  tree_replayer r(t, policy, budget, usable, cost, begin);
  r.set_request_log(log);
  r.run(end);
  return r.metrics();
}

HYBRIDCACHE_NAMESPACE_END
