#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Tree-shaped traces for the tree scenario of `hybridcache simulate` (DESIGN §7).
///
/// A `tree_trace` is a sequence of requests over a *block trie*: every distinct
/// (namespace, tokens[0, (i+1)·B)) prefix of full blocks is one node, so a request is a root and
/// a path of node ids. Nodes are interned by the library's namespace-aware chained block keys
/// (segment/keys.hpp: h_0 = root_key(ns), h_i = chain_key(h_{i−1}, block_i)); a key only
/// *addresses* a node: the node's parent and block tokens are compared before two blocks are
/// called equal. The namespace is in h_0, and every namespace has its own root node, so two
/// namespaces never share a node even when their tokens are equal.
///
/// A request has `prompt_tokens` of input and `output_tokens` generated after it; its path
/// covers the full blocks of input ++ output (⌊(prompt + output)/B⌋ nodes), of which the first
/// ⌊prompt/B⌋ lie inside the prompt. Turn t+1 of a conversation *extends* turn t's input and
/// output, which is what makes the trie deep.
///
/// Builders:
/// - `tree_trace_builder::add_tokens`: any token sequence (the existing text traces of
///   sim/builders.hpp are converted by `from_trace`);
/// - `tree_trace_builder::add_block_ids`: block-hash records (Mooncake `hash_ids`, one id a
///   512-token block; a node is (parent, id), compared exactly);
/// - `synthetic_multi_turn`: the embedded generator (see its comment).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/keyed_hash.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/sim/detail/random.hpp"
#include "hybridcache/sim/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// One request of a tree trace (see the file comment).
struct tree_request {
  std::uint32_t root = 0;             ///< the namespace's root node (empty prefix, free state)
  std::vector<std::uint32_t> path{};  ///< node of block 1, 2, …, ⌊(prompt+output)/B⌋
  std::size_t prompt_tokens = 0;      ///< input tokens (>= 1)
  std::size_t output_tokens = 0;      ///< generated tokens (their KV and states follow the prompt)
  double arrival = 0.0;               ///< seconds
  /// Token positions inside the prompt where the trace knows that a user-role message starts
  /// (strictly ascending, each < `prompt_tokens`; empty when the trace does not say). llama.cpp's
  /// server checkpoints there (`common_chat_msg_spans::is_user_start`, tools/server/
  /// server-context.cpp); only `llamacpp_policy` reads them (sim/tree/policies.hpp).
  std::vector<std::size_t> user_starts{};

  /// Full blocks inside the prompt, ⌊prompt/B⌋ (clamped to the path).
  [[nodiscard]] std::size_t prompt_blocks(std::size_t block) const noexcept {
    return std::min(path.size(), prompt_tokens / block);
  }
  /// Blocks a match may resume from: ⌊(prompt − 1)/B⌋ (at least one prompt token is always
  /// computed, for the first output's logits; SGLang's "input length − 1" cap).
  [[nodiscard]] std::size_t usable_blocks(std::size_t block) const noexcept {
    return std::min(path.size(), prompt_tokens == 0 ? std::size_t{0} : (prompt_tokens - 1) / block);
  }
};

/// Requests over a block trie (see the file comment).
class tree_trace {
 public:
  static constexpr std::uint32_t no_parent = 0xFFFFFFFFu;

  tree_trace() = default;
  tree_trace(std::string name, std::size_t block) : name_(std::move(name)), block_(block) {
    if (block == 0) hybridcache::detail::throw_invalid("block", block, "must be >= 1");
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  /// Tokens per block (node), B.
  [[nodiscard]] std::size_t block() const noexcept { return block_; }
  [[nodiscard]] const std::vector<tree_request>& requests() const noexcept { return requests_; }
  [[nodiscard]] std::size_t size() const noexcept { return requests_.size(); }
  /// Nodes of the trie, namespace roots included.
  [[nodiscard]] std::size_t node_count() const noexcept { return parent_.size(); }
  /// Parent of `v` (`no_parent` for a namespace root).
  [[nodiscard]] std::uint32_t parent(std::uint32_t v) const { return parent_.at(v); }
  /// Depth of `v` in blocks (0 for a root).
  [[nodiscard]] std::uint32_t depth(std::uint32_t v) const { return depth_.at(v); }
  /// Namespace index of `v` (the order namespaces were first seen).
  [[nodiscard]] std::uint32_t ns(std::uint32_t v) const { return ns_.at(v); }
  [[nodiscard]] std::size_t namespace_count() const noexcept { return roots_.size(); }
  /// Total prompt tokens over all requests.
  [[nodiscard]] std::size_t prompt_tokens() const noexcept { return prompt_tokens_; }

  /// @throws invalid_argument (naming `what`[i]) unless `starts` is strictly ascending and every
  ///         start is < `prompt_tokens` (`tree_request::user_starts`).
  static void check_user_starts(std::span<const std::size_t> starts, std::size_t prompt_tokens,
                                const char* what) {
    for (std::size_t i = 0; i < starts.size(); ++i) {
      if (starts[i] >= prompt_tokens || (i > 0 && starts[i] <= starts[i - 1]))
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed(what, i), starts[i],
                                           "must be strictly ascending and < prompt_tokens");
    }
  }

  /// Node bookkeeping for builders: a new node under `parent` (a root when `no_parent`).
  std::uint32_t new_node(std::uint32_t parent, std::uint32_t ns_index) {
    if (parent_.size() >= no_parent)
      throw capacity_error("hybridcache: tree trace has too many nodes");
    const auto id = static_cast<std::uint32_t>(parent_.size());
    parent_.push_back(parent);
    depth_.push_back(parent == no_parent ? 0u : depth_[parent] + 1u);
    ns_.push_back(ns_index);
    return id;
  }
  /// The root of namespace `key` (an opaque string; absent = the default namespace), created on
  /// first use.
  std::uint32_t root_of(const std::optional<std::string>& key) {
    const std::string k = key ? "s" + *key : std::string("d");  // absent != ""
    auto it = roots_.find(k);
    if (it != roots_.end()) return it->second;
    const auto id = new_node(no_parent, static_cast<std::uint32_t>(roots_.size()));
    roots_.emplace(k, id);
    return id;
  }
  /// Appends a request whose nodes already exist.
  /// @throws invalid_argument for 0 prompt tokens, a path longer than its tokens allow, a path
  ///         that is not a chain from `root`, a non-finite arrival, or user starts that are not
  ///         strictly ascending inside the prompt.
  void add_request(tree_request r) {
    if (r.prompt_tokens == 0)
      hybridcache::detail::throw_invalid("request.prompt_tokens", r.prompt_tokens, "must be >= 1");
    if (r.root >= parent_.size() || parent_[r.root] != no_parent)
      hybridcache::detail::throw_invalid("request.root", r.root, "is not a namespace root");
    if (r.path.size() > (r.prompt_tokens + r.output_tokens) / block_)
      hybridcache::detail::throw_invalid("request.path.size()", r.path.size(),
                                         "exceeds the full blocks of its tokens");
    std::uint32_t prev = r.root;
    for (std::size_t i = 0; i < r.path.size(); ++i) {
      if (r.path[i] >= parent_.size() || parent_[r.path[i]] != prev)
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed("request.path", i),
                                           r.path[i], "is not a child of the previous node");
      prev = r.path[i];
    }
    if (!std::isfinite(r.arrival))
      hybridcache::detail::throw_invalid("request.arrival", r.arrival, "must be finite");
    check_user_starts(r.user_starts, r.prompt_tokens, "request.user_starts");
    prompt_tokens_ += r.prompt_tokens;
    requests_.push_back(std::move(r));
  }

 private:
  std::string name_;
  std::size_t block_ = 1;
  std::vector<std::uint32_t> parent_, depth_, ns_;
  keyed_map<std::string, std::uint32_t> roots_;  // keyed: namespace names come from the trace
  std::vector<tree_request> requests_;
  std::size_t prompt_tokens_ = 0;
};

/// Builds a `tree_trace` by interning blocks (see the file comment).
class tree_trace_builder {
 public:
  tree_trace_builder(std::string name, std::size_t block) : t_(std::move(name), block) {}

  /// A request of `tokens` = prompt (the first `prompt_tokens`) ++ output, in namespace `ns`,
  /// with the positions where its user messages start (`tree_request::user_starts`; empty: not
  /// known).
  /// @throws invalid_argument when `prompt_tokens` is 0 or exceeds `tokens.size()`, or for user
  ///         starts that are not strictly ascending inside the prompt.
  void add_tokens(std::span<const token_id> tokens, std::size_t prompt_tokens,
                  const std::optional<std::string>& ns = {}, double arrival = 0.0,
                  std::span<const std::size_t> user_starts = {}) {
    if (prompt_tokens == 0 || prompt_tokens > tokens.size())
      hybridcache::detail::throw_invalid("prompt_tokens", prompt_tokens,
                                         "must be in [1, tokens.size()]");
    // Before any block is interned: a rejected request leaves the trie as it was.
    tree_trace::check_user_starts(user_starts, prompt_tokens, "user_starts");
    const std::size_t b = t_.block();
    tree_request r;
    r.root = t_.root_of(ns);
    r.prompt_tokens = prompt_tokens;
    r.output_tokens = tokens.size() - prompt_tokens;
    r.arrival = arrival;
    r.user_starts.assign(user_starts.begin(), user_starts.end());
    namespace_key nk = ns ? namespace_key{}.with_tenant(*ns) : namespace_key{};
    digest h = hybridcache::root_key(hash_, nk);
    std::uint32_t prev = r.root;
    for (std::size_t i = 0; i + b <= tokens.size(); i += b) {
      const auto blk = tokens.subspan(i, b);
      h = hybridcache::chain_key(hash_, h, blk);
      prev = intern_tokens(h, prev, blk);
      r.path.push_back(prev);
    }
    t_.add_request(std::move(r));
  }

  /// A request given by block ids (one id = one full block; shared leading ids = shared prefix),
  /// with `prompt_tokens` of input (the last block may be partial: it is then not a node).
  /// @throws invalid_argument when `prompt_tokens` does not fit the ids.
  void add_block_ids(std::span<const std::uint64_t> ids, std::size_t prompt_tokens,
                     const std::optional<std::string>& ns = {}, double arrival = 0.0) {
    const std::size_t b = t_.block();
    if (ids.empty() || prompt_tokens == 0 || prompt_tokens > ids.size() * b ||
        prompt_tokens <= (ids.size() - 1) * b)
      hybridcache::detail::throw_invalid("prompt_tokens", prompt_tokens,
                                         "must satisfy (ids-1)*block < prompt_tokens <= ids*block");
    tree_request r;
    r.root = t_.root_of(ns);
    r.prompt_tokens = prompt_tokens;
    r.arrival = arrival;
    const std::size_t full = prompt_tokens / b;
    std::uint32_t prev = r.root;
    for (std::size_t i = 0; i < full; ++i) {
      const std::pair<std::uint32_t, std::uint64_t> key{prev, ids[i]};
      auto it = by_id_.find(key);
      if (it == by_id_.end()) it = by_id_.emplace(key, t_.new_node(prev, t_.ns(prev))).first;
      prev = it->second;
      r.path.push_back(prev);
    }
    t_.add_request(std::move(r));
  }

  [[nodiscard]] tree_trace& trace() noexcept { return t_; }
  [[nodiscard]] tree_trace take() { return std::move(t_); }

 private:
  std::uint32_t intern_tokens(const digest& h, std::uint32_t parent,
                              std::span<const token_id> blk) {
    auto& bucket = by_key_[h];
    for (auto node : bucket) {
      // The key is an address: verify parent and tokens before calling it the same block.
      if (t_.parent(node) == parent &&
          std::equal(blk.begin(), blk.end(),
                     tokens_.begin() + static_cast<std::ptrdiff_t>(offset_[node]))) {
        return node;
      }
    }
    const auto node = t_.new_node(parent, t_.ns(parent));
    if (offset_.size() <= node) offset_.resize(node + 1, 0);
    offset_[node] = tokens_.size();
    tokens_.insert(tokens_.end(), blk.begin(), blk.end());
    bucket.push_back(node);
    return node;
  }

  tree_trace t_;
  xxh3_hash hash_{};
  std::unordered_map<digest, std::vector<std::uint32_t>, digest_hasher> by_key_;
  // (parent, id) -> node, exact. Keyed (keyed_hash.hpp): ids come from the trace file, and under
  // the identity std::hash crafted ids shared one bucket, O(n^2) to load (#21).
  keyed_map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t> by_id_;
  std::vector<token_id> tokens_;
  std::vector<std::size_t> offset_;
};

/// Converts a `trace` (the text builders of sim/builders.hpp: L-Eval documents with their
/// questions, system prompts with ShareGPT queries) into a tree trace of block size `block`: each
/// request's tokens are its prompt, with no output. Requests shorter than 1 token are skipped.
/// A request that `ends_with_query` gets one user start, where its query piece begins (after a
/// non-empty prefix): the query is a user message of its own (system prompt, then the user's
/// query; a document, then the question asked about it).
inline tree_trace from_trace(const trace& t, std::size_t block) {
  tree_trace_builder b(t.name(), block);
  std::vector<token_id> buf;
  for (const auto& r : t.requests()) {
    t.materialize(r, buf);
    if (buf.empty()) continue;
    std::size_t query_start = 0;
    if (r.ends_with_query && !r.pieces.empty())
      query_start = buf.size() - t.piece(r.pieces.back()).size();
    const std::size_t starts[1] = {query_start};
    b.add_tokens(buf, buf.size(), r.ns, r.arrival,
                 query_start > 0 && query_start < buf.size() ? std::span<const std::size_t>(starts)
                                                             : std::span<const std::size_t>{});
  }
  return b.take();
}

/// Shape of the embedded synthetic multi-turn workload.
struct multi_turn_options {
  std::size_t sessions = 400;                     ///< conversations
  std::size_t block = 64;                         ///< tokens per node
  std::size_t system_prompts = 4;                 ///< shared system-prompt families
  std::size_t system_tokens = 1024;               ///< tokens of one system prompt
  std::size_t max_turns = 10;                     ///< turns per session: uniform in [1, max_turns]
  std::size_t user_min = 32, user_max = 384;      ///< tokens of one user message
  std::size_t output_min = 32, output_max = 512;  ///< tokens of one answer
  double agent_fraction = 0.3;      ///< sessions that behave like agents (rewrite the middle)
  double branch_probability = 0.1;  ///< a turn re-asks from an earlier turn (a branch)
  double session_rate = 0.5;        ///< new sessions per second
  double think_time = 20.0;         ///< mean seconds between a session's turns
  std::uint64_t seed = 1;
};

/// The embedded synthetic multi-turn workload (no files). Sessions start by a Poisson process;
/// each picks one of `system_prompts` shared prompts (Zipf 1.0) and runs T turns, T uniform in
/// [1, max_turns]. Turn t+1's prompt = turn t's prompt ++ turn t's output ++ a new user message,
/// so it *extends* turn t's input+output. With `branch_probability` a turn instead re-asks from
/// an earlier turn's prompt (a regenerate / edit: the history branches). Agent sessions rewrite
/// the middle from their third turn on: the history after the system prompt is replaced by a
/// fresh summary of 1/4 of its length (a compaction), and later turns extend that. Requests are
/// sorted by arrival; everything is deterministic in `seed`. Each request carries where its user
/// messages start (`tree_request::user_starts`): each turn's new message, a compaction's summary
/// (a message of its own); a branch edits the message it cuts into, so it adds none.
/// @throws invalid_argument for 0 sessions/block/system prompts/turns or inverted ranges.
inline tree_trace synthetic_multi_turn(const multi_turn_options& o = {}) {
  if (o.sessions == 0) hybridcache::detail::throw_invalid("sessions", o.sessions, "must be >= 1");
  if (o.block == 0) hybridcache::detail::throw_invalid("block", o.block, "must be >= 1");
  if (o.system_prompts == 0)
    hybridcache::detail::throw_invalid("system_prompts", o.system_prompts, "must be >= 1");
  if (o.max_turns == 0)
    hybridcache::detail::throw_invalid("max_turns", o.max_turns, "must be >= 1");
  if (o.user_min == 0 || o.user_min > o.user_max)
    hybridcache::detail::throw_invalid("user_min", o.user_min, "must be in [1, user_max]");
  if (o.output_min > o.output_max)
    hybridcache::detail::throw_invalid("output_min", o.output_min, "must be <= output_max");
  if (!(o.session_rate > 0) || !(o.think_time > 0) || !std::isfinite(o.session_rate) ||
      !std::isfinite(o.think_time))
    hybridcache::detail::throw_invalid("session_rate", o.session_rate,
                                       "rates and think time must be finite and > 0");
  detail::rng rng(detail::derive_seed(o.seed, 0x7EE5));
  token_id next_token = 1;
  auto fresh = [&](std::vector<token_id>& out, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(next_token++);
  };
  std::vector<std::vector<token_id>> systems(o.system_prompts);
  for (auto& s : systems) fresh(s, o.system_tokens);
  detail::zipf pick(o.system_prompts, 1.0);

  struct pending {
    double arrival;
    std::vector<token_id> tokens;
    std::size_t prompt;
    std::vector<std::size_t> user_starts;
  };
  std::vector<pending> reqs;
  double start = 0.0;
  for (std::size_t s = 0; s < o.sessions; ++s) {
    start += rng.exponential(o.session_rate);
    const bool agent = rng.uniform() < o.agent_fraction;
    const auto& sys = systems[pick(rng)];
    const std::size_t turns = static_cast<std::size_t>(rng.between(1, o.max_turns));
    std::vector<std::vector<token_id>> prompts;  // prompt of each earlier turn
    std::vector<std::vector<std::size_t>> prompt_users;  // and where its user messages start
    std::vector<token_id> history(sys.begin(), sys.end());
    std::vector<std::size_t> users;  // user-message starts in history (the system prompt is not)
    double t = start;
    for (std::size_t turn = 0; turn < turns; ++turn) {
      bool edit = false;  // the new tokens continue an earlier user message
      if (turn > 0 && prompts.size() > 1 && rng.uniform() < o.branch_probability) {
        // Branch: re-ask from an earlier turn's prompt minus its user message.
        const std::size_t b = rng.below(prompts.size() - 1);
        const auto& base = prompts[b];
        history.assign(base.begin(), base.end() - static_cast<std::ptrdiff_t>(std::min(
                                                      base.size() - sys.size(), o.user_min)));
        // The cut lies inside that turn's user message (or at its start): the new tokens edit it.
        users = prompt_users[b];
        while (!users.empty() && users.back() > history.size()) users.pop_back();
        edit = !users.empty();
      } else if (agent && turn >= 2) {
        // Compaction: the middle is rewritten as a summary; the system prompt stays. The summary
        // is a user message of its own.
        const std::size_t middle = history.size() - sys.size();
        history.resize(sys.size());
        users.assign(1, sys.size());
        fresh(history, std::max<std::size_t>(1, middle / 4));
      }
      if (!edit && (users.empty() || users.back() != history.size()))
        users.push_back(history.size());
      fresh(history, rng.between(o.user_min, o.user_max));
      const std::size_t prompt = history.size();
      std::vector<token_id> tokens = history;
      fresh(tokens, rng.between(o.output_min, o.output_max));
      prompts.push_back(history);
      prompt_users.push_back(users);
      reqs.push_back({t, tokens, prompt, users});
      history = tokens;
      t += rng.exponential(1.0 / o.think_time);
    }
  }
  std::stable_sort(reqs.begin(), reqs.end(),
                   [](const pending& a, const pending& b) { return a.arrival < b.arrival; });
  tree_trace_builder b("multi-turn", o.block);
  for (const auto& r : reqs)
    b.add_tokens(r.tokens, r.prompt, std::nullopt, r.arrival, r.user_starts);
  return b.take();
}

HYBRIDCACHE_NAMESPACE_END
