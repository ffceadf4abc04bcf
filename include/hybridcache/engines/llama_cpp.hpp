#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The tree state policy (`state_policy`, tree/policy.hpp) driving a real engine: llama.cpp's
/// recurrent-state cache on the CPU (DESIGN §9, docs/engines/llama_cpp.md). Optional component
/// `hybridcache::llama_cpp`: needs llama.cpp's `llama.h` and `libllama`
/// (scripts/install-llama-cpp.sh).
///
/// Per request (`llama_cpp_engine::prefill`):
/// 1. `match` on the prompt less its last token (at least one token is evaluated, for the
///    logits), then the snapshot of the resume node is loaded into the context's only sequence
///    (`llama_state_seq_set_data`, after `llama_memory_clear`); the namespace root resumes from
///    the empty state.
/// 2. `prefill_plan` is offered every block-grid position after the resume point as a candidate
///    chunk end; the prefill is then cut at the regular chunk grid (multiples of
///    `chunk_tokens`), at every planned snapshot position and at the prompt end, and decoded
///    chunk by chunk with `llama_decode`. A recurrent state cannot be rolled back, so a snapshot
///    can only be taken at a chunk end the engine scheduled: the plan is made before the prefill.
///    The policy's learned branch point (`branch_point`, policy_options::branch_prior), if any,
///    joins the plan and is noted (`note_branch_point`) before its snapshot is admitted. A caller
///    that knows where the prompt's user messages start (its chat template) passes them, and the
///    deepest one past the resume point (`message_branch_point`) is the branch point instead.
///    The prompt's usable end (`prefill_end`: where a re-ask resumes) joins the plan too, noted
///    (`note_prefill_end`) before its snapshot is admitted.
/// 3. After the chunk that ends at a planned position p, the sequence is saved
///    (`llama_state_seq_get_data`): its KV over [0, p) and its recurrent state at p.
/// 4. `insert` the prompt, `admit` each snapshot with its actual size (the victims' snapshots
///    are freed first; a snapshot not admitted is dropped), `unpin` the resume node.
///
/// Memory model (the choice the issue asks for): **whole-sequence snapshots**. Each stored
/// state is one blob with the KV of its whole prefix plus the recurrent state, so a resume needs
/// nothing else resident, and the byte budget of the policy (`policy_options::capacity_bytes`)
/// counts KV and recurrent state together, as a joint pool does (vLLM's hybrid allocator). The
/// alternative, PARTIAL_ONLY blobs (recurrent part only, ~117 KB for the test qwen35 model) over
/// KV kept resident in llama.cpp sequences, is llama-server's per-slot checkpointing; it needs
/// a slot manager that keeps each cached prefix's KV in some sequence, which a whole-sequence
/// blob makes unnecessary. A blob carries a header (magic, model fingerprint, position, payload
/// size and checksum), so a blob of another model, of the wrong size or corrupted is refused
/// with `invalid_argument` before llama.cpp reads it.
///
/// Exactness: a resumed prefill gives the same logits, bit for bit, as a prefill without cache
/// that cuts the prompt at the same chunk ends (`llama_cpp_result::chunk_ends`: the ends that
/// built the resumed snapshot, then this request's), because the context is cleared before
/// each request, so KV cells sit at the same indices, and each chunk is one ubatch.
///
/// @code
///   hybridcache::llama_cpp_model model("qwen35-tiny.gguf");
///   hybridcache::state_policy pol({.block_size = 16, .state_bytes = 200 << 10,
///                                  .capacity_bytes = 8 << 20});
///   hybridcache::llama_cpp_engine eng(model, pol, {.chunk_tokens = 64});
///   auto r = eng.prefill(hybridcache::namespace_key{}, prompt);   // r.logits, r.evaluated_tokens
/// @endcode
///
/// Not thread-safe (one engine per thread; the policy under the caller's lock).

#include <llama.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/tree/policy.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

namespace detail {

/// llama.cpp's global backend, initialised once; its log is silenced below errors (set
/// HYBRIDCACHE_LLAMA_LOG=1 in the environment to see everything).
inline void llama_cpp_init() {
  static const bool once = [] {
    const char* env = std::getenv("HYBRIDCACHE_LLAMA_LOG");
    if (!(env && env[0] == '1'))
      llama_log_set(
          [](ggml_log_level level, const char* text, void*) {
            if (level == GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
          },
          nullptr);
    llama_backend_init();
    return true;
  }();
  (void)once;
}

/// XXH3-64 of `bytes` with seed 0: the model fingerprint and the blob checksum.
inline std::uint64_t llama_cpp_hash(std::span<const std::uint8_t> bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

/// Header of a stored snapshot (little-endian host layout; blobs never leave the process
/// except through `save_state`/`load_state` of the same build).
struct llama_cpp_blob_header {
  std::uint64_t magic;     ///< `llama_cpp_blob_magic`
  std::uint64_t model;     ///< fingerprint of the model that wrote it
  std::uint64_t position;  ///< tokens the snapshot covers
  std::uint64_t payload;   ///< bytes after the header
  std::uint64_t checksum;  ///< XXH3-64 of the payload
};
inline constexpr std::uint64_t llama_cpp_blob_magic = 0x31534c4c43594248ull;  // "HBYCLLS1"

}  // namespace detail

/// A GGUF model loaded by llama.cpp on the CPU (owning; move-only).
class llama_cpp_model {
 public:
  /// Loads `path`. Its fingerprint is the XXH3-64 of the file's bytes (two random models of the
  /// same shape differ).
  /// @throws not_found_error if the file does not exist; invalid_argument ("path") if it is not
  ///         a GGUF file or llama.cpp cannot load it.
  explicit llama_cpp_model(const std::string& path) : path_(path) {
    detail::llama_cpp_init();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw not_found_error("hybridcache: GGUF model not found: " + detail::excerpt(path, 256));
    std::ifstream in(path, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                                    std::istreambuf_iterator<char>());
    if (bytes.size() < 4 || std::memcmp(bytes.data(), "GGUF", 4) != 0)
      detail::throw_invalid("path", path, "is not a GGUF file (no GGUF magic)");
    fingerprint_ = detail::llama_cpp_hash(bytes);
    auto mp = llama_model_default_params();
    model_.reset(llama_model_load_from_file(path.c_str(), mp));
    if (!model_)
      detail::throw_invalid("path", path, "llama.cpp could not load this GGUF model (corrupt?)");
    const std::int32_t n = llama_vocab_n_tokens(llama_model_get_vocab(model_.get()));
    if (n <= 0) detail::throw_invalid("path", path, "the model has an empty vocabulary");
    vocab_ = static_cast<std::size_t>(n);
  }

  [[nodiscard]] llama_model* get() const noexcept { return model_.get(); }
  /// Tokens in the vocabulary: valid ids are [0, vocab_size()).
  [[nodiscard]] std::size_t vocab_size() const noexcept { return vocab_; }
  [[nodiscard]] std::uint64_t fingerprint() const noexcept { return fingerprint_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// True if the model has recurrent layers (what makes snapshots necessary).
  [[nodiscard]] bool recurrent() const noexcept {
    return llama_model_is_recurrent(model_.get()) || llama_model_is_hybrid(model_.get());
  }

 private:
  struct deleter {
    void operator()(llama_model* m) const noexcept { llama_model_free(m); }
  };
  std::string path_;
  std::unique_ptr<llama_model, deleter> model_;
  std::size_t vocab_ = 0;
  std::uint64_t fingerprint_ = 0;
};

/// Construction parameters of `llama_cpp_engine`.
struct llama_cpp_options {
  std::size_t chunk_tokens = 64;      ///< C: prefill chunk grid, and llama.cpp's n_batch = n_ubatch
  std::size_t context_tokens = 4096;  ///< n_ctx: the longest prompt
  int threads = 1;  ///< CPU threads for llama_decode (the results do not depend on it)
};

/// One llama.cpp context with one sequence (seq id 0): chunked `llama_decode` and snapshot blobs
/// of the whole sequence. The primitives `llama_cpp_engine` and the tree-protocol driver
/// (engines/llama_cpp_replay.hpp) share: neither touches `llama_context` otherwise.
class llama_cpp_context {
 public:
  /// Creates the context: n_ctx = context_tokens, n_batch = n_ubatch = chunk_tokens.
  /// @throws invalid_argument for chunk_tokens 0 or above context_tokens, context_tokens above
  ///         2^24, threads < 1; error if llama.cpp cannot create the context.
  llama_cpp_context(const llama_cpp_model& model, llama_cpp_options opts)
      : model_(&model), opts_(opts) {
    if (opts.chunk_tokens == 0 || opts.chunk_tokens > opts.context_tokens ||
        opts.context_tokens > (std::size_t{1} << 24))
      detail::throw_invalid("opts.chunk_tokens", opts.chunk_tokens,
                            "must be in [1, context_tokens], context_tokens <= 2^24");
    if (opts.threads < 1) detail::throw_invalid("opts.threads", opts.threads, "must be >= 1");
    auto cp = llama_context_default_params();
    cp.n_ctx = static_cast<std::uint32_t>(opts.context_tokens);
    cp.n_batch = static_cast<std::uint32_t>(opts.chunk_tokens);
    cp.n_ubatch = static_cast<std::uint32_t>(opts.chunk_tokens);
    cp.n_seq_max = 1;
    cp.n_threads = opts.threads;
    cp.n_threads_batch = opts.threads;
    cp.no_perf = true;
    ctx_.reset(llama_init_from_model(model.get(), cp));
    if (!ctx_) throw error("hybridcache: llama.cpp could not create a context for " + model.path());
  }

  /// Empties the sequence (KV and recurrent state): the next decode starts at position 0.
  void clear() { llama_memory_clear(llama_get_memory(ctx_.get()), true); }

  /// Decodes tokens[from, to) at positions [from, to) as one batch, one ubatch; with `logits`,
  /// the last token's logits are computed (`logits()`).
  /// @throws invalid_argument for an empty range, one longer than chunk_tokens, past
  ///         `tokens.size()` or context_tokens, or a token id outside the vocabulary; error if
  ///         llama_decode fails.
  void decode(std::span<const token_id> tokens, std::size_t from, std::size_t to, bool logits) {
    if (from >= to || to - from > opts_.chunk_tokens || to > tokens.size() ||
        to > opts_.context_tokens)
      detail::throw_invalid("to", to,
                            "must cut a chunk (from = " + std::to_string(from) +
                                ", to] of at most chunk_tokens within the tokens and the context");
    const auto n = static_cast<std::int32_t>(to - from);
    llama_batch b = llama_batch_init(n, 0, 1);
    for (std::int32_t i = 0; i < n; ++i) {
      const token_id t = tokens[from + static_cast<std::size_t>(i)];
      if (t >= model_->vocab_size()) {
        llama_batch_free(b);
        detail::throw_invalid(
            detail::indexed("tokens", from + static_cast<std::size_t>(i)), t,
            "outside the vocabulary [0, " + std::to_string(model_->vocab_size()) + ")");
      }
      b.token[i] = static_cast<llama_token>(t);
      b.pos[i] = static_cast<llama_pos>(from) + i;
      b.n_seq_id[i] = 1;
      b.seq_id[i][0] = 0;
      b.logits[i] = logits && i == n - 1;
    }
    b.n_tokens = n;
    const std::int32_t rc = llama_decode(ctx_.get(), b);
    llama_batch_free(b);
    if (rc != 0)
      throw error("hybridcache: llama_decode failed with status " + std::to_string(rc) +
                  " on tokens [" + std::to_string(from) + ", " + std::to_string(to) + ")");
    evaluated_ += to - from;
  }

  /// Logits of the last token of the last decode made with `logits` (vocab_size values).
  /// @throws error if llama.cpp has none.
  [[nodiscard]] std::vector<float> logits() const {
    const float* l = llama_get_logits_ith(ctx_.get(), -1);
    if (l == nullptr) throw error("hybridcache: llama.cpp returned no logits");
    return {l, l + model_->vocab_size()};
  }

  /// The sequence (after decoding `position` tokens) as a blob: a 40-byte header (magic, model
  /// fingerprint, position, payload size, XXH3 checksum) + `llama_state_seq_get_data`.
  [[nodiscard]] std::vector<std::uint8_t> save(std::size_t position) {
    const std::size_t payload = llama_state_seq_get_size(ctx_.get(), 0);
    std::vector<std::uint8_t> blob(header_bytes + payload);
    const std::size_t got =
        llama_state_seq_get_data(ctx_.get(), blob.data() + header_bytes, payload, 0);
    if (got != payload) throw error("hybridcache: llama_state_seq_get_data copied a short state");
    const detail::llama_cpp_blob_header h{
        detail::llama_cpp_blob_magic, model_->fingerprint(), position, payload,
        detail::llama_cpp_hash(std::span(blob).subspan(header_bytes))};
    std::memcpy(blob.data(), &h, header_bytes);
    return blob;
  }

  /// Clears the sequence and loads `blob` (from `save` on the same model) at `position`.
  /// @throws invalid_argument ("blob") if it is truncated or padded, corrupted, written by
  ///         another model or covers another position, or llama.cpp refuses it.
  void load(std::span<const std::uint8_t> blob, std::size_t position) {
    detail::llama_cpp_blob_header h{};
    if (blob.size() < header_bytes)
      detail::throw_invalid("blob.size()", blob.size(), "shorter than a snapshot header");
    std::memcpy(&h, blob.data(), header_bytes);
    if (h.magic != detail::llama_cpp_blob_magic)
      detail::throw_invalid("blob",
                            detail::excerpt({reinterpret_cast<const char*>(blob.data()), 8}),
                            "is not a hybridcache llama.cpp snapshot (bad magic)");
    if (h.model != model_->fingerprint())
      detail::throw_invalid("blob", h.model,
                            "was written by another model (fingerprint differs from " +
                                std::to_string(model_->fingerprint()) + ")");
    if (h.payload != blob.size() - header_bytes)
      detail::throw_invalid("blob.size()", blob.size(),
                            "does not match the snapshot's recorded size " +
                                std::to_string(h.payload + header_bytes));
    if (h.position != position)
      detail::throw_invalid("blob", h.position,
                            "covers another position than " + std::to_string(position));
    const auto payload = blob.subspan(header_bytes);
    if (detail::llama_cpp_hash(payload) != h.checksum)
      detail::throw_invalid("blob", h.checksum, "is corrupted (payload checksum differs)");
    clear();
    const std::size_t read =
        llama_state_seq_set_data(ctx_.get(), payload.data(), payload.size(), 0);
    if (read != payload.size())
      detail::throw_invalid("blob", read, "llama.cpp refused the snapshot");
  }

  /// Tokens passed to llama_decode since construction.
  [[nodiscard]] std::size_t evaluated() const noexcept { return evaluated_; }
  [[nodiscard]] const llama_cpp_model& model() const noexcept { return *model_; }
  [[nodiscard]] const llama_cpp_options& options() const noexcept { return opts_; }

 private:
  struct ctx_deleter {
    void operator()(llama_context* c) const noexcept { llama_free(c); }
  };
  static constexpr std::size_t header_bytes = sizeof(detail::llama_cpp_blob_header);
  const llama_cpp_model* model_;
  llama_cpp_options opts_;
  std::unique_ptr<llama_context, ctx_deleter> ctx_;
  std::size_t evaluated_ = 0;
};

/// What one request did.
struct llama_cpp_result {
  std::vector<float> logits;            ///< of the last prompt token (vocab_size values)
  std::size_t prompt_tokens = 0;        ///< P
  std::size_t matched_tokens = 0;       ///< the policy's match (cached blocks)
  std::size_t resume_tokens = 0;        ///< the snapshot position the prefill resumed from
  std::size_t evaluated_tokens = 0;     ///< tokens llama_decode evaluated: P − resume
  std::vector<std::size_t> chunk_ends;  ///< every chunk end from 0 to P behind the logits
  std::vector<std::size_t> snapshots;   ///< positions snapshotted during this prefill
  std::size_t admitted = 0;             ///< of those, admitted by the policy
  std::size_t freed = 0;                ///< snapshots freed as the policy's victims
  double restore_seconds = 0.0;         ///< loading the resume snapshot
  double prefill_seconds = 0.0;         ///< llama_decode calls and snapshot copies
  double decision_seconds = 0.0;        ///< time inside the policy
};

/// One llama.cpp context (one sequence) whose prefix cache is run by a `state_policy`.
class llama_cpp_engine {
 public:
  /// Creates the context. `model` and `policy` must outlive the engine.
  /// @throws invalid_argument for chunk_tokens 0, not a multiple of the policy's block size, or
  ///         above context_tokens; threads < 1; error if llama.cpp cannot create the context.
  llama_cpp_engine(const llama_cpp_model& model, state_policy& policy, llama_cpp_options opts = {})
      : model_(&model), policy_(&policy), opts_(opts), ctx_(checked(model, policy, opts)) {}

  /// Prefills `prompt` under namespace `ns` through the cache (see the file comment).
  /// `user_starts`: the token positions where the prompt's user messages begin, if the caller
  /// knows them (empty: the learned branch point alone; `state_policy::message_branch_point`).
  /// @throws invalid_argument for an empty prompt, a prompt longer than context_tokens, a
  ///         token id outside the vocabulary or a user start not below the prompt's length
  ///         (before the policy is touched); not_found_error if the policy resumes from a node
  ///         whose snapshot this engine does not hold (freed or never stored); error if
  ///         llama_decode fails.
  llama_cpp_result prefill(const namespace_key& ns, std::span<const token_id> prompt,
                           std::span<const std::size_t> user_starts = {}) {
    check_prompt(prompt);
    for (std::size_t i = 0; i < user_starts.size(); ++i)
      if (user_starts[i] >= prompt.size())
        detail::throw_invalid(detail::indexed("user_starts", i), user_starts[i],
                              "is not below the prompt's length " + std::to_string(prompt.size()));
    const std::size_t P = prompt.size(), B = policy_->options().block_size;
    llama_cpp_result r;
    r.prompt_tokens = P;
    auto t = clock::now();
    match_result m = policy_->match(ns, prompt.first(P - 1));
    std::vector<std::size_t> candidates;
    for (std::size_t p = (m.resume_tokens / B + 1) * B; p <= P; p += B) candidates.push_back(p);
    std::vector<std::size_t> plan = policy_->prefill_plan(m, P, candidates);
    // The branch point is snapshotted like the plan: the deepest user-message start past the
    // resume, else the learned one (policy_options::branch_prior).
    std::optional<std::size_t> branch = policy_->message_branch_point(m, P, user_starts);
    if (!branch) branch = policy_->branch_point(m, P, candidates);
    // And the prefill's end for the prefill-end prior: the prompt's usable end, where a re-ask
    // resumes (policy_options::prefill_prior).
    const std::optional<std::size_t> end = policy_->prefill_end(m, P);
    for (const auto& q : {branch, end})
      if (q && !std::binary_search(plan.begin(), plan.end(), *q))
        plan.insert(std::lower_bound(plan.begin(), plan.end(), *q), *q);
    r.decision_seconds += seconds_since(t);
    r.matched_tokens = m.matched_tokens;
    r.resume_tokens = m.resume_tokens;

    // The resume snapshot must be loaded before the pin is released.
    std::vector<std::size_t> lineage;
    try {
      t = clock::now();
      ctx_.clear();
      if (m.resume_tokens > 0) {
        const stored* s = find(m.resume_node);
        if (s == nullptr)
          throw not_found_error("hybridcache: the policy resumes from node " +
                                std::to_string(m.resume_node) + " at " +
                                std::to_string(m.resume_tokens) +
                                " tokens, but the engine holds no snapshot there (evicted?)");
        ctx_.load(s->blob, m.resume_tokens);
        lineage = s->lineage;
      }
      r.restore_seconds = seconds_since(t);
    } catch (...) {
      policy_->unpin(m.resume_node);
      throw;
    }
    t = clock::now();
    policy_->unpin(m.resume_node);
    r.decision_seconds += seconds_since(t);

    // Chunk ends: the regular grid, every planned snapshot, the prompt end.
    std::vector<std::size_t> ends(plan.begin(), plan.end());
    const std::size_t C = opts_.chunk_tokens;
    for (std::size_t p = (m.resume_tokens / C + 1) * C; p < P; p += C) ends.push_back(p);
    ends.push_back(P);
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    // A planned position may sit more than C past the previous end: split it on the grid.
    std::vector<std::size_t> cuts;
    std::size_t at = m.resume_tokens;
    for (std::size_t e : ends) {
      while (e - at > C) cuts.push_back(at += C);
      cuts.push_back(at = e);
    }

    struct pending {
      std::size_t position;
      std::vector<std::uint8_t> blob;
      std::vector<std::size_t> lineage;
    };
    std::vector<pending> snaps;
    t = clock::now();
    at = m.resume_tokens;
    for (std::size_t e : cuts) {
      ctx_.decode(prompt, at, e, e == P);
      lineage.push_back(e);
      at = e;
      if (std::binary_search(plan.begin(), plan.end(), e))
        snaps.push_back({e, ctx_.save(e), lineage});
    }
    r.logits = ctx_.logits();
    r.prefill_seconds = seconds_since(t);
    r.evaluated_tokens = P - m.resume_tokens;
    r.chunk_ends = lineage;

    t = clock::now();
    const std::vector<node_id> path = policy_->insert(ns, prompt);
    if (end) policy_->note_prefill_end(path[*end / B - 1]);
    if (branch) policy_->note_branch_point(path[*branch / B - 1]);
    for (auto& s : snaps) {
      r.snapshots.push_back(s.position);
      const node_id v = path[s.position / B - 1];
      if (find(v) != nullptr) continue;  // already held (a concurrent path stored it)
      const admit_result a = policy_->admit(v, s.blob.size());
      for (node_id victim : a.victims) r.freed += release(victim);
      if (a.admitted) {
        bytes_ += s.blob.size();
        store_.push_back({v, std::move(s.blob), std::move(s.lineage)});
        ++r.admitted;
      }
    }
    r.decision_seconds += seconds_since(t);
    return r;
  }

  /// The same prompt without any cache: decoded from position 0 with chunk ends `chunk_ends`
  /// (ascending, last == P; empty: one chunk per `chunk_tokens`). The policy is not touched.
  /// @returns the logits of the last token.
  /// @throws invalid_argument for a bad prompt (as `prefill`) or chunk ends that are not
  ///         ascending, end past P or make a chunk longer than `chunk_tokens`.
  std::vector<float> prefill_uncached(std::span<const token_id> prompt,
                                      std::span<const std::size_t> chunk_ends = {}) {
    check_prompt(prompt);
    const std::size_t P = prompt.size();
    std::vector<std::size_t> ends(chunk_ends.begin(), chunk_ends.end());
    if (ends.empty()) {
      for (std::size_t p = opts_.chunk_tokens; p < P; p += opts_.chunk_tokens) ends.push_back(p);
      ends.push_back(P);
    }
    std::size_t at = 0;
    for (std::size_t i = 0; i < ends.size(); ++i) {
      if (ends[i] <= at || ends[i] - at > opts_.chunk_tokens || ends[i] > P)
        detail::throw_invalid(detail::indexed("chunk_ends", i), ends[i],
                              "chunk ends must ascend, stay <= P and cut chunks <= chunk_tokens");
      at = ends[i];
    }
    if (at != P) detail::throw_invalid("chunk_ends", at, "the last chunk end must be P");
    ctx_.clear();
    at = 0;
    for (std::size_t e : ends) {
      ctx_.decode(prompt, at, e, e == P);
      at = e;
    }
    return ctx_.logits();
  }

  /// The current sequence (after a prefill of `position` tokens) as a blob `load_state` accepts.
  [[nodiscard]] std::vector<std::uint8_t> save_state(std::size_t position) {
    return ctx_.save(position);
  }

  /// Replaces the current sequence by `blob` (from `save_state` of an engine on the same model).
  /// @throws invalid_argument ("blob") if it is truncated or padded, corrupted, written by
  ///         another model or covers another position than `position`, or llama.cpp refuses it.
  void load_state(std::span<const std::uint8_t> blob, std::size_t position) {
    ctx_.load(blob, position);
  }

  /// Snapshots held now, and their bytes (headers included: what the policy was told).
  [[nodiscard]] std::size_t stored_states() const noexcept { return store_.size(); }
  [[nodiscard]] std::size_t stored_bytes() const noexcept { return bytes_; }
  /// True if this engine holds a snapshot at `v`.
  [[nodiscard]] bool holds(node_id v) const noexcept { return find(v) != nullptr; }
  /// Frees the snapshot at `v` behind the policy's back (tests use it to simulate a lost state).
  /// @returns 1 if one was held.
  std::size_t forget(node_id v) { return release(v); }

  [[nodiscard]] const llama_cpp_model& model() const noexcept { return *model_; }
  [[nodiscard]] const llama_cpp_options& options() const noexcept { return opts_; }

 private:
  using clock = std::chrono::steady_clock;
  struct stored {
    node_id node;
    std::vector<std::uint8_t> blob;
    std::vector<std::size_t> lineage;  // chunk ends that built it
  };
  static double seconds_since(clock::time_point t) {
    return std::chrono::duration<double>(clock::now() - t).count();
  }

  static llama_cpp_context checked(const llama_cpp_model& model, const state_policy& policy,
                                   llama_cpp_options opts) {
    if (opts.chunk_tokens == 0 || opts.chunk_tokens % policy.options().block_size != 0)
      detail::throw_invalid("opts.chunk_tokens", opts.chunk_tokens,
                            "must be a positive multiple of the policy's block size");
    return llama_cpp_context(model, opts);
  }

  void check_prompt(std::span<const token_id> prompt) const {
    if (prompt.empty()) detail::throw_invalid("prompt.size()", 0, "must be >= 1");
    if (prompt.size() > opts_.context_tokens)
      detail::throw_invalid("prompt.size()", prompt.size(),
                            "exceeds context_tokens = " + std::to_string(opts_.context_tokens));
    const std::size_t n = model_->vocab_size();
    for (std::size_t i = 0; i < prompt.size(); ++i)
      if (prompt[i] >= n)
        detail::throw_invalid(detail::indexed("prompt", i), prompt[i],
                              "outside the vocabulary [0, " + std::to_string(n) + ")");
  }

  [[nodiscard]] const stored* find(node_id v) const noexcept {
    for (const auto& s : store_)
      if (s.node == v) return &s;
    return nullptr;
  }

  std::size_t release(node_id v) {
    for (auto it = store_.begin(); it != store_.end(); ++it)
      if (it->node == v) {
        bytes_ -= it->blob.size();
        store_.erase(it);
        return 1;
      }
    return 0;
  }

  const llama_cpp_model* model_;
  state_policy* policy_;
  llama_cpp_options opts_;
  llama_cpp_context ctx_;
  std::vector<stored> store_;
  std::size_t bytes_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
