#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `store::last_k_cache`: the sparse prefix caching paper's fixed "last-K entries" cache
/// (§5, "we use a simple caching strategy that keeps exactly the last K entries"; K = 35, 50,
/// 100 in its experiments). Every observed request becomes an entry; the oldest entry leaves
/// when a (K+1)-th arrives. The figure a simulator needs is the **overlap depth** of each
/// request: the longest common prefix, in tokens, between the request and any retained entry
/// of the same namespace — the T whose distribution p_t the checkpoint placement optimises.
///
/// ```cpp
/// hybridcache::store::last_k_cache cache(50);
/// for (const auto& request : trace) {
///   auto m = cache.observe(request.tokens);   // depth against the 50 previous requests,
///   histogram.observe(m.depth);                // then the request itself is retained
/// }
/// ```
///
/// Algorithm: entries are kept sorted lexicographically by (namespace bytes, token ids). For a
/// sorted set, the entry sharing the longest prefix with a query is one of the query's two
/// neighbours in that order (LCP with later entries can only shrink as they grow, and likewise
/// backwards), so a match costs O(log K) comparisons plus two LCP scans, instead of K scans.
/// Ties (several entries with the maximal depth) resolve to one of them deterministically.
///
/// Not thread-safe (a simulator drives it from one thread); wrap it in a mutex to share it.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <iterator>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/segment/token.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace store {

/// The result of matching a request against the retained entries.
struct last_k_match {
  std::size_t depth = 0;         ///< longest common prefix with a retained entry (0: none)
  std::size_t entry_length = 0;  ///< token count of that entry (0 when depth == 0)
  std::uint64_t entry_id = 0;    ///< sequence number of that entry (0 when depth == 0)
  [[nodiscard]] bool hit() const noexcept { return depth > 0; }
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
    return observe(segment::namespace_key::shared(), tokens);
  }
  /// Matches `tokens` within namespace `ns`, then retains it as the newest entry. Entries of
  /// other namespaces never contribute depth.
  last_k_match observe(const segment::namespace_key& ns, std::span<const token_id> tokens) {
    const last_k_match m = match(ns, tokens);
    insert(ns, tokens);
    return m;
  }

  /// The longest-common-prefix match of `tokens` against the retained entries of `ns`, without
  /// retaining anything.
  [[nodiscard]] last_k_match match(std::span<const token_id> tokens) const {
    return match(segment::namespace_key::shared(), tokens);
  }
  [[nodiscard]] last_k_match match(const segment::namespace_key& ns,
                                   std::span<const token_id> tokens) const {
    const probe q{ns.bytes(), tokens};
    last_k_match best;
    auto consider = [&](const entry& e) {
      if (e.ns != q.ns) return;
      const std::size_t d = lcp(e.tokens, q.tokens);
      if (d > best.depth) {
        best.depth = d;
        best.entry_length = e.tokens.size();
        best.entry_id = e.id;
      }
    };
    auto it = entries_.lower_bound(q);
    if (it != entries_.end()) consider(*it);
    if (it != entries_.begin()) consider(*std::prev(it));
    return best;
  }

  /// Retains `tokens` as the newest entry (evicting the oldest beyond K). @returns its id.
  std::uint64_t insert(const segment::namespace_key& ns, std::span<const token_id> tokens) {
    if (order_.size() == k_) {
      entries_.erase(order_.front());
      order_.pop_front();
    }
    auto it = entries_.insert(
        entry{std::string(ns.bytes()), std::vector<token_id>(tokens.begin(), tokens.end()),
              ++next_id_});
    order_.push_back(it);
    return next_id_;
  }
  std::uint64_t insert(std::span<const token_id> tokens) {
    return insert(segment::namespace_key::shared(), tokens);
  }

  [[nodiscard]] std::size_t size() const noexcept { return order_.size(); }
  [[nodiscard]] std::size_t capacity() const noexcept { return k_; }
  void clear() noexcept {
    entries_.clear();
    order_.clear();
  }

 private:
  struct entry {
    std::string ns;
    std::vector<token_id> tokens;
    std::uint64_t id;
  };
  struct probe {
    std::string_view ns;
    std::span<const token_id> tokens;
  };
  static std::size_t lcp(std::span<const token_id> a, std::span<const token_id> b) noexcept {
    const std::size_t n = std::min(a.size(), b.size());
    const auto r = std::mismatch(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(n), b.begin());
    return static_cast<std::size_t>(r.first - a.begin());
  }
  static int compare(std::string_view ans, std::span<const token_id> a, std::string_view bns,
                     std::span<const token_id> b) noexcept {
    if (const int c = ans.compare(bns); c != 0) return c;
    const std::size_t d = lcp(a, b);
    if (d == a.size()) return d == b.size() ? 0 : -1;
    if (d == b.size()) return 1;
    return a[d] < b[d] ? -1 : 1;
  }
  struct less {
    using is_transparent = void;
    bool operator()(const entry& a, const entry& b) const noexcept {
      return compare(a.ns, a.tokens, b.ns, b.tokens) < 0;
    }
    bool operator()(const entry& a, const probe& b) const noexcept {
      return compare(a.ns, a.tokens, b.ns, b.tokens) < 0;
    }
    bool operator()(const probe& a, const entry& b) const noexcept {
      return compare(a.ns, a.tokens, b.ns, b.tokens) < 0;
    }
  };

  std::size_t k_;
  std::uint64_t next_id_ = 0;
  std::multiset<entry, less> entries_;
  std::deque<std::multiset<entry, less>::iterator> order_;
};

}  // namespace store
HYBRIDCACHE_NAMESPACE_END
