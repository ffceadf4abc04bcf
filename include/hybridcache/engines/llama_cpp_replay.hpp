#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Any state policy of the tree simulator (sim/tree/policies.hpp: vllm_*, sglang_*, trtllm,
/// marconi, llamacpp*, oracles; sim/tree/library.hpp: the library's `hybridcache` rows) driving
/// llama.cpp on a tree trace, on the simulator's own causal protocol (sim/tree/replay.hpp), so
/// that every policy is compared on the same real engine (docs/engines/llama_cpp.md).
///
/// `llama_cpp_tree_replay` runs a `tree_replayer` (the simulator's engine, unchanged: the same
/// pool, block tree, windows and checks) over a thin wrapper of the policy. The wrapper forwards
/// every call and, around it, does the engine's work on one `llama_cpp_context`, mirroring the
/// `state_pool` onto a store of whole-sequence blobs (`llama_cpp_context::save`):
///
/// 1. `resume` → the policy's k; the blob of p_k is loaded (the namespace root: the empty
///    sequence). A held state without a blob is a broken mirror: `not_found_error`.
/// 2. `plan_prefill` → the announced positions j·B; tokens [k·B, P) are decoded with chunk ends
///    at every announced position, the grid of `chunk_tokens` and P (logits of the last token);
///    a blob is copied at each announced position.
/// 3. `after_prefill` → each announced node the pool now holds keeps its blob; the others are
///    dropped.
/// 4. `on_decode_block(j)` → the request's output is decoded teacher-forced (the trace's own
///    tokens: the next turn's prompt contains them) up to j·B, one chunk per block, and if the
///    pool now holds p_j its blob is copied then.
/// 5. `finish` → likewise for p_n at n·B (when n = pb and P is not on the grid, the prefill
///    scheduled a chunk end at pb·B for it: the engine knows its own trace).
/// After every call, blobs of nodes the pool no longer holds are freed.
///
/// So the tokens that `llama_decode` evaluates in prefills are P − k·B per request, with k the
/// simulator's own decision: `simulate --scenario tree` predicts them exactly for the same trace,
/// block size, budget M (states) and policy options (the test engines/llama_cpp_replay checks it
/// against an independent `replay_tree`). Memory: the pool counts M states as the simulator does;
/// the blobs' real bytes (KV of the prefix + recurrent state, growing with the position) are
/// reported beside. KV is unlimited (`kv_mode::unlimited`): a whole-sequence blob carries its own
/// KV, so the simulator's KV budget has no counterpart here.
///
/// Not thread-safe; the engine decodes one request at a time.

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/engines/llama_cpp.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/numeric.hpp"
#include "hybridcache/sim/tree/replay.hpp"
#include "hybridcache/sim/tree/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Token ids of request `index` of `t` for a model of `vocab` tokens: `length` tokens (its prompt
/// and output), token i of block b = `splitmix64_mix((path[b] << 20) ^ (i mod B)) mod (vocab −
/// 2)` while b is on the request's path, so requests sharing a node share its tokens; tokens past
/// the path are the request's own (`(1 << 63) ^ (index << 24) ^ i`).
/// @throws invalid_argument for an index past the trace or a vocabulary below 3 tokens.
inline std::vector<token_id> llama_cpp_trace_tokens(const tree_trace& t, std::size_t index,
                                                    std::size_t length, std::size_t vocab) {
  if (index >= t.size()) detail::throw_invalid("index", index, "past the trace");
  if (vocab < 3) detail::throw_invalid("vocab", vocab, "must be >= 3");
  const auto& q = t.requests()[index];
  const std::size_t B = t.block();
  std::vector<token_id> p(length);
  for (std::size_t i = 0; i < p.size(); ++i) {
    const std::size_t b = i / B;
    const std::uint64_t key = b < q.path.size()
                                  ? (std::uint64_t{q.path[b]} << 20) ^ (i % B)
                                  : (std::uint64_t{1} << 63) ^ (std::uint64_t{index} << 24) ^ i;
    p[i] = static_cast<token_id>(splitmix64_mix(key) % (vocab - 2));
  }
  return p;
}

/// Options of `llama_cpp_tree_replay`.
struct llama_cpp_replay_options {
  llama_cpp_options engine{};  ///< chunk grid (a multiple of the trace's block), context, threads
  std::size_t budget = 16;     ///< M: states the pool holds (the simulator's budget)
  tree_cost_model cost{};      ///< the simulator's cost model; KV must be `unlimited`
  bool keep_logits = false;    ///< return each request's last-prompt-token logits
};

/// What one request did on the engine.
struct llama_cpp_replay_request {
  std::size_t index = 0;
  std::size_t prompt_tokens = 0;        ///< P
  std::size_t resume_tokens = 0;        ///< k·B
  std::size_t evaluated_tokens = 0;     ///< prefill tokens llama_decode evaluated (P − k·B)
  std::size_t decode_tokens = 0;        ///< output tokens decoded teacher-forced (n·B − P, or 0)
  std::vector<std::size_t> chunk_ends;  ///< every prefill chunk end from 0 to P behind the logits
  std::vector<float> logits;            ///< last prompt token (with `keep_logits`)
  double restore_seconds = 0.0;         ///< loading the resume blob
  double prefill_seconds = 0.0;         ///< llama_decode of the prompt and its blob copies
  double decode_seconds = 0.0;          ///< the teacher-forced output and its blob copies
  double decision_seconds = 0.0;        ///< inside the policy (all five calls)
  double ttft_seconds = 0.0;            ///< match to the last prompt token's logits
  std::size_t states = 0;               ///< blobs held after the request
  std::size_t bytes = 0;                ///< their bytes
};

/// A simulator policy on llama.cpp (see the file comment). The model, trace and policy must
/// outlive it.
class llama_cpp_tree_replay {
 public:
  /// @throws invalid_argument for a KV mode other than unlimited, a chunk grid that is not a
  ///         multiple of the trace's block, or a context shorter than the longest request
  ///         (prompt and output); what `llama_cpp_context` and `tree_replayer` throw.
  llama_cpp_tree_replay(const llama_cpp_model& model, const tree_trace& trace, tree_policy& policy,
                        llama_cpp_replay_options opts)
      : model_(model),
        trace_(trace),
        opts_(checked(trace, opts)),
        ctx_(model, opts_.engine),
        usable_(usable_matches(trace)),
        mirror_(*this, policy),
        replayer_(trace, mirror_, opts_.budget, usable_, opts_.cost) {}

  llama_cpp_tree_replay(const llama_cpp_tree_replay&) = delete;
  llama_cpp_tree_replay& operator=(const llama_cpp_tree_replay&) = delete;

  /// Replays the next request. @returns false when the trace is done.
  bool step(llama_cpp_replay_request* out = nullptr) {
    cur_ = {};
    if (!replayer_.step()) return false;
    cur_.states = store_.size();
    cur_.bytes = bytes_;
    peak_bytes_ = std::max(peak_bytes_, bytes_);
    if (out) *out = std::move(cur_);
    return true;
  }

  /// The simulator's metrics of the requests replayed so far (its own books of this run).
  [[nodiscard]] tree_metrics metrics() const { return replayer_.metrics(); }
  /// Blobs held now, their bytes, and the most bytes held after any request.
  [[nodiscard]] std::size_t stored_states() const noexcept { return store_.size(); }
  [[nodiscard]] std::size_t stored_bytes() const noexcept { return bytes_; }
  [[nodiscard]] std::size_t peak_bytes() const noexcept { return peak_bytes_; }
  /// Tokens llama_decode evaluated so far (prefills and teacher-forced outputs).
  [[nodiscard]] std::size_t evaluated() const noexcept { return ctx_.evaluated(); }

 private:
  using clock = std::chrono::steady_clock;
  static double seconds_since(clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  }

  static llama_cpp_replay_options checked(const tree_trace& t, llama_cpp_replay_options o) {
    if (o.cost.kv.mode != kv_mode::unlimited)
      detail::throw_invalid("cost.kv.mode", to_string(o.cost.kv.mode),
                            "must be unlimited (whole-sequence blobs carry their own KV)");
    if (o.engine.chunk_tokens == 0 || o.engine.chunk_tokens % t.block() != 0)
      detail::throw_invalid(
          "engine.chunk_tokens", o.engine.chunk_tokens,
          "must be a positive multiple of the trace's block " + std::to_string(t.block()));
    std::size_t longest = 0;
    for (const auto& q : t.requests())
      longest = std::max({longest, q.prompt_tokens, q.path.size() * t.block()});
    if (longest > o.engine.context_tokens)
      detail::throw_invalid(
          "engine.context_tokens", o.engine.context_tokens,
          "is shorter than the longest request (" + std::to_string(longest) + " tokens)");
    return o;
  }

  struct blob {
    std::uint32_t node = 0;
    std::vector<std::uint8_t> bytes;
    std::vector<std::size_t> lineage;  // chunk ends that built it
  };

  [[nodiscard]] const blob* find(std::uint32_t v) const noexcept {
    for (const auto& b : store_)
      if (b.node == v) return &b;
    return nullptr;
  }
  void keep(blob&& b) {
    bytes_ += b.bytes.size();
    store_.push_back(std::move(b));
  }
  // Frees the blobs of nodes the pool no longer holds (O(held) per protocol call).
  void sync(const state_pool& pool) {
    for (std::size_t i = 0; i < store_.size();) {
      if (pool.holds(store_[i].node)) {
        ++i;
        continue;
      }
      bytes_ -= store_[i].bytes.size();
      store_[i] = std::move(store_.back());
      store_.pop_back();
    }
  }
  // Decodes [at_, to) in chunks of at most chunk_tokens, each ending on `ends` or the grid.
  void advance(std::size_t to, bool logits) {
    const std::size_t C = opts_.engine.chunk_tokens;
    while (at_ < to) {
      const std::size_t e = std::min(to, at_ + C);
      ctx_.decode(tokens_, at_, e, logits && e == to);
      lineage_.push_back(e);
      at_ = e;
    }
  }

  /// The wrapper the replayer drives: the policy's call, timed, then the engine's mirror.
  class mirror final : public tree_policy {
   public:
    mirror(llama_cpp_tree_replay& e, tree_policy& inner) : e_(e), inner_(inner) {}
    [[nodiscard]] std::string name() const override { return inner_.name(); }
    void reset(const tree_context& ctx) override {
      pool_ = ctx.pool;
      inner_.reset(ctx);
    }

    std::size_t resume(const tree_step& s) override {
      auto& c = e_.cur_;
      start_ = clock::now();
      c.index = s.index;
      c.prompt_tokens = s.prompt_tokens;
      const std::size_t k = timed([&] { return inner_.resume(s); });
      e_.sync(*pool_);
      const std::size_t B = e_.trace_.block();
      const auto& path = s.request->path;
      e_.tokens_ = llama_cpp_trace_tokens(
          e_.trace_, s.index, std::max(s.prompt_tokens, path.size() * B), e_.model_.vocab_size());
      const auto t = clock::now();
      e_.lineage_.clear();
      e_.at_ = 0;
      end_.reset();
      if (k > 0 && k <= s.usable && k <= path.size() && pool_->holds(path[k - 1])) {
        const blob* b = e_.find(path[k - 1]);
        if (b == nullptr)
          throw not_found_error("hybridcache: policy " + inner_.name() + " resumes from node " +
                                std::to_string(path[k - 1]) +
                                " but the engine holds no blob there (the mirror is broken)");
        e_.ctx_.load(b->bytes, k * B);
        e_.lineage_ = b->lineage;
        e_.at_ = k * B;
        // The request ends in its prompt's last full block and resumes there: that state is
        // this blob (the pool may drop and re-add it before `finish`).
        if (path.size() == k && k * B < s.prompt_tokens) end_ = *b;
      } else {
        e_.ctx_.clear();  // k = 0, or an invalid k the replayer rejects next
      }
      c.restore_seconds = seconds_since(t);
      c.resume_tokens = e_.at_;
      return k;
    }

    void plan_prefill(const tree_step& s, std::vector<std::size_t>& positions) override {
      const std::size_t before = positions.size();
      timed([&] {
        inner_.plan_prefill(s, positions);
        return 0;
      });
      e_.sync(*pool_);
      const std::size_t B = e_.trace_.block(), P = s.prompt_tokens, k = s.resumed;
      const auto& path = s.request->path;
      std::vector<std::size_t> snap;  // block positions to copy a blob at
      for (std::size_t i = before; i < positions.size(); ++i)
        if (positions[i] > k && positions[i] <= s.prompt_blocks) snap.push_back(positions[i]);
      // The request end p_n inside the prompt, off the grid: the engine knows its trace, so it
      // schedules that chunk end now (`finish` may store it; not an announced position).
      const std::size_t end =
          path.size() == s.prompt_blocks && s.prompt_blocks > k && s.prompt_blocks * B < P
              ? s.prompt_blocks
              : 0;
      if (end) snap.push_back(end);
      std::sort(snap.begin(), snap.end());
      snap.erase(std::unique(snap.begin(), snap.end()), snap.end());
      pending_.clear();
      const auto t = clock::now();
      const std::size_t first = e_.ctx_.evaluated();
      for (std::size_t j : snap) {
        e_.advance(j * B, j * B == P);
        pending_.push_back({path[j - 1], e_.ctx_.save(j * B), e_.lineage_});
        if (j == end) end_ = pending_.back();
      }
      e_.advance(P, true);
      auto& c = e_.cur_;
      c.evaluated_tokens = e_.ctx_.evaluated() - first;
      c.chunk_ends = e_.lineage_;
      if (e_.opts_.keep_logits) c.logits = e_.ctx_.logits();
      c.prefill_seconds = seconds_since(t);
      c.ttft_seconds = seconds_since(start_);
    }

    void after_prefill(const tree_step& s) override {
      timed([&] {
        inner_.after_prefill(s);
        return 0;
      });
      for (auto& b : pending_)
        if (pool_->holds(b.node) && e_.find(b.node) == nullptr) e_.keep(std::move(b));
      pending_.clear();
      e_.sync(*pool_);
    }

    void on_decode_block(const tree_step& s, std::size_t j) override {
      const std::size_t B = e_.trace_.block();
      auto t = clock::now();
      const std::size_t first = e_.ctx_.evaluated();
      e_.advance(j * B, false);
      e_.cur_.decode_tokens += e_.ctx_.evaluated() - first;
      e_.cur_.decode_seconds += seconds_since(t);
      timed([&] {
        inner_.on_decode_block(s, j);
        return 0;
      });
      const auto v = s.request->path[j - 1];
      if (pool_->holds(v) && e_.find(v) == nullptr) {
        t = clock::now();
        e_.keep({v, e_.ctx_.save(j * B), e_.lineage_});
        e_.cur_.decode_seconds += seconds_since(t);
      }
      e_.sync(*pool_);
    }

    void finish(const tree_step& s) override {
      timed([&] {
        inner_.finish(s);
        return 0;
      });
      const auto& path = s.request->path;
      const std::size_t n = path.size(), B = e_.trace_.block();
      if (n > 0 && pool_->holds(path[n - 1]) && e_.find(path[n - 1]) == nullptr) {
        if (e_.at_ == n * B) {
          e_.keep({path[n - 1], e_.ctx_.save(n * B), e_.lineage_});
        } else {
          if (!end_ || end_->node != path[n - 1])
            throw error("hybridcache: policy " + inner_.name() + " stored the request end at " +
                        std::to_string(n * B) + " tokens, which the engine did not compute");
          e_.keep(std::move(*end_));
        }
      }
      end_.reset();
      e_.sync(*pool_);
    }

    void on_dropped(std::uint32_t v) override {
      inner_.on_dropped(v);
      e_.sync(*pool_);
    }
    void on_evicted(std::uint32_t v) override { inner_.on_evicted(v); }

   private:
    template <class F>
    std::size_t timed(F&& f) {
      const auto t = clock::now();
      const std::size_t r = static_cast<std::size_t>(f());
      e_.cur_.decision_seconds += seconds_since(t);
      return r;
    }
    llama_cpp_tree_replay& e_;
    tree_policy& inner_;
    const state_pool* pool_ = nullptr;
    clock::time_point start_{};
    std::vector<blob> pending_;  // copied at the announced positions, until after_prefill
    std::optional<blob> end_;    // the state at n·B when n = pb and P is off the grid
  };

  const llama_cpp_model& model_;
  const tree_trace& trace_;
  llama_cpp_replay_options opts_;
  llama_cpp_context ctx_;
  std::vector<std::size_t> usable_;
  std::vector<blob> store_;
  std::size_t bytes_ = 0, peak_bytes_ = 0;
  std::vector<token_id> tokens_;      // the running request's prompt and output
  std::vector<std::size_t> lineage_;  // chunk ends behind the running sequence
  std::size_t at_ = 0;                // tokens in the running sequence
  llama_cpp_replay_request cur_;
  mirror mirror_;
  tree_replayer replayer_;
};

HYBRIDCACHE_NAMESPACE_END
