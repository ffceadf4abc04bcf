#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Seeded synthetic tree-trace families: the *tuning set* of issue #24 (docs/tree_simulation.md,
/// "Tuning families and ablation") and one evaluation family. Seven generators, each a pure
/// function of its options (the seed included), each shaped after one workload whose prefix
/// structure the shared traces lack:
///
/// - `agent_loop` (`--tree agent-loop`): agent tool loops, system prompt ++ task ++ a growing
///   history of tool calls and results; the harness rewrites the *middle* of the history (a
///   summary or a truncation), so the prefix breaks mid-sequence;
/// - `rag_sessions` (`rag`): RAG under one shared system prompt, k passages of a Zipf-popular
///   corpus in varying order, then the question; some sessions ask follow-ups; sharing ends at
///   the first passage two prompts disagree on;
/// - `code_edit` (`code-edit`): code-editing sessions over a few repositories, shared files first,
///   then the chat; an edit in the middle of a file (by this or another session of the
///   repository) invalidates everything after it;
/// - `doc_qa_skewed` (`doc-qa-skewed`): long-document Q&A, heavy-tailed document lengths, bursty
///   skewed question arrivals; documents come back after long gaps;
/// - `prompt_library` (`prompt-library`, added after 0.2.0): hundreds of applications' system
///   prompts behind one endpoint, each a vendor's shared header ++ the app's own body (++ one of
///   a few versions of a last section), Zipf-popular with drifting ranks, mostly single-turn; the
///   prefix branches at two or three levels and the pool cannot hold every app;
/// - `doc_qa_repeat` (`doc-qa-repeat`, added after 0.2.0): `doc_qa_skewed` over a small
///   collection whose few questions per document are asked again and again, so most prompts were
///   seen before in full and a cell's recompute can be near zero;
/// - `tree_search` (`tree-search`, added 2026-12-03): beam search over reasoning steps with
///   best-of-n samples per kept node, so requests branch at prompt ends (the samples) and resume
///   at request ends (the kept samples' expansions). It is an *evaluation* family, built after
///   every constant of the library's row was fixed: nothing is tuned on it.
///
/// The first six traces are for *tuning and ablation only*: no result of record is reported on
/// them (the results of record stay on the shared traces, which no constant was tuned on).
///
/// Tokens are unique ids from one counter (a new segment never repeats a token), so two requests
/// share exactly the prefix the generator built them to share: no accidental block collisions,
/// and every change (a rewrite, an edit, a different passage) diverges at its first token. Each
/// generator first makes a `family_draft` (requests as slices of a token pool, in arrival order,
/// with the generator's *promise* of how much each shares with one earlier request — the tests
/// check it against the tokens), then `family_draft::build` interns the blocks into a
/// `tree_trace`. Requests of different sessions interleave: sessions start by a Poisson process
/// and each session's next request follows its previous one after an exponential gap. Each slice
/// carries its role in the chat (`slice_role`): system-prompt slices, and the slices that start a
/// user message (a task, a question, an instruction, a user turn, a compaction's summary); the
/// message after the system prompt is the user's (passages, files, a document). `build` turns
/// them into each request's `tree_request::user_starts`, where the llama.cpp rows checkpoint.
///
/// Every size below is a default with its reason; none was tuned on a result table.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/detail/random.hpp"
#include "hybridcache/sim/tree/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What a slice is in the chat it belongs to, as far as llama.cpp's checkpoints care
/// (`tree_request::user_starts`): part of the system prompt, the start of a user message, or
/// anything else (a document or file inside a user message, a model's output, a tool result).
enum class slice_role : std::uint8_t { other, system, user };

/// Tokens [begin, end) of segment `segment` of a `family_draft`'s pool, and its role.
struct token_slice {
  std::uint32_t segment = 0;
  std::size_t begin = 0, end = 0;
  slice_role role = slice_role::other;
  [[nodiscard]] std::size_t size() const noexcept { return end - begin; }
};

/// How a request relates to its reference request (`family_request::ref`).
enum class family_event : std::uint8_t {
  none,     ///< no reference (a session's first request with nothing promised)
  extend,   ///< it extends the reference's prompt ++ output (a follow-up / the next agent step)
  rewrite,  ///< agent_loop: the history's middle was summarised or truncated since the reference
  edit,     ///< code_edit: a file of the context was edited since the reference
  sibling,  ///< another session's / burst's request that shares a leading part (system prompt,
            ///< passages, document) and then differs
};

/// One request of a draft: prompt ++ output as slices of the pool, plus the generator's promise.
struct family_request {
  double arrival = 0.0;               ///< seconds (non-decreasing over the draft)
  std::uint32_t session = 0;          ///< the generator's session (agent trajectory, chat, burst)
  std::vector<token_slice> tokens{};  ///< prompt ++ output
  std::size_t prompt_tokens = 0;
  std::size_t output_tokens = 0;
  /// Index of an earlier request of the draft this one is compared with, or `npos`.
  std::size_t ref = npos;
  /// The promise: the longest common token prefix of this request's tokens (prompt ++ output) and
  /// `ref`'s, as the generator's bookkeeping (passage ids, edit positions, rewrite points) says.
  std::size_t shared_with_ref = 0;
  family_event event = family_event::none;

  static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();
};

/// A generated family: a token pool and requests over it, in arrival order.
struct family_draft {
  std::string name;
  std::vector<std::vector<token_id>> segments{};
  std::vector<family_request> requests{};

  /// Writes request `i`'s tokens (prompt ++ output) into `out` (replacing its contents).
  void materialize(std::size_t i, std::vector<token_id>& out) const {
    out.clear();
    for (const auto& s : requests.at(i).tokens) {
      const auto& seg = segments.at(s.segment);
      out.insert(out.end(), seg.begin() + static_cast<std::ptrdiff_t>(s.begin),
                 seg.begin() + static_cast<std::ptrdiff_t>(s.end));
    }
  }

  /// Where request `i`'s user messages start inside its prompt (`tree_request::user_starts`):
  /// at each `user` slice, and at the first slice after the system prompt (the message after
  /// it is the user's). Position 0 is never one (no checkpoint precedes the first token).
  [[nodiscard]] std::vector<std::size_t> user_starts(std::size_t i) const {
    const auto& r = requests.at(i);
    std::vector<std::size_t> out;
    std::size_t pos = 0;
    slice_role prev = slice_role::other;
    for (const auto& s : r.tokens) {
      const bool starts = s.role == slice_role::user ||
                          (prev == slice_role::system && s.role != slice_role::system);
      if (starts && pos > 0 && pos < r.prompt_tokens && (out.empty() || out.back() != pos))
        out.push_back(pos);
      pos += s.size();
      prev = s.role;
    }
    return out;
  }

  /// The tree trace of block size `block` (every request in the default namespace), with each
  /// request's user starts.
  /// @throws invalid_argument when `block` is 0.
  [[nodiscard]] tree_trace build(std::size_t block) const {
    tree_trace_builder b(name, block);
    std::vector<token_id> buf;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      materialize(i, buf);
      b.add_tokens(buf, requests[i].prompt_tokens, std::nullopt, requests[i].arrival,
                   user_starts(i));
    }
    return b.take();
  }
};

namespace detail {

/// Shared machinery of the family generators: the token pool and slice arithmetic.
class family_pool {
 public:
  explicit family_pool(std::string name) { d_.name = std::move(name); }

  /// A new segment of `n` never-seen tokens, as one slice.
  token_slice fresh(std::size_t n, slice_role role = slice_role::other) {
    std::vector<token_id> s(n);
    for (auto& t : s) t = next_++;
    return add(std::move(s), role);
  }
  /// A new segment with the given tokens, as one slice.
  token_slice add(std::vector<token_id> s, slice_role role = slice_role::other) {
    const auto id = static_cast<std::uint32_t>(d_.segments.size());
    const std::size_t n = s.size();
    d_.segments.push_back(std::move(s));
    return {id, 0, n, role};
  }
  [[nodiscard]] const std::vector<token_id>& segment(std::uint32_t id) const {
    return d_.segments.at(id);
  }
  /// A token id no segment holds yet (for edits built by hand).
  token_id next_token() noexcept { return next_++; }

  family_draft& draft() noexcept { return d_; }

  /// Requests sorted by arrival (stable: a session's order is kept), `ref` indices remapped.
  family_draft take() {
    auto& r = d_.requests;
    std::vector<std::size_t> order(r.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return r[a].arrival < r[b].arrival; });
    std::vector<std::size_t> where(r.size());
    for (std::size_t i = 0; i < order.size(); ++i) where[order[i]] = i;
    std::vector<family_request> sorted;
    sorted.reserve(r.size());
    for (auto i : order) {
      sorted.push_back(std::move(r[i]));
      auto& q = sorted.back();
      if (q.ref != family_request::npos) q.ref = where[q.ref];
    }
    r = std::move(sorted);
    return std::move(d_);
  }

 private:
  family_draft d_;
  token_id next_ = 1;
};

inline std::size_t total(const std::vector<token_slice>& v) noexcept {
  std::size_t n = 0;
  for (const auto& s : v) n += s.size();
  return n;
}
inline void append(std::vector<token_slice>& out, const std::vector<token_slice>& v) {
  out.insert(out.end(), v.begin(), v.end());
}

/// Log-uniform integer in [lo, hi] (1 <= lo <= hi): many small values, a few large ones — the
/// shape of tool outputs and source-file sizes.
inline std::size_t log_uniform(rng& r, std::size_t lo, std::size_t hi) {
  const double a = std::log(static_cast<double>(lo)), b = std::log(static_cast<double>(hi) + 1.0);
  const auto v = static_cast<std::size_t>(std::exp(a + r.uniform() * (b - a)));
  return std::clamp(v, lo, hi);
}

/// Bounded Pareto integer on [lo, hi] with tail index `alpha` > 0, by inversion of
/// F(x) = (1 − (lo/x)^α) / (1 − (lo/hi)^α).
inline std::size_t bounded_pareto(rng& r, double alpha, std::size_t lo, std::size_t hi) {
  const double l = static_cast<double>(lo), h = static_cast<double>(hi);
  const double c = 1.0 - std::pow(l / h, alpha);
  const double x = l / std::pow(1.0 - r.uniform() * c, 1.0 / alpha);
  return std::clamp(static_cast<std::size_t>(x), lo, hi);
}

/// Geometric count on {1, 2, …} with the given mean (>= 1), capped at `cap`.
inline std::size_t geometric(rng& r, double mean, std::size_t cap) {
  if (mean <= 1.0) return 1;
  const double p = 1.0 / mean;
  const auto k =
      1 + static_cast<std::size_t>(std::floor(std::log1p(-r.uniform()) / std::log1p(-p)));
  return std::min(k, cap);
}

inline void check_range(const char* what, std::size_t lo, std::size_t hi, std::size_t min = 1) {
  if (lo < min || lo > hi)
    hybridcache::detail::throw_invalid(what, lo, "needs min <= lo <= hi with positive sizes");
}
inline void check_positive(const char* what, double v) {
  if (!(v > 0.0) || !std::isfinite(v))
    hybridcache::detail::throw_invalid(what, v, "must be finite and > 0");
}
inline void check_probability(const char* what, double v) {
  if (!(v >= 0.0 && v <= 1.0)) hybridcache::detail::throw_invalid(what, v, "must be in [0, 1]");
}

/// A few harness system prompts, picked Zipf(1) (agent_loop, tree_search), and the link of a
/// session's first request to the previous first request under the same prompt: a `sibling`
/// that shares exactly that prompt (none before the prompt's first session).
class harness_prompts {
 public:
  harness_prompts(family_pool& pool, rng& r, std::size_t n, std::size_t lo, std::size_t hi)
      : pick_(n, 1.0), last_first_(n, family_request::npos) {
    for (std::size_t i = 0; i < n; ++i)
      prompts_.push_back(pool.fresh(r.between(lo, hi), slice_role::system));
  }
  std::size_t pick(rng& r) const { return pick_(r); }
  const token_slice& operator[](std::size_t i) const { return prompts_.at(i); }
  /// Links `q`, a session's first request under prompt `sys` that will be request `at` of the
  /// draft, to the previous such request.
  void link_first(family_request& q, std::size_t sys, std::size_t at) {
    q.ref = last_first_.at(sys);
    q.shared_with_ref = q.ref == family_request::npos ? 0 : prompts_[sys].size();
    q.event = q.ref == family_request::npos ? family_event::none : family_event::sibling;
    last_first_[sys] = at;
  }

 private:
  std::vector<token_slice> prompts_{};
  zipf pick_;
  std::vector<std::size_t> last_first_;
};

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// agent_loop

/// Shape of `agent_loop` (defaults and their reasons).
struct agent_loop_options {
  std::size_t sessions = 160;  ///< agent trajectories (≈ 2.7k requests at the defaults)
  /// Distinct agent harnesses (their system prompts + tool schemas), picked Zipf(1): a few
  /// harnesses serve most traffic.
  std::size_t system_prompts = 3;
  /// Harness system prompts with tool schemas run to several thousand tokens.
  std::size_t system_min = 3000, system_max = 6000;
  std::size_t task_min = 200, task_max = 2000;  ///< the task / issue text, one per session
  /// Tool calls per trajectory: tens, as in SWE-bench-style agents.
  std::size_t steps_min = 4, steps_max = 30;
  std::size_t call_min = 30, call_max = 300;  ///< one tool call (the model's output), uniform
  /// One tool result (file views, test logs, search hits), log-uniform: mostly short, a few long.
  std::size_t result_min = 100, result_max = 4000;
  /// Per step, the harness compacts the context (rewrites the middle) with this probability,
  /// besides the forced compaction at `context_limit`.
  double rewrite_probability = 0.08;
  /// A prompt that would pass this many tokens forces a compaction (a 32k-context deployment).
  std::size_t context_limit = 32768;
  double truncate_fraction = 0.5;  ///< compactions that drop the middle (the rest summarise it)
  double summary_ratio = 0.2;      ///< summary tokens per replaced token
  /// History items kept verbatim at the start: uniform in [0, keep_head_max] (some harnesses keep
  /// the first exploration steps).
  std::size_t keep_head_max = 2;
  std::size_t keep_tail = 2;  ///< most recent steps kept verbatim (the working set)
  double session_rate = 0.2;  ///< new trajectories per second (≈ 15 run at once)
  double step_latency = 4.0;  ///< mean seconds between steps (tool run + decode)
  std::uint64_t seed = 1;
};

/// Agent tool loops (see the file comment). Each trajectory sends system prompt ++ task ++
/// history, where the history is a list of items (a tool call ++ its result, or a summary); the
/// model's output is the next tool call, whose result is appended for the next step, so an
/// unchanged step *extends* the previous request. A compaction keeps the system prompt, the task,
/// the first h items (h uniform in [0, keep_head_max]) and the last `keep_tail` items, and
/// replaces the items between by a fresh summary (`summary_ratio` of their length) or drops them
/// (`truncate_fraction`): the next request diverges from the previous one exactly where the first
/// replaced item began (`family_event::rewrite`). A session's first request is a `sibling` of
/// the previous first request under the same system prompt (they share exactly that prompt).
/// @throws invalid_argument for empty or inverted ranges, non-positive rates, probabilities out
///         of [0, 1].
inline family_draft agent_loop(const agent_loop_options& o = {}) {
  using detail::total;
  if (o.sessions == 0) hybridcache::detail::throw_invalid("sessions", o.sessions, "must be >= 1");
  if (o.system_prompts == 0)
    hybridcache::detail::throw_invalid("system_prompts", o.system_prompts, "must be >= 1");
  detail::check_range("system_min", o.system_min, o.system_max);
  detail::check_range("task_min", o.task_min, o.task_max);
  detail::check_range("steps_min", o.steps_min, o.steps_max);
  detail::check_range("call_min", o.call_min, o.call_max);
  detail::check_range("result_min", o.result_min, o.result_max);
  detail::check_probability("rewrite_probability", o.rewrite_probability);
  detail::check_probability("truncate_fraction", o.truncate_fraction);
  detail::check_probability("summary_ratio", o.summary_ratio);
  detail::check_positive("session_rate", o.session_rate);
  detail::check_positive("step_latency", o.step_latency);
  if (o.keep_tail == 0)
    hybridcache::detail::throw_invalid("keep_tail", o.keep_tail, "must be >= 1");

  detail::rng rng(detail::derive_seed(o.seed, 0xA6E7));
  detail::family_pool pool("agent-loop");
  auto& reqs = pool.draft().requests;
  detail::harness_prompts systems(pool, rng, o.system_prompts, o.system_min, o.system_max);

  double start = 0.0;
  for (std::size_t s = 0; s < o.sessions; ++s) {
    start += rng.exponential(o.session_rate);
    const std::size_t sys = systems.pick(rng);
    const std::vector<token_slice> head{
        systems[sys], pool.fresh(rng.between(o.task_min, o.task_max), slice_role::user)};
    const std::size_t head_tokens = total(head);
    std::vector<std::vector<token_slice>> items;  // the history
    const auto steps = static_cast<std::size_t>(rng.between(o.steps_min, o.steps_max));
    double t = start;
    std::size_t prev = family_request::npos;
    bool rewritten = false;
    std::size_t rewrite_at = 0;
    for (std::size_t step = 0; step < steps; ++step) {
      family_request q;
      q.arrival = t;
      q.session = static_cast<std::uint32_t>(s);
      q.tokens = head;
      for (const auto& it : items) detail::append(q.tokens, it);
      q.prompt_tokens = total(q.tokens);
      const token_slice call = pool.fresh(rng.between(o.call_min, o.call_max));
      q.tokens.push_back(call);
      q.output_tokens = call.size();
      if (prev == family_request::npos) {
        systems.link_first(q, sys, reqs.size());
      } else {
        q.ref = prev;
        q.event = rewritten ? family_event::rewrite : family_event::extend;
        q.shared_with_ref = rewritten ? rewrite_at : total(reqs[prev].tokens);
      }
      prev = reqs.size();
      reqs.push_back(std::move(q));
      // The tool runs; its result joins the call as one history item.
      items.push_back({call, pool.fresh(detail::log_uniform(rng, o.result_min, o.result_max))});
      t += rng.exponential(1.0 / o.step_latency);
      // Compaction: random, or forced when the next prompt would pass the context limit.
      std::size_t prompt_next = head_tokens;
      for (const auto& it : items) prompt_next += total(it);
      const bool forced = prompt_next + o.call_max > o.context_limit;
      const bool random = rng.uniform() < o.rewrite_probability;
      const std::size_t h = static_cast<std::size_t>(rng.between(0, o.keep_head_max));
      const bool truncate = rng.uniform() < o.truncate_fraction;
      rewritten = false;
      if ((forced || random) && items.size() > h + o.keep_tail) {
        rewrite_at = head_tokens;
        for (std::size_t i = 0; i < h; ++i) rewrite_at += total(items[i]);
        const auto first = items.begin() + static_cast<std::ptrdiff_t>(h);
        const auto last = items.end() - static_cast<std::ptrdiff_t>(o.keep_tail);
        std::size_t middle = 0;
        for (auto it = first; it != last; ++it) middle += total(*it);
        items.erase(first, last);
        if (!truncate) {
          const auto n = std::max<std::size_t>(
              1, static_cast<std::size_t>(o.summary_ratio * static_cast<double>(middle)));
          // The summary is a user message of its own (as a harness's compaction writes it).
          items.insert(items.begin() + static_cast<std::ptrdiff_t>(h),
                       {pool.fresh(n, slice_role::user)});
        }
        rewritten = true;
      }
    }
  }
  return pool.take();
}

// ---------------------------------------------------------------------------------------------
// rag_sessions

/// Shape of `rag_sessions` (defaults and their reasons).
struct rag_options {
  std::size_t sessions = 2000;       ///< chats (≈ 4k requests at the defaults)
  std::size_t system_tokens = 1500;  ///< the one shared system prompt (instructions, citations)
  std::size_t corpus = 3000;         ///< passages in the index
  /// Passage (chunk) sizes: chunkers cut 256–1024-token chunks; uniform over a slightly wider band.
  std::size_t passage_min = 150, passage_max = 1200;
  double zipf = 1.0;                  ///< passage popularity (retrieval hits are heavy-tailed)
  std::size_t k_min = 3, k_max = 12;  ///< passages retrieved per query
  /// Probability the passages come in a canonical order (by corpus popularity rank, as a stable
  /// reranker or an id sort gives); otherwise in retrieval-score order (a random permutation).
  double ranked_order = 0.5;
  std::size_t question_min = 15, question_max = 200;
  std::size_t answer_min = 50, answer_max = 600;
  double multi_turn = 0.3;                     ///< sessions that ask follow-ups
  std::size_t follow_min = 1, follow_max = 6;  ///< follow-ups of such a session
  /// A follow-up retrieves 1–3 more passages, appended after the history before its question.
  double refresh_probability = 0.3;
  double session_rate = 2.0;  ///< new chats per second
  double think_time = 20.0;   ///< mean seconds between a chat's turns
  std::uint64_t seed = 1;
};

/// RAG sessions (see the file comment). A chat's first request = system prompt ++ k distinct
/// passages (Zipf draws) in canonical or score order ++ a question; the answer is the output. A
/// follow-up = the previous prompt ++ its answer (++ newly retrieved passages) ++ a new question,
/// so it extends its predecessor (`family_event::extend`). A chat's first request is a `sibling`
/// of the previous chat's first request: they share the system prompt and the passages they
/// agree on from the first one on (identical lists share all of them; the questions then differ).
/// @throws invalid_argument for empty or inverted ranges, k_max > corpus, non-positive rates,
///         probabilities out of [0, 1].
inline family_draft rag_sessions(const rag_options& o = {}) {
  using detail::total;
  if (o.sessions == 0) hybridcache::detail::throw_invalid("sessions", o.sessions, "must be >= 1");
  if (o.system_tokens == 0)
    hybridcache::detail::throw_invalid("system_tokens", o.system_tokens, "must be >= 1");
  detail::check_range("passage_min", o.passage_min, o.passage_max);
  detail::check_range("k_min", o.k_min, o.k_max);
  if (o.k_max + 3 > o.corpus)
    hybridcache::detail::throw_invalid("corpus", o.corpus, "must be >= k_max + 3");
  detail::check_range("question_min", o.question_min, o.question_max);
  detail::check_range("answer_min", o.answer_min, o.answer_max);
  detail::check_range("follow_min", o.follow_min, o.follow_max);
  detail::check_probability("ranked_order", o.ranked_order);
  detail::check_probability("multi_turn", o.multi_turn);
  detail::check_probability("refresh_probability", o.refresh_probability);
  detail::check_positive("session_rate", o.session_rate);
  detail::check_positive("think_time", o.think_time);
  if (!(o.zipf >= 0.0) || !std::isfinite(o.zipf))
    hybridcache::detail::throw_invalid("zipf", o.zipf, "must be finite and >= 0");

  detail::rng rng(detail::derive_seed(o.seed, 0x4A6));
  detail::family_pool pool("rag");
  auto& reqs = pool.draft().requests;
  const token_slice sys = pool.fresh(o.system_tokens, slice_role::system);
  std::vector<token_slice> corpus;  // index = popularity rank
  for (std::size_t p = 0; p < o.corpus; ++p)
    corpus.push_back(pool.fresh(rng.between(o.passage_min, o.passage_max)));
  const detail::zipf pop(o.corpus, o.zipf);
  auto retrieve = [&](std::size_t k, const std::vector<std::size_t>& avoid) {
    std::vector<std::size_t> chosen;
    while (chosen.size() < k) {
      const std::size_t p = pop(rng);
      if (std::find(chosen.begin(), chosen.end(), p) == chosen.end() &&
          std::find(avoid.begin(), avoid.end(), p) == avoid.end())
        chosen.push_back(p);
    }
    if (rng.uniform() < o.ranked_order) {
      std::sort(chosen.begin(), chosen.end());
    } else {
      for (std::size_t i = chosen.size(); i > 1; --i)
        std::swap(chosen[i - 1], chosen[rng.below(i)]);
    }
    return chosen;
  };

  std::size_t last_first = family_request::npos;
  std::vector<std::size_t> last_first_ids;
  double start = 0.0;
  for (std::size_t s = 0; s < o.sessions; ++s) {
    start += rng.exponential(o.session_rate);
    auto ids = retrieve(rng.between(o.k_min, o.k_max), {});
    const std::size_t turns =
        1 + (rng.uniform() < o.multi_turn
                 ? static_cast<std::size_t>(rng.between(o.follow_min, o.follow_max))
                 : 0);
    std::vector<token_slice> history{sys};
    for (auto p : ids) history.push_back(corpus[p]);
    double t = start;
    std::size_t prev = family_request::npos;
    for (std::size_t turn = 0; turn < turns; ++turn) {
      // (A refresh needs 3 passages the chat has not read yet.)
      if (turn > 0 && rng.uniform() < o.refresh_probability && ids.size() + 3 <= o.corpus) {
        const auto more = retrieve(rng.between(1, 3), ids);
        for (auto p : more) {
          history.push_back(corpus[p]);
          ids.push_back(p);
        }
      }
      history.push_back(pool.fresh(rng.between(o.question_min, o.question_max), slice_role::user));
      family_request q;
      q.arrival = t;
      q.session = static_cast<std::uint32_t>(s);
      q.tokens = history;
      q.prompt_tokens = total(history);
      const token_slice answer = pool.fresh(rng.between(o.answer_min, o.answer_max));
      q.tokens.push_back(answer);
      q.output_tokens = answer.size();
      if (turn == 0) {
        q.ref = last_first;
        if (q.ref != family_request::npos) {
          q.event = family_event::sibling;
          q.shared_with_ref = sys.size();
          for (std::size_t i = 0; i < std::min(ids.size(), last_first_ids.size()); ++i) {
            if (ids[i] != last_first_ids[i]) break;
            q.shared_with_ref += corpus[ids[i]].size();
          }
        }
        last_first = reqs.size();
        last_first_ids = ids;
      } else {
        q.ref = prev;
        q.event = family_event::extend;
        q.shared_with_ref = total(reqs[prev].tokens);
      }
      prev = reqs.size();
      reqs.push_back(std::move(q));
      history.push_back(answer);
      t += rng.exponential(1.0 / o.think_time);
    }
  }
  return pool.take();
}

// ---------------------------------------------------------------------------------------------
// code_edit

/// Shape of `code_edit` (defaults and their reasons).
struct code_edit_options {
  std::size_t sessions = 300;       ///< editing sessions (≈ 2.1k requests at the defaults)
  std::size_t repos = 4;            ///< a few repositories, interleaved
  double repo_zipf = 1.0;           ///< one repository gets most of the sessions
  std::size_t files_per_repo = 16;  ///< files a session may put in its context
  /// Source-file sizes in tokens, log-uniform: mostly small files, a few large ones.
  std::size_t file_min = 400, file_max = 8000;
  /// Files every session of a repository puts first (repository map, main module, README): the
  /// prefix sessions of one repository share.
  std::size_t core_files = 3;
  std::size_t task_files_min = 1, task_files_max = 4;  ///< files a session adds for its task
  std::size_t system_tokens = 2500;  ///< shared assistant prompt (edit format, rules)
  std::size_t turns_min = 2, turns_max = 12;
  std::size_t instruction_min = 20, instruction_max = 400;  ///< one user instruction
  std::size_t output_min = 100, output_max = 1500;          ///< a diff / an explanation
  /// A turn's output is applied (one file is edited) with this probability; the other turns
  /// discuss, plan or review.
  double edit_probability = 0.5;
  /// Of those edits, the share that hits a core file (a repository map or main module changes
  /// rarely; most edits land in the files of the task).
  double core_edit_fraction = 0.05;
  /// Tokens deleted at the edit point (uniform in [0, edit_max]) and inserted (uniform in
  /// [1, edit_max]; at least one, so the edited position always changes).
  std::size_t edit_max = 400;
  double session_rate = 0.1;  ///< new sessions per second (≈ 20 run at once, ≈ 10 on the top repo)
  double think_time = 30.0;  ///< mean seconds between a session's turns
  std::uint64_t seed = 1;
};

/// Code-editing sessions (see the file comment). A session works on one repository (Zipf
/// `repo_zipf`): its context is the system prompt ++ the repository's core files ++ its task
/// files, in repository order, at their *current* versions ++ the chat (instructions and
/// outputs) ++ the new instruction. After a turn, with `edit_probability` one of its files is
/// edited (a span at a uniform position replaced by fresh tokens), and the edit is visible to every
/// later request on that repository — this session's and the interleaved sessions'. Requests are
/// generated in arrival order (an event queue), so a session sees exactly the edits made before
/// its request. A session's next request extends the previous one when none of its files changed
/// (`family_event::extend`); otherwise it diverges at the earliest changed token, the first edit
/// position since the version it last saw, at that file's offset (`family_event::edit`).
/// @throws invalid_argument for empty or inverted ranges, core + task files > files per repo,
///         non-positive rates, probabilities out of [0, 1].
inline family_draft code_edit(const code_edit_options& o = {}) {
  using detail::total;
  if (o.sessions == 0) hybridcache::detail::throw_invalid("sessions", o.sessions, "must be >= 1");
  if (o.repos == 0) hybridcache::detail::throw_invalid("repos", o.repos, "must be >= 1");
  detail::check_range("file_min", o.file_min, o.file_max);
  detail::check_range("task_files_min", o.task_files_min, o.task_files_max, 0);
  if (o.core_files + o.task_files_max > o.files_per_repo)
    hybridcache::detail::throw_invalid("files_per_repo", o.files_per_repo,
                                       "must be >= core_files + task_files_max");
  if (o.core_files + o.task_files_min == 0)
    hybridcache::detail::throw_invalid("core_files", o.core_files,
                                       "core_files + task_files_min must be >= 1");
  detail::check_range("turns_min", o.turns_min, o.turns_max);
  detail::check_range("instruction_min", o.instruction_min, o.instruction_max);
  detail::check_range("output_min", o.output_min, o.output_max);
  detail::check_probability("edit_probability", o.edit_probability);
  detail::check_probability("core_edit_fraction", o.core_edit_fraction);
  if (o.edit_max == 0) hybridcache::detail::throw_invalid("edit_max", o.edit_max, "must be >= 1");
  if (!(o.repo_zipf >= 0.0) || !std::isfinite(o.repo_zipf))
    hybridcache::detail::throw_invalid("repo_zipf", o.repo_zipf, "must be finite and >= 0");
  detail::check_positive("session_rate", o.session_rate);
  detail::check_positive("think_time", o.think_time);

  detail::rng rng(detail::derive_seed(o.seed, 0xC0DE));
  detail::family_pool pool("code-edit");
  auto& reqs = pool.draft().requests;
  const token_slice sys = pool.fresh(o.system_tokens, slice_role::system);

  // A file's versions form a chain; version v was made from v − 1 by an edit at `edit_at[v]`.
  // Every edit puts a fresh token at its position, so versions a < b first differ at the
  // smallest edit position of a+1 … b.
  struct file {
    std::vector<token_slice> versions;
    std::vector<std::size_t> edit_at;
  };
  std::vector<std::vector<file>> repos(o.repos);
  for (auto& r : repos) {
    r.resize(o.files_per_repo);
    for (auto& f : r) {
      f.versions.push_back(pool.fresh(detail::log_uniform(rng, o.file_min, o.file_max)));
      f.edit_at.push_back(0);
    }
  }
  struct session {
    std::size_t repo = 0, turns = 0, done = 0;
    std::vector<std::size_t> files;  // repository order, core first
    std::vector<std::size_t> seen;   // version of each file in the last request
    std::vector<token_slice> chat;   // instructions and outputs so far
    std::size_t prev = family_request::npos;
  };
  std::vector<session> ss(o.sessions);
  const detail::zipf pick_repo(o.repos, o.repo_zipf);
  using event = std::pair<double, std::size_t>;  // (time, session)
  std::priority_queue<event, std::vector<event>, std::greater<>> queue;
  double start = 0.0;
  for (std::size_t s = 0; s < o.sessions; ++s) {
    start += rng.exponential(o.session_rate);
    auto& x = ss[s];
    x.repo = pick_repo(rng);
    x.turns = static_cast<std::size_t>(rng.between(o.turns_min, o.turns_max));
    for (std::size_t f = 0; f < o.core_files; ++f) x.files.push_back(f);
    const auto k = static_cast<std::size_t>(rng.between(o.task_files_min, o.task_files_max));
    std::vector<std::size_t> task;
    while (task.size() < k) {
      const std::size_t f = o.core_files + rng.below(o.files_per_repo - o.core_files);
      if (std::find(task.begin(), task.end(), f) == task.end()) task.push_back(f);
    }
    std::sort(task.begin(), task.end());
    x.files.insert(x.files.end(), task.begin(), task.end());
    queue.emplace(start, s);
  }
  while (!queue.empty()) {
    const auto [t, s] = queue.top();
    queue.pop();
    auto& x = ss[s];
    auto& repo = repos[x.repo];
    family_request q;
    q.arrival = t;
    q.session = static_cast<std::uint32_t>(s);
    q.tokens.push_back(sys);
    // The promise: the earliest position where this context differs from the previous request's.
    std::size_t offset = sys.size(), diverge = family_request::npos;
    for (std::size_t i = 0; i < x.files.size(); ++i) {
      const auto& f = repo[x.files[i]];
      const std::size_t now = f.versions.size() - 1;
      if (x.prev != family_request::npos && diverge == family_request::npos && x.seen[i] != now) {
        std::size_t at = std::numeric_limits<std::size_t>::max();
        for (std::size_t v = x.seen[i] + 1; v <= now; ++v) at = std::min(at, f.edit_at[v]);
        diverge = offset + at;
      }
      q.tokens.push_back(f.versions[now]);
      offset += f.versions[now].size();
    }
    x.seen.clear();
    for (auto fi : x.files) x.seen.push_back(repo[fi].versions.size() - 1);
    detail::append(q.tokens, x.chat);
    const token_slice instruction =
        pool.fresh(rng.between(o.instruction_min, o.instruction_max), slice_role::user);
    q.tokens.push_back(instruction);
    q.prompt_tokens = total(q.tokens);
    const token_slice output = pool.fresh(rng.between(o.output_min, o.output_max));
    q.tokens.push_back(output);
    q.output_tokens = output.size();
    if (x.prev != family_request::npos) {
      q.ref = x.prev;
      q.event = diverge == family_request::npos ? family_event::extend : family_event::edit;
      q.shared_with_ref = diverge == family_request::npos ? total(reqs[x.prev].tokens) : diverge;
    }
    x.prev = reqs.size();
    reqs.push_back(std::move(q));
    x.chat.push_back(instruction);
    x.chat.push_back(output);
    // The output is applied: one file of the session's context is edited.
    if (rng.uniform() < o.edit_probability) {
      const std::size_t task_files = x.files.size() - o.core_files;
      const bool core =
          task_files == 0 || (o.core_files > 0 && rng.uniform() < o.core_edit_fraction);
      const std::size_t fi =
          core ? x.files[rng.below(o.core_files)] : x.files[o.core_files + rng.below(task_files)];
      auto& f = repo[fi];
      const auto& cur = pool.segment(f.versions.back().segment);
      const std::size_t at = rng.below(cur.size());
      const std::size_t del = std::min<std::size_t>(rng.between(0, o.edit_max), cur.size() - at);
      const std::size_t ins = rng.between(1, o.edit_max);
      std::vector<token_id> next(cur.begin(), cur.begin() + static_cast<std::ptrdiff_t>(at));
      for (std::size_t i = 0; i < ins; ++i) next.push_back(pool.next_token());
      next.insert(next.end(), cur.begin() + static_cast<std::ptrdiff_t>(at + del), cur.end());
      f.versions.push_back(pool.add(std::move(next)));
      f.edit_at.push_back(at);
    }
    if (++x.done < x.turns) queue.emplace(t + rng.exponential(1.0 / o.think_time), s);
  }
  return pool.take();
}

// ---------------------------------------------------------------------------------------------
// doc_qa_skewed

/// Shape of `doc_qa_skewed` (defaults and their reasons).
struct doc_qa_skewed_options {
  std::size_t bursts = 500;     ///< visits: bursts of questions on one document (≈ 3.5k requests)
  std::size_t documents = 400;  ///< the collection
  /// Document lengths: bounded Pareto with tail index `length_alpha` on [doc_min, doc_max] —
  /// long-context document sets are heavy-tailed (median ≈ 2.8k, mean ≈ 5k, max 60k tokens).
  double length_alpha = 1.1;
  std::size_t doc_min = 1500, doc_max = 60000;
  std::size_t system_tokens = 300;  ///< a short shared instruction
  /// Which document a burst is about: Zipf over the collection, so popular documents come back
  /// (after long gaps) and most of the tail is read once.
  double doc_zipf = 1.1;
  double burst_rate = 0.2;    ///< bursts per second (a few overlap: requests interleave)
  double burst_mean = 7.0;    ///< questions per burst, geometric (mean 7, capped at 60)
  double question_gap = 1.5;  ///< mean seconds between a burst's questions (the burst)
  std::size_t question_min = 10, question_max = 150;
  std::size_t answer_min = 20, answer_max = 400;
  double follow_up = 0.25;  ///< a question that continues the burst's previous Q&A
  /// 0: every question is new. n > 0: each document has n questions, and a question is one of its
  /// document's n, drawn uniformly, so whole prompts are asked again (`doc_qa_repeat`).
  std::size_t question_pool = 0;
  std::string name = "doc-qa-skewed";  ///< the trace's name
  std::uint64_t seed = 1;
};

/// Long-document Q&A with skewed arrivals (see the file comment). A request = instruction ++
/// document ++ question (a follow-up: the previous request ++ its answer ++ the question,
/// `family_event::extend`); the answer is the output. A burst's first question, and every
/// question that is not a follow-up, is a `sibling` of the latest earlier request on the same
/// document: they share exactly instruction ++ document. With a `question_pool`, a question asked
/// before on its document is a `sibling` of the latest earlier request with the same prompt
/// instead: they share the whole prompt (answers are always new).
/// @throws invalid_argument for empty or inverted ranges, non-positive rates or tail index,
///         probabilities out of [0, 1].
inline family_draft doc_qa_skewed(const doc_qa_skewed_options& o = {}) {
  using detail::total;
  if (o.bursts == 0) hybridcache::detail::throw_invalid("bursts", o.bursts, "must be >= 1");
  if (o.documents == 0)
    hybridcache::detail::throw_invalid("documents", o.documents, "must be >= 1");
  if (o.system_tokens == 0)
    hybridcache::detail::throw_invalid("system_tokens", o.system_tokens, "must be >= 1");
  detail::check_range("doc_min", o.doc_min, o.doc_max);
  detail::check_range("question_min", o.question_min, o.question_max);
  detail::check_range("answer_min", o.answer_min, o.answer_max);
  detail::check_positive("length_alpha", o.length_alpha);
  detail::check_positive("burst_rate", o.burst_rate);
  detail::check_positive("burst_mean", o.burst_mean);
  detail::check_positive("question_gap", o.question_gap);
  detail::check_probability("follow_up", o.follow_up);
  if (!(o.doc_zipf >= 0.0) || !std::isfinite(o.doc_zipf))
    hybridcache::detail::throw_invalid("doc_zipf", o.doc_zipf, "must be finite and >= 0");
  if (o.question_pool > 1000)
    hybridcache::detail::throw_invalid("question_pool", o.question_pool, "must be <= 1000");
  if (o.question_pool != 0 && o.documents > 1'000'000)
    hybridcache::detail::throw_invalid("documents", o.documents,
                                       "must be <= 1000000 with a question pool");

  detail::rng rng(detail::derive_seed(o.seed, 0xD0C5));
  detail::family_pool pool(o.name);
  auto& reqs = pool.draft().requests;
  const token_slice sys = pool.fresh(o.system_tokens, slice_role::system);
  std::vector<token_slice> docs;
  for (std::size_t d = 0; d < o.documents; ++d)
    docs.push_back(pool.fresh(detail::bounded_pareto(rng, o.length_alpha, o.doc_min, o.doc_max)));
  const detail::zipf pick(o.documents, o.doc_zipf);
  // The question pools (none by default, so the default draws are unchanged).
  std::vector<token_slice> questions;
  for (std::size_t k = 0; k < o.documents * o.question_pool; ++k)
    questions.push_back(pool.fresh(rng.between(o.question_min, o.question_max), slice_role::user));

  // Bursts overlap in time, so "the latest earlier request on the document" needs the requests in
  // arrival order: draw everything first, then link siblings after the sort.
  std::vector<std::size_t> doc_of, question_of;  // question_of: pool index, or npos
  double start = 0.0;
  for (std::size_t b = 0; b < o.bursts; ++b) {
    start += rng.exponential(o.burst_rate);
    const std::size_t d = pick(rng);
    const std::size_t n = detail::geometric(rng, o.burst_mean, 60);
    double t = start;
    std::size_t prev = family_request::npos;
    for (std::size_t i = 0; i < n; ++i) {
      family_request q;
      q.arrival = t;
      q.session = static_cast<std::uint32_t>(b);
      if (prev != family_request::npos && rng.uniform() < o.follow_up) {
        q.ref = prev;
        q.event = family_event::extend;
        q.shared_with_ref = total(reqs[prev].tokens);
        q.tokens = reqs[prev].tokens;
      } else {
        q.tokens = {sys, docs[d]};
      }
      std::size_t qi = family_request::npos;
      if (o.question_pool != 0 && q.event != family_event::extend) {
        qi = d * o.question_pool + rng.below(o.question_pool);
        q.tokens.push_back(questions[qi]);
      } else {
        q.tokens.push_back(
            pool.fresh(rng.between(o.question_min, o.question_max), slice_role::user));
      }
      q.prompt_tokens = total(q.tokens);
      const token_slice answer = pool.fresh(rng.between(o.answer_min, o.answer_max));
      q.tokens.push_back(answer);
      q.output_tokens = answer.size();
      prev = reqs.size();
      reqs.push_back(std::move(q));
      doc_of.push_back(d);
      question_of.push_back(qi);
      t += rng.exponential(1.0 / o.question_gap);
    }
  }
  // Sort by arrival by hand (doc_of must follow), then link siblings.
  auto& r = reqs;
  std::vector<std::size_t> order(r.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return r[a].arrival < r[b].arrival; });
  std::vector<std::size_t> where(r.size());
  for (std::size_t i = 0; i < order.size(); ++i) where[order[i]] = i;
  std::vector<family_request> sorted;
  std::vector<std::size_t> sorted_doc, sorted_question;
  for (auto i : order) {
    sorted.push_back(std::move(r[i]));
    sorted_doc.push_back(doc_of[i]);
    sorted_question.push_back(question_of[i]);
    if (sorted.back().ref != family_request::npos) sorted.back().ref = where[sorted.back().ref];
  }
  std::vector<std::size_t> latest(o.documents, family_request::npos);
  std::vector<std::size_t> latest_asked(questions.size(), family_request::npos);
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    auto& q = sorted[i];
    const std::size_t qi = sorted_question[i];
    if (q.event != family_event::extend && qi != family_request::npos &&
        latest_asked[qi] != family_request::npos) {
      q.ref = latest_asked[qi];  // the same prompt asked again: all of it is shared
      q.event = family_event::sibling;
      q.shared_with_ref = q.prompt_tokens;
    } else if (q.event != family_event::extend && latest[sorted_doc[i]] != family_request::npos) {
      q.ref = latest[sorted_doc[i]];
      q.event = family_event::sibling;
      q.shared_with_ref = sys.size() + docs[sorted_doc[i]].size();
    }
    latest[sorted_doc[i]] = i;
    if (qi != family_request::npos) latest_asked[qi] = i;
  }
  r = std::move(sorted);
  return pool.take();  // already in arrival order: the stable sort keeps it
}

// ---------------------------------------------------------------------------------------------
// doc_qa_repeat

/// `doc-qa-repeat` (added after 0.2.0): a document Q&A service whose questions are a small fixed
/// set per document, asked again and again (an evaluation harness, an FAQ bot over manuals), so
/// most prompts were seen before in full. `doc_qa_skewed` with, as defaults:
/// - `question_pool` = 5 questions per document (the size of L-Eval's per-document sets);
/// - `documents` = 60, a collection whose document ends fit the larger state budgets, so a cell's
///   recompute can be near zero and a single miss decides it;
/// - `follow_up` = 0: re-asked questions stand alone.
/// Everything else as `doc_qa_skewed_options`. Added because the four L-Eval sets of the tree
/// scenario (docs/tree_simulation.md, "Public traces the row never saw") re-ask whole prompts and
/// no other family did; it is a tuning family like the others, nothing measured on it is a
/// result of record.
inline doc_qa_skewed_options doc_qa_repeat_defaults() {
  doc_qa_skewed_options o;
  o.question_pool = 5;
  o.documents = 60;
  o.follow_up = 0.0;
  o.name = "doc-qa-repeat";
  return o;
}

/// `doc_qa_skewed(o)` for options from `doc_qa_repeat_defaults()`.
inline family_draft doc_qa_repeat(const doc_qa_skewed_options& o = doc_qa_repeat_defaults()) {
  return doc_qa_skewed(o);
}

// ---------------------------------------------------------------------------------------------
// prompt_library

/// Shape of `prompt_library` (defaults and their reasons).
struct prompt_library_options {
  std::size_t conversations = 3000;  ///< conversations (≈ 5k requests at the defaults)
  /// Vendors (model providers, agent frameworks): every app's prompt opens with its vendor's
  /// shared header (identity, safety and formatting rules). A dozen, a few of them large: each
  /// app's vendor is a Zipf(1) draw.
  std::size_t vendors = 12;
  /// Distinct applications (system prompts): hundreds, as one API endpoint serves; more than the
  /// smaller state pools hold, so the pool must choose among apps of every popularity.
  std::size_t apps = 400;
  std::size_t header_min = 300, header_max = 3000;  ///< a vendor's header, log-uniform
  std::size_t body_min = 200, body_max = 6000;  ///< an app's instructions and tools, log-uniform
  /// Share of apps that serve 2–3 prompt versions at once (an A/B test, a dated or per-locale
  /// section): the versions share the app's body and differ in a last section.
  double variant_share = 0.3;
  std::size_t variant_min = 30, variant_max = 400;  ///< that last section, log-uniform
  double app_zipf = 1.0;  ///< app popularity (API traffic is heavy-tailed)
  /// Popularity drifts: after every `drift_every` conversations a random `drift_share` of the
  /// apps trade popularity ranks among themselves (launches, campaigns, time zones).
  std::size_t drift_every = 500;
  double drift_share = 0.2;
  std::size_t user_min = 10, user_max = 2000;  ///< a user message, log-uniform
  std::size_t answer_min = 20, answer_max = 800;
  double multi_turn = 0.25;                    ///< conversations that go on after one answer
  std::size_t follow_min = 1, follow_max = 5;  ///< further turns of such a conversation
  double rate = 3.0;                           ///< new conversations per second
  double think_time = 30.0;                    ///< mean seconds between a conversation's turns
  std::uint64_t seed = 1;
};

/// A library of system prompts behind one endpoint (see the file comment of `prompt_library`):
/// a conversation's first request = its app's vendor header ++ the app's body (++ one of its
/// versions' last sections) ++ a user message; the answer is the output; a follow-up = the
/// previous prompt ++ its answer ++ a new user message (`family_event::extend`). Apps are Zipf
/// draws over popularity ranks that drift. A conversation's first request is a `sibling` of the
/// previous conversation's first: they share the vendor header when the vendors agree, the body
/// when the apps do, the last section when the versions do, and never the user message.
/// @throws invalid_argument for no conversations, vendors or apps, empty or inverted ranges,
///         non-positive rates, probabilities out of [0, 1], a negative Zipf exponent.
inline family_draft prompt_library(const prompt_library_options& o = {}) {
  using detail::total;
  if (o.conversations == 0)
    hybridcache::detail::throw_invalid("conversations", o.conversations, "must be >= 1");
  if (o.vendors == 0) hybridcache::detail::throw_invalid("vendors", o.vendors, "must be >= 1");
  if (o.apps == 0) hybridcache::detail::throw_invalid("apps", o.apps, "must be >= 1");
  detail::check_range("header_min", o.header_min, o.header_max);
  detail::check_range("body_min", o.body_min, o.body_max);
  detail::check_range("variant_min", o.variant_min, o.variant_max);
  detail::check_range("user_min", o.user_min, o.user_max);
  detail::check_range("answer_min", o.answer_min, o.answer_max);
  detail::check_range("follow_min", o.follow_min, o.follow_max);
  detail::check_probability("variant_share", o.variant_share);
  detail::check_probability("drift_share", o.drift_share);
  detail::check_probability("multi_turn", o.multi_turn);
  detail::check_positive("rate", o.rate);
  detail::check_positive("think_time", o.think_time);
  if (o.drift_every == 0)
    hybridcache::detail::throw_invalid("drift_every", o.drift_every, "must be >= 1");
  if (!(o.app_zipf >= 0.0) || !std::isfinite(o.app_zipf))
    hybridcache::detail::throw_invalid("app_zipf", o.app_zipf, "must be finite and >= 0");

  detail::rng rng(detail::derive_seed(o.seed, 0x9A1));
  detail::family_pool pool("prompt-library");
  auto& reqs = pool.draft().requests;
  std::vector<token_slice> header;
  for (std::size_t v = 0; v < o.vendors; ++v)
    header.push_back(
        pool.fresh(detail::log_uniform(rng, o.header_min, o.header_max), slice_role::system));
  struct app {
    std::size_t vendor = 0;
    token_slice body{};
    std::vector<token_slice> versions{};  // empty: one version, no last section
  };
  std::vector<app> apps(o.apps);
  const detail::zipf vendor_pop(o.vendors, 1.0);
  for (auto& a : apps) {
    a.vendor = vendor_pop(rng);
    a.body = pool.fresh(detail::log_uniform(rng, o.body_min, o.body_max), slice_role::system);
    if (rng.uniform() < o.variant_share) {
      const std::size_t n = rng.between(2, 3);
      for (std::size_t i = 0; i < n; ++i)
        a.versions.push_back(
            pool.fresh(detail::log_uniform(rng, o.variant_min, o.variant_max), slice_role::system));
    }
  }
  std::vector<std::size_t> at_rank(o.apps);  // the app at each popularity rank
  std::iota(at_rank.begin(), at_rank.end(), std::size_t{0});
  const detail::zipf app_pop(o.apps, o.app_zipf);

  std::size_t last_first = family_request::npos, last_app = 0, last_version = 0;
  double start = 0.0;
  for (std::size_t c = 0; c < o.conversations; ++c) {
    if (c > 0 && c % o.drift_every == 0) {  // a share of the apps trade ranks
      std::vector<std::size_t> ranks;
      for (std::size_t r = 0; r < o.apps; ++r)
        if (rng.uniform() < o.drift_share) ranks.push_back(r);
      for (std::size_t i = ranks.size(); i > 1; --i)
        std::swap(at_rank[ranks[i - 1]], at_rank[ranks[rng.below(i)]]);
    }
    start += rng.exponential(o.rate);
    const std::size_t a = at_rank[app_pop(rng)];
    const std::size_t version = apps[a].versions.empty() ? 0 : rng.below(apps[a].versions.size());
    std::vector<token_slice> history{header[apps[a].vendor], apps[a].body};
    if (!apps[a].versions.empty()) history.push_back(apps[a].versions[version]);
    const std::size_t turns =
        1 + (rng.uniform() < o.multi_turn
                 ? static_cast<std::size_t>(rng.between(o.follow_min, o.follow_max))
                 : 0);
    double t = start;
    std::size_t prev = family_request::npos;
    for (std::size_t turn = 0; turn < turns; ++turn) {
      history.push_back(
          pool.fresh(detail::log_uniform(rng, o.user_min, o.user_max), slice_role::user));
      family_request q;
      q.arrival = t;
      q.session = static_cast<std::uint32_t>(c);
      q.tokens = history;
      q.prompt_tokens = total(history);
      const token_slice answer = pool.fresh(detail::log_uniform(rng, o.answer_min, o.answer_max));
      q.tokens.push_back(answer);
      q.output_tokens = answer.size();
      if (turn == 0) {
        q.ref = last_first;
        if (q.ref != family_request::npos) {
          q.event = family_event::sibling;
          const app& p = apps[last_app];
          if (p.vendor == apps[a].vendor) {
            q.shared_with_ref = header[apps[a].vendor].size();
            if (last_app == a) {
              q.shared_with_ref += apps[a].body.size();
              if (!apps[a].versions.empty() && last_version == version)
                q.shared_with_ref += apps[a].versions[version].size();
            }
          }
        }
        last_first = reqs.size();
        last_app = a;
        last_version = version;
      } else {
        q.ref = prev;
        q.event = family_event::extend;
        q.shared_with_ref = total(reqs[prev].tokens);
      }
      prev = reqs.size();
      reqs.push_back(std::move(q));
      history.push_back(answer);
      t += rng.exponential(1.0 / o.think_time);
    }
  }
  return pool.take();
}

// ---------------------------------------------------------------------------------------------
// tree_search

/// Shape of `tree_search` (defaults and their reasons). Added 2026-12-03, after every constant of
/// the library's row was fixed, as an *evaluation* family: no constant is chosen on it.
struct tree_search_options {
  std::size_t problems = 100;  ///< searches (≈ 3.5k requests at the defaults)
  /// Solver harnesses (instructions and worked examples), picked Zipf(1), as agent-loop's.
  std::size_t system_prompts = 2;
  std::size_t system_min = 800, system_max = 3000;
  /// The problem (a statement, or code and an issue), log-uniform: mostly short, a few long.
  std::size_t problem_min = 200, problem_max = 8000;
  std::size_t width_min = 1, width_max = 3;    ///< beam width: nodes kept per depth
  std::size_t branch_min = 2, branch_max = 4;  ///< samples drawn per kept node (best-of-n's n)
  std::size_t depth_min = 3, depth_max = 10;   ///< reasoning steps per search
  /// One reasoning step (a sample's output), log-uniform: short moves and long derivations.
  std::size_t step_min = 100, step_max = 4000;
  double problem_rate = 0.1;  ///< new searches per second (≈ 10 run at once)
  /// Mean seconds from a depth's last sample to the next depth's first (decoding and scoring).
  double step_latency = 8.0;
  double spread = 0.5;  ///< mean seconds between the samples of one depth (a parallel burst)
  std::uint64_t seed = 1;
};

/// Tree search over reasoning steps (beam search / tree-of-thought with best-of-n sampling):
/// a structure none of the other families has, and Proposition 2's two candidates at once
/// (docs/design/tree_safeguard.md §3). A search sends system prompt ++ problem and draws
/// `branch` samples of one step each; the scorer keeps `width` of the samples (uniformly at
/// random here: its scores are not modelled), and each kept node is expanded the same way, its
/// prompt being the path so far, for `depth` steps. So the `branch` samples of a node share its
/// whole prompt and differ from their first output token (`sibling`, the promise = the prompt;
/// a state at the prompt end serves them all), and the first sample of a kept node extends the
/// request that wrote its last step (`extend`; a state at that request's end serves it). A
/// search's first request is a `sibling` of the previous first request under the same system
/// prompt (they share exactly that prompt).
/// @throws invalid_argument for empty or inverted ranges and non-positive rates.
inline family_draft tree_search(const tree_search_options& o = {}) {
  using detail::total;
  if (o.problems == 0) hybridcache::detail::throw_invalid("problems", o.problems, "must be >= 1");
  if (o.system_prompts == 0)
    hybridcache::detail::throw_invalid("system_prompts", o.system_prompts, "must be >= 1");
  detail::check_range("system_min", o.system_min, o.system_max);
  detail::check_range("problem_min", o.problem_min, o.problem_max);
  detail::check_range("width_min", o.width_min, o.width_max);
  detail::check_range("branch_min", o.branch_min, o.branch_max);
  detail::check_range("depth_min", o.depth_min, o.depth_max);
  detail::check_range("step_min", o.step_min, o.step_max);
  detail::check_positive("problem_rate", o.problem_rate);
  detail::check_positive("step_latency", o.step_latency);
  detail::check_positive("spread", o.spread);

  detail::rng rng(detail::derive_seed(o.seed, 0x75EE));
  detail::family_pool pool("tree-search");
  auto& reqs = pool.draft().requests;
  detail::harness_prompts systems(pool, rng, o.system_prompts, o.system_min, o.system_max);

  struct node {
    std::vector<token_slice> tokens{};           // its prompt for the next depth
    std::size_t request = family_request::npos;  // the request that wrote its last step
  };
  double start = 0.0;
  for (std::size_t p = 0; p < o.problems; ++p) {
    start += rng.exponential(o.problem_rate);
    const std::size_t sys = systems.pick(rng);
    const auto depth = static_cast<std::size_t>(rng.between(o.depth_min, o.depth_max));
    const auto width = static_cast<std::size_t>(rng.between(o.width_min, o.width_max));
    const auto branch = static_cast<std::size_t>(rng.between(o.branch_min, o.branch_max));
    std::vector<node> frontier(1);
    frontier[0].tokens = {
        systems[sys],
        pool.fresh(detail::log_uniform(rng, o.problem_min, o.problem_max), slice_role::user)};
    double t = start;
    for (std::size_t d = 0; d < depth; ++d) {
      std::vector<node> children;
      double at = t;
      for (const auto& n : frontier) {
        std::size_t first = family_request::npos;
        for (std::size_t k = 0; k < branch; ++k) {
          family_request q;
          q.arrival = at;
          q.session = static_cast<std::uint32_t>(p);
          q.tokens = n.tokens;
          q.prompt_tokens = total(n.tokens);
          const token_slice step = pool.fresh(detail::log_uniform(rng, o.step_min, o.step_max));
          q.tokens.push_back(step);
          q.output_tokens = step.size();
          if (k > 0) {  // another sample of the same prompt
            q.ref = first;
            q.event = family_event::sibling;
            q.shared_with_ref = q.prompt_tokens;
          } else if (n.request != family_request::npos) {  // the kept node's expansion
            q.ref = n.request;
            q.event = family_event::extend;
            q.shared_with_ref = total(reqs[n.request].tokens);
          } else {  // the search's first request
            systems.link_first(q, sys, reqs.size());
          }
          if (k == 0) first = reqs.size();
          children.push_back({q.tokens, reqs.size()});
          reqs.push_back(std::move(q));
          at += rng.exponential(1.0 / o.spread);
        }
      }
      // The beam: `width` of the samples, uniformly without replacement (a partial shuffle).
      const std::size_t keep = std::min(width, children.size());
      for (std::size_t i = 0; i < keep; ++i)
        std::swap(children[i], children[i + rng.below(children.size() - i)]);
      children.resize(keep);
      frontier = std::move(children);
      t = at + rng.exponential(1.0 / o.step_latency);
    }
  }
  return pool.take();
}

// ---------------------------------------------------------------------------------------------
// By name

/// The family names `tree_family` accepts (the CLI's `--tree` names).
inline constexpr std::string_view tree_family_names[] = {
    "agent-loop",     "rag",           "code-edit",  "doc-qa-skewed",
    "prompt-library", "doc-qa-repeat", "tree-search"};

/// Size and seed of a family run from the CLI: `sessions` (0 = the family's default) scales the
/// family's session count (bursts for doc-qa-skewed).
struct tree_family_options {
  std::size_t sessions = 0;
  std::uint64_t seed = 1;
};

/// The draft of family `name` (one of `tree_family_names`) at its defaults, resized and seeded.
/// @throws invalid_argument for an unknown name.
inline family_draft tree_family_draft(std::string_view name, const tree_family_options& f = {}) {
  if (name == "agent-loop") {
    agent_loop_options o;
    o.seed = f.seed;
    if (f.sessions) o.sessions = f.sessions;
    return agent_loop(o);
  }
  if (name == "rag") {
    rag_options o;
    o.seed = f.seed;
    if (f.sessions) o.sessions = f.sessions;
    return rag_sessions(o);
  }
  if (name == "code-edit") {
    code_edit_options o;
    o.seed = f.seed;
    if (f.sessions) o.sessions = f.sessions;
    return code_edit(o);
  }
  if (name == "doc-qa-skewed") {
    doc_qa_skewed_options o;
    o.seed = f.seed;
    if (f.sessions) o.bursts = f.sessions;
    return doc_qa_skewed(o);
  }
  if (name == "doc-qa-repeat") {
    auto o = doc_qa_repeat_defaults();
    o.seed = f.seed;
    if (f.sessions) o.bursts = f.sessions;
    return doc_qa_repeat(o);
  }
  if (name == "prompt-library") {
    prompt_library_options o;
    o.seed = f.seed;
    if (f.sessions) o.conversations = f.sessions;
    return prompt_library(o);
  }
  if (name == "tree-search") {
    tree_search_options o;
    o.seed = f.seed;
    if (f.sessions) o.problems = f.sessions;
    return tree_search(o);
  }
  hybridcache::detail::throw_invalid("family", name, "unknown tree family");
}

/// `tree_family_draft(name, f).build(block)`.
inline tree_trace tree_family(std::string_view name, std::size_t block,
                              const tree_family_options& f = {}) {
  return tree_family_draft(name, f).build(block);
}

HYBRIDCACHE_NAMESPACE_END
