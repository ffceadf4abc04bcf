#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Joint placement on a chain cache, made safe against eviction (docs/design/conditioned_law.md
/// §6): the two shadow systems, the follow-the-leader rule between them, and the hand-over of an
/// evicted entry's states. For an engine that stores each cached sequence's recurrent-state
/// checkpoints with the sequence (a last-K or LRU store of entries, each entry placed by the chain
/// planner, `plan_entry` / `plan_entry_covered`); the simulator (`sim/sparse_prefix.hpp`) is one
/// such client.
///
/// **Reuse over the retained entries.** A request x shares d_f = LCP(x, f) tokens with every
/// retained entry f (f's *share*), and resumes from the deepest checkpoint any of them holds on
/// what it shares,
///
///     ℓ(x) = max_f max({0} ∪ {c ∈ C_f : c ≤ d_f}),      r(x) = t − ℓ(x),   t = max_f d_f
///
/// (`shared_reuse`). The depths a *new* entry e finds served by the entries it shares a prefix
/// with are the block indices U = {⌊c/B⌋ ≥ 1 : c ∈ C_f, c ≤ LCP(e, f)} (`covered_blocks`), the
/// coverage `plan_entry_covered` places against.
///
/// **Two shadow systems.** Placing jointly (against U) is exact for one insertion while the
/// coverage stays, and loses when the covering entry is evicted before a deep hit. So each
/// configuration (a budget M) replays two systems in shadow, positions only, each with its own
/// copy of the cache's placements and charged r(x) exactly as above on its own copy: A places
/// every entry alone (`plan_entry`), B jointly against B's own coverage (`plan_entry_covered`).
/// Their discounted recompute is
///
///     L_A ← γ·L_A + r_A(x),      L_B ← γ·L_B + r_B(x)      (every request, misses included)
///
/// (`shadow_leader::charge`; γ = 1: cumulative, the default).
///
/// **Follow the leader with a margin μ** (`shadow_leader::decide`, at every re-plan): the realised
/// entries follow A or B, and switch only when the other leads by μ,
///
///     A → B  when L_B < (1 − μ)·L_A,        B → A  when L_A < (1 − μ)·L_B.
///
/// Two consecutive switches A → B → A need L_B to grow by a factor ≥ 1/(1 − μ)² relative to L_A,
/// so the number of switches is at most 1 + 2·log(L_end/L_first)/log(1/(1 − μ)), and at every
/// re-plan the leader is within a factor 1/(1 − μ) of the better system. When B leads, the
/// realised entry is placed jointly against the *realised* cache's coverage.
///
/// **Hand-over on eviction** (`handover_selector::offer`). When entry f leaves, its checkpoints
/// c ≤ LCP(e, f) are bit for bit the states a retained entry e would hold at c (same tokens, same
/// recurrence). So e is offered those of them it lacks, O = {c ∈ C_f : B ≤ c ≤ LCP(e, f)} \ C_e,
/// and keeps, by reference (no prefill, never more than M), the exact best
///
///     S* = argmin_{S ⊆ C_e ∪ O, |S| ≤ M}  Σ_k P_k (k − max(ℓ_U(k), ℓ_S(k)))
///
/// under e's block law P and the coverage U the other retained entries give e (f and any entry not
/// placed yet excluded) — `select_covered`. When |C_e ∪ O| ≤ M everything is kept and neither the
/// law nor U is needed; when the budget binds an offered state already in U changes nothing for e
/// and is dropped first, and without a law yet e keeps its own.
///
/// ```cpp
/// hybridcache::shadow_leader lead({.margin = 0.05});
/// // every request, each shadow charged on its own copy of the placements:
/// lead.charge(t - hybridcache::shared_reuse(shares, positions_a),
///             t - hybridcache::shared_reuse(shares, positions_b));
/// if (replan_due) lead.decide();
/// // a new entry: jointly against the realised coverage when the joint system leads
/// std::vector<std::size_t> u;
/// hybridcache::covered_blocks(shares, positions, 64, length / 64, u);
/// auto plan = lead.leader() == hybridcache::shadow_system::joint && !u.empty()
///                 ? hybridcache::plan_entry_covered(law, budget, u)
///                 : hybridcache::plan_entry(law, budget);
/// ```

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <limits>
#include <ranges>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/overlap/joint_placement.hpp"
#include "hybridcache/placement/block_planner.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A retained entry's share of a sequence: `depth` is their longest common prefix in tokens
/// (`last_k_cache`'s `last_k_overlap` is one).
template <class T>
concept prefix_share = requires(const T& s) {
  { s.depth } -> std::convertible_to<std::size_t>;
};

/// An accessor from a share to the checkpoints of the entry it names: a contiguous range of
/// unsigned positions in tokens, strictly increasing (an empty range: the entry does not count).
template <class F, class Share>
concept checkpoints_accessor = std::invocable<F&, const Share&> &&
    std::ranges::contiguous_range<std::invoke_result_t<F&, const Share&>> && std::unsigned_integral<
        std::ranges::range_value_t<std::remove_cvref_t<std::invoke_result_t<F&, const Share&>>>>;

/// ℓ(x) = max over the shares of the deepest checkpoint c ≤ d_f of their entry, or 0 (file
/// comment): where a request resumes. The request recomputes t − ℓ(x) with t its depth.
/// @param shares the retained entries' shares of the request (any order).
/// @param checkpoints_of each share's entry's checkpoints, strictly increasing.
template <std::ranges::input_range Shares, class CheckpointsOf>
requires prefix_share<std::ranges::range_value_t<Shares>> &&
    checkpoints_accessor<CheckpointsOf, std::ranges::range_value_t<Shares>>
[[nodiscard]] std::size_t shared_reuse(const Shares& shares, CheckpointsOf&& checkpoints_of) {
  std::size_t reuse = 0;
  for (const auto& s : shares) {
    const std::size_t d = s.depth;
    if (d <= reuse) continue;  // nothing this entry holds can beat the current reuse
    const auto& cp = std::invoke(checkpoints_of, s);
    using position = std::ranges::range_value_t<std::remove_cvref_t<decltype(cp)>>;
    if (d > static_cast<std::size_t>(std::numeric_limits<position>::max())) {
      if (!std::ranges::empty(cp))
        reuse = std::max<std::size_t>(reuse, *std::prev(std::ranges::end(cp)));
      continue;
    }
    const auto it =
        std::upper_bound(std::ranges::begin(cp), std::ranges::end(cp), static_cast<position>(d));
    if (it != std::ranges::begin(cp)) reuse = std::max<std::size_t>(reuse, *std::prev(it));
  }
  return reuse;
}

/// U: the block indices ⌊c/B⌋ in 1..`max_block` of every checkpoint c ≤ d_f of every share's
/// entry (file comment), written to `out` strictly increasing — the `covered` argument of
/// `plan_entry_covered` and of `select_covered`.
/// @param granularity B, ≥ 1.
/// @throws invalid_argument for a granularity of 0.
template <std::ranges::input_range Shares, class CheckpointsOf>
requires prefix_share<std::ranges::range_value_t<Shares>> &&
    checkpoints_accessor<CheckpointsOf, std::ranges::range_value_t<Shares>>
void covered_blocks(const Shares& shares, CheckpointsOf&& checkpoints_of, std::size_t granularity,
                    std::size_t max_block, std::vector<std::size_t>& out) {
  if (granularity == 0) detail::throw_invalid("granularity", granularity, "must be >= 1");
  out.clear();
  for (const auto& s : shares) {
    const std::size_t d = s.depth;
    if (d < granularity) continue;  // shares less than a block: no checkpoint there
    for (const auto c : std::invoke(checkpoints_of, s)) {
      const auto p = static_cast<std::size_t>(c);
      if (p > d) break;
      const std::size_t k = p / granularity;
      if (k >= 1 && k <= max_block) out.push_back(k);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

/// The two shadow systems of a configuration (file comment).
enum class shadow_system : std::uint8_t {
  per_entry,  ///< A: every entry placed alone (`plan_entry`)
  joint,      ///< B: every entry placed against the retained entries' coverage
};

/// The system's name in reports.
constexpr std::string_view to_string(shadow_system s) noexcept {
  return s == shadow_system::joint ? "joint" : "per_entry";
}

/// Settings of `shadow_leader`.
struct shadow_leader_options {
  double margin = 0.05;  ///< μ: relative lead the other system needs before a switch, in [0, 1)
  double gamma = 1.0;    ///< γ: decay of both systems' recompute per request, in (0, 1]
};

/// Follow the leader between the per-entry and the joint shadow system, with a switching margin
/// (file comment). Starts with the per-entry system and both scores 0.
class shadow_leader {
 public:
  /// @throws invalid_argument for a margin outside [0, 1) or a gamma outside (0, 1].
  explicit shadow_leader(shadow_leader_options opts = {}) : opts_(opts) {
    if (!(opts.margin >= 0.0 && opts.margin < 1.0))
      detail::throw_invalid("margin", opts.margin, "must be in [0, 1)");
    if (!(opts.gamma > 0.0 && opts.gamma <= 1.0))
      detail::throw_invalid("gamma", opts.gamma, "must be in (0, 1]");
  }

  /// Charges one request: L_A ← γ·L_A + r_A, L_B ← γ·L_B + r_B, with r_A, r_B the tokens the
  /// request recomputes in each system's own replay (0 for a miss, which still decays both).
  void charge(double per_entry_recompute, double joint_recompute) noexcept {
    score_a_ = opts_.gamma * score_a_ + per_entry_recompute;
    score_b_ = opts_.gamma * score_b_ + joint_recompute;
  }

  /// At a re-plan: switches A → B when L_B < (1 − μ)·L_A and B → A when L_A < (1 − μ)·L_B, and
  /// returns the system the realised entries follow until the next re-plan.
  shadow_system decide() noexcept {
    const double m = 1.0 - opts_.margin;
    if (leader_ == shadow_system::per_entry && score_b_ < m * score_a_)
      leader_ = shadow_system::joint;
    else if (leader_ == shadow_system::joint && score_a_ < m * score_b_)
      leader_ = shadow_system::per_entry;
    return leader_;
  }

  /// The system the realised entries follow (as of the last `decide`).
  [[nodiscard]] shadow_system leader() const noexcept { return leader_; }
  /// L_A or L_B.
  [[nodiscard]] double score(shadow_system s) const noexcept {
    return s == shadow_system::joint ? score_b_ : score_a_;
  }
  [[nodiscard]] const shadow_leader_options& options() const noexcept { return opts_; }

 private:
  shadow_leader_options opts_;
  double score_a_ = 0.0, score_b_ = 0.0;
  shadow_system leader_ = shadow_system::per_entry;
};

/// What `handover_selector::offer` did to the retained entry.
struct handover_result {
  bool replaced = false;  ///< `next` holds the entry's new checkpoints (else keep its own)
  std::size_t taken = 0;  ///< of them, states taken over from the evicted entry
};

/// Hand-over on eviction (file comment): chooses, for one retained entry e and one evicted entry
/// f sharing a prefix, the checkpoints e keeps. Holds scratch space only, so one selector serves
/// every (entry, configuration) pair in turn.
class handover_selector {
 public:
  /// @param granularity B, ≥ 1: every checkpoint is a multiple of it.
  /// @throws invalid_argument for a granularity of 0.
  explicit handover_selector(std::size_t granularity) : b_(granularity) {
    if (granularity == 0) detail::throw_invalid("granularity", granularity, "must be >= 1");
  }

  /// Offers e the states of f on their shared prefix.
  /// @param mine C_e, e's checkpoints (positions in tokens, strictly increasing, multiples of B).
  /// @param theirs C_f, f's checkpoints (same form).
  /// @param shared_depth LCP(e, f) in tokens.
  /// @param budget M: e never holds more.
  /// @param law_of `() -> const entry_block_law*`: e's block law, nullptr when there is none yet;
  ///        called only when the budget binds.
  /// @param covered_of `(std::vector<std::size_t>& out)`: writes U, the block indices other
  ///        retained entries cover for e (f and entries not placed yet excluded), strictly
  ///        increasing, ≥ 1 (`covered_blocks`); called only when the budget binds and a law
  ///        exists.
  /// @param next receives S* as positions when the result says `replaced`.
  /// @returns replaced = false when f offers nothing e lacks, or nothing useful when the budget
  ///          binds, or when it binds and there is no law yet.
  template <std::unsigned_integral Position, class LawOf, class CoveredOf>
  requires std::invocable<LawOf&> && std::invocable < CoveredOf&, std::vector<std::size_t>
  & > handover_result offer(std::span<const Position> mine, std::span<const Position> theirs,
                            std::size_t shared_depth, std::size_t budget, LawOf&& law_of,
                            CoveredOf&& covered_of, std::vector<Position>& next) {
    const std::size_t b = b_;
    const auto end =
        shared_depth >= static_cast<std::size_t>(std::numeric_limits<Position>::max())
            ? theirs.end()
            : std::upper_bound(theirs.begin(), theirs.end(), static_cast<Position>(shared_depth));
    std::size_t offered = 0;
    for (auto it = theirs.begin(); it != end; ++it) {
      if (*it >= b && !std::binary_search(mine.begin(), mine.end(), *it)) ++offered;
    }
    if (offered == 0) return {};
    const bool over = mine.size() + offered > budget;
    const entry_block_law* law = nullptr;
    covered_.clear();
    if (over) {
      law = std::invoke(law_of);
      if (law == nullptr) return {};  // no law yet to choose by: e keeps its own
      std::invoke(covered_of, covered_);
    }
    // Candidates: e's own and the offered states (an offered state U already covers changes
    // nothing for e, so it is dropped when the budget binds), as increasing block indices.
    candidates_.clear();
    auto it_m = mine.begin();
    for (auto it = theirs.begin(); it != end; ++it) {
      if (*it < b) continue;
      while (it_m != mine.end() && *it_m < *it) candidates_.push_back(*it_m++ / b);
      if (it_m != mine.end() && *it_m == *it) continue;
      if (over && std::binary_search(covered_.begin(), covered_.end(), *it / b)) continue;
      candidates_.push_back(*it / b);
    }
    while (it_m != mine.end()) candidates_.push_back(*it_m++ / b);
    if (candidates_.size() == mine.size()) return {};  // nothing useful offered
    const std::vector<std::size_t>& chosen =
        candidates_.size() <= budget
            ? candidates_
            : (chosen_ = select_covered(*law, candidates_, budget, covered_));
    handover_result r{true, 0};
    next.clear();
    next.reserve(chosen.size());
    for (const std::size_t x : chosen) {
      const auto p = static_cast<Position>(x * b);
      if (!std::binary_search(mine.begin(), mine.end(), p)) ++r.taken;
      next.push_back(p);
    }
    return r;
  }

  [[nodiscard]] std::size_t granularity() const noexcept { return b_; }

 private:
  std::size_t b_;
  std::vector<std::size_t> covered_, candidates_, chosen_;
};

HYBRIDCACHE_NAMESPACE_END
