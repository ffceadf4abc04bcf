#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The checkpoint-placement strategies compared by the simulator and the `baselines` / `demo`
/// commands, and the one switch that places a fixed (distribution-oblivious) strategy for an entry
/// of length L on the block grid {B, 2B, …}:
///
/// | strategy | checkpoints of an entry of length L | budget |
/// |---|---|---|
/// | `no_cache` | none, no KV either | — |
/// | `kv_only` | none (attention KV kept, recurrent state recomputed) | — |
/// | `last` | the last block boundary ⌊L/B⌋B (what engines store today: the request end) | — |
/// | `block` | every stride S (default S = B): S, 2S, …, ⌊L/S⌋S, then moved down to the grid | — |
/// | `sqrt` | every ⌊√L⌋ tokens | — |
/// | `balanced` | ⌊i(L+1)/(M+1)⌋, i = 1..M | M |
/// | `logarithmic` | exponentially growing gaps from the start | M |
/// | `dp` | `place_optimal` (Thm. 2) on a depth law | M |
/// | `dp_frontier` | the DP with the fewest m ≤ M checkpoints within a tolerance of the budget-M
/// optimum | ≤ M |
///
/// Positions of the closed-form strategies are rounded down to multiples of B and deduplicated
/// (`clip_to_granularity`, as the sparse prefix caching paper's experiments do); an entry shorter
/// than B stores nothing.
///
/// ```cpp
/// auto c = hybridcache::place_fixed(hybridcache::placement_strategy::balanced, 1000, 3,
/// {.granularity = 64});
/// // {192, 448, 704}: ⌊i·1001/4⌋ = 250, 500, 750 moved down to multiples of 64
/// ```

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/placement/baselines.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A checkpoint-placement strategy (see the file comment's table).
enum class placement_strategy : std::uint8_t {
  no_cache,
  kv_only,
  last,
  block,
  sqrt,
  balanced,
  logarithmic,
  dp,
  dp_frontier,
};

/// Every strategy, in report order.
inline constexpr placement_strategy all_placement_strategies[] = {
    placement_strategy::no_cache,    placement_strategy::kv_only, placement_strategy::last,
    placement_strategy::block,       placement_strategy::sqrt,    placement_strategy::balanced,
    placement_strategy::logarithmic, placement_strategy::dp,      placement_strategy::dp_frontier};

/// The fixed candidates a safeguard compares the DP with, in tie-break order.
inline constexpr placement_strategy fixed_placement_strategies[] = {
    placement_strategy::last, placement_strategy::balanced, placement_strategy::block,
    placement_strategy::sqrt, placement_strategy::logarithmic};

/// The strategy's name as used in reports and on the command line.
constexpr std::string_view to_string(placement_strategy s) noexcept {
  switch (s) {
    case placement_strategy::no_cache:
      return "no_cache";
    case placement_strategy::kv_only:
      return "kv_only";
    case placement_strategy::last:
      return "last";
    case placement_strategy::block:
      return "block";
    case placement_strategy::sqrt:
      return "sqrt";
    case placement_strategy::balanced:
      return "balanced";
    case placement_strategy::logarithmic:
      return "logarithmic";
    case placement_strategy::dp:
      return "dp";
    case placement_strategy::dp_frontier:
      return "dp_frontier";
  }
  return "?";
}

/// The strategy called `name`, if any.
constexpr std::optional<placement_strategy> parse_placement_strategy(
    std::string_view name) noexcept {
  for (auto s : all_placement_strategies) {
    if (to_string(s) == name) return s;
  }
  return std::nullopt;
}

/// Whether the strategy takes a checkpoint budget M (the others store what their rule says).
constexpr bool uses_budget(placement_strategy s) noexcept {
  return s == placement_strategy::balanced || s == placement_strategy::logarithmic ||
         s == placement_strategy::dp || s == placement_strategy::dp_frontier;
}

/// Whether the strategy is one of the fixed (distribution-oblivious) baselines that store
/// recurrent checkpoints (`last`, `block`, `sqrt`, `balanced`, `logarithmic`).
constexpr bool is_fixed_baseline(placement_strategy s) noexcept {
  return s == placement_strategy::last || s == placement_strategy::block ||
         s == placement_strategy::sqrt || s == placement_strategy::balanced ||
         s == placement_strategy::logarithmic;
}

/// Options of `place_fixed`.
struct fixed_placement_options {
  std::size_t granularity = 1;   ///< block size B ≥ 1: positions are moved down to multiples of B
  std::size_t block_stride = 0;  ///< stride S of `block` (0: S = B)
};

/// The checkpoints a fixed strategy stores in an entry of `length` tokens with budget M (ignored
/// by strategies that take none), on the grid of `opts.granularity` (file comment). `no_cache`,
/// `kv_only` and the DP strategies (which need a law) store nothing here.
/// @throws invalid_argument for a granularity of 0.
inline std::vector<std::size_t> place_fixed(placement_strategy s, std::size_t length,
                                            std::size_t budget, fixed_placement_options opts = {}) {
  const std::size_t b = opts.granularity;
  if (b == 0) detail::throw_invalid("granularity", b, "must be >= 1");
  std::vector<std::size_t> pos;
  if (length < b) return pos;
  const std::size_t m = budget < length ? budget : length;
  switch (s) {
    case placement_strategy::no_cache:
    case placement_strategy::kv_only:
    case placement_strategy::dp:
    case placement_strategy::dp_frontier:
      return pos;
    case placement_strategy::last:
      pos.push_back(length / b * b);
      return pos;
    case placement_strategy::block:
      pos = place_block(length, opts.block_stride == 0 ? b : opts.block_stride);
      break;
    case placement_strategy::sqrt:
      pos = place_sqrt(length);
      break;
    case placement_strategy::balanced:
      pos = place_balanced(length, m);
      break;
    case placement_strategy::logarithmic:
      pos = place_logarithmic(length, m);
      break;
  }
  return clip_to_granularity(pos, b);
}

HYBRIDCACHE_NAMESPACE_END
