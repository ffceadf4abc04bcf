#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The trace model every simulation replays.
///
/// A request is a sequence of token ids, an optional namespace (tenant, adapter, ... — the
/// segment index keys on it), an arrival time and its segment boundaries. Real traces repeat the
/// same long pieces (one QuALITY article under 16 questions, one system prompt under hundreds of
/// user queries, one retrieved passage in many prompts), so a `trace` stores each distinct piece
/// of tokens once and a request lists the pieces it concatenates. The piece boundaries are the
/// request's segment boundaries: `segments(r)` yields them in order. A request may mark its last
/// piece as the user query (never cached as a segment, HYPIC §4.3).
///
/// ```cpp
/// hybridcache::trace t("toy");
/// auto doc = t.add_piece(std::vector<hybridcache::token_id>{1, 2, 3, 4});
/// auto q   = t.add_piece(std::vector<hybridcache::token_id>{9});
/// t.add_request({.pieces = {doc, q}, .arrival = 0.5, .ends_with_query = true});
/// // t.length(t.requests()[0]) == 5
/// ```

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Progress callback of the long-running simulations: (requests done, requests total).
using progress_fn = std::function<void(std::size_t, std::size_t)>;

/// One request of a trace: the pieces it concatenates (indices into its trace), its namespace
/// (absent = the default namespace, which is distinct from the empty-string namespace), its
/// arrival time in seconds and whether its last piece is the user query.
struct request {
  std::vector<std::uint32_t> pieces{};
  std::optional<std::string> ns{};
  double arrival = 0.0;
  bool ends_with_query = false;
};

/// A list of requests over a pool of shared token pieces. Requests are kept in the order they
/// were added, which simulations treat as the arrival order (builders add them sorted by
/// `arrival`).
class trace {
 public:
  trace() = default;
  explicit trace(std::string name) : name_(std::move(name)) {}

  /// Stores a piece of tokens and returns its id. Empty pieces are allowed (an empty question)
  /// and contribute no tokens.
  std::uint32_t add_piece(std::span<const token_id> tokens) {
    if (offsets_.size() > 0xFFFFFFFEu) throw capacity_error("hybridcache: too many trace pieces");
    const std::size_t begin = pool_.size();
    pool_.insert(pool_.end(), tokens.begin(), tokens.end());
    offsets_.emplace_back(begin, tokens.size());
    return static_cast<std::uint32_t>(offsets_.size() - 1);
  }

  /// Appends a request.
  /// @throws invalid_argument when a piece id is unknown or the arrival time is not finite.
  void add_request(request r) {
    for (std::size_t i = 0; i < r.pieces.size(); ++i) {
      if (r.pieces[i] >= offsets_.size()) {
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed("request.pieces", i),
                                           r.pieces[i], "no such piece in this trace");
      }
    }
    if (!(r.arrival == r.arrival) || r.arrival > 1e300 || r.arrival < -1e300) {
      hybridcache::detail::throw_invalid("request.arrival", r.arrival, "must be finite");
    }
    std::size_t len = 0;
    for (auto p : r.pieces) len += offsets_[p].second;
    max_length_ = std::max(max_length_, len);
    total_tokens_ += len;
    requests_.push_back(std::move(r));
  }

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  [[nodiscard]] const std::vector<request>& requests() const noexcept { return requests_; }
  [[nodiscard]] std::size_t size() const noexcept { return requests_.size(); }
  [[nodiscard]] bool empty() const noexcept { return requests_.empty(); }
  [[nodiscard]] std::size_t piece_count() const noexcept { return offsets_.size(); }

  /// The tokens of piece `id` (valid until the next `add_piece`).
  [[nodiscard]] std::span<const token_id> piece(std::uint32_t id) const {
    if (id >= offsets_.size()) hybridcache::detail::throw_invalid("piece", id, "no such piece");
    return {pool_.data() + offsets_[id].first, offsets_[id].second};
  }

  /// Number of tokens of request `r`.
  [[nodiscard]] std::size_t length(const request& r) const noexcept {
    std::size_t len = 0;
    for (auto p : r.pieces) len += offsets_[p].second;
    return len;
  }

  /// Writes the tokens of `r` into `out` (replacing its contents).
  void materialize(const request& r, std::vector<token_id>& out) const {
    out.clear();
    out.reserve(length(r));
    for (auto p : r.pieces) {
      auto s = piece(p);
      out.insert(out.end(), s.begin(), s.end());
    }
  }

  /// The longest request, in tokens.
  [[nodiscard]] std::size_t max_length() const noexcept { return max_length_; }
  /// Tokens over all requests (counting shared pieces once per request).
  [[nodiscard]] std::size_t total_tokens() const noexcept { return total_tokens_; }
  /// Tokens actually stored (distinct pieces).
  [[nodiscard]] std::size_t stored_tokens() const noexcept { return pool_.size(); }

 private:
  std::string name_;
  std::vector<token_id> pool_;
  std::vector<std::pair<std::size_t, std::size_t>> offsets_;
  std::vector<request> requests_;
  std::size_t max_length_ = 0;
  std::size_t total_tokens_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
