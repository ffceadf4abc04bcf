#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The replay engine of the tree scenario: a block-granular radix tree, one pool of recurrent
/// states with a budget of M states (M · checkpoint_bytes bytes), and a policy that decides
/// where states are taken and which are dropped.
///
/// The attention KV of every block ever computed is assumed cached (the question is the
/// recurrent states), so the radix tree only grows. Per request r with path p_1 … p_n (nodes of
/// its full blocks), prompt P tokens and block size B:
///
///     match  m  = number of leading p_i already in the tree (inserted by earlier requests)
///     usable u  = min(m, ⌊(P − 1)/B⌋)            at least one prompt token is computed
///     resume k  = policy.resume(r) <= u,          p_k holds a state (k = 0: the namespace root)
///     recomputed tokens   = (u − k) · B          KV cached, state missing: replayed
///     prefill tokens      = P − k · B
///     token hit rate      = Σ k·B / Σ P
///     prefill FLOPs       = f_tok · n + f_pair · (n·p + n(n+1)/2),   n = P − kB, p = kB
///     modelled TTFT (ms)  = prefill_cost_model::cost(n, p)            (sim/model.hpp)
///
/// then `policy.finish(r)` snapshots states at nodes the request computed (p_{k+1} … p_n, the
/// output's blocks included) and evicts under pressure; finally p_1 … p_n are inserted. The pool
/// (`state_pool`) rejects a snapshot of a node the request did not compute and any snapshot
/// beyond the budget, so no policy can cheat either way. Decision time is the wall time spent
/// in the policy's `resume` and `finish`.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/model.hpp"
#include "hybridcache/sim/tree/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The pool of recurrent states: which nodes hold one, under a budget of `capacity` states.
/// Only the engine opens a request's computable range; a policy may add a state only at a node
/// of that range and only while the pool is below capacity.
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
  /// Whether the current request computed node `v` (so a state can be taken there).
  [[nodiscard]] bool computable(std::uint32_t v) const noexcept {
    return v < stamp_.size() && stamp_[v] == epoch_ && epoch_ != 0;
  }

  /// Stores a state at `v`. @returns false when `v` already holds one.
  /// @throws capacity_error when the pool is full; invalid_argument when `v` was not computed.
  bool add(std::uint32_t v) {
    if (!computable(v))
      hybridcache::detail::throw_invalid("node", v, "was not computed by the current request");
    if (held_[v]) return false;
    if (size_ >= capacity_)
      throw capacity_error("hybridcache: state pool full (evict before adding)");
    held_[v] = 1;
    ++size_;
    peak_ = std::max(peak_, size_);
    return true;
  }
  /// Drops the state at `v`. @throws invalid_argument when `v` holds none.
  void remove(std::uint32_t v) {
    if (!holds(v)) hybridcache::detail::throw_invalid("node", v, "holds no state");
    held_[v] = 0;
    --size_;
  }

  /// Engine: marks `nodes` as the current request's computed range (closes the previous one).
  void open(std::span<const std::uint32_t> nodes) {
    ++epoch_;
    for (auto v : nodes) stamp_[v] = epoch_;
  }

 private:
  std::vector<std::uint8_t> held_;
  std::vector<std::uint32_t> stamp_;
  std::uint32_t epoch_ = 0;
  std::size_t size_ = 0, peak_ = 0, capacity_ = 0;
};

/// The radix tree of cached blocks (KV assumed cached forever): presence and child counts.
class block_tree {
 public:
  void reset(std::size_t nodes) {
    present_.assign(nodes, 0);
    children_.assign(nodes, 0);
  }
  [[nodiscard]] bool present(std::uint32_t v) const noexcept { return present_[v] != 0; }
  /// Children of `v` present in the tree.
  [[nodiscard]] std::uint32_t children(std::uint32_t v) const noexcept { return children_[v]; }
  /// Leading nodes of `path` present.
  [[nodiscard]] std::size_t match(std::span<const std::uint32_t> path) const noexcept {
    std::size_t m = 0;
    while (m < path.size() && present_[path[m]]) ++m;
    return m;
  }
  void insert(const tree_trace& t, std::span<const std::uint32_t> path) {
    for (auto v : path) {
      if (present_[v]) continue;
      present_[v] = 1;
      const auto p = t.parent(v);
      if (p != tree_trace::no_parent) ++children_[p];
    }
  }

 private:
  std::vector<std::uint8_t> present_;
  std::vector<std::uint32_t> children_;
};

/// What a policy sees of one request.
struct tree_step {
  std::size_t index = 0;                  ///< request number in the trace
  const tree_request* request = nullptr;  ///< the request
  std::size_t match = 0;                  ///< m: leading path nodes in the tree
  std::size_t usable = 0;                 ///< u = min(m, ⌊(P − 1)/B⌋)
  std::size_t prompt_blocks = 0;          ///< ⌊P/B⌋
  std::size_t resumed = 0;                ///< k (set before `finish`)
  [[nodiscard]] std::span<const std::uint32_t> path() const noexcept { return request->path; }
};

/// Everything a policy may read: the trace, the pool it manages, the tree as of the current
/// request (before its insertion), the cost model and, for offline policies only, the usable
/// match of every request (future knowledge).
struct tree_context {
  const tree_trace* trace = nullptr;
  state_pool* pool = nullptr;
  const block_tree* tree = nullptr;
  const std::vector<std::size_t>* usable = nullptr;  ///< per request: u (offline knowledge)
  double state_bytes = 0.0;                          ///< bytes of one state
  std::function<double(double, double)> flops;       ///< prefill FLOPs(n new, p cached)
};

/// A state policy: resume point and snapshot/evict decisions (see the file comment).
class tree_policy {
 public:
  virtual ~tree_policy() = default;
  [[nodiscard]] virtual std::string name() const = 0;
  /// Starts a replay; the pool is empty and sized.
  virtual void reset(const tree_context& ctx) = 0;
  /// k <= s.usable with pool.holds(path[k−1]) when k > 0. Default: the deepest held state.
  virtual std::size_t resume(const tree_step& s) = 0;
  /// Takes snapshots among path[k..n) and evicts, keeping pool.size() <= capacity.
  virtual void finish(const tree_step& s) = 0;
};

/// Deepest k in [0, limit] with path[k−1] held (0 when none).
inline std::size_t deepest_held(const state_pool& pool, std::span<const std::uint32_t> path,
                                std::size_t limit) noexcept {
  for (std::size_t k = std::min(limit, path.size()); k > 0; --k) {
    if (pool.holds(path[k - 1])) return k;
  }
  return 0;
}

/// Prefill cost: FLOPs and modelled TTFT (see the file comment). The FLOP constants are
/// assumptions for a ≈Qwen3.5-0.8B stack: f_tok = 2 · 0.8e9 (two FLOPs per weight per token),
/// f_pair = 4 · 6 attention layers · 8 query heads · 256 head dim (QKᵀ and AV per pair).
struct tree_cost_model {
  model_shape model = qwen3_5_0_8b;
  prefill_cost_model time = hypic_fig14_prefill();
  double flops_per_token = 2.0 * 0.8e9;
  double flops_per_pair = 4.0 * 6.0 * 8.0 * 256.0;
  [[nodiscard]] double flops(double n, double p) const noexcept {
    return flops_per_token * n + flops_per_pair * (n * p + n * (n + 1.0) / 2.0);
  }
};

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
  double parameter = std::numeric_limits<double>::quiet_NaN();  ///< a tuned knob (Marconi's α)
};

/// Per request: the usable match u (policy-independent: the tree holds every block ever seen).
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

/// Replays a tree trace through one policy, one request at a time (see the file comment).
/// Requests before `begin` are inserted into the tree (their KV is cached) with no state held:
/// a cold state pool over a warm tree.
class tree_replayer {
 public:
  /// `usable` = usable_matches(t) (passed in so sweeps compute it once).
  /// @throws invalid_argument when `usable` does not match the trace.
  tree_replayer(const tree_trace& t, tree_policy& policy, std::size_t budget,
                const std::vector<std::size_t>& usable, const tree_cost_model& cost = {},
                std::size_t begin = 0)
      : t_(t), policy_(policy), usable_(usable), cost_(cost), next_(std::min(begin, t.size())) {
    if (usable.size() != t.size())
      hybridcache::detail::throw_invalid("usable.size()", usable.size(),
                                         "must equal the trace size");
    pool_.reset(t.node_count(), budget);
    tree_.reset(t.node_count());
    ctx_.trace = &t;
    ctx_.pool = &pool_;
    ctx_.tree = &tree_;
    ctx_.usable = &usable_;
    ctx_.state_bytes = cost.model.checkpoint_bytes();
    ctx_.flops = [cost](double n, double p) { return cost.flops(n, p); };
    policy.reset(ctx_);
    for (std::size_t i = 0; i < next_; ++i) tree_.insert(t, t.requests()[i].path);
    m_.policy = policy.name();
    m_.budget = budget;
    m_.state_memory = static_cast<double>(budget) * ctx_.state_bytes;
  }

  /// Replays the next request. @returns false when the trace is done.
  /// @throws invalid_argument when the policy resumes past the usable match or from a node
  ///         without a state; capacity_error when it leaves the pool over budget.
  bool step() {
    if (next_ >= t_.size()) return false;
    const std::size_t i = next_++;
    const auto& r = t_.requests()[i];
    tree_step s;
    s.index = i;
    s.request = &r;
    s.match = tree_.match(r.path);
    s.usable = std::min(s.match, r.usable_blocks(t_.block()));
    s.prompt_blocks = r.prompt_blocks(t_.block());
    const auto t0 = std::chrono::steady_clock::now();
    const std::size_t k = policy_.resume(s);
    const auto t1 = std::chrono::steady_clock::now();
    if (k > s.usable) hybridcache::detail::throw_invalid("resume", k, "exceeds the usable match");
    if (k > 0 && !pool_.holds(r.path[k - 1]))
      hybridcache::detail::throw_invalid("resume", k, "node holds no state");
    s.resumed = k;
    pool_.open(std::span<const std::uint32_t>(r.path).subspan(k));
    const auto t2 = std::chrono::steady_clock::now();
    policy_.finish(s);
    const auto t3 = std::chrono::steady_clock::now();
    if (pool_.size() > pool_.capacity())
      throw capacity_error("hybridcache: policy " + policy_.name() + " exceeded its budget");
    tree_.insert(t_, r.path);
    last_resume_ = k;
    ns_ += std::chrono::duration<double, std::nano>((t1 - t0) + (t3 - t2)).count();
    blocks_ += static_cast<double>(r.path.size());
    const double B = static_cast<double>(t_.block());
    const double P = static_cast<double>(r.prompt_tokens);
    const double kb = static_cast<double>(k) * B;
    m_.prompt_tokens += P;
    m_.usable_tokens += static_cast<double>(s.usable) * B;
    m_.resumed_tokens += kb;
    m_.recomputed_tokens += static_cast<double>(s.usable - k) * B;
    m_.prefill_tokens += P - kb;
    m_.prefill_flops += cost_.flops(P - kb, kb);
    ttft_ += cost_.time.cost(r.prompt_tokens - k * t_.block(), k * t_.block());
    states_ += static_cast<double>(pool_.size());
    ++m_.requests;
    return true;
  }
  /// Replays up to request `end` (exclusive).
  void run(std::size_t end = std::numeric_limits<std::size_t>::max()) {
    while (next_ < std::min(end, t_.size())) step();
  }

  [[nodiscard]] const state_pool& pool() const noexcept { return pool_; }
  [[nodiscard]] const block_tree& tree() const noexcept { return tree_; }
  /// k of the last replayed request.
  [[nodiscard]] std::size_t last_resume() const noexcept { return last_resume_; }
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
    return m;
  }

 private:
  const tree_trace& t_;
  tree_policy& policy_;
  const std::vector<std::size_t>& usable_;
  tree_cost_model cost_;
  state_pool pool_;
  block_tree tree_;
  tree_context ctx_;
  tree_metrics m_;
  std::size_t next_ = 0, last_resume_ = 0;
  double ns_ = 0.0, blocks_ = 0.0, states_ = 0.0, ttft_ = 0.0;
};

/// Replays requests [begin, end) of `t` through `policy` with a budget of `budget` states and
/// returns their metrics (see `tree_replayer`).
inline tree_metrics replay_tree(const tree_trace& t, tree_policy& policy, std::size_t budget,
                                const std::vector<std::size_t>& usable,
                                const tree_cost_model& cost = {}, std::size_t begin = 0,
                                std::size_t end = std::numeric_limits<std::size_t>::max()) {
  tree_replayer r(t, policy, budget, usable, cost, begin);
  r.run(end);
  return r.metrics();
}

namespace sim {  // deprecated spellings (docs/design/namespaces.md): use hybridcache::X
using ::hybridcache::block_tree;
using ::hybridcache::deepest_held;
using ::hybridcache::replay_tree;
using ::hybridcache::state_pool;
using ::hybridcache::tree_context;
using ::hybridcache::tree_cost_model;
using ::hybridcache::tree_metrics;
using ::hybridcache::tree_policy;
using ::hybridcache::tree_replayer;
using ::hybridcache::tree_step;
using ::hybridcache::usable_matches;
}  // namespace sim
HYBRIDCACHE_NAMESPACE_END
