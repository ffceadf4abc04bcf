#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Trace builders: turn already-read workload material (documents and their questions, system
/// prompts and user queries, retrieved passages, block-hash records) into a `trace` with Poisson
/// arrivals and skewed popularity, reproducibly from a seed.
///
/// The arrival model is the superposition of one Poisson process per group (a document, a system
/// prompt, a RAG question): the merged stream has exponential inter-arrival gaps of mean
/// 1/`rate` seconds and each arrival belongs to group g with probability ∝ 1/(rank(g)+1)^s
/// (Zipf popularity; the ranks are a seeded permutation of the groups so file order does not
/// decide which is hot). Within a group the suffix (question, query) is uniform. Under the
/// sparse-prefix paper's last-K cache only the induced order matters (§5 of the paper); the
/// times are kept for TTFT-style reports.
///
/// File formats are parsed by the `hybridcache` tool (tools/hybridcache/sim_readers.cpp), which
/// keeps JSON out of the core headers; these builders take the parsed material.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/keyed_hash.hpp"
#include "hybridcache/sim/detail/random.hpp"
#include "hybridcache/sim/tokenize.hpp"
#include "hybridcache/sim/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// How many requests to draw and how they arrive.
struct arrival_options {
  std::size_t requests = 10000;  ///< requests to generate
  double rate = 1.0;             ///< mean arrivals per second (Poisson)
  double zipf = 1.0;             ///< popularity skew over groups (0 = uniform)
  std::uint64_t seed = 1;        ///< names the trace
  /// Instead of `requests` Zipf draws, every group exactly once (its suffix drawn uniformly), in
  /// a seeded random order: reuse then comes only from what groups share, not from repeats.
  bool each_once = false;
};

/// A group of requests sharing a prefix: the prefix pieces, the alternative suffixes (each a
/// list of pieces; one is drawn uniformly per request — empty means "the prefix alone"), and the
/// namespace of the group's requests.
struct request_group {
  std::vector<std::uint32_t> prefix{};
  std::vector<std::vector<std::uint32_t>> suffixes{};
  std::optional<std::string> ns{};
  /// When true the group draws its suffix from the trace-wide `shared_suffixes` instead.
  bool use_shared_suffixes = false;
};

namespace detail {
inline void check_arrivals(const arrival_options& o) {
  if (!(o.rate > 0.0) || !(o.rate < 1e300))
    hybridcache::detail::throw_invalid("rate", o.rate, "must be finite and > 0");
  if (!(o.zipf >= 0.0) || !(o.zipf < 1e6))
    hybridcache::detail::throw_invalid("zipf", o.zipf, "must be finite and >= 0");
}
}  // namespace detail

/// Appends `opts.requests` requests drawn from `groups` to `t` (see the file comment for the
/// model; `each_once`: one request per group in a random order). A request is `group.prefix ++
/// suffix`; it `ends_with_query` when the suffix is not empty.
/// @param shared_suffixes suffixes for groups with `use_shared_suffixes` (e.g. ShareGPT queries
///        under every system prompt).
/// @throws invalid_argument for no groups, a group with nothing to draw, or a bad rate/zipf.
inline void generate_requests(trace& t, std::span<const request_group> groups,
                              const arrival_options& opts,
                              std::span<const std::vector<std::uint32_t>> shared_suffixes = {}) {
  detail::check_arrivals(opts);
  if (groups.empty())
    hybridcache::detail::throw_invalid("groups.size()", std::size_t{0}, "need at least one group");
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].use_shared_suffixes && shared_suffixes.empty()) {
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed("groups", g),
                                         "shared suffixes", "no shared suffixes were given");
    }
  }
  detail::rng r(detail::derive_seed(opts.seed, 0x67656e));
  // Seeded popularity ranks: rank_of[k] = the group holding popularity rank k.
  std::vector<std::size_t> rank_of(groups.size());
  std::iota(rank_of.begin(), rank_of.end(), std::size_t{0});
  for (std::size_t i = rank_of.size(); i > 1; --i) std::swap(rank_of[i - 1], rank_of[r.below(i)]);
  const detail::zipf pop(groups.size(), opts.zipf);
  double clock = 0.0;
  const std::size_t total = opts.each_once ? groups.size() : opts.requests;
  for (std::size_t i = 0; i < total; ++i) {
    clock += r.exponential(opts.rate);
    const request_group& g = groups[opts.each_once ? rank_of[i] : rank_of[pop(r)]];
    request q;
    q.pieces = g.prefix;
    q.ns = g.ns;
    q.arrival = clock;
    const auto& pool = g.use_shared_suffixes
                           ? shared_suffixes
                           : std::span<const std::vector<std::uint32_t>>(g.suffixes);
    if (!pool.empty()) {
      const auto& s = pool[r.below(pool.size())];
      q.pieces.insert(q.pieces.end(), s.begin(), s.end());
      q.ends_with_query = !s.empty();
    }
    t.add_request(std::move(q));
  }
}

/// A document with its questions, as text (L-Eval rows: `input` + `instructions`).
struct text_document {
  std::string text{};
  std::vector<std::string> questions{};
};

/// Document QA (the paper's QuALITY/NarrativeQA shape): request = document ++ "\n" ++ question,
/// tokenised with `tok`. One group per document.
/// @throws invalid_argument when no document has a question.
template <class Tokenizer = word_tokenizer>
trace build_document_qa(std::string name, std::span<const text_document> docs,
                        const arrival_options& opts, Tokenizer tok = {}) {
  trace t(std::move(name));
  std::vector<request_group> groups;
  for (const auto& d : docs) {
    if (d.questions.empty()) continue;
    request_group g;
    g.prefix.push_back(t.add_piece(tok.encode(d.text)));
    for (const auto& q : d.questions) g.suffixes.push_back({t.add_piece(tok.encode(q))});
    groups.push_back(std::move(g));
  }
  if (groups.empty())
    hybridcache::detail::throw_invalid("docs", docs.size(), "no document has a question");
  generate_requests(t, groups, opts);
  return t;
}

/// System prompts (the paper's System Prompts shape): request = prompt ++ one user query drawn
/// uniformly from the shared query pool. One group per prompt.
/// @throws invalid_argument for no prompts or no queries.
template <class Tokenizer = word_tokenizer>
trace build_system_prompts(std::string name, std::span<const std::string> prompts,
                           std::span<const std::string> queries, const arrival_options& opts,
                           Tokenizer tok = {}) {
  if (prompts.empty())
    hybridcache::detail::throw_invalid("prompts.size()", std::size_t{0},
                                       "need at least one prompt");
  if (queries.empty())
    hybridcache::detail::throw_invalid("queries.size()", std::size_t{0}, "need at least one query");
  trace t(std::move(name));
  std::vector<request_group> groups;
  for (const auto& p : prompts) {
    request_group g;
    g.prefix.push_back(t.add_piece(tok.encode(p)));
    g.use_shared_suffixes = true;
    groups.push_back(std::move(g));
  }
  std::vector<std::vector<std::uint32_t>> qs;
  for (const auto& q : queries) qs.push_back({t.add_piece(tok.encode(q))});
  generate_requests(t, groups, opts, qs);
  return t;
}

/// A retrieval-augmented prompt as text: a shared instruction, passages in retrieval order, and
/// the question (MuSiQue rows; multi_news rows split on "Passage i:").
struct text_rag_prompt {
  std::vector<std::string> passages{};
  std::string question{};
  std::optional<std::string> ns{};
};

/// Segment workload (HYPIC / CacheBlend shape): request = instruction ++ passage_1 ++ … ++
/// passage_k ++ question; every piece is a segment, the question is the query. Identical passage
/// text maps to the same piece, so a passage recurring in other prompts is the same segment.
template <class Tokenizer = word_tokenizer>
trace build_rag(std::string name, std::string_view instruction,
                std::span<const text_rag_prompt> prompts, const arrival_options& opts,
                Tokenizer tok = {}) {
  if (prompts.empty())
    hybridcache::detail::throw_invalid("prompts.size()", std::size_t{0},
                                       "need at least one prompt");
  trace t(std::move(name));
  keyed_map<std::string, std::uint32_t> seen;  // keyed: passage text is input
  auto piece_of = [&](const std::string& text) {
    auto it = seen.find(text);
    if (it != seen.end()) return it->second;
    const auto id = t.add_piece(tok.encode(text));
    seen.emplace(text, id);
    return id;
  };
  const std::uint32_t head = piece_of(std::string(instruction));
  std::vector<request_group> groups;
  for (const auto& p : prompts) {
    request_group g;
    g.ns = p.ns;
    g.prefix.push_back(head);
    for (const auto& s : p.passages) g.prefix.push_back(piece_of(s));
    g.suffixes.push_back({t.add_piece(tok.encode(p.question))});
    groups.push_back(std::move(g));
  }
  generate_requests(t, groups, opts);
  return t;
}

/// One record of a Mooncake-style block-hash trace.
struct block_hash_record {
  double timestamp_ms = 0.0;
  std::size_t input_length = 0;  ///< tokens; 0 = every block full
  std::vector<std::uint64_t> hash_ids{};
};

/// Replays a block-hash trace in its own order and timing: request i has `hash_ids.size()`
/// blocks of `block_size` tokens (the last one cut to `input_length`), each block's tokens
/// derived from its hash id (`expand_block_hash`), so shared leading ids are shared prefixes.
/// @throws invalid_argument naming the record when `input_length` does not fit its blocks
///         ((n−1)·block_size < input_length <= n·block_size) or timestamps decrease.
inline trace build_block_hash_trace(std::string name, std::span<const block_hash_record> records,
                                    std::size_t block_size = 512) {
  if (block_size == 0) hybridcache::detail::throw_invalid("block_size", block_size, "must be > 0");
  trace t(std::move(name));
  // hash id -> full block piece; keyed (keyed_hash.hpp): ids are input, and under the identity
  // std::hash crafted ids shared one bucket, O(n^2) to load (#21).
  keyed_map<std::uint64_t, std::uint32_t> full;
  std::map<std::pair<std::uint64_t, std::size_t>, std::uint32_t> partial;  // (hash, count) -> piece
  std::vector<token_id> buf;
  double last = -1e300;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& rec = records[i];
    const std::size_t n = rec.hash_ids.size();
    // n·block_size without wrapping (a local check until the library's checked arithmetic lands):
    // a trace larger than the address space is rejected before anything is expanded.
    if (n > std::numeric_limits<std::size_t>::max() / block_size) {
      hybridcache::detail::throw_invalid(
          hybridcache::detail::indexed("records", i) + ".hash_ids.size()", n,
          "blocks*block_size overflows size_t");
    }
    const std::size_t len = rec.input_length == 0 ? n * block_size : rec.input_length;
    if (n == 0 || len > n * block_size || len <= (n - 1) * block_size) {
      hybridcache::detail::throw_invalid(
          hybridcache::detail::indexed("records", i) + ".input_length", rec.input_length,
          "must satisfy (blocks-1)*block_size < input_length <= blocks*block_size");
    }
    if (rec.timestamp_ms < last) {
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed("records", i) + ".timestamp",
                                         rec.timestamp_ms, "timestamps must not decrease");
    }
    last = rec.timestamp_ms;
    request q;
    q.arrival = rec.timestamp_ms / 1000.0;
    for (std::size_t b = 0; b < n; ++b) {
      const std::size_t count = b + 1 < n ? block_size : len - (n - 1) * block_size;
      const std::uint64_t h = rec.hash_ids[b];
      if (count == block_size) {
        auto it = full.find(h);
        if (it == full.end()) {
          buf.clear();
          expand_block_hash(h, count, buf);
          it = full.emplace(h, t.add_piece(buf)).first;
        }
        q.pieces.push_back(it->second);
      } else {
        const auto key = std::make_pair(h, count);
        auto it = partial.find(key);
        if (it == partial.end()) {
          buf.clear();
          expand_block_hash(h, count, buf);
          it = partial.emplace(key, t.add_piece(buf)).first;
        }
        q.pieces.push_back(it->second);
      }
    }
    t.add_request(std::move(q));
  }
  return t;
}

HYBRIDCACHE_NAMESPACE_END
