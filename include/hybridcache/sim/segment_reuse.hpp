#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Segment-reuse simulation (HYPIC / SparseX / COMB): replay requests built from segments
/// (retrieved passages, system prompts, documents) through a position-independent segment index
/// keyed by (namespace, tokens) and estimate time-to-first-token under four serving methods with
/// the library's prefill cost model (`hybridcache::prefill_cost_model`, calibrated in model.hpp).
///
/// For a request of segments s_1 … s_k (lengths |s_i|, n = Σ|s_i| + q tokens, q the user query,
/// never cached) where the index already holds some segments ("hits") and a strict prefix cache
/// holds the first p tokens:
///
/// | method | estimated TTFT |
/// |---|---|
/// | full recompute | cost(n, 0) |
/// | prefix caching | cost(max(n − p, 1), p) — reuse only the longest cached segment-aligned prefix
/// | | naive addition | Σ_miss cost(|s_i|, 0) + k'·compose + combine_fixed + cost(q, n − q): states
/// added without T_C, no seam repair (HYPIC's strawman; fast, inexact) | | composition (HYPIC) on m
/// workers | min(serial, LPT makespan of {cost(|s_i|, 0) : miss} over m workers (`lpt_assign`) +
/// transfer) + k·compose + combine_fixed + Σ_boundaries cost(2w, pos) + cost(q, n − q) |
///
/// As in HYPIC's lookup order, a request first restores the longest cached prefix and composes
/// only the k' segments after it (a fully cached prompt costs what prefix caching costs); the
/// seam windows (HYPIC §4.3, w = 8 by default) are recomputed at each of the k − 1 internal
/// segment boundaries, attending to everything before them (pos = the boundary's offset − w).
/// The prefix cache is generous to the baseline: it keeps the state at every segment boundary of
/// every earlier request (a hybrid engine needs a stored recurrent state exactly there).
///
/// Hits and misses are counted per namespace; a segment is looked up in its request's namespace
/// (`namespace_key`: the request's tenant, or the shared namespace when it names none)
/// only, so two tenants never share an entry. After a request is served, its missed segments are
/// inserted (the index is unbounded: the simulation measures reuse, not eviction).
///
/// Both caches are exact. The segment cache is a verified `segment_index` (a hit means
/// equal namespace and equal token ids). The prefix cache is a trie over canonical segment ids:
/// every distinct (namespace, tokens) piece gets one id from a second verified index, and a
/// cached prefix is a path of ids from the root, so two prompts share a prefix exactly when they
/// share its pieces token for token — no unverified hash decides a hit.
///
/// `cold_dispatch` evaluates one all-cold request on m workers — HYPIC Fig. 14 (11 segments ×
/// 2.4k tokens, m = 2/4/8; paper: 2.0× / 3.6× / 6.1× over full recompute).

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/dispatch.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/index.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/sim/model.hpp"
#include "hybridcache/sim/trace.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Options of the segment-reuse simulation.
struct segment_reuse_options {
  prefill_cost_model cost = hypic_fig14_prefill();      ///< the library's prefill model
  composition_costs compose = hypic_fig14_composition;  ///< composition's non-prefill costs
  std::size_t seam = 8;                                 ///< seam window w per side of a boundary
  std::vector<std::size_t> workers{1, 2, 4, 8};         ///< prefill worker pool sizes to evaluate
};

/// TTFT of one request under composition on m workers, broken down as in HYPIC Fig. 14.
struct ttft_breakdown {
  std::size_t workers = 1;       ///< pool size m
  std::size_t workers_used = 1;  ///< 1 when fanning out would not pay (transfer > gain)
  double dispatch = 0.0;         ///< LPT makespan of the cold segments' prefill, ms
  double transfer = 0.0;         ///< cross-node transfer, ms
  double combine = 0.0;          ///< composition + seam windows + query + fixed assembly, ms
  double total = 0.0;            ///< dispatch + transfer + combine
  double full = 0.0;             ///< full-recompute TTFT of the same request, ms
  double serial = 0.0;           ///< composition TTFT on one worker, ms
  [[nodiscard]] double speedup_vs_full() const noexcept { return total > 0.0 ? full / total : 0.0; }
  [[nodiscard]] double speedup_vs_serial() const noexcept {
    return total > 0.0 ? serial / total : 0.0;
  }
};

/// Per-namespace index statistics.
struct namespace_stats {
  namespace_key ns{};  ///< the request's tenant, or the shared namespace
  std::size_t lookups = 0, hits = 0, misses = 0;
  double hit_tokens = 0.0, miss_tokens = 0.0;
};

/// Distribution summary of per-request TTFTs (ms).
struct ttft_summary {
  std::string method;       ///< "full", "prefix", "naive", "composition"
  std::size_t workers = 1;  ///< m (composition; 1 for the others)
  double mean = 0.0, p50 = 0.0, p90 = 0.0;
  double mean_cold = 0.0;  ///< mean over requests with at least one missed segment
};

/// The outcome of a segment-reuse simulation.
struct segment_reuse_result {
  std::string trace_name;
  std::size_t requests = 0;
  std::size_t cold_requests = 0;  ///< requests with at least one missed segment
  double prompt_tokens = 0.0;
  double prefix_hit_tokens = 0.0;  ///< Σ p
  std::vector<namespace_stats> namespaces;
  std::vector<ttft_summary> ttft;  ///< full, prefix, naive, then composition per worker count
};

/// Composition TTFT of one request on `workers` workers.
/// @param lengths segment lengths (query excluded), in order
/// @param hit whether each segment is cached
/// @param query query tokens (recomputed after the segments)
inline ttft_breakdown composition_ttft(std::span<const std::size_t> lengths,
                                       std::span<const bool> hit, std::size_t query,
                                       std::size_t workers, const segment_reuse_options& o,
                                       std::size_t prefix_segments = 0) {
  if (lengths.size() != hit.size()) {
    hybridcache::detail::throw_invalid("hit.size()", hit.size(), "must equal lengths.size()");
  }
  if (prefix_segments > lengths.size()) {
    hybridcache::detail::throw_invalid("prefix_segments", prefix_segments,
                                       "exceeds the number of segments");
  }
  ttft_breakdown b;
  b.workers = workers;
  std::vector<double> cold;
  std::size_t n = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    if (!hit[i] && i >= prefix_segments) cold.push_back(o.cost.cost(lengths[i], 0));
    n += lengths[i];
  }
  b.full = o.cost.cost(n + query, 0);
  if (prefix_segments == lengths.size() && !lengths.empty()) {
    // Every segment is restored from the prefix cache: only the query (at least one token) is left.
    b.combine = query > 0 ? o.cost.cost(query, n) : o.cost.cost(1, n - 1);
    b.total = b.serial = b.combine;
    return b;
  }
  const double serial_dispatch = [&] {
    double s = 0.0;
    for (double c : cold) s += c;
    return s;
  }();
  b.dispatch = cold.empty() ? 0.0 : lpt_assign(cold, workers).makespan;
  b.transfer = (workers > 1 && !cold.empty()) ? o.compose.transfer_fixed : 0.0;
  // The router only fans out when it pays: otherwise the request stays on one worker (HYPIC §4.4,
  // "the router degenerates to placing the entire request on one worker").
  if (b.dispatch + b.transfer >= serial_dispatch) {
    b.dispatch = serial_dispatch;
    b.transfer = 0.0;
    b.workers_used = 1;
  } else {
    b.workers_used = workers;
  }
  double combine =
      o.compose.combine_fixed +
      o.compose.compose_per_segment * static_cast<double>(lengths.size() - prefix_segments);
  std::size_t offset = 0;
  for (std::size_t i = 0; i + 1 < lengths.size(); ++i) {
    offset += lengths[i];
    if (i + 1 < prefix_segments) continue;  // inside the restored prefix: no seam to repair
    const std::size_t left = std::min(o.seam, lengths[i]);
    const std::size_t right = std::min(o.seam, lengths[i + 1]);
    combine += o.cost.cost(left + right, offset - left);
  }
  if (query > 0) combine += o.cost.cost(query, n);
  b.combine = combine;
  b.total = b.dispatch + b.transfer + b.combine;
  b.serial = serial_dispatch + combine;
  return b;
}

/// HYPIC Fig. 14: one request of `segments` cold segments of `tokens` tokens on each worker count.
inline std::vector<ttft_breakdown> cold_dispatch(std::size_t segments, std::size_t tokens,
                                                 const segment_reuse_options& o = {}) {
  std::vector<std::size_t> lengths(segments, tokens);
  std::vector<ttft_breakdown> out;
  const std::unique_ptr<bool[]> h(new bool[segments + 1]());  // all cold
  for (auto m : o.workers)
    out.push_back(composition_ttft(lengths, std::span<const bool>(h.get(), segments), 0, m, o));
  return out;
}

namespace detail {

inline double percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

/// Orders namespaces for reports: the shared namespace first, then tenants by name (bytes), then
/// by encoding.
struct namespace_order {
  bool operator()(const namespace_key& a, const namespace_key& b) const {
    if (a.is_shared() != b.is_shared()) return a.is_shared();
    const std::string_view ta = a.tenant() ? std::string_view(*a.tenant()) : std::string_view();
    const std::string_view tb = b.tenant() ? std::string_view(*b.tenant()) : std::string_view();
    if (ta != tb) return ta < tb;
    return a.bytes() < b.bytes();
  }
};

/// The exact prefix cache: a trie whose edges are canonical segment ids (see the file comment).
class prefix_trie {
 public:
  /// The canonical id of (ns, tokens), assigned on first sight.
  std::uint32_t id_of(const namespace_key& ns, std::span<const token_id> tokens) {
    if (auto id = ids_.find(ns, tokens)) return *id;
    const auto id = static_cast<std::uint32_t>(next_id_++);
    ids_.insert(ns, tokens, id);
    return id;
  }
  /// The child of `node` along segment `id`, if cached (node 0 is the root).
  [[nodiscard]] std::optional<std::uint32_t> child(std::uint32_t node, std::uint32_t id) const {
    auto it = edges_.find({node, id});
    if (it == edges_.end()) return std::nullopt;
    return it->second;
  }
  /// The child of `node` along `id`, created if absent.
  std::uint32_t insert(std::uint32_t node, std::uint32_t id) {
    auto [it, fresh] = edges_.try_emplace({node, id}, 0u);
    if (fresh) it->second = static_cast<std::uint32_t>(++nodes_);
    return it->second;
  }

 private:
  segment_index<std::uint32_t> ids_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> edges_;
  std::size_t next_id_ = 0, nodes_ = 0;
};

/// The namespace of a trace request: a tenant namespace, or the shared one when absent.
inline namespace_key namespace_of(const request& q) {
  return q.ns ? namespace_key{}.with_tenant(*q.ns) : namespace_key::shared();
}

}  // namespace detail

/// Replays `t` through the segment index and estimates TTFTs (see the file comment).
/// @throws invalid_argument for an empty trace, no worker counts or a worker count of 0.
inline segment_reuse_result simulate_segment_reuse(const trace& t,
                                                   const segment_reuse_options& o = {},
                                                   const progress_fn& progress = {}) {
  if (t.empty())
    hybridcache::detail::throw_invalid("trace.size()", std::size_t{0}, "the trace has no requests");
  if (o.workers.empty())
    hybridcache::detail::throw_invalid("workers.size()", std::size_t{0},
                                       "need at least one worker count");
  for (std::size_t i = 0; i < o.workers.size(); ++i) {
    if (o.workers[i] == 0)
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed("workers", i), 0,
                                         "must be >= 1");
  }
  segment_reuse_result r;
  r.trace_name = t.name();
  segment_index<std::uint32_t> index;           // verified (namespace, tokens) -> first request
  detail::prefix_trie prefixes;                 // exact segment-aligned prefix cache
  std::map<namespace_key, namespace_stats, detail::namespace_order> per_ns;
  std::vector<double> full, prefix, naive, cold_mask;
  std::vector<std::vector<double>> comp(o.workers.size());
  std::vector<std::size_t> lengths;
  std::vector<std::uint32_t> ids;
  std::unique_ptr<bool[]> hit;
  const std::size_t n_req = t.size();
  const std::size_t every = std::max<std::size_t>(n_req / 100, 1);
  for (std::size_t i = 0; i < n_req; ++i) {
    const request& q = t.requests()[i];
    const namespace_key key_ns = detail::namespace_of(q);
    auto& st = per_ns.try_emplace(key_ns).first->second;
    st.ns = key_ns;
    const std::size_t k = q.pieces.size() - (q.ends_with_query && !q.pieces.empty() ? 1 : 0);
    const std::size_t query = k < q.pieces.size() ? t.piece(q.pieces.back()).size() : 0;
    lengths.assign(k, 0);
    hit.reset(new bool[k + 1]());
    std::size_t n = query;
    bool any_miss = false;
    for (std::size_t s = 0; s < k; ++s) {
      const auto tok = t.piece(q.pieces[s]);
      lengths[s] = tok.size();
      n += tok.size();
      hit[s] = index.contains(key_ns, tok);
      ++st.lookups;
      if (hit[s]) {
        ++st.hits;
        st.hit_tokens += static_cast<double>(tok.size());
      } else {
        ++st.misses;
        st.miss_tokens += static_cast<double>(tok.size());
        any_miss = true;
      }
    }
    // Longest cached segment-aligned prefix (query included: a repeated prompt hits it all).
    std::size_t p = 0, run = 0, covered = 0;  // covered: leading pieces inside the prefix hit
    std::uint32_t node = 0;
    ids.clear();
    bool matching = true;
    for (std::size_t s = 0; s < q.pieces.size(); ++s) {
      const auto tok = t.piece(q.pieces[s]);
      ids.push_back(prefixes.id_of(key_ns, tok));
      run += tok.size();
      const auto next = matching ? prefixes.child(node, ids.back()) : std::nullopt;
      if (next) {
        node = *next;
        p = run;
        covered = s + 1;
      } else {
        matching = false;
      }
    }
    const std::size_t prefix_segments = std::min(covered, k);
    const bool whole_prompt = covered == q.pieces.size() && !q.pieces.empty();
    node = 0;
    for (auto id : ids) node = prefixes.insert(node, id);
    r.prefix_hit_tokens += static_cast<double>(p);
    r.prompt_tokens += static_cast<double>(n);
    if (any_miss) ++r.cold_requests;
    cold_mask.push_back(any_miss ? 1.0 : 0.0);
    full.push_back(o.cost.cost(n, 0));
    prefix.push_back(o.cost.cost(std::max<std::size_t>(n - p, 1), std::min(p, n - 1)));
    // Lookup order of HYPIC: the prefix cache first, position-independent hits for the rest.
    if (whole_prompt) {
      naive.push_back(prefix.back());
    } else {
      double nv = o.compose.compose_per_segment * static_cast<double>(k - prefix_segments) +
                  o.compose.combine_fixed + (query > 0 ? o.cost.cost(query, n - query) : 0.0);
      for (std::size_t s = prefix_segments; s < k; ++s) {
        if (!hit[s]) nv += o.cost.cost(lengths[s], 0);
      }
      naive.push_back(nv);
    }
    for (std::size_t w = 0; w < o.workers.size(); ++w) {
      comp[w].push_back(whole_prompt
                            ? prefix.back()
                            : composition_ttft(lengths, std::span<const bool>(hit.get(), k), query,
                                               o.workers[w], o, prefix_segments)
                                  .total);
    }
    for (std::size_t s = 0; s < k; ++s) {
      if (!hit[s]) index.insert(key_ns, t.piece(q.pieces[s]), static_cast<std::uint32_t>(i));
    }
    ++r.requests;
    if (progress && ((i + 1) % every == 0 || i + 1 == n_req)) progress(i + 1, n_req);
  }
  for (auto& [_, s] : per_ns) r.namespaces.push_back(s);
  auto summarize = [&](std::string method, std::size_t m, const std::vector<double>& v) {
    ttft_summary s;
    s.method = std::move(method);
    s.workers = m;
    double sum = 0.0, sum_cold = 0.0, n_cold = 0.0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      sum += v[i];
      sum_cold += v[i] * cold_mask[i];
      n_cold += cold_mask[i];
    }
    s.mean = sum / static_cast<double>(v.size());
    s.mean_cold = n_cold > 0.0 ? sum_cold / n_cold : 0.0;
    s.p50 = detail::percentile(v, 0.5);
    s.p90 = detail::percentile(v, 0.9);
    r.ttft.push_back(s);
  };
  summarize("full", 1, full);
  summarize("prefix", 1, prefix);
  summarize("naive", 1, naive);
  for (std::size_t w = 0; w < o.workers.size(); ++w)
    summarize("composition", o.workers[w], comp[w]);
  return r;
}

HYBRIDCACHE_NAMESPACE_END
