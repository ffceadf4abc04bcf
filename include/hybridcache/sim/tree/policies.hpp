#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// State policies of today's engines, re-implemented on the causal replay engine of
/// sim/tree/replay.hpp, plus offline references with future knowledge. Positions are in blocks:
/// "j" names the state after block j of the request's path, i.e. at node path[j−1]. P = prompt
/// tokens, B = block size, pb = ⌊P/B⌋, m = match (prompt blocks present), u = usable match,
/// k = resume point, n = path length (prompt and output blocks). On the causal protocol a row
/// announces its prefill snapshots j ∈ (k, pb] at match time (`plan_prefill`), may take a decode
/// block j > pb at its end (`on_decode_block`) and the request end j = n at `finish`.
///
/// Engine rows (each rule, the engine code it follows, file, function and commit, and the
/// hand-worked test that pins it: docs/tree_simulation.md, "Engine rows: what each follows"):
/// - `vllm_align`, `vllm_align_dense`, `vllm_all`: vLLM v1 `MambaManager`
///   (vllm/v1/core/single_type_kv_cache_manager.py @ 129ab7c6, sched/scheduler.py @ 00024d31,
///   block_pool.py @ c59cb794): `vllm_policy`;
/// - `sglang_no_buffer`, `sglang_extra_buffer`, `sglang_extra_buffer_lazy`,
///   `sglang_extra_buffer_cap<N>`: SGLang `MambaRadixCache`
///   (python/sglang/srt/mem_cache/mamba_radix_cache.py @ 00df707e; the single-state refresh and
///   the prompt end cached after the prefill from managers/schedule_batch.py,
///   mem_cache/unified_cache/components/mamba_component.py @ b0dff6b9): `sglang_policy`;
/// - `trtllm`: TensorRT-LLM `MambaStateConfig` snapshot points
///   (tensorrt_llm/_torch/pyexecutor/kv_cache/mamba_cache_manager/common.py and
///   mamba_cache_manager_v2.py @ 28295084, save-last from the V1 manager): `trtllm_policy`;
/// - `marconi` (the artifact's own α tuning) and `marconi_insample` (α tuned on a prefix of the
///   same trace: a labelled upper bound): Marconi `radix_cache_hybrid.py` @ 504cf230 (fork of the
///   artifact), `config_tuner.py`: `marconi_policy`;
/// - `llamacpp`, `llamacpp_cache_ram`: llama.cpp server context checkpoints, slots and the prompt
///   cache (tools/server/server-context.cpp, server-task.cpp, as vendored in llama-cpp-python
///   0.3.36): `llamacpp_policy`.
///
/// Offline references: `oracle` (Belady on every state a later request could resume at) and
/// `oracle_exact` (Belady on exact resume nodes); they read the future through
/// `tree_context::usable` and obey the pool's windows.
///
/// These are re-implementations of the published behaviour on one shared model (block grid,
/// one state pool, the replay's KV accounting); no engine code is copied.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/detail/held_tree.hpp"
#include "hybridcache/sim/tree/recency_order.hpp"
#include "hybridcache/sim/tree/replay.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Shared skeleton of the LRU engine rows (vLLM, SGLang, TensorRT-LLM): one recency order over
/// the held states, a *pinned* state that cannot be evicted while the request runs (the hit
/// block an engine holds a reference to: vLLM `ref_cnt`, SGLang `mamba_lock_ref`), and a number
/// of pool slots the mode reserves for the running request (SGLang's ping-pong track buffers).
/// A row may join the engine's one LRU under a joint KV budget (`join_engine_lru`, see
/// `vllm_policy`): its states are then stamped on the KV blocks' clock, and a state it admits
/// into a full pool takes the least recently used of the evictable KV leaves and its own states.
class lru_engine_policy : public tree_policy {
 public:
  void reset(const tree_context& ctx) override {
    ctx_ = ctx;
    order_.reset(ctx.trace->node_count());
    pinned_ = none;
    one_lru_ = false;
  }
  void on_dropped(std::uint32_t v) override {
    order_.erase(v);
    if (pinned_ == v) pinned_ = none;
  }
  /// In the one LRU: the least recently used held state but the pinned one.
  [[nodiscard]] std::pair<std::uint64_t, std::uint32_t> lru_state() const override {
    if (one_lru_)
      for (const auto& [stamp, v] : order_)
        if (v != pinned_) return {stamp, v};
    return tree_policy::lru_state();
  }

 protected:
  static constexpr std::uint32_t none = tree_trace::no_parent;

  /// States the row may keep while a request runs: the pool's capacity less the reserved slots.
  [[nodiscard]] std::size_t room() const noexcept {
    const std::size_t cap = ctx_.pool->capacity();
    return cap > reserved_ ? cap - reserved_ : 0;
  }
  void drop(std::uint32_t v) {
    order_.erase(v);
    ctx_.pool->remove(v);
  }
  /// Drops the least recently used state other than the pinned one. @returns false if none.
  bool evict_lru() {
    for (const auto& [stamp, v] : order_) {
      if (v == pinned_) continue;
      drop(v);
      return true;
    }
    return false;
  }
  /// Evicts until at most `limit` states are held (pinned one kept). @returns whether it could.
  bool shrink_to(std::size_t limit) {
    while (ctx_.pool->size() > limit) {
      if (!evict_lru()) return false;
    }
    return true;
  }
  /// Stores the state at `v` (open now) as the most recent, evicting LRU first (in the one LRU:
  /// the least recently used of the evictable KV leaves and the held states, one at a time,
  /// until a slot is free); a held `v` is left where it is. @returns whether `v` holds a state
  /// afterwards.
  bool admit(std::uint32_t v) {
    if (ctx_.pool->holds(v)) return true;
    if (one_lru_) {
      while (ctx_.pool->size() >= room()) {
        const auto [stamp, oldest] = lru_state();
        if (ctx_.evict_kv_older(stamp)) continue;  // an older KV leaf went (room raised)
        if (oldest == none) return false;
        drop(oldest);
      }
    } else {
      const std::size_t cap = room();
      if (cap == 0 || !shrink_to(cap - 1)) return false;
    }
    ctx_.pool->add(v);
    order_.insert(v);
    return true;
  }
  /// Joins the engine's one LRU when the replay has one (joint KV budget); call from `reset`.
  void join_engine_lru() {
    one_lru_ = ctx_.kv == kv_mode::joint && ctx_.lru_tick && ctx_.evict_kv_older;
    if (one_lru_) order_.reset(ctx_.trace->node_count(), ctx_.lru_tick);
  }
  /// Refreshes the held states on path[0, j) root to leaf, so ancestors end up older.
  void touch_path(std::span<const std::uint32_t> path, std::size_t j) {
    for (std::size_t i = 0; i < j && i < path.size(); ++i) {
      if (ctx_.pool->holds(path[i])) order_.touch(path[i]);
    }
  }

  tree_context ctx_{};
  recency_order order_;
  std::uint32_t pinned_ = none;
  std::size_t reserved_ = 0;  ///< pool slots the mode reserves per running request
  bool one_lru_ = false;      ///< in the engine's one LRU (`join_engine_lru`)
};

/// vLLM v1 hybrid prefix caching (`MambaManager`, see the file comment for the rules and the
/// commits read). Three modes:
/// - `align` (`--mamba-cache-mode align`, the default with prefix caching, mid-2026 retention):
///   a state at the replay boundary and at a detected shared-prefix junction;
/// - `align_dense` (align with dense retention, the EAGLE/MTP default, and the behaviour of the
///   align code read at the cited commit): a state at every scheduled chunk end, the junction,
///   the boundary and every decode block;
/// - `all` (`--mamba-cache-mode all`): a state at every full block, decode blocks included.
///
/// **Joint KV budget: one LRU.** vLLM's hybrid allocator keeps one `BlockPool` for every KV cache
/// group (`KVCacheCoordinator.__init__`, vllm/v1/core/kv_cache_coordinator.py @ 52b9a57d): the
/// attention groups' KV blocks and the Mamba groups' state blocks are pages of one size (the
/// attention block size is raised until its page holds a Mamba state and the Mamba page is
/// padded to it: `HybridAttentionMambaModelConfig.verify_and_update_config`,
/// vllm/model_executor/models/config.py @ 1936cf38). A block whose `ref_cnt` drops to 0 is
/// appended, hash kept, to the tail of one `FreeKVCacheBlockQueue` (`BlockPool.free_blocks`,
/// block_pool.py @ c59cb794; a request's blocks are freed tail first,
/// `SingleTypeKVCacheManager.free`, and a Mamba manager frees a skipped state block as soon as
/// the next is taken, `remove_skipped_blocks`, single_type_kv_cache_manager.py @ 129ab7c6); a
/// hit takes it out (`BlockPool.touch`); and a new block of *any* group is `popleft`ed from
/// the head, its cached hash evicted whatever group it belonged to (`get_new_blocks`,
/// `_maybe_evict_cached_block`; `FreeKVCacheBlockQueue.popleft`, kv_cache_utils.py @ bbf906a8).
/// So a new state (or new KV) takes the globally least recently used cached block, KV or state.
/// Under `kv_mode::joint` the row models that (`join_engine_lru`): its states are stamped on the
/// replay's KV clock (a hit, an admission), a state admitted into a full pool evicts the least
/// recently used of the cached KV leaves off the running path and its own states (the resumed
/// one pinned), one at a time, and the request's KV allocation evicts an older state before a
/// newer KV leaf (`lru_state`). The model is at least as strong as vLLM's queue in three ways:
/// a state costs its own bytes, not padded pages (at B = 528 vLLM charges each of the Mamba
/// groups a page of B tokens' KV of its layers); a state whose block's KV is evicted is dropped
/// at once rather than left in the queue; and a state is one item, where vLLM frees its Mamba
/// groups' blocks separately (one evicted group's block makes the others useless). Within one
/// request the replay stamps the resumed state, then the KV root to leaf, then the new states;
/// vLLM frees KV tail first at the end. KV goes leaf first in both (the replay evicts only
/// leaves; in vLLM's queue a parent is never older than its cached child), and the request's
/// own items reach the LRU's head only after everything older.
class vllm_policy : public lru_engine_policy {
 public:
  enum class mode : std::uint8_t { align, align_dense, all };

  /// `chunk_tokens`: the scheduler's token budget per step (`max_num_batched_tokens`).
  /// @throws invalid_argument for a zero chunk.
  explicit vllm_policy(mode m = mode::align, std::size_t chunk_tokens = 8192)
      : mode_(m), chunk_(chunk_tokens) {
    if (chunk_tokens == 0)
      hybridcache::detail::throw_invalid("chunk_tokens", chunk_tokens, "must be >= 1");
  }
  [[nodiscard]] std::string name() const override {
    return mode_ == mode::align         ? "vllm_align"
           : mode_ == mode::align_dense ? "vllm_align_dense"
                                        : "vllm_all";
  }
  void reset(const tree_context& ctx) override {
    lru_engine_policy::reset(ctx);
    join_engine_lru();
  }
  /// `find_longest_cache_hit` returns only the deepest hit block, so a hit touches (takes out
  /// of the free queue) only the resumed state.
  std::size_t resume(const tree_step& s) override {
    const auto path = s.path();
    const std::size_t k = deepest_held(*ctx_.pool, path, s.usable);
    pinned_ = k > 0 ? path[k - 1] : none;
    if (k > 0) order_.touch(path[k - 1]);
    return k;
  }
  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    planned_.clear();
    const std::size_t B = ctx_.trace->block(), P = s.prompt_tokens, pb = s.prompt_blocks;
    const std::size_t k = s.resumed;
    if (mode_ == mode::all) {
      for (std::size_t j = k + 1; j <= pb; ++j) planned_.push_back(j);
    } else {
      if (mode_ == mode::align_dense) {
        const std::size_t c = std::max<std::size_t>(1, chunk_ / B);
        for (std::size_t j = k + c; j < pb; j += c) planned_.push_back(j);
      }
      if (s.match > k && s.match < pb) planned_.push_back(s.match);  // junction
      planned_.push_back(pb);                                        // last_cache_position
      if (P % B == 0 && pb > 0) planned_.push_back(pb - 1);  // ⌊(P − 1)/B⌋ (see file comment)
    }
    std::sort(planned_.begin(), planned_.end());
    planned_.erase(std::unique(planned_.begin(), planned_.end()), planned_.end());
    std::erase_if(planned_, [&](std::size_t j) { return j <= k || j > pb; });
    positions.insert(positions.end(), planned_.begin(), planned_.end());
  }
  void after_prefill(const tree_step& s) override {
    const auto path = s.path();
    if (mode_ != mode::all) {
      // align: `remove_skipped_blocks` frees each state block one step after the next one is
      // allocated, so they reach the free queue shallowest first.
      for (auto j : planned_) admit(path[j - 1]);
      return;
    }
    // all: each step frees the blocks left behind in reverse order (`range(n − 1, −1, −1)`),
    // so within one chunk the deepest block is the oldest.
    const std::size_t B = ctx_.trace->block();
    std::size_t i = 0;
    for (std::size_t end = s.resumed * B + chunk_; i < planned_.size(); end += chunk_) {
      std::size_t e = i;
      while (e < planned_.size() && planned_[e] * B <= end) ++e;
      for (std::size_t x = e; x > i; --x) admit(path[planned_[x - 1] - 1]);
      i = e;
    }
  }
  void on_decode_block(const tree_step& s, std::size_t j) override {
    if (mode_ != mode::align) admit(s.path()[j - 1]);
  }
  void finish(const tree_step&) override { pinned_ = none; }

 private:
  mode mode_;
  std::size_t chunk_;
  std::vector<std::size_t> planned_;
};

/// `vllm_align`: vllm_policy in align mode (boundary and junction).
class vllm_align_policy final : public vllm_policy {
 public:
  explicit vllm_align_policy(std::size_t chunk_tokens = 8192)
      : vllm_policy(mode::align, chunk_tokens) {}
};
/// `vllm_align_dense`: vllm_policy in align mode with dense retention.
class vllm_align_dense_policy final : public vllm_policy {
 public:
  explicit vllm_align_dense_policy(std::size_t chunk_tokens = 8192)
      : vllm_policy(mode::align_dense, chunk_tokens) {}
};
/// `vllm_all`: vllm_policy in all mode.
class vllm_all_policy final : public vllm_policy {
 public:
  explicit vllm_all_policy(std::size_t chunk_tokens = 8192)
      : vllm_policy(mode::all, chunk_tokens) {}
};

/// SGLang `MambaRadixCache` (see the file comment for the rules and the commits read). Modes:
/// - `no_buffer`: a state at every chunked-prefill chunk end and at the prompt's end
///   (`cache_unfinished_req` after each chunk, the last one included: a request that goes on to
///   decode is cached at its prompt end), and at the request end (`cache_finished_req`);
/// - `extra_buffer`: one tracked state per prefill extend (the branch point when it falls
///   inside the extend, else the extend end on the 64-token grid), each inserted after its
///   extend (the final extend's too), decode tracked every 256 tokens and its last track
///   inserted at finish; two ping-pong slots per running request are charged to the pool;
/// - `extra_buffer_lazy`: the same placement with one slot charged (the lazy strategy allocates
///   the second track slot only when needed).
/// With `path_cap` > 0 (`--mamba-max-states-per-path`), after each insert the shallowest
/// *eligible* states on the inserted path are dropped while more than `path_cap` remain:
/// eligible = one child (forks and leaves are kept), not locked, not the path's tail.
/// KV: SGLang keeps no leaf without a state. It frees the KV beyond the last tracked state when
/// a request is cached (`cache_finished_req`), and a leaf whose state is evicted goes with its
/// KV, followed by every ancestor left a stateless leaf (`_evict_leaf_node`,
/// `_iteratively_delete_tombstone_leaf`). The row asks the engine for `kv_order::stateless_first`:
/// stateless leaves go before any leaf with a state, as in SGLang, but only when room is needed
/// (until then their KV still extends matches, as SGLang's, freed at once, would not).
class sglang_policy : public lru_engine_policy {
 public:
  enum class mode : std::uint8_t { no_buffer, extra_buffer, extra_buffer_lazy };

  /// `chunk_tokens`: `--chunked-prefill-size`; `path_cap`: 0 = unlimited (the default −1).
  /// @throws invalid_argument for a zero chunk.
  explicit sglang_policy(mode m = mode::extra_buffer, std::size_t chunk_tokens = 8192,
                         std::size_t path_cap = 0)
      : mode_(m), chunk_(chunk_tokens), path_cap_(path_cap) {
    if (chunk_tokens == 0)
      hybridcache::detail::throw_invalid("chunk_tokens", chunk_tokens, "must be >= 1");
    reserved_ = m == mode::extra_buffer ? 2 : m == mode::extra_buffer_lazy ? 1 : 0;
  }
  [[nodiscard]] std::string name() const override {
    std::string n = mode_ == mode::no_buffer      ? "sglang_no_buffer"
                    : mode_ == mode::extra_buffer ? "sglang_extra_buffer"
                                                  : "sglang_extra_buffer_lazy";
    return path_cap_ == 0 ? n : n + "_cap" + std::to_string(path_cap_);
  }
  /// Match: the deepest node with a state (the lookup is capped at input − 1); the hit
  /// refreshes that state alone (`reset_node_mru` on the consumed node; before SGLang's PRs
  /// #31643/#31648 it refreshed the node and its ancestors) and locks it. The running request's
  /// buffers are allocated now, evicting LRU (after the refresh).
  std::size_t resume(const tree_step& s) override {
    const auto path = s.path();
    const std::size_t k = deepest_held(*ctx_.pool, path, s.usable);
    if (k > 0) order_.touch(path[k - 1]);
    pinned_ = k > 0 ? path[k - 1] : none;
    shrink_to(room());
    return k;
  }
  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    planned_.clear();
    const std::size_t B = ctx_.trace->block(), P = s.prompt_tokens, pb = s.prompt_blocks;
    const std::size_t k = s.resumed;
    if (mode_ == mode::no_buffer) {
      for (std::size_t end = k * B + chunk_; end < P; end += chunk_) planned_.push_back(end / B);
      planned_.push_back(pb);  // the last chunk's `cache_unfinished_req`: the prompt's end
    } else {
      // mamba_branching_seqlen: the KV match beyond the state match, on the 64 grid (blocks).
      const std::size_t branch = s.match > k ? s.match : 0;
      for (std::size_t start = k * B; start < P;) {
        const std::size_t end = std::min(start + chunk_, P);
        std::size_t track = 0;
        if (branch > 0 && start < branch * B && branch * B < end) {
          track = branch;
        } else {
          track = (start + (end - start) / kTrackGrid * kTrackGrid) / B;
        }
        planned_.push_back(track);  // the final extend's too: cached before the decode
        start = end;
      }
    }
    std::sort(planned_.begin(), planned_.end());
    planned_.erase(std::unique(planned_.begin(), planned_.end()), planned_.end());
    std::erase_if(planned_, [&](std::size_t j) { return j <= k || j > pb; });
    positions.insert(positions.end(), planned_.begin(), planned_.end());
  }
  /// Stateless KV leaves first (see the class comment).
  [[nodiscard]] kv_order kv_eviction() const override { return kv_order::stateless_first; }
  /// `cache_unfinished_req` after each chunk: insert up to the tracked position.
  void after_prefill(const tree_step& s) override {
    for (auto j : planned_) insert(s, j, true);
  }
  /// `cache_finished_req`: no_buffer inserts the whole sequence; extra_buffer inserts up to the
  /// last decode track (the last 256-token multiple the decode reached, credited at the request
  /// end n, which favours the engine), nothing more when the decode added no block.
  void finish(const tree_step& s) override {
    const std::size_t n = s.path().size(), pb = s.prompt_blocks;
    if (n > s.resumed && (mode_ == mode::no_buffer || n > pb)) insert(s, n, false);
    pinned_ = none;
  }

 private:
  static constexpr std::size_t kTrackGrid = 64;  ///< mamba_cache_chunk_size

  /// An insert: the new state most recent, a held one refreshed alone (the insert walk refreshes
  /// nothing on the path: PRs #31643/#31648); during the request its slot comes from the pool
  /// first (`_alloc_mamba_slot`, evicting LRU); at finish the running request's buffer is
  /// donated.
  void insert(const tree_step& s, std::size_t j, bool running) {
    const auto path = s.path();
    const auto v = path[j - 1];
    if (!ctx_.pool->holds(v)) {
      const std::size_t cap = running ? room() : ctx_.pool->capacity();
      if (cap == 0 || !shrink_to(cap - 1)) return;
    }
    if (ctx_.pool->holds(v)) {
      order_.touch(v);
    } else {
      ctx_.pool->add(v);
      order_.insert(v);
    }
    if (path_cap_ > 0) cap_path(path, j);
  }
  /// The per-path cap after an insert at path[j − 1] (see the class comment).
  void cap_path(std::span<const std::uint32_t> path, std::size_t j) {
    std::vector<std::uint32_t> held;
    for (std::size_t i = 0; i < j; ++i) {
      if (ctx_.pool->holds(path[i])) held.push_back(path[i]);
    }
    std::size_t count = held.size();
    for (std::size_t i = 0; i + 1 < held.size() && count > path_cap_; ++i) {
      const auto v = held[i];  // held.back() is the tail
      if (v == pinned_ || ctx_.tree->children(v) != 1) continue;
      drop(v);
      --count;
    }
  }

  mode mode_;
  std::size_t chunk_, path_cap_;
  std::vector<std::size_t> planned_;
};

/// `sglang_no_buffer`: sglang_policy in no_buffer mode.
class sglang_no_buffer_policy final : public sglang_policy {
 public:
  explicit sglang_no_buffer_policy(std::size_t chunk_tokens = 8192)
      : sglang_policy(mode::no_buffer, chunk_tokens) {}
};
/// `sglang_extra_buffer` (`_cap<N>` with a per-path cap): sglang_policy in extra_buffer mode.
class sglang_extra_buffer_policy final : public sglang_policy {
 public:
  explicit sglang_extra_buffer_policy(std::size_t path_cap = 0, std::size_t chunk_tokens = 8192)
      : sglang_policy(mode::extra_buffer, chunk_tokens, path_cap) {}
};
/// `sglang_extra_buffer_lazy`: sglang_policy in extra_buffer_lazy mode.
class sglang_extra_buffer_lazy_policy final : public sglang_policy {
 public:
  explicit sglang_extra_buffer_lazy_policy(std::size_t path_cap = 0,
                                           std::size_t chunk_tokens = 8192)
      : sglang_policy(mode::extra_buffer_lazy, chunk_tokens, path_cap) {}
};

/// TensorRT-LLM hybrid block reuse (`MambaStateConfig`, see the file comment): snapshot points
/// at every `periodic_snapshot_interval` tokens of the prompt, at `additional_snapshot_offsets`
/// from its start and end, at the last block boundary a duplicate can reach (⌊(P − 1)/B⌋, the
/// save-last point) and, with `enable_branch_snapshot`, where the request leaves the reuse tree
/// (its KV match); LRU over the reusable blocks, a hit refreshing the reused path.
class trtllm_policy final : public lru_engine_policy {
 public:
  /// @throws invalid_argument for an offset of 0 from the start.
  explicit trtllm_policy(std::size_t periodic_interval = 256,
                         std::vector<std::size_t> offsets_from_start = {},
                         std::vector<std::size_t> offsets_from_end = {},
                         bool branch_snapshot = true)
      : interval_(periodic_interval),
        from_start_(std::move(offsets_from_start)),
        from_end_(std::move(offsets_from_end)),
        branch_(branch_snapshot) {
    for (std::size_t i = 0; i < from_start_.size(); ++i)
      if (from_start_[i] == 0)
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed("offsets_from_start", i), 0,
                                           "must be >= 1");
  }
  [[nodiscard]] std::string name() const override { return "trtllm"; }
  std::size_t resume(const tree_step& s) override {
    const auto path = s.path();
    const std::size_t k = deepest_held(*ctx_.pool, path, s.usable);
    touch_path(path, k);
    pinned_ = k > 0 ? path[k - 1] : none;
    return k;
  }
  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    planned_.clear();
    const std::size_t B = ctx_.trace->block(), P = s.prompt_tokens;
    if (interval_ > 0)
      for (std::size_t t = interval_; t <= P; t += interval_) planned_.push_back(t / B);
    for (auto o : from_start_)
      if (o <= P) planned_.push_back(o / B);
    for (auto o : from_end_)
      if (o < P) planned_.push_back((P - o) / B);
    planned_.push_back((P - 1) / B);  // save-last: the deepest point a duplicate reaches
    if (branch_ && s.match > s.resumed) planned_.push_back(s.match);
    std::sort(planned_.begin(), planned_.end());
    planned_.erase(std::unique(planned_.begin(), planned_.end()), planned_.end());
    std::erase_if(planned_, [&](std::size_t j) { return j <= s.resumed || j > s.prompt_blocks; });
    positions.insert(positions.end(), planned_.begin(), planned_.end());
  }
  void after_prefill(const tree_step& s) override {
    for (auto j : planned_) admit(s.path()[j - 1]);
  }
  void finish(const tree_step&) override { pinned_ = none; }

 private:
  std::size_t interval_;
  std::vector<std::size_t> from_start_, from_end_;
  bool branch_;
  std::vector<std::size_t> planned_;
};
/// Marconi (MLSys'25; see the file comment for the rules and the code read): at request end the
/// leaf after the last token and, when the insertion splits an edge, the branch-off state
/// (checkpointed during the prefill); eviction among states with at most one child in the tree
/// of held states, by the lowest α · norm(FLOPs saved / (state + KV) bytes) + norm(1 / (now −
/// last access)), min-max normalised; only the deepest matched node is refreshed by a hit.
///
/// With `tune` (the artifact's procedure) α starts at `alpha` and is re-chosen once: when the
/// number of requests seen reaches `bootstrap_multiplier` × the requests seen before the first
/// eviction, the policy replays all requests so far from an empty cache for every α of `grid`
/// and keeps the one that saved the most prefill FLOPs over the last `tuning_last` of them (ties:
/// the smallest α). Without `tune`, α stays fixed (the in-sample upper-bound row and the
/// tuning replays themselves).
///
/// As in the artifact (`radix_cache_hybrid.py`, re-read on 2026-11-30 at ruipeterpan/marconi
/// 08016617): the insert's own prefix match ticks the clock and refreshes the deepest held node
/// on the inserted sequence before the insert evicts; a state evicted with one held child
/// passes its timestamp to that child when fresher (`_evict_intermediate_node` merges the two
/// nodes, keeping the later access time). Under a joint KV budget Marconi keeps no KV without a
/// state below it and frees a leaf's KV with its state, in one byte budget: the row asks for
/// stateless KV leaves first, turns stateless KV into state room before it evicts a state, and
/// names its own victim when every evictable KV leaf holds a state (`shed_state`).
class marconi_policy final : public tree_policy {
 public:
  /// `cost`: the cost model of the replay (KV bytes per token, FLOPs, the KV budget of the
  /// tuning replays). @throws invalid_argument for a negative or non-finite α or grid value, an
  /// empty grid, or a zero multiplier or tuning window.
  explicit marconi_policy(double alpha = 0.0, bool tune = true, const tree_cost_model& cost = {},
                          std::string name = "marconi", std::vector<double> grid = default_grid(),
                          std::size_t bootstrap_multiplier = 5, std::size_t tuning_last = 500)
      : alpha0_(alpha),
        alpha_(alpha),
        tune_(tune),
        cost_(cost),
        name_(std::move(name)),
        grid_(std::move(grid)),
        multiplier_(bootstrap_multiplier),
        last_(tuning_last) {
    check_alpha("alpha", alpha);
    if (grid_.empty()) hybridcache::detail::throw_invalid("grid", "{}", "must not be empty");
    for (std::size_t i = 0; i < grid_.size(); ++i)
      check_alpha(hybridcache::detail::indexed("grid", i), grid_[i]);
    if (bootstrap_multiplier == 0)
      hybridcache::detail::throw_invalid("bootstrap_multiplier", 0, "must be >= 1");
    if (tuning_last == 0) hybridcache::detail::throw_invalid("tuning_last", 0, "must be >= 1");
  }
  /// The artifact's grid: 0, 0.1, …, 2.0.
  [[nodiscard]] static std::vector<double> default_grid() {
    std::vector<double> g;
    for (int i = 0; i <= 20; ++i) g.push_back(static_cast<double>(i) / 10.0);
    return g;
  }
  [[nodiscard]] std::string name() const override { return name_; }
  /// The tuning replays' wall time (ns): whole-cache work, reported apart from the request path.
  [[nodiscard]] double replan_ns() const override { return tune_ns_; }
  /// The current α (after tuning, the tuned one).
  [[nodiscard]] double alpha() const noexcept { return alpha_; }
  /// Requests in the tuning window (0 until the first eviction).
  [[nodiscard]] std::size_t window() const noexcept { return window_; }

  void reset(const tree_context& ctx) override {
    ctx_ = ctx;
    ts_.assign(ctx.trace->node_count(), 0);
    held_.reset(*ctx.trace, std::move(euler_));
    euler_.reset();
    eff_.assign(ctx.trace->node_count(), 0.0);
    in_cand_.assign(ctx.trace->node_count(), 0);
    seen_at_.assign(ctx.trace->node_count(), 0);
    by_eff_.clear();
    by_ts_.clear();
    clock_ = 0;
    alpha_ = alpha0_;
    seen_ = window_ = 0;
    tuned_ = false;
    tune_ns_ = 0.0;
    branch_ = 0;
    // The state budget M (the joint pool's capacity at the start also counts the KV share).
    budget_ = ctx.pool->capacity();
    if (cost_.kv.mode == kv_mode::joint && ctx.state_bytes > 0.0) {
      const auto kv_share = static_cast<std::size_t>(std::floor(cost_.kv.bytes / ctx.state_bytes));
      budget_ = budget_ > kv_share ? budget_ - kv_share : 0;
    }
  }
  /// `match_prefix`: the logical clock ticks and only the deepest fully matched node is
  /// refreshed.
  std::size_t resume(const tree_step& s) override {
    ++clock_;
    ++seen_;
    const auto path = s.path();
    const std::size_t hit = deepest_held(*ctx_.pool, path, s.match);
    if (hit > 0) touch(path[hit - 1], clock_);
    return deepest_held(*ctx_.pool, path, s.usable);
  }
  /// Speculative insertion: the insertion will split an edge at the match (the matched node
  /// holds no state and the tree continues below it), so that state is checkpointed.
  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    branch_ = 0;
    const std::size_t b = s.match;
    if (b > s.resumed && b <= s.prompt_blocks) {
      const auto v = s.path()[b - 1];
      if (!ctx_.pool->holds(v) && ctx_.tree->has_children(v)) {
        branch_ = b;
        positions.push_back(b);
      }
    }
  }
  /// `insert` with a branch-off: the insert's prefix match (a tick, the deepest held node on the
  /// prompt refreshed), room for both states, then the branch-off state.
  void after_prefill(const tree_step& s) override {
    if (branch_ == 0) return;
    insert_match(s.path());
    ++clock_;  // insert
    make_room(2);
    const auto v = s.path()[branch_ - 1];
    if (!ctx_.pool->holds(v) && ctx_.pool->size() < ctx_.pool->capacity()) {
      ctx_.pool->add(v);
      add_state(v, clock_);
    }
  }
  /// `insert` of the leaf (tuning first when the bootstrap window is complete).
  void finish(const tree_step& s) override {
    const auto path = s.path();
    if (tune_ && !tuned_ && window_ > 0 && seen_ == window_) {
      const auto t0 = std::chrono::steady_clock::now();
      alpha_ = tune(s.index + 1);
      tuned_ = true;
      tune_ns_ =
          std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    }
    if (branch_ == 0) {
      insert_match(path);
      ++clock_;  // insert
      make_room(1);
    }
    branch_ = 0;
    if (path.empty() || path.size() <= s.resumed) return;
    const auto v = path.back();
    if (ctx_.pool->holds(v) || ctx_.pool->size() >= ctx_.pool->capacity()) return;
    ctx_.pool->add(v);
    add_state(v, clock_);
  }
  void on_dropped(std::uint32_t v) override {
    if (held_.holds(v)) remove_state(v);
  }
  /// Joint KV budget: stateless leaves first (Marconi frees a leaf's KV with its state and keeps
  /// no KV without a state below it); otherwise the engines' LRU.
  [[nodiscard]] kv_order kv_eviction() const override {
    return ctx_.kv == kv_mode::joint ? kv_order::stateless_first : kv_order::lru;
  }
  /// Joint KV budget, every evictable KV leaf holding a state: the row's own victim (the lowest
  /// score, as `evict_v2` picks it), taken off its books; the engine drops it.
  [[nodiscard]] std::uint32_t shed_state() override {
    if (held_.empty()) return tree_trace::no_parent;
    const std::uint32_t v = pick();
    forget(v);
    return v;
  }

 private:
  /// The insert's `match_prefix` over the inserted sequence: the clock ticks and the deepest
  /// held node on it is refreshed.
  void insert_match(std::span<const std::uint32_t> path) {
    ++clock_;
    const std::size_t d = deepest_held(*ctx_.pool, path, path.size());
    if (d > 0) touch(path[d - 1], clock_);
  }
  static void check_alpha(const std::string& what, double a) {
    if (!(a >= 0.0) || !std::isfinite(a))
      hybridcache::detail::throw_invalid(what, a, "must be finite and >= 0");
  }
  /// `evict`: called once per insertion that would overflow (the clock ticks; the first call
  /// fixes the bootstrap window), then `evict_v2` until `need` states fit.
  ///
  /// Joint KV budget: stateless KV (the edge of a state just evicted included) becomes state
  /// room first (`tree_context::grow`), as Marconi's one byte budget frees a leaf's KV with it.
  void make_room(std::size_t need) {
    auto& pool = *ctx_.pool;
    if (ctx_.grow && pool.size() + need > pool.capacity()) ctx_.grow(need);
    if (pool.size() + need <= pool.capacity()) return;
    ++clock_;
    if (window_ == 0) window_ = multiplier_ * seen_;
    while (!held_.empty() && pool.size() + need > pool.capacity()) {
      evict_one();
      if (ctx_.grow && pool.size() + need > pool.capacity()) ctx_.grow(need);
    }
  }
  /// One `evict_v2` step (see the class comment): the candidate with the lowest
  /// α · norm(eff) + norm(recency), ties to the lowest id (the first in the artifact's scan).
  ///
  /// The candidates (held states with at most one child in the tree of held states, kept up to
  /// date by `held_tree`) are kept ordered by efficiency and by timestamp, so the min-max bounds
  /// are the ends of those orders (recency is monotone in the timestamp). The scan visits the
  /// candidates in both orders at once and stops when α · norm(next eff) + norm(next recency)
  /// exceeds the best score found: every unvisited candidate's score is at least that (each
  /// operation of the score is monotone in its arguments under rounding), so none is lower or
  /// ties. Each score is computed as the full scan computes it; same victim, same arithmetic.
  void evict_one() {
    const std::uint32_t v = pick();
    ctx_.pool->remove(v);
    forget(v);
  }
  /// The victim `evict_v2` picks (held_ not empty).
  [[nodiscard]] std::uint32_t pick() {
    if (by_eff_.empty()) return pick_scan();
    const double elo = by_eff_.begin()->first, ehi = by_eff_.rbegin()->first;
    const double rlo = recency(by_ts_.begin()->first), rhi = recency(by_ts_.rbegin()->first);
    const bool many = by_eff_.size() > 1;
    const bool norm_e = many && elo != ehi, norm_r = many && rlo != rhi;
    const auto en = [&](double e) { return norm_e ? (e - elo) / (ehi - elo) : 1.0; };
    const auto rn = [&](std::uint64_t ts) {
      return norm_r ? (recency(ts) - rlo) / (rhi - rlo) : 1.0;
    };
    ++scan_epoch_;
    std::uint32_t best = 0;
    double best_score = 0.0;
    bool found = false;
    const auto visit = [&](std::uint32_t v) {
      if (seen_at_[v] == scan_epoch_) return;
      seen_at_[v] = scan_epoch_;
      const double score = alpha_ * en(eff_[v]) + rn(ts_[v]);
      if (!found || score < best_score || (score == best_score && v < best)) {
        best = v;
        best_score = score;
        found = true;
      }
    };
    auto ie = by_eff_.begin();
    auto it = by_ts_.begin();
    while (ie != by_eff_.end() && it != by_ts_.end()) {
      if (found && alpha_ * en(ie->first) + rn(it->first) > best_score) break;
      visit(ie->second);
      visit(it->second);
      ++ie;
      ++it;
    }
    return best;
  }
  /// The full scan over the held states in ascending id order (all of them are candidates: only
  /// when none has at most one child, which a non-empty tree of held states never has).
  [[nodiscard]] std::uint32_t pick_scan() const {
    const auto& held = held_.nodes();
    double elo = eff_[held.front()], ehi = elo;
    std::uint64_t tlo = ts_[held.front()], thi = tlo;
    for (auto v : held) {
      elo = std::min(elo, eff_[v]);
      ehi = std::max(ehi, eff_[v]);
      tlo = std::min(tlo, ts_[v]);
      thi = std::max(thi, ts_[v]);
    }
    const double rlo = recency(tlo), rhi = recency(thi);
    const bool many = held.size() > 1;
    const bool norm_e = many && elo != ehi, norm_r = many && rlo != rhi;
    std::uint32_t best = held.front();
    double best_score = 0.0;
    bool first = true;
    for (auto v : held) {
      const double e = norm_e ? (eff_[v] - elo) / (ehi - elo) : 1.0;
      const double r = norm_r ? (recency(ts_[v]) - rlo) / (rhi - rlo) : 1.0;
      const double score = alpha_ * e + r;
      if (first || score < best_score) {
        best = v;
        best_score = score;
        first = false;
      }
    }
    return best;
  }
  /// Takes the row's victim `v` off the books (`_evict_intermediate_node` / `_delete_leaf`):
  /// with one held child, the child, which Marconi merges `v` into, keeps the later of the two
  /// access times.
  void forget(std::uint32_t v) {
    merge_ts_ = held_.children(v) == 1 ? ts_[v] : 0;
    remove_state(v);
    merge_ts_ = 0;
  }
  /// The recency score of a state last touched at `ts`: 1 / (now − ts).
  [[nodiscard]] double recency(std::uint64_t ts) const noexcept {
    const double age = static_cast<double>(clock_ - std::min(clock_, ts));
    return 1.0 / std::max(age, 1e-9);
  }
  /// FLOPs saved per byte of held `v` given its nearest held ancestor.
  [[nodiscard]] double efficiency(std::uint32_t v) const {
    const auto& t = *ctx_.trace;
    const double B = static_cast<double>(t.block());
    const double kv_token = cost_.model.kv_bytes_per_token();
    const double dv = static_cast<double>(t.depth(v));
    const double da = static_cast<double>(held_.anc_depth(v));
    return ctx_.flops((dv - da) * B, da * B) / (ctx_.state_bytes + kv_token * dv * B);
  }
  /// Takes held `v` out of the candidate orders (if in).
  void leave(std::uint32_t v) {
    if (in_cand_[v] == 0) return;
    by_eff_.erase({eff_[v], v});
    by_ts_.erase({ts_[v], v});
    in_cand_[v] = 0;
  }
  /// Puts held `v` into the candidate orders when it has at most one child.
  void enter(std::uint32_t v) {
    if (held_.children(v) > 1) return;
    by_eff_.emplace(eff_[v], v);
    by_ts_.emplace(ts_[v], v);
    in_cand_[v] = 1;
  }
  /// Moves `v` in a candidate order from key `from` to key `to` (the set's node re-used).
  template <class K>
  static void rekey(std::set<std::pair<K, std::uint32_t>>& order, K from, K to, std::uint32_t v) {
    if (from == to) return;
    auto nh = order.extract({from, v});
    nh.value().first = to;
    order.insert(std::move(nh));
  }
  /// Held `x`'s nearest held ancestor changed: a new efficiency (a candidate that stays one is
  /// re-keyed in the efficiency order alone, its node moved, not reallocated).
  void anc_changed(std::uint32_t x) {
    const double e = efficiency(x);
    if (in_cand_[x] != 0 && held_.children(x) <= 1) {
      rekey(by_eff_, eff_[x], e, x);
      eff_[x] = e;
    } else {
      leave(x);
      eff_[x] = e;
      enter(x);
    }
    if (merge_ts_ > ts_[x]) touch(x, merge_ts_);  // merged into x (`forget`)
  }
  /// Held `x`'s children changed: it may enter or leave the candidates.
  void kids_changed(std::uint32_t x) {
    if ((in_cand_[x] != 0) == (held_.children(x) <= 1)) return;  // no change of membership
    leave(x);
    enter(x);
  }
  /// A hit refreshes held `v` (a candidate is re-keyed in the timestamp order alone).
  void touch(std::uint32_t v, std::uint64_t ts) {
    if (in_cand_[v] != 0 && held_.children(v) <= 1) {
      rekey(by_ts_, ts_[v], ts, v);
      ts_[v] = ts;
      return;
    }
    leave(v);
    ts_[v] = ts;
    enter(v);
  }
  void add_state(std::uint32_t v, std::uint64_t ts) {
    ts_[v] = ts;
    held_.add(
        v, [this](std::uint32_t x) { anc_changed(x); },
        [this](std::uint32_t x) { kids_changed(x); });
    eff_[v] = efficiency(v);
    enter(v);
  }
  void remove_state(std::uint32_t v) {
    leave(v);
    held_.remove(
        v, [this](std::uint32_t x) { anc_changed(x); },
        [this](std::uint32_t x) { kids_changed(x); });
  }
  /// `ConfigTuner.tune_config`: replays requests [0, end) from an empty cache per α and keeps
  /// the α with the most FLOPs saved over the last `last_` of them (the skipped tokens' prefill
  /// FLOPs, as `get_cache_stats` counts them). Only past requests are read.
  double tune(std::size_t end) {
    const auto& t = *ctx_.trace;
    const std::size_t B = t.block();
    double best = grid_.front(), best_saved = -1.0;
    for (double a : grid_) {
      marconi_policy p(a, false, cost_, name_, grid_, multiplier_, last_);
      p.euler_ = held_.euler();  // the trie's Euler intervals, shared
      tree_replayer r(t, p, budget_, *ctx_.usable, cost_, 0);
      r.set_timing(false);  // timed as part of this row's own call
      double saved = 0.0;
      for (std::size_t i = 0; i < end; ++i) {
        r.step();
        if (i + last_ >= end) saved += ctx_.flops(static_cast<double>(r.last_resume() * B), 0.0);
      }
      if (saved > best_saved) {
        best_saved = saved;
        best = a;
      }
    }
    return best;
  }

  double alpha0_, alpha_;
  bool tune_;
  tree_cost_model cost_;
  std::string name_;
  std::vector<double> grid_;
  std::size_t multiplier_, last_;
  tree_context ctx_{};
  std::vector<std::uint64_t> ts_;
  hybridcache::detail::held_tree held_;  ///< the states this row holds (the pool's)
  std::shared_ptr<const hybridcache::detail::trie_euler> euler_;  ///< for the next reset
  std::vector<double> eff_;                                       ///< per held node: `efficiency`
  // the candidates (held, at most one child) by (efficiency, id) and by (timestamp, id)
  std::set<std::pair<double, std::uint32_t>> by_eff_;
  std::set<std::pair<std::uint64_t, std::uint32_t>> by_ts_;
  std::vector<std::uint8_t> in_cand_;
  std::vector<std::uint64_t> seen_at_;  ///< evict_one's visit stamps
  std::uint64_t scan_epoch_ = 0;
  std::uint64_t clock_ = 0;
  std::uint64_t merge_ts_ = 0;  ///< `forget`: the access time the merged child inherits
  std::size_t seen_ = 0, window_ = 0, budget_ = 0, branch_ = 0;
  bool tuned_ = false;
  double tune_ns_ = 0.0;  ///< the tuning replays' wall time
};
/// llama.cpp server (`tools/server/server-context.cpp`, `server-task.cpp`; see the file comment
/// for the rules and the source read). Each slot keeps the sequence it last ran, its live state
/// at that sequence's end and up to `per_slot` context checkpoints. A request goes to the slot
/// whose sequence shares the largest fraction of its prompt (> `similarity`), else to the least
/// recently used slot. It resumes from the live state when the slot's sequence is a prefix of
/// its usable match, else from the newest checkpoint at or before the common prefix (else from
/// scratch); checkpoints past the restore point are erased. During the prompt it checkpoints the
/// state before each batch that starts a user message (spaced `min_step` apart, the last user
/// message always) or lies near the prompt end (P − 4 − n_ubatch and P − 4).
///
/// With `cache_ram` (`--cache-ram`, the server default with `--cache-idle-slots`): the prompt
/// cache. A slot about to lose most of its context, or an idle slot, is saved to the cache (its
/// sequence, live state and checkpoints), unless an entry already contains it; entries it
/// contains are removed; a request's slot first loads the entry that keeps the larger fraction
/// of both (`f_keep` ≥ 0.25), which leaves the cache.
///
/// User-message starts: the engine finds them with the chat template's delimiters (a tool result
/// is not one). A request whose trace carries them (`tree_request::user_starts`: each turn's
/// message in the synthetic multi-turn trace and the tuning families, the query after a system
/// prompt or a document) is checkpointed there and nowhere else, as the engine would. A request
/// without them (Mooncake's block hashes know no messages) gets two stand-ins: the end of an
/// earlier request (its prompt + output tokens: the next turn's message starts there) and a
/// block where earlier requests took different next blocks (a fork seen at their `finish`:
/// sessions that share a system prompt or a document diverge at the message after it, where the
/// engine checkpoints). A stand-in can fall where the engine sees no user message (inside a
/// system prompt that two prompts share the start of, at a tool result); that errs towards the
/// engine, as every unknown here does.
///
/// The budget of M states binds before the engine's own limits do: a new state first evicts the
/// oldest checkpoint of any slot or entry, then the oldest cache entry, then the least recently
/// used idle slot's live state (each holder in the engine's own FIFO/LRU order).
class llamacpp_policy final : public tree_policy {
 public:
  /// Defaults: `--ctx-checkpoints 32`, `--checkpoint-min-step 8192`, `-ub 512`, `-b 2048`,
  /// `--parallel` auto (4 slots), `--slot-prompt-similarity 0.1`.
  /// @throws invalid_argument for zero slots, checkpoints or batch sizes.
  explicit llamacpp_policy(std::size_t per_slot = 32, std::size_t n_ubatch = 512,
                           std::size_t n_batch = 2048, std::size_t min_step = 8192,
                           std::size_t slots = 4, double similarity = 0.1, bool cache_ram = false)
      : cache_ram_(cache_ram),
        per_slot_(per_slot),
        ubatch_(n_ubatch),
        batch_(n_batch),
        min_step_(min_step),
        n_slots_(slots),
        similarity_(similarity) {
    if (per_slot == 0) hybridcache::detail::throw_invalid("per_slot", per_slot, "must be >= 1");
    if (n_ubatch == 0) hybridcache::detail::throw_invalid("n_ubatch", n_ubatch, "must be >= 1");
    if (n_batch == 0) hybridcache::detail::throw_invalid("n_batch", n_batch, "must be >= 1");
    if (slots == 0) hybridcache::detail::throw_invalid("slots", slots, "must be >= 1");
    if (!(similarity >= 0.0 && similarity <= 1.0))
      hybridcache::detail::throw_invalid("similarity", similarity, "must be in [0, 1]");
  }
  [[nodiscard]] std::string name() const override {
    return cache_ram_ ? "llamacpp_cache_ram" : "llamacpp";
  }
  /// For tests: the prompt cache's `save`, `load`, `on_dropped` and evictions also run the
  /// linear scans over every entry that its indexes replace (the definitions, as the server's
  /// loops read) and throw `hybridcache::error` where the two disagree. O(entries) per request
  /// when on.
  void set_index_check(bool on) noexcept { check_ = on; }

  void reset(const tree_context& ctx) override {
    ctx_ = ctx;
    refs_.assign(ctx.trace->node_count(), 0);
    ended_.assign(ctx.trace->node_count(), 0);
    first_child_.assign(ctx.trace->node_count(), none);
    forks_.assign(ctx.trace->node_count(), 0);
    slots_.assign(n_slots_, holder{});
    cache_.clear();
    maybe_empty_.clear();
    by_tin_.clear();
    by_quarter_.clear();
    by_front_.clear();
    if (cache_ram_) {
      euler_ = hybridcache::detail::trie_euler::of(*ctx.trace);
      last_n_.assign(ctx.trace->node_count(), 0);
      quarter_n_.assign(ctx.trace->node_count(), 0);
    }
    clock_ = 0;
    cur_ = 0;
  }

  std::size_t resume(const tree_step& s) override {
    const auto path = s.path();
    const std::size_t B = ctx_.trace->block(), P = s.prompt_tokens;
    ++clock_;
    // get_available_slot: the most similar slot with content, else the LRU slot.
    std::size_t pick = n_slots_;
    double best_sim = -1.0;
    for (std::size_t i = 0; i < n_slots_; ++i) {
      if (slots_[i].tokens == 0) continue;
      const double sim = static_cast<double>(lcp(slots_[i], path) * B) / static_cast<double>(P);
      if (sim > best_sim && sim > similarity_) {
        best_sim = sim;
        pick = i;
      }
    }
    bool update_cache = false;
    if (pick < n_slots_) {
      const auto& h = slots_[pick];
      update_cache = static_cast<double>(lcp(h, path) * B) < 0.5 * static_cast<double>(h.tokens);
    } else {
      pick = 0;
      for (std::size_t i = 1; i < n_slots_; ++i)
        if (slots_[i].last_used < slots_[pick].last_used) pick = i;
      update_cache = true;
    }
    cur_ = pick;
    if (cache_ram_) {
      if (update_cache) {
        save(slots_[cur_]);
        load(slots_[cur_], path, P);
      }
      // --cache-idle-slots with the unified KV of the auto slots: idle slots go to the cache
      // and are cleared.
      for (std::size_t i = 0; i < n_slots_; ++i) {
        if (i == cur_ || slots_[i].tokens == 0) continue;
        save(slots_[i]);
        clear(slots_[i]);
      }
    }
    // Restore within the slot.
    auto& h = slots_[cur_];
    const std::size_t common = lcp(h, path);
    const std::size_t cap = std::min(common, s.usable);
    std::size_t k = 0;
    std::size_t keep_tokens = 0;  // pos_next after the restore
    if (h.tokens > 0 && h.live && common == h.path.size() && h.path.size() <= cap &&
        ctx_.pool->holds(h.path.back())) {
      k = h.path.size();
      keep_tokens = common * B;
    } else {
      for (auto it = h.ckpts.rbegin(); it != h.ckpts.rend(); ++it) {
        if (it->block <= cap && it->block > 0 && ctx_.pool->holds(path[it->block - 1])) {
          k = it->block;
          keep_tokens = it->tokens;
          break;
        }
      }
    }
    // Erase the checkpoints past the restore point.
    for (auto it = h.ckpts.begin(); it != h.ckpts.end();) {
      if (it->tokens > keep_tokens || (k == 0)) {
        release(path_node(h, it->block));
        it = h.ckpts.erase(it);
      } else {
        ++it;
      }
    }
    resumed_ = k;
    return k;
  }

  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    planned_.clear();
    const auto path = s.path();
    const std::size_t B = ctx_.trace->block(), P = s.prompt_tokens, k = s.resumed;
    // User-message starts on this prompt (see the class comment), in tokens: the trace's own
    // where it has them, else the stand-ins.
    auto& users = users_;
    users.clear();
    for (const std::size_t q : s.user_starts())
      if (q > k * B && q < P) users.push_back(q);
    const bool stand_ins = s.user_starts().empty();
    for (std::size_t j = 1; stand_ins && j <= path.size(); ++j) {
      const std::size_t t = ended_[path[j - 1]];
      if (t > k * B && t < P) users.push_back(t);
      if (forks_[path[j - 1]] != 0 && j > k && j * B < P) users.push_back(j * B);
    }
    std::sort(users.begin(), users.end());
    users.erase(std::unique(users.begin(), users.end()), users.end());
    const std::size_t last_user = users.empty() ? P + 1 : users.back();
    const auto is_user = [&](std::size_t q) {
      return std::binary_search(users.begin(), users.end(), q);
    };
    const auto& h = slots_[cur_];
    bool empty = h.ckpts.empty();
    std::size_t last = empty ? 0 : h.ckpts.back().tokens;
    const std::size_t tail1 = std::min(batch_, 4 + ubatch_),
                      tail2 = std::min<std::size_t>(batch_, 4);
    for (std::size_t start = k * B; start < P;) {
      // The batch ends at the first break: n_batch tokens, the prompt end, an eligible user
      // start, or P − tail1 / P − tail2.
      std::size_t e = std::min(P, start + batch_);
      for (std::size_t tail : {tail1, tail2})
        if (P > tail && P - tail > start) e = std::min(e, P - tail);
      for (auto q : users) {
        if (q <= start || q >= e) continue;
        if (q == last_user || empty || q > last + min_step_) {
          e = q;
          break;
        }
      }
      const bool near_end = P < e + ubatch_;
      const bool user_start = is_user(start);
      bool take = start > 0 && (e == P || user_start || near_end);
      take = take && (empty || start == last_user || near_end || start > last + min_step_);
      if (take) {
        planned_.push_back({start, start / B});
        last = start;
        empty = false;
      }
      start = e;
    }
    for (const auto& c : planned_)
      if (c.block > k) positions.push_back(c.block);
  }

  void after_prefill(const tree_step& s) override {
    const auto path = s.path();
    auto& h = slots_[cur_];
    // The slot's previous sequence: its length and end are all the live state's fate reads.
    const std::size_t old_size = h.path.size();
    const std::uint32_t old_back = h.path.empty() ? none : h.path.back();
    h.path.assign(path.begin(), path.end());
    for (const auto& c : planned_) {
      if (c.block == 0) continue;
      // A state already held gets the new checkpoint's reference before `create_checkpoint`
      // may release the only other one (a superseded, thinned or FIFO-dropped checkpoint at the
      // restore point): the engine's new checkpoint is a fresh copy of the live state, never
      // lost with the old one. A new state takes its room after the releases, as before.
      const auto v = path[c.block - 1];
      const bool was_held = ctx_.pool->holds(v);
      if (was_held) ++refs_[v];
      create_checkpoint(h, c, s.index);
      if (!was_held && !hold(v, c.block > resumed_)) {
        h.ckpts.pop_back();  // no room: the checkpoint is not kept
      }
    }
    // The live state was overwritten by this request: unless the request resumed from it (then
    // it runs on until `finish`), it is gone.
    stale_ = none;
    if (h.live) {
      if (resumed_ > 0 && old_size == resumed_ && old_back == path[resumed_ - 1])
        stale_ = old_back;
      else
        release(old_back);
      h.live = false;
    }
  }

  void finish(const tree_step& s) override {
    const auto path = s.path();
    auto& h = slots_[cur_];
    h.path.assign(path.begin(), path.end());
    h.tokens = s.prompt_tokens + s.request->output_tokens;  // known at the request's end
    h.last_used = static_cast<std::int64_t>(clock_);
    for (std::size_t j = 1; j < path.size(); ++j) {
      auto& first = first_child_[path[j - 1]];
      if (first == none)
        first = path[j];
      else if (first != path[j])
        forks_[path[j - 1]] = 1;
    }
    if (!path.empty()) {
      ended_[path.back()] = h.tokens;
      h.live = hold(path.back(), path.size() > resumed_);
    }
    if (stale_ != none) release(stale_);
    stale_ = none;
  }

  void on_dropped(std::uint32_t v) override {
    // The references to v left to find: its checkpoints and live states in the holders, and the
    // stale live state of the running request (`refs_` counts each once).
    std::size_t left = refs_[v];
    refs_[v] = 0;
    if (stale_ == v) {
      stale_ = none;
      left -= std::min<std::size_t>(left, 1);
    }
    // A holder refers to v only through the node at v's depth d on its path (a trace path runs
    // down from a namespace root, depth 0: its entry d − 1 is at depth d), so the other holders
    // are passed over without a walk of their checkpoints; the scan stops once every reference
    // is found. @returns whether the holder lost a state.
    const std::size_t d = ctx_.trace->depth(v);
    const auto purge = [&](holder& h) {
      if (d == 0 || h.path.size() < d || h.path[d - 1] != v) return false;
      std::size_t lost =
          std::erase_if(h.ckpts, [&](const ckpt& c) { return path_node(h, c.block) == v; });
      if (h.live && h.path.back() == v) {
        h.live = false;
        ++lost;
      }
      left -= std::min(left, lost);
      return lost > 0;
    };
    for (std::size_t i = 0; i < n_slots_ && left > 0; ++i) purge(slots_[i]);
    // The entries whose sequence passes v: those whose last node lies in v's subtree, one range
    // of the Euler index. Only an entry that lost a state can be left with none.
    if (cache_ram_ && d > 0 && left > 0) {
      const auto& eu = *euler_;
      for (auto it = by_tin_.lower_bound({eu.tin[v], 0});
           it != by_tin_.end() && it->first.first < eu.tout[v] && left > 0; ++it) {
        auto& e = *it->second;
        const std::uint64_t front = e.ckpts.empty() ? 0 : e.ckpts.front().stamp;
        if (!purge(e)) continue;
        note_maybe_empty(it->second);
        // Re-key the entry's oldest checkpoint only when the purge took it.
        if (front != 0 && (e.ckpts.empty() || e.ckpts.front().stamp != front)) {
          by_front_.erase({front, e.stamp});
          add_front(it->second);
        }
      }
    }
    // Entries left with no state leave the cache.
    while (!maybe_empty_.empty()) {
      const auto it = maybe_empty_.back();
      maybe_empty_.pop_back();
      it->listed = false;
      if (!it->live && it->ckpts.empty()) erase_entry(it);
    }
    if (check_) {
      if (by_tin_.size() != cache_.size()) index_mismatch("on_dropped: the index's size");
      for (const auto& e : cache_) {
        if (!e.live && e.ckpts.empty()) index_mismatch("on_dropped: an entry left empty");
        const bool lists = (e.live && e.path.back() == v) ||
                           std::any_of(e.ckpts.begin(), e.ckpts.end(),
                                       [&](const ckpt& c) { return path_node(e, c.block) == v; });
        if (lists) index_mismatch("on_dropped: an entry still lists the dropped state");
      }
    }
  }

 private:
  struct ckpt {
    std::size_t tokens = 0;  ///< n_tokens of the checkpoint (the state before its batch)
    std::size_t block = 0;   ///< ⌊tokens / B⌋: the block-grid node it stands at
    std::size_t task = 0;    ///< the request that created it
    std::uint64_t stamp = 0;
  };
  /// A slot or a prompt-cache entry: a sequence, its live end state and checkpoints.
  struct holder {
    std::vector<std::uint32_t> path;
    std::size_t tokens = 0;
    bool live = false;
    std::deque<ckpt> ckpts;
    std::int64_t last_used = -1;
    std::uint64_t stamp = 0;  ///< cache entries: insertion order
    bool listed = false;      ///< cache entries: in `maybe_empty_`
    std::size_t listed_at = 0;  ///< … at this index (while `listed`)
  };
  using entry_list = std::list<holder>;  ///< iterators stay valid while the entry is cached
  using entry_it = entry_list::iterator;

  struct planned {
    std::size_t tokens = 0, block = 0;
  };

  static std::uint32_t path_node(const holder& h, std::size_t block) { return h.path[block - 1]; }
  /// The common prefix of a holder's sequence and `path`, in blocks. Both are root paths of the
  /// trie, so they agree at index i exactly when they agree at every index before it: the first
  /// difference is found by a galloping search, O(log lcp).
  static std::size_t lcp(const holder& h, std::span<const std::uint32_t> path) {
    const std::size_t n = std::min(h.path.size(), path.size());
    std::size_t lo = 0, step = 1;  // lo ≤ lcp
    while (lo + step <= n && h.path[lo + step - 1] == path[lo + step - 1]) {
      lo += step;
      step *= 2;
    }
    std::size_t hi = std::min(n, lo + step - 1);  // lcp ≤ hi
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo + 1) / 2;
      if (h.path[mid - 1] == path[mid - 1])
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
  /// Whether a holder's sequence starts with `path` (root paths: one comparison decides).
  static bool starts_with(const holder& h, std::span<const std::uint32_t> path) {
    return path.size() <= h.path.size() && (path.empty() || h.path[path.size() - 1] == path.back());
  }

  /// `create_checkpoint`: thin the checkpoints of earlier tasks within `min_step` of the
  /// previous one when the list is nearly full, drop the oldest while full, supersede one at the
  /// same position, append.
  void create_checkpoint(holder& h, const planned& c, std::size_t task) {
    if (h.ckpts.size() + 1 >= per_slot_) {
      std::int64_t last = -1;
      for (auto it = h.ckpts.begin(); it != h.ckpts.end();) {
        if (it->task != task && last >= 0 &&
            it->tokens <= static_cast<std::size_t>(last) + min_step_) {
          release(path_node(h, it->block));
          it = h.ckpts.erase(it);
          continue;
        }
        last = static_cast<std::int64_t>(it->tokens);
        ++it;
      }
    }
    while (h.ckpts.size() >= per_slot_) {
      release(path_node(h, h.ckpts.front().block));
      h.ckpts.pop_front();
    }
    for (auto it = h.ckpts.begin(); it != h.ckpts.end();) {
      if (it->tokens == c.tokens) {
        release(path_node(h, it->block));
        it = h.ckpts.erase(it);
      } else {
        ++it;
      }
    }
    h.ckpts.push_back({c.tokens, c.block, task, ++clock_});
  }

  /// `server_prompt_cache::alloc` (see the class comment).
  ///
  /// The cache is indexed so that `save` and `load` read only the entries they concern, not
  /// every entry (thousands on a long trace): the entries that contain h are those whose last
  /// node lies in the subtree of h's (one range of `by_tin_`); those h contains end on h's path
  /// (looked up node by node).
  void save(const holder& h) {
    if (h.tokens == 0) return;
    bool contained = false;
    if (h.path.empty()) {  // every entry starts with the empty sequence (not met in practice)
      for (const auto& e : cache_) contained = contained || h.tokens <= e.tokens;
    } else {
      const auto& eu = *euler_;
      const auto x = h.path.back();
      for (auto it = by_tin_.lower_bound({eu.tin[x], 0});
           !contained && it != by_tin_.end() && it->first.first < eu.tout[x]; ++it)
        contained = h.tokens <= it->second->tokens;
    }
    if (check_) {
      bool lin = false;
      for (const auto& e : cache_) lin = lin || (h.tokens <= e.tokens && starts_with(e, h.path));
      if (lin != contained) index_mismatch("save: an entry containing the slot");
    }
    if (contained) return;
    // The entries h contains, removed in cache order.
    auto& gone = scratch_;
    gone.clear();
    const auto collect = [&](std::uint32_t key) {
      for (auto it = by_tin_.lower_bound({key, 0}); it != by_tin_.end() && it->first.first == key;
           ++it)
        if (it->second->tokens <= h.tokens) gone.emplace_back(it->second->stamp, it->second);
    };
    collect(no_tin);
    for (const auto x : h.path)
      if (last_n_[x] > 0) collect(euler_->tin[x]);
    std::sort(gone.begin(), gone.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    if (check_) {
      std::vector<std::uint64_t> lin, idx;
      for (const auto& e : cache_)
        if (e.tokens <= h.tokens && starts_with(h, e.path)) lin.push_back(e.stamp);
      for (const auto& g : gone) idx.push_back(g.first);
      if (lin != idx) index_mismatch("save: the entries the slot contains");
    }
    for (const auto& g : gone) {
      erase_entry(g.second);
    }
    holder e = h;
    e.stamp = ++clock_;
    if (e.live) ++refs_[e.path.back()];
    for (const auto& c : e.ckpts) ++refs_[path_node(e, c.block)];
    const bool empty = !e.live && e.ckpts.empty();
    cache_.push_back(std::move(e));
    index_entry(std::prev(cache_.end()));
    if (empty) note_maybe_empty(std::prev(cache_.end()));
  }
  /// `server_prompt_cache::load` into slot `h` for a prompt `path` of `P` tokens.
  void load(holder& h, std::span<const std::uint32_t> path, std::size_t P) {
    const double B = static_cast<double>(ctx_.trace->block());
    const double base = static_cast<double>(lcp(h, path)) * B;
    double keep = h.tokens > 0 ? base / static_cast<double>(h.tokens) : -1.0;
    double sim = base / static_cast<double>(P);
    // Only an entry sharing at least a quarter of its tokens with the prompt is considered: one
    // sharing its quarter node (`quarter_blocks`) with the path, taken in cache order.
    auto& cand = scratch_;
    cand.clear();
    for (const auto x : path) {
      if (quarter_n_[x] == 0) continue;
      for (auto it = by_quarter_.lower_bound({x, 0});
           it != by_quarter_.end() && it->first.first == x; ++it)
        cand.emplace_back(it->first.second, it->second);
    }
    std::sort(cand.begin(), cand.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    auto best = cache_.end();
    for (const auto& c : cand) {
      const auto it = c.second;
      const double l = static_cast<double>(lcp(*it, path)) * B;
      const double k = l / static_cast<double>(it->tokens), f = l / static_cast<double>(P);
      if (k < 0.25) continue;
      if (keep < k && sim < f) {
        keep = k;
        sim = f;
        best = it;
      }
    }
    if (check_) {
      double lkeep = h.tokens > 0 ? base / static_cast<double>(h.tokens) : -1.0;
      double lsim = base / static_cast<double>(P);
      auto lbest = cache_.end();
      for (auto it = cache_.begin(); it != cache_.end(); ++it) {
        const double l = static_cast<double>(lcp(*it, path)) * B;
        const double k = l / static_cast<double>(it->tokens), f = l / static_cast<double>(P);
        if (k >= 0.25 && lkeep < k && lsim < f) {
          lkeep = k;
          lsim = f;
          lbest = it;
        }
      }
      if (lbest != best) index_mismatch("load: the entry loaded");
    }
    if (best == cache_.end()) return;
    clear(h);
    const auto used = h.last_used;
    unindex_entry(best);
    h = std::move(*best);
    h.last_used = used;
    cache_.erase(best);
  }
  /// The least common prefix, in blocks, at which `load` considers an entry of `tokens` tokens:
  /// the least l with l·B / tokens ≥ 0.25, in the same floating-point terms as `load`.
  [[nodiscard]] std::size_t quarter_blocks(std::size_t tokens) const {
    const double B = static_cast<double>(ctx_.trace->block()), T = static_cast<double>(tokens);
    const auto ok = [&](std::size_t l) { return !(static_cast<double>(l) * B / T < 0.25); };
    auto l = static_cast<std::size_t>(std::ceil(0.25 * T / B));
    l = std::max<std::size_t>(l, 1);
    while (l > 1 && ok(l - 1)) --l;
    while (!ok(l)) ++l;
    return l;
  }
  [[noreturn]] static void index_mismatch(const char* what) {
    throw hybridcache::error(std::string("llamacpp_policy: the prompt cache's index and its linear "
                                         "scan disagree in ") +
                             what);
  }
  /// Keys an entry's oldest checkpoint in `by_front_` (none without checkpoints).
  void add_front(entry_it it) {
    if (!it->ckpts.empty()) by_front_.emplace(std::pair{it->ckpts.front().stamp, it->stamp}, it);
  }
  /// Lists an entry for `on_dropped`'s sweep of the entries left with no state.
  void note_maybe_empty(entry_it it) {
    if (it->listed) return;
    it->listed = true;
    it->listed_at = maybe_empty_.size();
    maybe_empty_.push_back(it);
  }
  void index_entry(entry_it it) {
    const holder& e = *it;
    add_front(it);
    if (e.path.empty()) {
      by_tin_.emplace(std::pair{no_tin, e.stamp}, it);
      return;
    }
    by_tin_.emplace(std::pair{euler_->tin[e.path.back()], e.stamp}, it);
    ++last_n_[e.path.back()];
    const std::size_t q = quarter_blocks(e.tokens);
    if (q <= e.path.size()) {
      by_quarter_.emplace(std::pair{e.path[q - 1], e.stamp}, it);
      ++quarter_n_[e.path[q - 1]];
    }
  }
  void unindex_entry(entry_it it) {
    holder& e = *it;
    if (e.listed) {
      // Swap-remove in O(1) (the list is only drained, in no particular order: an entry left
      // with no state leaves the cache whenever it is met). Until 2026-12 a linear erase, which
      // took a tenth of this row's time on Mooncake: the list grows between drops.
      const std::size_t i = e.listed_at;
      maybe_empty_[i] = maybe_empty_.back();
      maybe_empty_[i]->listed_at = i;
      maybe_empty_.pop_back();
      e.listed = false;
    }
    if (!e.ckpts.empty()) by_front_.erase({e.ckpts.front().stamp, e.stamp});
    if (e.path.empty()) {
      by_tin_.erase({no_tin, e.stamp});
      return;
    }
    by_tin_.erase({euler_->tin[e.path.back()], e.stamp});
    --last_n_[e.path.back()];
    const std::size_t q = quarter_blocks(e.tokens);
    if (q <= e.path.size()) {
      by_quarter_.erase({e.path[q - 1], e.stamp});
      --quarter_n_[e.path[q - 1]];
    }
  }
  /// Removes an entry, its index keys and its references.
  void erase_entry(entry_it it) {
    unindex_entry(it);
    clear(*it);
    cache_.erase(it);
  }
  void clear(holder& h) {
    if (h.live) release(h.path.back());
    for (const auto& c : h.ckpts) release(path_node(h, c.block));
    const auto used = h.last_used;
    h = holder{};
    h.last_used = used;
  }

  /// Takes a reference on the state at `v`; a new state (`fresh`: in the open window) evicts
  /// for room. @returns false when no room could be made.
  bool hold(std::uint32_t v, bool fresh) {
    auto& pool = *ctx_.pool;
    if (pool.holds(v)) {
      ++refs_[v];
      return true;
    }
    if (!fresh || !pool.is_open(v)) return false;
    while (pool.size() >= pool.capacity()) {
      if (!evict_one()) return false;
    }
    pool.add(v);
    refs_[v] = 1;
    return true;
  }
  void release(std::uint32_t v) {
    if (refs_[v] == 0) return;
    if (--refs_[v] == 0 && ctx_.pool->holds(v)) ctx_.pool->remove(v);
  }
  /// Frees one holder's reference (see the class comment for the order). @returns false when
  /// nothing is left to evict but the current slot's own checkpoints of this request.
  bool evict_one() {
    // The oldest checkpoint of any slot or entry, the current slot's last one excepted; on a
    // tie the first holder in the order slots, then entries oldest first. A holder's checkpoints
    // are in stamp order (each is appended with a new stamp), so its oldest is its first: the
    // slots are read directly, the entries through `by_front_`.
    holder* owner = nullptr;
    std::uint64_t oldest = std::numeric_limits<std::uint64_t>::max();
    for (std::size_t i = 0; i < n_slots_; ++i) {
      const auto& c = slots_[i].ckpts;
      if (c.size() > (i == cur_ ? 1U : 0U) && c.front().stamp < oldest) {
        oldest = c.front().stamp;
        owner = &slots_[i];
      }
    }
    entry_it owner_it{};
    if (!by_front_.empty() && by_front_.begin()->first.first < oldest) {
      oldest = by_front_.begin()->first.first;
      owner_it = by_front_.begin()->second;
      owner = &*owner_it;
    }
    if (check_) {
      const holder* lin = nullptr;
      std::uint64_t lin_oldest = std::numeric_limits<std::uint64_t>::max();
      const auto scan = [&](const holder& h, bool current) {
        const std::size_t n = h.ckpts.size() - (current && !h.ckpts.empty() ? 1 : 0);
        for (std::size_t i = 0; i < n; ++i) {
          if (h.ckpts[i].stamp < lin_oldest) {
            lin_oldest = h.ckpts[i].stamp;
            lin = &h;
          }
        }
      };
      for (std::size_t i = 0; i < n_slots_; ++i) scan(slots_[i], i == cur_);
      for (const auto& e : cache_) scan(e, false);
      if (lin != owner || (lin != nullptr && lin_oldest != oldest))
        index_mismatch("evict_one: the oldest checkpoint");
    }
    if (owner != nullptr) {
      const bool slot = owner >= slots_.data() && owner < slots_.data() + slots_.size();
      if (!slot) by_front_.erase({oldest, owner->stamp});
      release(path_node(*owner, owner->ckpts.front().block));
      owner->ckpts.pop_front();
      if (!slot) {
        add_front(owner_it);
        note_maybe_empty(owner_it);  // a cache entry may hold none now
      }
      return true;
    }
    if (!cache_.empty()) {
      erase_entry(cache_.begin());
      return true;
    }
    std::size_t victim = n_slots_;
    for (std::size_t i = 0; i < n_slots_; ++i) {
      if (i == cur_ || !slots_[i].live) continue;
      if (victim == n_slots_ || slots_[i].last_used < slots_[victim].last_used) victim = i;
    }
    if (victim == n_slots_) return false;
    clear(slots_[victim]);
    return true;
  }

  bool cache_ram_;
  std::size_t per_slot_, ubatch_, batch_, min_step_, n_slots_;
  double similarity_;
  tree_context ctx_{};
  std::vector<std::uint32_t> refs_;
  std::vector<std::size_t> ended_;  ///< per node: tokens of an earlier request ending there
  std::vector<std::uint32_t> first_child_;  ///< per node: the first child a request took
  std::vector<std::uint8_t> forks_;         ///< per node: earlier requests diverged below it
  std::vector<holder> slots_;
  entry_list cache_;  ///< the prompt cache, oldest first (increasing `stamp`)
  /// Cache entries that may hold no state (`on_dropped` removes those that do).
  std::vector<entry_it> maybe_empty_;
  // The prompt cache's indexes (`cache_ram` only): entries by the Euler entry time of their last
  // node (a subtree is one range; `no_tin` for an empty sequence), and by their quarter node
  // (`quarter_blocks`); per node, how many entries end there and have it as quarter node.
  std::shared_ptr<const hybridcache::detail::trie_euler> euler_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, entry_it> by_tin_, by_quarter_;
  /// Entries with checkpoints by (their oldest checkpoint's stamp, entry stamp): `evict_one`.
  std::map<std::pair<std::uint64_t, std::uint64_t>, entry_it> by_front_;
  std::vector<std::uint32_t> last_n_, quarter_n_;
  std::vector<std::pair<std::uint64_t, entry_it>> scratch_;
  bool check_ = false;  ///< `set_index_check`
  static constexpr std::uint32_t no_tin = std::numeric_limits<std::uint32_t>::max();
  std::vector<planned> planned_;
  std::vector<std::size_t> users_;  ///< `plan_prefill`'s user-message starts (scratch)
  std::uint64_t clock_ = 0;
  std::size_t cur_ = 0, resumed_ = 0;
  static constexpr std::uint32_t none = tree_trace::no_parent;
  std::uint32_t stale_ = none;
};
/// Shared machinery of the two offline references (Belady on states): for every node, the
/// requests that would use a state there (in request order, one compressed row per node), the
/// next use after a given request, and the held states ordered by next use.
///
/// On the causal protocol the references still choose with future knowledge (offline), at match
/// time over the request's whole path (`candidates`), but take each state only when the engine
/// opens its window: positions j <= pb, j < n are announced for the prefill, decode positions
/// are taken at their block end and j = n at the request end.
class belady_policy : public tree_policy {
 public:
  std::size_t resume(const tree_step& s) override {
    return deepest_held(*ctx_.pool, s.path(), s.usable);
  }
  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    used(s);
    cand_.clear();
    const auto& full = ctx_.trace->requests()[s.index].path;  // offline: the whole path
    candidates(s, full, cand_);
    const std::size_t n = full.size();
    at_.assign(n + 1, never);
    for (const auto& [j, nu] : cand_) {
      if (j <= s.resumed || j > n) continue;
      at_[j] = nu;
      if (j <= s.prompt_blocks && j < n) positions.push_back(j);
    }
  }
  void after_prefill(const tree_step& s) override {
    const std::size_t n = at_.size() - 1;
    for (const auto& [j, nu] : cand_) {
      if (j > s.resumed && j <= s.prompt_blocks && j < n) take(s, j, nu);
    }
  }
  void on_decode_block(const tree_step& s, std::size_t j) override {
    if (j + 1 < at_.size() && at_[j] != never) take(s, j, at_[j]);
  }
  void finish(const tree_step& s) override {
    const std::size_t n = s.path().size();
    if (n > s.resumed && n < at_.size() && at_[n] != never) take(s, n, at_[n]);
  }
  void on_dropped(std::uint32_t v) override { order_.erase({key_[v], v}); }

 protected:
  static constexpr std::size_t never = std::numeric_limits<std::size_t>::max();

  /// Match time: the held states used by request s.index get their next use.
  virtual void used(const tree_step& s) = 0;
  /// Match time: (position j, next use) of the states to admit, in admission order, chosen
  /// over the whole path `full` (offline).
  virtual void candidates(const tree_step& s, const std::vector<std::uint32_t>& full,
                          std::vector<std::pair<std::size_t, std::size_t>>& out) = 0;
  void take(const tree_step& s, std::size_t j, std::size_t nu) {
    const auto v = s.path()[j - 1];
    if (ctx_.pool->capacity() == 0 || ctx_.pool->holds(v)) return;
    admit(v, nu);
  }

  /// Starts a replay: `uses(i, f)` calls f(v) for every node v that request i uses.
  template <class Uses>
  void index_uses(const tree_context& ctx, Uses&& uses) {
    ctx_ = ctx;
    const auto& t = *ctx.trace;
    start_.assign(t.node_count() + 1, 0);
    for (std::size_t i = 0; i < t.size(); ++i) uses(i, [&](std::uint32_t v) { ++start_[v + 1]; });
    for (std::size_t v = 0; v < t.node_count(); ++v) start_[v + 1] += start_[v];
    uses_.assign(start_.back(), 0);
    cursor_.assign(start_.begin(), start_.end() - 1);
    auto fill = cursor_;
    for (std::size_t i = 0; i < t.size(); ++i)
      uses(i, [&](std::uint32_t v) { uses_[fill[v]++] = i; });
    key_.assign(t.node_count(), never);
    order_.clear();
  }
  /// The first use of node v after request `now` (`never` if none).
  std::size_t next_use(std::uint32_t v, std::size_t now) {
    auto& c = cursor_[v];
    while (c < start_[v + 1] && uses_[c] <= now) ++c;
    return c < start_[v + 1] ? uses_[c] : never;
  }
  /// A held state was used by request `now`: order it by its next use.
  void rekey(std::uint32_t v, std::size_t now) {
    order_.erase({key_[v], v});
    key_[v] = next_use(v, now);
    order_.emplace(key_[v], v);
  }
  /// Admits the state at v, next used by request `nu`. A full pool drops the held state used
  /// furthest in the future, unless v would be used later still (then v is not admitted).
  void admit(std::uint32_t v, std::size_t nu) {
    auto& pool = *ctx_.pool;
    if (pool.full()) {
      const auto far = *order_.rbegin();
      if (far.first <= nu) return;
      order_.erase(far);
      pool.remove(far.second);
    }
    pool.add(v);
    key_[v] = nu;
    order_.emplace(nu, v);
  }

  tree_context ctx_{};

 private:
  std::vector<std::pair<std::size_t, std::size_t>> cand_;
  std::vector<std::size_t> at_;  ///< per position j of this request: next use of a candidate
  std::vector<std::size_t> start_, uses_, cursor_, key_;
  std::set<std::pair<std::size_t, std::uint32_t>> order_;
};

/// Offline reference with future knowledge: Belady on states, counting a state as *used* by
/// every later request whose usable match passes through its node (it could resume there).
/// After request i it snapshots, on the path it computed, the deepest node for each distinct
/// next user (the branch point with that request's path) and keeps the states whose next use
/// is soonest, dropping the one used furthest in the future (never-used-again first); a state
/// that would be used later than every held one is not admitted. Belady minimises misses for
/// unit costs; here a miss costs a variable number of tokens and a shallower state can still
/// serve, so this is a strong offline reference, not a certified lower bound (it can lose to an
/// online policy, and docs/tree_simulation.md reports where it does).
class oracle_policy final : public belady_policy {
 public:
  [[nodiscard]] std::string name() const override { return "oracle"; }
  void reset(const tree_context& ctx) override {
    index_uses(ctx, [&](std::size_t i, auto&& use) {
      const auto& path = ctx.trace->requests()[i].path;
      for (std::size_t j = 0; j < (*ctx.usable)[i]; ++j) use(path[j]);
    });
  }

 protected:
  void used(const tree_step& s) override {
    // States on the usable path were (potentially) used now: move on to their next use.
    const auto path = s.path();
    for (std::size_t j = 0; j < s.usable; ++j) {
      if (ctx_.pool->holds(path[j])) rekey(path[j], s.index);
    }
  }
  void candidates(const tree_step& s, const std::vector<std::uint32_t>& full,
                  std::vector<std::pair<std::size_t, std::size_t>>& out) override {
    std::size_t deeper = never;  // next use of the deeper candidate already considered
    for (std::size_t j = full.size(); j > s.resumed; --j) {
      const std::size_t nu = next_use(full[j - 1], s.index);
      if (nu == never || nu == deeper) continue;  // not needed, or a deeper node serves it
      deeper = nu;
      out.emplace_back(j, nu);
    }
  }
};

/// Offline reference with future knowledge, exact-match variant: Belady where a state is used
/// only by a request whose usable match ends exactly at its node.
/// It admits only states that some later request resumes from exactly, and drops the state
/// whose next exact use is furthest in the future (never-used-again first). Minimising the
/// number of requests that miss their exact match state is what Belady optimises; token
/// recompute is a weighted objective, so this is a strong reference, not a certified bound.
class oracle_exact_policy final : public belady_policy {
 public:
  [[nodiscard]] std::string name() const override { return "oracle_exact"; }
  void reset(const tree_context& ctx) override {
    index_uses(ctx, [&](std::size_t i, auto&& use) {
      const std::size_t u = (*ctx.usable)[i];
      if (u > 0) use(ctx.trace->requests()[i].path[u - 1]);
    });
  }

 protected:
  void used(const tree_step& s) override {
    // The state used exactly now gets its next use.
    const auto path = s.path();
    if (s.usable > 0 && ctx_.pool->holds(path[s.usable - 1])) rekey(path[s.usable - 1], s.index);
  }
  void candidates(const tree_step& s, const std::vector<std::uint32_t>& full,
                  std::vector<std::pair<std::size_t, std::size_t>>& out) override {
    for (std::size_t j = s.resumed + 1; j <= full.size(); ++j) {
      const std::size_t nu = next_use(full[j - 1], s.index);
      if (nu != never) out.emplace_back(j, nu);
    }
  }
};

HYBRIDCACHE_NAMESPACE_END
