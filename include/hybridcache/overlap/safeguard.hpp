#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The safeguard of every re-plan (docs/design/conditioned_law.md §Safeguard): the DP is optimal
/// for the law it is given, but the law is an estimate. So every hit is also scored, *before* it
/// enters the estimate (held out), against the DP's placement and the fixed candidates at the same
/// budget M, and each re-plan keeps the candidate with the least recent recompute:
///
///     S_c ← γ_s S_c + (t − ℓ_c(t)),    ℓ_c(t) = deepest checkpoint ≤ t that candidate c would have
///                                       stored in the matched entry (length L_e),
///     choice = argmin_c S_c   (ties: the DP, then last, balanced, block, sqrt, logarithmic).
///
/// Candidates at budget M (each stores at most M checkpoints per entry, on the block grid):
/// the DP, `last`, `balanced(M)`, `logarithmic(M)`, and `block` / `sqrt` capped to their deepest
/// M positions when their grid has more (an engine with M state slots per entry keeps the
/// newest, deepest states).
///
/// ```cpp
/// hybridcache::placement_safeguard guard(/*budget=*/4, /*granularity=*/64);
/// guard.score(depth, entry_length, dp_plan_for_that_entry);  // every hit, before observing it
/// auto s = guard.choose();                                      // at every re-plan
/// auto c = s == hybridcache::placement_strategy::dp ? dp_plan : guard.place(s, length);
/// ```

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/keyed_hash.hpp"
#include "hybridcache/placement/strategies.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A fixed candidate at budget M (file comment): `place_fixed`, keeping the deepest M positions.
/// @throws invalid_argument for a granularity of 0.
inline std::vector<std::size_t> place_capped(placement_strategy s, std::size_t length,
                                             std::size_t budget, std::size_t granularity) {
  auto pos = place_fixed(s, length, budget, {.granularity = granularity});
  if (pos.size() > budget) pos.erase(pos.begin(), pos.end() - static_cast<std::ptrdiff_t>(budget));
  return pos;
}

/// Settings of `placement_safeguard`.
struct safeguard_options {
  double gamma = 0.995;  ///< γ_s: decay of the held-out scores per hit, in (0, 1]
};

/// Held-out scoring of the DP and the fixed candidates at one budget (file comment).
class placement_safeguard {
 public:
  /// The candidates, in tie-break order.
  static constexpr std::array<placement_strategy, 6> candidates{
      placement_strategy::dp,    placement_strategy::last, placement_strategy::balanced,
      placement_strategy::block, placement_strategy::sqrt, placement_strategy::logarithmic};

  /// @throws invalid_argument for budget 0, granularity 0 or gamma outside (0, 1].
  placement_safeguard(std::size_t budget, std::size_t granularity, safeguard_options opts = {})
      : budget_(budget), granularity_(granularity), opts_(opts) {
    if (budget == 0) detail::throw_invalid("budget", budget, "must be >= 1");
    if (granularity == 0) detail::throw_invalid("granularity", granularity, "must be >= 1");
    if (!(opts.gamma > 0.0 && opts.gamma <= 1.0))
      detail::throw_invalid("gamma", opts.gamma, "must lie in (0, 1]");
  }

  /// Scores one hit at `depth` on an entry of `entry_length` tokens; `dp_checkpoints` is the DP's
  /// placement for that entry under the law in force (which has not seen this hit).
  /// @throws invalid_argument if depth == 0 or depth > entry_length.
  void score(std::size_t depth, std::size_t entry_length,
             std::span<const std::size_t> dp_checkpoints) {
    if (depth == 0 || depth > entry_length)
      detail::throw_invalid("depth", depth, "must lie in 1..entry_length");
    for (std::size_t c = 0; c < candidates.size(); ++c) {
      const auto pos = c == 0 ? dp_checkpoints
                              : std::span<const std::size_t>(place(candidates[c], entry_length));
      const auto it = std::upper_bound(pos.begin(), pos.end(), depth);
      const std::size_t reuse = it == pos.begin() ? 0 : *(it - 1);
      scores_[c] = opts_.gamma * scores_[c] + static_cast<double>(depth - reuse);
    }
    ++scored_;
  }

  /// Fixes the choice for the next period: the candidate with the least score (ties: the earlier
  /// one; the DP before any hit was scored) and returns it.
  placement_strategy choose() noexcept {
    std::size_t best = 0;
    for (std::size_t c = 1; c < candidates.size(); ++c) {
      if (scores_[c] < scores_[best]) best = c;
    }
    choice_ = candidates[best];
    return choice_;
  }

  /// The positions fixed candidate `s` stores in an entry of `length` tokens (memoised).
  [[nodiscard]] const std::vector<std::size_t>& place(placement_strategy s, std::size_t length) {
    const std::uint64_t key = (static_cast<std::uint64_t>(s) << 56) ^ length;
    auto it = memo_.find(key);
    if (it == memo_.end())
      it = memo_.emplace(key, place_capped(s, length, budget_, granularity_)).first;
    return it->second;
  }

  [[nodiscard]] placement_strategy choice() const noexcept { return choice_; }
  /// S_c per candidate, in `candidates` order.
  [[nodiscard]] std::span<const double> scores() const noexcept { return scores_; }
  [[nodiscard]] std::uint64_t scored() const noexcept { return scored_; }
  [[nodiscard]] std::size_t budget() const noexcept { return budget_; }

 private:
  std::size_t budget_, granularity_;
  safeguard_options opts_;
  std::array<double, 6> scores_{};
  std::uint64_t scored_ = 0;
  placement_strategy choice_ = placement_strategy::dp;
  keyed_map<std::uint64_t, std::vector<std::size_t>> memo_;  // keyed: lengths are input
};

HYBRIDCACHE_NAMESPACE_END
