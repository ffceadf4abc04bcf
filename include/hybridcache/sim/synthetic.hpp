#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Embedded synthetic workloads: traces that need no files, so a fresh clone runs the simulator
/// with zero downloads. Each reproduces the *shape* of a real workload's overlap-depth
/// distribution (the sparse-prefix paper's Fig. 1) or segment reuse (HYPIC's RAG prompts); the
/// tokens are random ids from a 32,000-word vocabulary, so unrelated text shares no long prefix,
/// as in real data.
///
/// | generator | models | overlap depth of a hit |
/// |---|---|---|
/// | `synthetic_document_qa` | QuALITY / NarrativeQA: many questions about one document | spike at
/// the document length | | `synthetic_system_prompt` | System Prompts: product prompts sharing
/// preambles and family bases, ShareGPT-like queries | mass at short depths (shared preambles),
/// family divergence points, full prompt | | `synthetic_multimodal` | requests that read a long
/// context up to one of a few section ends | three modes at 25 %, 60 %, 95 % of N | |
/// `synthetic_rag` | HYPIC / CacheBlend RAG prompts over a passage pool, two namespaces |
/// segment-level reuse at varying positions | | `cold_segments_request` | HYPIC Fig. 14: one prompt
/// of n cold segments of equal length | — |
///
/// Every generator is a pure function of its options (the seed included).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/sim/builders.hpp"
#include "hybridcache/sim/detail/random.hpp"
#include "hybridcache/sim/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Options of the sparse-prefix generators.
struct synthetic_options {
  std::size_t requests = 4000;  ///< requests to draw
  std::size_t length = 4096;    ///< scale N of the shared prefixes, in tokens (>= 64)
  std::uint64_t seed = 1;
  double zipf = 1.0;  ///< popularity skew of documents / prompts
  double rate = 1.0;  ///< Poisson arrivals per second
};

namespace detail {

inline constexpr std::uint64_t synthetic_vocabulary = 32000;

inline std::vector<token_id> random_tokens(detail::rng& r, std::size_t n) {
  std::vector<token_id> v(n);
  for (auto& t : v) t = static_cast<token_id>(r.below(synthetic_vocabulary));
  return v;
}

inline void check_synthetic(const synthetic_options& o) {
  if (o.length < 64)
    hybridcache::detail::throw_invalid("length", o.length, "synthetic prefixes need length >= 64");
  if (o.requests == 0) hybridcache::detail::throw_invalid("requests", o.requests, "must be > 0");
}

inline arrival_options arrivals_of(const synthetic_options& o) {
  return {.requests = o.requests, .rate = o.rate, .zipf = o.zipf, .seed = o.seed};
}

}  // namespace detail

/// QuALITY-shaped: 24 documents of U[N/2, N] tokens, 8–16 questions each (8–64 tokens, all
/// starting with the same 3-token template), request = document ++ question.
inline trace synthetic_document_qa(const synthetic_options& o = {}) {
  detail::check_synthetic(o);
  detail::rng r(detail::derive_seed(o.seed, 1));
  trace t("synthetic-docqa");
  const auto tmpl = detail::random_tokens(r, 3);
  std::vector<request_group> groups(24);
  for (auto& g : groups) {
    g.prefix.push_back(t.add_piece(detail::random_tokens(r, r.between(o.length / 2, o.length))));
    const auto nq = r.between(8, 16);
    for (std::uint64_t q = 0; q < nq; ++q) {
      auto toks = tmpl;
      auto body = detail::random_tokens(r, r.between(5, 61));
      toks.insert(toks.end(), body.begin(), body.end());
      g.suffixes.push_back({t.add_piece(toks)});
    }
  }
  generate_requests(t, groups, detail::arrivals_of(o));
  return t;
}

/// System-Prompts-shaped: 4 short preambles (24–64 tokens) shared across products; 8 families,
/// each a preamble ++ a base of U[N/4, N/2] tokens; 6 variants per family that keep the family
/// base up to a random cut and continue with their own U[N/8, N/2] tokens; 300 queries of 4–128
/// tokens shared by every prompt. Request = variant ++ query; popularity is Zipf over the 48
/// variants.
inline trace synthetic_system_prompt(const synthetic_options& o = {}) {
  detail::check_synthetic(o);
  detail::rng r(detail::derive_seed(o.seed, 2));
  trace t("synthetic-sysprompt");
  std::vector<std::uint32_t> preambles;
  for (int i = 0; i < 4; ++i)
    preambles.push_back(t.add_piece(detail::random_tokens(r, r.between(24, 64))));
  std::vector<request_group> groups;
  for (int f = 0; f < 8; ++f) {
    const auto pre = preambles[r.below(preambles.size())];
    const auto base = detail::random_tokens(r, r.between(o.length / 4, o.length / 2));
    for (int v = 0; v < 6; ++v) {
      const auto cut = r.below(base.size() + 1);
      request_group g;
      g.prefix.push_back(pre);
      g.prefix.push_back(t.add_piece(std::span<const token_id>(base.data(), cut)));
      g.prefix.push_back(
          t.add_piece(detail::random_tokens(r, r.between(o.length / 8, o.length / 2))));
      g.use_shared_suffixes = true;
      groups.push_back(std::move(g));
    }
  }
  std::vector<std::vector<std::uint32_t>> queries;
  for (int q = 0; q < 300; ++q)
    queries.push_back({t.add_piece(detail::random_tokens(r, r.between(4, 128)))});
  generate_requests(t, groups, detail::arrivals_of(o), queries);
  return t;
}

/// Multimodal overlap: 3 documents of N tokens; a request reads document d (Zipf) up to a cut
/// drawn from three modes — 25 % (weight 0.3), 60 % (0.3), 95 % (0.4) of N, each ± N/32
/// uniform, rounded to 8 tokens — and continues with 16–256 tokens of its own.
inline trace synthetic_multimodal(const synthetic_options& o = {}) {
  detail::check_synthetic(o);
  detail::rng r(detail::derive_seed(o.seed, 3));
  trace t("synthetic-multimodal");
  std::vector<std::vector<token_id>> docs;
  for (int d = 0; d < 3; ++d) docs.push_back(detail::random_tokens(r, o.length));
  const detail::zipf pop(docs.size(), o.zipf);
  std::map<std::pair<std::size_t, std::size_t>, std::uint32_t> cuts;  // (doc, cut) -> piece
  const double modes[3] = {0.25, 0.60, 0.95};
  const double mode_cdf[3] = {0.3, 0.6, 1.0};
  const auto n = static_cast<double>(o.length);
  double clock = 0.0;
  for (std::size_t i = 0; i < o.requests; ++i) {
    clock += r.exponential(o.rate);
    const std::size_t d = pop(r);
    const double u = r.uniform();
    const std::size_t m = u < mode_cdf[0] ? 0 : (u < mode_cdf[1] ? 1 : 2);
    double c = modes[m] * n + (r.uniform() * 2.0 - 1.0) * n / 32.0;
    auto cut = static_cast<std::size_t>(std::clamp(c, 8.0, n)) / 8 * 8;
    auto it = cuts.find({d, cut});
    if (it == cuts.end()) {
      it = cuts.emplace(std::make_pair(d, cut),
                        t.add_piece(std::span<const token_id>(docs[d].data(), cut)))
               .first;
    }
    request q;
    q.pieces = {it->second, t.add_piece(detail::random_tokens(r, r.between(16, 256)))};
    q.arrival = clock;
    q.ends_with_query = true;
    t.add_request(std::move(q));
  }
  return t;
}

/// Options of the RAG (segment-reuse) generator.
struct synthetic_rag_options {
  std::size_t requests = 2000;
  std::size_t passages = 400;     ///< passage pool size
  std::size_t min_passage = 128;  ///< passage length range, tokens
  std::size_t max_passage = 768;
  std::size_t min_k = 4;  ///< passages per prompt range
  std::size_t max_k = 10;
  double zipf = 0.9;       ///< passage popularity skew
  double follow_up = 0.2;  ///< probability a request re-asks over a recent prompt's passages
  std::uint64_t seed = 1;
  double rate = 2.0;
};

/// RAG prompts over a shared passage pool in two namespaces ("tenant-a" 60 %, "tenant-b" 40 %),
/// each with its own 200-token instruction. Request = instruction ++ k passages (distinct, by
/// Zipf popularity) ++ a 8–48-token question. With probability `follow_up` a request reuses the
/// passages of one of its namespace's last 16 prompts in the same order (a follow-up question),
/// which is what strict prefix caching can hit.
inline trace synthetic_rag(const synthetic_rag_options& o = {}) {
  if (o.passages == 0 || o.min_passage == 0 || o.min_passage > o.max_passage || o.min_k == 0 ||
      o.min_k > o.max_k || o.max_k > o.passages) {
    hybridcache::detail::throw_invalid(
        "synthetic_rag_options", o.passages,
        "need passages >= max_k >= min_k > 0 and 0 < min_passage <= max_passage");
  }
  if (!(o.follow_up >= 0.0 && o.follow_up <= 1.0))
    hybridcache::detail::throw_invalid("follow_up", o.follow_up, "must be in [0, 1]");
  detail::rng r(detail::derive_seed(o.seed, 4));
  trace t("synthetic-rag");
  const std::string names[2] = {"tenant-a", "tenant-b"};
  std::uint32_t instruction[2];
  for (auto& ins : instruction) ins = t.add_piece(detail::random_tokens(r, 200));
  std::vector<std::uint32_t> pool;
  for (std::size_t p = 0; p < o.passages; ++p) {
    pool.push_back(t.add_piece(detail::random_tokens(r, r.between(o.min_passage, o.max_passage))));
  }
  const detail::zipf pop(pool.size(), o.zipf);
  std::vector<std::vector<std::uint32_t>> recent[2];
  double clock = 0.0;
  for (std::size_t i = 0; i < o.requests; ++i) {
    clock += r.exponential(o.rate);
    const std::size_t ns = r.uniform() < 0.6 ? 0 : 1;
    std::vector<std::uint32_t> chosen;
    if (!recent[ns].empty() && r.uniform() < o.follow_up) {
      chosen = recent[ns][r.below(recent[ns].size())];
    } else {
      const auto k = r.between(o.min_k, o.max_k);
      while (chosen.size() < k) {
        const auto p = pool[pop(r)];
        if (std::find(chosen.begin(), chosen.end(), p) == chosen.end()) chosen.push_back(p);
      }
      recent[ns].push_back(chosen);
      if (recent[ns].size() > 16) recent[ns].erase(recent[ns].begin());
    }
    request q;
    q.pieces.push_back(instruction[ns]);
    q.pieces.insert(q.pieces.end(), chosen.begin(), chosen.end());
    q.pieces.push_back(t.add_piece(detail::random_tokens(r, r.between(8, 48))));
    q.ns = names[ns];
    q.arrival = clock;
    q.ends_with_query = true;
    t.add_request(std::move(q));
  }
  return t;
}

/// HYPIC Fig. 14's workload: one request of `segments` cold segments of `tokens` tokens each
/// (no query, no instruction), all distinct.
inline trace cold_segments_request(std::size_t segments = 11, std::size_t tokens = 2400,
                                   std::uint64_t seed = 1) {
  if (segments == 0 || tokens == 0)
    hybridcache::detail::throw_invalid("segments*tokens", segments * tokens, "must be > 0");
  detail::rng r(detail::derive_seed(seed, 5));
  trace t("cold-segments");
  request q;
  for (std::size_t s = 0; s < segments; ++s)
    q.pieces.push_back(t.add_piece(detail::random_tokens(r, tokens)));
  t.add_request(std::move(q));
  return t;
}

HYBRIDCACHE_NAMESPACE_END
