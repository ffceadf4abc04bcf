#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `last_k_cache`: the sparse prefix caching paper's fixed "last-K entries" cache
/// (§5, "we use a simple caching strategy that keeps exactly the last K entries"; K = 35, 50,
/// 100 in its experiments). Every observed request becomes an entry; the oldest entry leaves
/// when a (K+1)-th arrives. The figure a simulator needs is the **overlap depth** of each
/// request: the longest common prefix, in tokens, between the request and any retained entry
/// of the same namespace — the T whose distribution p_t the checkpoint placement optimises.
///
/// ```cpp
/// hybridcache::last_k_cache cache(50);
/// for (const auto& request : trace) {
///   auto m = cache.observe(request.tokens);   // depth against the 50 previous requests,
///   histogram.observe(m.depth);                // then the request itself is retained
/// }
/// ```
///
/// Algorithm: entries are kept sorted lexicographically by (namespace bytes, token ids). For a
/// sorted set, the entry sharing the longest prefix with a query is one of the query's two
/// neighbours in that order (LCP with later entries can only shrink as they grow, and likewise
/// backwards). The neighbours are found by a binary search that resumes each comparison after
/// the prefix already known to be shared, so a match costs about one scan of the matched prefix
/// plus O(log K) short comparisons, instead of K scans; inserting moves K pointers.
/// Ties (several entries with the maximal depth) resolve to one of them deterministically.
///
/// Per-entry depths (`overlaps`): the cache also keeps a(i) = LCP(entry_{i−1}, entry_i) of every
/// two neighbours in that order (0 across namespaces). For the query's insertion point p, the
/// LCP with the entry j positions away is the running minimum
/// LCP(q, e_{p+j}) = min(LCP(q, e_p), a(p+1), …, a(p+j)) (and likewise to the left), so every
/// entry's common-prefix length comes out in O(K) after the search, all from token comparisons
/// (no hash is trusted). Inserting or evicting an entry updates two neighbour values.
///
/// Not thread-safe (a simulator drives it from one thread); wrap it in a mutex to share it.

#include <algorithm>
#include <cstring>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The result of matching a request against the retained entries.
struct last_k_match {
  std::size_t depth = 0;         ///< longest common prefix with a retained entry (0: none)
  std::size_t entry_length = 0;  ///< token count of that entry (0 when depth == 0)
  std::uint64_t entry_id = 0;    ///< sequence number of that entry (0 when depth == 0)
  [[nodiscard]] bool hit() const noexcept { return depth > 0; }
};

/// The common prefix of a request with one retained entry (see `last_k_cache::overlaps`).
struct last_k_overlap {
  std::uint64_t entry_id = 0;    ///< sequence number of the entry (as returned by `insert`)
  std::size_t depth = 0;         ///< LCP of the request and the entry, in tokens (≥ 1)
  std::size_t entry_length = 0;  ///< token count of the entry
};

/// Fixed last-K entry cache (file comment).
class last_k_cache {
 public:
  /// @throws invalid_argument if `k == 0`.
  explicit last_k_cache(std::size_t k) : k_(k) {
    if (k == 0) hybridcache::detail::throw_invalid("k", k, "the cache must hold at least 1 entry");
  }

  /// Matches `tokens` (shared namespace), then retains it as the newest entry.
  last_k_match observe(std::span<const token_id> tokens) {
    return observe(namespace_key::shared(), tokens);
  }
  /// Matches `tokens` within namespace `ns`, then retains it as the newest entry. Entries of
  /// other namespaces never contribute depth.
  last_k_match observe(const namespace_key& ns, std::span<const token_id> tokens) {
    const search_result r = search(ns.bytes(), tokens);
    insert_at(r, ns.bytes(), tokens);
    return r.best;
  }
  /// Like `observe`, and also lists in `per_entry` (cleared first) every retained entry of `ns`
  /// that shares at least one leading token with `tokens`, with its common-prefix length, before
  /// `tokens` is retained. Order: unspecified.
  last_k_match observe(const namespace_key& ns, std::span<const token_id> tokens,
                       std::vector<last_k_overlap>& per_entry) {
    const search_result r = search(ns.bytes(), tokens);
    collect(r, per_entry);
    insert_at(r, ns.bytes(), tokens);
    return r.best;
  }

  /// Every retained entry of `ns` sharing at least one leading token with `tokens`, with its
  /// common-prefix length (into `out`, cleared first; order unspecified), without retaining
  /// anything. O(log K) comparisons plus O(K).
  void overlaps(const namespace_key& ns, std::span<const token_id> tokens,
                std::vector<last_k_overlap>& out) const {
    collect(search(ns.bytes(), tokens), out);
  }

  /// Every *other* retained entry sharing at least one leading token with the retained entry
  /// `id`, with its common-prefix length (into `out`, cleared first; order unspecified): the
  /// running minima of the neighbour LCPs outwards from `id`'s place in the sorted order, O(K).
  /// Nothing is listed when `id` is not retained.
  void entry_overlaps(std::uint64_t id, std::vector<last_k_overlap>& out) const {
    out.clear();
    const auto it =
        std::find_if(sorted_.begin(), sorted_.end(), [id](const entry* e) { return e->id == id; });
    if (it == sorted_.end()) return;
    const auto i = static_cast<std::size_t>(it - sorted_.begin());
    std::size_t run = i > 0 ? adjacent_[i] : 0;
    for (std::size_t j = i; j-- > 0 && run > 0;) {
      out.push_back({sorted_[j]->id, run, sorted_[j]->tokens.size()});
      run = std::min(run, adjacent_[j]);
    }
    run = i + 1 < sorted_.size() ? adjacent_[i + 1] : 0;
    for (std::size_t j = i + 1; j < sorted_.size() && run > 0; ++j) {
      out.push_back({sorted_[j]->id, run, sorted_[j]->tokens.size()});
      if (j + 1 < sorted_.size()) run = std::min(run, adjacent_[j + 1]);
    }
  }

  /// The longest-common-prefix match of `tokens` against the retained entries of `ns`, without
  /// retaining anything.
  [[nodiscard]] last_k_match match(std::span<const token_id> tokens) const {
    return match(namespace_key::shared(), tokens);
  }
  [[nodiscard]] last_k_match match(const namespace_key& ns,
                                   std::span<const token_id> tokens) const {
    return search(ns.bytes(), tokens).best;
  }

  /// Retains `tokens` as the newest entry (evicting the oldest beyond K). @returns its id.
  std::uint64_t insert(const namespace_key& ns, std::span<const token_id> tokens) {
    return insert_at(search(ns.bytes(), tokens), ns.bytes(), tokens);
  }
  std::uint64_t insert(std::span<const token_id> tokens) {
    return insert(namespace_key::shared(), tokens);
  }

  [[nodiscard]] std::size_t size() const noexcept { return order_.size(); }
  [[nodiscard]] std::size_t capacity() const noexcept { return k_; }
  void clear() noexcept {
    sorted_.clear();
    adjacent_.clear();
    order_.clear();
  }

 private:
  struct entry {
    std::string ns;
    std::vector<token_id> tokens;
    std::uint64_t id;
  };
  struct search_result {
    last_k_match best;
    std::size_t position;  // first sorted index whose entry is >= the query
    std::size_t lcp_left = 0;   // LCP with sorted_[position - 1] (0 if none or another namespace)
    std::size_t lcp_right = 0;  // LCP with sorted_[position] (0 if none or another namespace)
  };

  static std::size_t lcp_from(std::span<const token_id> a, std::span<const token_id> b,
                              std::size_t skip) noexcept {
    const std::size_t n = std::min(a.size(), b.size());
    std::size_t i = std::min(skip, n);
    // Whole chunks through memcmp (vectorised by the C library), then token by token.
    constexpr std::size_t chunk = 64;
    while (i + chunk <= n && std::memcmp(a.data() + i, b.data() + i, chunk * sizeof(token_id)) == 0)
      i += chunk;
    while (i < n && a[i] == b[i]) ++i;
    return i < n ? i : n;
  }

  // Binary search over the (namespace, tokens)-sorted entries. Every entry between two probed
  // entries of the query's namespace shares min(their LCPs with the query) leading tokens with
  // it, so each comparison starts after that many tokens (the suffix-array "mlr" heuristic):
  // the search costs about one scan of the longest match plus O(log K) short comparisons.
  search_result search(std::string_view ns, std::span<const token_id> q) const {
    std::size_t lo = 0, hi = sorted_.size();  // answer in [lo, hi]
    std::size_t lcp_lo = 0, lcp_hi = 0;       // LCPs with sorted_[lo-1] and sorted_[hi]
    while (lo < hi) {
      const std::size_t mid = lo + (hi - lo) / 2;
      const entry& e = *sorted_[mid];
      bool entry_less;  // e < q ?
      std::size_t l = 0;
      if (const int c = std::string_view(e.ns).compare(ns); c != 0) {
        entry_less = c < 0;
      } else {
        l = lcp_from(e.tokens, q, std::min(lcp_lo, lcp_hi));
        if (l == q.size()) entry_less = false;            // e >= q (q is a prefix of e)
        else if (l == e.tokens.size()) entry_less = true;  // e is a proper prefix of q
        else entry_less = e.tokens[l] < q[l];
      }
      if (entry_less) {
        lo = mid + 1;
        lcp_lo = l;
      } else {
        hi = mid;
        lcp_hi = l;
      }
    }
    // The final neighbours were both probed (lo only moves past probed entries, hi only onto
    // them), so their full LCPs are already known.
    search_result r{{}, lo, lo > 0 ? lcp_lo : 0, lo < sorted_.size() ? lcp_hi : 0};
    auto consider = [&](std::size_t i, std::size_t d) {
      const entry& e = *sorted_[i];
      if (e.ns == ns && d > r.best.depth) r.best = {d, e.tokens.size(), e.id};
    };
    if (lo < sorted_.size()) consider(lo, lcp_hi);
    if (lo > 0) consider(lo - 1, lcp_lo);
    return r;
  }

  // Running minima of the neighbour LCPs outwards from the insertion point (file comment).
  void collect(const search_result& r, std::vector<last_k_overlap>& out) const {
    out.clear();
    std::size_t run = r.lcp_left;
    for (std::size_t j = r.position; j-- > 0 && run > 0;) {
      out.push_back({sorted_[j]->id, run, sorted_[j]->tokens.size()});
      run = std::min(run, adjacent_[j]);
    }
    run = r.lcp_right;
    for (std::size_t j = r.position; j < sorted_.size() && run > 0; ++j) {
      out.push_back({sorted_[j]->id, run, sorted_[j]->tokens.size()});
      if (j + 1 < sorted_.size()) run = std::min(run, adjacent_[j + 1]);
    }
  }

  std::uint64_t insert_at(const search_result& r, std::string_view ns, std::span<const token_id> tokens) {
    const std::size_t position = r.position;
    auto fresh = std::make_unique<entry>(
        entry{std::string(ns), std::vector<token_id>(tokens.begin(), tokens.end()), ++next_id_});
    sorted_.insert(sorted_.begin() + static_cast<std::ptrdiff_t>(position), fresh.get());
    adjacent_.insert(adjacent_.begin() + static_cast<std::ptrdiff_t>(position), r.lcp_left);
    if (position + 1 < adjacent_.size()) adjacent_[position + 1] = r.lcp_right;
    order_.push_back(std::move(fresh));
    if (order_.size() > k_) {
      const entry* oldest = order_.front().get();
      const auto it = std::find(sorted_.begin(), sorted_.end(), oldest);
      const auto i = static_cast<std::size_t>(it - sorted_.begin());
      // The neighbours of the evicted entry become adjacent: their LCP is the smaller of the two.
      if (i + 1 < adjacent_.size()) adjacent_[i + 1] = i > 0 ? std::min(adjacent_[i], adjacent_[i + 1]) : 0;
      adjacent_.erase(adjacent_.begin() + static_cast<std::ptrdiff_t>(i));
      sorted_.erase(it);
      order_.pop_front();
    }
    return next_id_;
  }

  std::size_t k_;
  std::uint64_t next_id_ = 0;
  std::vector<const entry*> sorted_;           // by (namespace bytes, tokens)
  std::vector<std::size_t> adjacent_;          // adjacent_[i] = LCP(sorted_[i-1], sorted_[i]); [0] = 0
  std::deque<std::unique_ptr<entry>> order_;   // oldest first
};

HYBRIDCACHE_NAMESPACE_END
