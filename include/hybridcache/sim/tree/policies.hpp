#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// State policies of today's engines, re-implemented on the replay engine of sim/tree/replay.hpp,
/// plus an offline reference with future knowledge. Positions are in blocks: "j" names the state
/// after block j of the request's path, i.e. at node path[j−1]; the request computed blocks
/// k+1 … n (k = its resume point, n = path length, prompt and output), so only j in (k, n] can
/// be snapshotted. P = prompt tokens, B = block size, pb = ⌊P/B⌋, m = match (prompt blocks
/// only), u = usable match. On the causal protocol (replay.hpp), positions j <= pb are announced
/// at match time (`plan_prefill`), decode positions are taken at their block end and the request
/// end j = n at `finish`.
///
/// Per policy: snapshots (admission); eviction; the engine it follows.
/// - `vllm_align`: j = pb (the replay boundary, the prompt's last full block) and j = m when
///   0 < m < pb (the shared-prefix junction); one LRU over states, a hit touches the states on the
///   matched path; vLLM v1 `vllm/v1/core/single_type_kv_cache_manager.py` (`MambaManager`),
///   `--mamba-cache-mode align`.
/// - `vllm_all`: every prompt block j in (k, pb]; LRU; the same, `--mamba-cache-mode all`.
/// - `sglang_no_buffer`: the ends of the prefill chunks (kB + i·C, floored to the grid) and the
///   request end (j = n); LRU over states (KV is never evicted here); SGLang
///   `python/sglang/srt/mem_cache/mamba_radix_cache.py` (`MambaRadixCache`), no_buffer.
/// - `sglang_extra_buffer`: the prefill extend end (j = pb), the branch point found at match time
///   (j = m when 0 < m < n), the request end (j = n); LRU, and with `path_cap` > 0 at most that
///   many states on the request's root→leaf path, the shallowest dropped first; the same,
///   extra_buffer.
/// - `marconi`: at request end at most two, the leaf after the last output token (j = n) and the
///   branch-off point found by speculative insertion (j = m when the matched node already has a
///   child); among states whose node has ≤ 1 child, the min of norm(recency) + α · norm(FLOPs
///   saved / byte), α tuned over a grid by replaying a window; Marconi (MLSys'25)
///   `radix_cache_hybrid.py`.
/// - `llamacpp`: near the prompt end, P − 4 − n_ubatch and P − 4 tokens, floored to the grid;
///   FIFO, at most `per_slot` (32) checkpoints; llama.cpp `tools/server/server.cpp` (context
///   checkpoints).
/// - `oracle`: only nodes that are some later request's usable match; Belady, dropping the state
///   whose next use as a match is furthest; offline reference (future knowledge).
/// - `oracle_exact`: only nodes that are some later request's usable match node; Belady on those
///   exact uses; offline reference (future knowledge).
///
/// These are re-implementations of the published behaviour on one shared model (block grid,
/// KV always cached, one state pool); no engine code is copied.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/tree/replay.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Recency (or insertion) order of held states: an ordered set of (stamp, node).
class recency_order {
 public:
  void reset(std::size_t nodes) {
    order_.clear();
    stamp_.assign(nodes, 0);
    clock_ = 0;
  }
  void insert(std::uint32_t v) {
    stamp_[v] = ++clock_;
    order_.emplace(stamp_[v], v);
  }
  void touch(std::uint32_t v) {
    order_.erase({stamp_[v], v});
    insert(v);
  }
  void erase(std::uint32_t v) { order_.erase({stamp_[v], v}); }
  [[nodiscard]] bool empty() const noexcept { return order_.empty(); }
  /// Least recently used (or first inserted).
  [[nodiscard]] std::uint32_t oldest() const { return order_.begin()->second; }
  [[nodiscard]] std::uint64_t stamp(std::uint32_t v) const noexcept { return stamp_[v]; }
  [[nodiscard]] std::uint64_t clock() const noexcept { return clock_; }
  [[nodiscard]] std::size_t size() const noexcept { return order_.size(); }
  /// (stamp, node) pairs, oldest first.
  [[nodiscard]] auto begin() const noexcept { return order_.begin(); }
  [[nodiscard]] auto end() const noexcept { return order_.end(); }

 private:
  std::set<std::pair<std::uint64_t, std::uint32_t>> order_;
  std::vector<std::uint64_t> stamp_;
  std::uint64_t clock_ = 0;
};

/// Shared skeleton of the engine policies: an admission rule (`prefill_positions` announced at
/// match time, `decode_position` at a decode block end, `end_position` at the request end), LRU
/// or FIFO eviction, an optional per-path cap, and an optional cap on the pool below the budget.
class engine_policy : public tree_policy {
 public:
  void reset(const tree_context& ctx) override {
    ctx_ = ctx;
    order_.reset(ctx.trace->node_count());
  }
  std::size_t resume(const tree_step& s) override {
    const auto path = s.path();
    if (touch_on_hit_) {
      for (std::size_t j = 0; j < s.match; ++j) {
        if (ctx_.pool->holds(path[j])) order_.touch(path[j]);
      }
    }
    return deepest_held(*ctx_.pool, path, s.usable);
  }
  void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
    planned_.clear();
    prefill_positions(s, planned_);
    std::sort(planned_.begin(), planned_.end());
    planned_.erase(std::unique(planned_.begin(), planned_.end()), planned_.end());
    std::erase_if(planned_, [&](std::size_t j) { return j <= s.resumed || j > s.prompt_blocks; });
    positions.insert(positions.end(), planned_.begin(), planned_.end());
  }
  void after_prefill(const tree_step& s) override {
    for (auto j : planned_) take(s, j);
  }
  void on_decode_block(const tree_step& s, std::size_t j) override {
    if (decode_position(s, j)) take(s, j);
  }
  void finish(const tree_step& s) override {
    const auto path = s.path();
    if (end_position(s)) take(s, path.size());
    if (path_cap_ > 0) {
      std::size_t held = 0;
      for (auto v : path) held += ctx_.pool->holds(v) ? 1 : 0;
      for (std::size_t j = 0; j < path.size() && held > path_cap_; ++j) {
        if (ctx_.pool->holds(path[j])) {
          drop(path[j]);
          --held;
        }
      }
    }
  }

 protected:
  void on_dropped(std::uint32_t v) override { order_.erase(v); }

  /// Block positions j <= pb (state at path[j−1]) the engine snapshots during the prefill,
  /// decided at match time (positions outside (k, pb] are ignored).
  virtual void prefill_positions(const tree_step& s, std::vector<std::size_t>& out) const = 0;
  /// Whether the engine snapshots decode block j (> pb), decided at its end (default: no).
  virtual bool decode_position(const tree_step& s, std::size_t j) const {
    (void)s;
    (void)j;
    return false;
  }
  /// Whether the engine snapshots the request end j = n (default: no).
  virtual bool end_position(const tree_step& s) const {
    (void)s;
    return false;
  }
  /// Takes the state at position j (in the open window), evicting to make room.
  void take(const tree_step& s, std::size_t j) {
    const std::size_t cap = std::min(ctx_.pool->capacity(), limit_);
    const auto path = s.path();
    if (j <= s.resumed || j > path.size() || cap == 0) return;
    const auto v = path[j - 1];
    if (ctx_.pool->holds(v)) {
      if (touch_on_hit_) order_.touch(v);
      return;
    }
    while (ctx_.pool->size() >= cap) evict_one(s);
    ctx_.pool->add(v);
    order_.insert(v);
  }
  /// Picks and drops one state (default: least recently used / first in).
  virtual void evict_one(const tree_step&) { drop(order_.oldest()); }
  void drop(std::uint32_t v) {
    order_.erase(v);
    ctx_.pool->remove(v);
  }

  tree_context ctx_{};
  recency_order order_;
  bool touch_on_hit_ = true;  ///< false: FIFO
  std::size_t path_cap_ = 0;  ///< 0: no per-path cap
  std::size_t limit_ = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> planned_;  ///< this request's announced prefill positions
};

/// vLLM v1 `--mamba-cache-mode align`: the replay boundary and the junction (see the file comment).
class vllm_align_policy final : public engine_policy {
 public:
  [[nodiscard]] std::string name() const override { return "vllm_align"; }

 protected:
  void prefill_positions(const tree_step& s, std::vector<std::size_t>& out) const override {
    if (s.prompt_blocks > 0) out.push_back(s.prompt_blocks);
    if (s.match > 0 && s.match < s.prompt_blocks) out.push_back(s.match);
  }
};

/// vLLM v1 `--mamba-cache-mode all`: a state at every prompt block.
class vllm_all_policy final : public engine_policy {
 public:
  [[nodiscard]] std::string name() const override { return "vllm_all"; }

 protected:
  void prefill_positions(const tree_step& s, std::vector<std::size_t>& out) const override {
    for (std::size_t j = s.resumed + 1; j <= s.prompt_blocks; ++j) out.push_back(j);
  }
};

/// SGLang MambaRadixCache no_buffer: chunk ends and the request end.
class sglang_no_buffer_policy final : public engine_policy {
 public:
  /// `chunk_tokens`: the chunked-prefill size C (SGLang's default 8192).
  explicit sglang_no_buffer_policy(std::size_t chunk_tokens = 8192) : chunk_(chunk_tokens) {
    if (chunk_tokens == 0)
      hybridcache::detail::throw_invalid("chunk_tokens", chunk_tokens, "must be >= 1");
  }
  [[nodiscard]] std::string name() const override { return "sglang_no_buffer"; }

 protected:
  void prefill_positions(const tree_step& s, std::vector<std::size_t>& out) const override {
    const std::size_t B = ctx_.trace->block();
    const std::size_t P = s.prompt_tokens;
    for (std::size_t end = s.resumed * B + chunk_; end < P; end += chunk_) out.push_back(end / B);
  }
  bool end_position(const tree_step&) const override { return true; }

 private:
  std::size_t chunk_;
};

/// SGLang MambaRadixCache extra_buffer: extend end, branch point, request end; optional per-path
/// cap that drops the shallowest states on the path.
class sglang_extra_buffer_policy final : public engine_policy {
 public:
  explicit sglang_extra_buffer_policy(std::size_t path_cap = 0) { path_cap_ = path_cap; }
  [[nodiscard]] std::string name() const override {
    return path_cap_ == 0 ? std::string("sglang_extra_buffer")
                          : "sglang_extra_buffer_cap" + std::to_string(path_cap_);
  }

 protected:
  void prefill_positions(const tree_step& s, std::vector<std::size_t>& out) const override {
    if (s.prompt_blocks > 0) out.push_back(s.prompt_blocks);
    if (s.match > 0) out.push_back(s.match);  // m <= pb: the branch point (== pb: the extend end)
  }
  bool end_position(const tree_step&) const override { return true; }
};

/// llama.cpp server context checkpoints: two near the prompt end, FIFO of `per_slot`.
class llamacpp_policy final : public engine_policy {
 public:
  explicit llamacpp_policy(std::size_t per_slot = 32, std::size_t n_ubatch = 512)
      : ubatch_(n_ubatch) {
    if (per_slot == 0) hybridcache::detail::throw_invalid("per_slot", per_slot, "must be >= 1");
    limit_ = per_slot;
    touch_on_hit_ = false;
  }
  [[nodiscard]] std::string name() const override { return "llamacpp"; }

 protected:
  void prefill_positions(const tree_step& s, std::vector<std::size_t>& out) const override {
    const std::size_t B = ctx_.trace->block();
    const std::size_t P = s.prompt_tokens;
    if (P > 4 + ubatch_) out.push_back((P - 4 - ubatch_) / B);
    if (P > 4) out.push_back((P - 4) / B);
  }

 private:
  std::size_t ubatch_;
};

/// Marconi: two admissions at request end, FLOP-aware eviction with weight α.
class marconi_policy final : public engine_policy {
 public:
  explicit marconi_policy(double alpha = 1.0) : alpha_(alpha) {
    if (!(alpha >= 0.0) || !std::isfinite(alpha))
      hybridcache::detail::throw_invalid("alpha", alpha, "must be finite and >= 0");
  }
  [[nodiscard]] std::string name() const override { return "marconi"; }
  [[nodiscard]] double alpha() const noexcept { return alpha_; }

 protected:
  void prefill_positions(const tree_step& s, std::vector<std::size_t>& out) const override {
    // Speculative insertion: the sequence branches off at the matched node when that node
    // already has a child (inserting would split an edge or add a sibling). Decided at match
    // time, on the tree before this request's blocks are allocated.
    const auto path = s.path();
    if (s.match > 0 && ctx_.tree->children(path[s.match - 1]) > 0) out.push_back(s.match);
  }
  bool end_position(const tree_step&) const override { return true; }
  void evict_one(const tree_step&) override {
    // Candidates: states whose node has at most one child in the tree.
    std::vector<std::uint32_t> cand, all;
    for (const auto& [stamp, v] : order_) {
      all.push_back(v);
      if (ctx_.tree->children(v) <= 1) cand.push_back(v);
    }
    if (cand.empty()) cand = all;
    const std::size_t B = ctx_.trace->block();
    double rmin = std::numeric_limits<double>::infinity(), rmax = -rmin, emin = rmin, emax = -rmin;
    std::vector<double> rec(cand.size()), eff(cand.size());
    for (std::size_t i = 0; i < cand.size(); ++i) {
      const auto v = cand[i];
      rec[i] = static_cast<double>(order_.stamp(v));
      // FLOPs this state saves over the nearest held ancestor, per byte.
      std::uint32_t a = ctx_.trace->parent(v);
      while (a != tree_trace::no_parent && ctx_.trace->parent(a) != tree_trace::no_parent &&
             !ctx_.pool->holds(a))
        a = ctx_.trace->parent(a);
      const double da =
          a == tree_trace::no_parent ? 0.0 : static_cast<double>(ctx_.trace->depth(a));
      const double dv = static_cast<double>(ctx_.trace->depth(v));
      eff[i] = ctx_.flops((dv - da) * static_cast<double>(B), da * static_cast<double>(B)) /
               ctx_.state_bytes;
      rmin = std::min(rmin, rec[i]);
      rmax = std::max(rmax, rec[i]);
      emin = std::min(emin, eff[i]);
      emax = std::max(emax, eff[i]);
    }
    std::size_t best = 0;
    double best_score = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < cand.size(); ++i) {
      const double r = rmax > rmin ? (rec[i] - rmin) / (rmax - rmin) : 0.0;
      const double e = emax > emin ? (eff[i] - emin) / (emax - emin) : 0.0;
      const double score = r + alpha_ * e;
      if (score < best_score) {
        best_score = score;
        best = i;
      }
    }
    drop(cand[best]);
  }

 private:
  double alpha_;
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

namespace sim {  // deprecated spellings (docs/design/namespaces.md): use hybridcache::X
using ::hybridcache::engine_policy;
using ::hybridcache::llamacpp_policy;
using ::hybridcache::marconi_policy;
using ::hybridcache::oracle_exact_policy;
using ::hybridcache::oracle_policy;
using ::hybridcache::recency_order;
using ::hybridcache::sglang_extra_buffer_policy;
using ::hybridcache::sglang_no_buffer_policy;
using ::hybridcache::vllm_align_policy;
using ::hybridcache::vllm_all_policy;
}  // namespace sim
HYBRIDCACHE_NAMESPACE_END
