#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Joint placement over the retained entries (docs/design/conditioned_law.md §6): the exact best
/// checkpoints of a *new* entry given the depths that entries already in the cache cover.
///
/// A request x that later leaves the new entry e at depth t shares min(t, d_f) tokens with every
/// retained entry f (d_f = LCP(e, f), known when e is inserted), so f's checkpoints c ≤ d_f serve
/// it too. With U the union of those covered depths (block indices on the grid of B), the reuse
/// of x is
///
///     ℓ(t) = max(ℓ_U(t), ℓ_e(t)),   ℓ_U(t) = max{u ∈ U ∪ {0} : u ≤ t},
///
/// and the new entry's placement C_e (|C_e| ≤ M) should minimise, in block units k = ⌊t/B⌋,
///
///     E'[r] = Σ_k P_k (k − ℓ(k)),          P_k the entry's block masses (`entry_block_law`).
///
/// **The problem splits at the covered depths.** Between two consecutive covered indices
/// u_j < u_{j+1} (u_0 = 0, the last gap running to n = ⌊L/B⌋) a new checkpoint a serves the depths
/// in [a, next new checkpoint or u_{j+1}) and nothing beyond u_{j+1}, so gap j is the ordinary
/// block problem on the local indices i = k − u_j, i = 1..u_{j+1} − u_j − 1, with masses
/// P_{u_j + i}: `optimal_frontier` gives its optimal cost V_j(m) for every m, and V_j is convex
/// (the edge cost is Monge). The budget is split by taking the M largest marginal gains
/// V_j(m−1) − V_j(m) over all gaps, gap by gap in order (separable convex allocation: greedy is
/// exact), and each gap is placed by `place_optimal` at its share. With U empty this is
/// `plan_entry` itself.
///
/// ```cpp
/// auto law = sums.block_law(hybridcache::depth_anchor::head, 4096, 64);
/// std::vector<std::size_t> covered{31};                       // depth 1984 is held elsewhere
/// auto plan = hybridcache::plan_entry_covered(*law, 1, covered);  // never stores 1984 again
/// ```

#include <algorithm>
#include <cstddef>
#include <queue>
#include <span>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/placement/block_planner.hpp"
#include "hybridcache/placement/frontier.hpp"
#include "hybridcache/placement/optimal.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// E'[r] = Σ_k P_k (k − ℓ(k)) of `checkpoints` (block indices, increasing) for `law`, with the
/// block indices `covered` (increasing) already served by other entries (file comment).
[[nodiscard]] inline double covered_block_cost(const entry_block_law& law,
                                               std::span<const std::size_t> checkpoints,
                                               std::span<const std::size_t> covered) {
  double cost = 0.0;
  std::size_t a = 0, u = 0, reuse = 0;
  for (std::size_t k = 1; k <= law.mass.size(); ++k) {
    while (a < checkpoints.size() && checkpoints[a] <= k) reuse = std::max(reuse, checkpoints[a++]);
    while (u < covered.size() && covered[u] <= k) reuse = std::max(reuse, covered[u++]);
    cost += law.mass[k - 1] * static_cast<double>(k - reuse);
  }
  return cost;
}

/// The exact best placement of at most `budget` checkpoints (multiples of B) of an entry with
/// block law `law`, given the block indices `covered` that retained entries sharing its prefix
/// already serve (file comment). Covered indices above ⌊L/B⌋ are ignored. Returns positions in
/// tokens and E[r] in tokens under `law` with the coverage: R_nc − B (S − E'[r]).
/// @throws invalid_argument naming `covered[i]` when `covered` is not strictly increasing or holds
///         a 0.
inline placement plan_entry_covered(const entry_block_law& law, std::size_t budget,
                                    std::span<const std::size_t> covered) {
  const std::size_t n = law.mass.size();
  std::vector<std::size_t> bases{0};
  for (std::size_t i = 0; i < covered.size(); ++i) {
    if (covered[i] == 0 || (i > 0 && covered[i] <= covered[i - 1]))
      detail::throw_invalid(detail::indexed("covered", i), covered[i],
                            "must be >= 1 and strictly increasing");
    if (covered[i] <= n) bases.push_back(covered[i]);
  }
  const std::span<const std::size_t> used(bases.data() + 1, bases.size() - 1);
  placement out;
  const auto finish = [&](std::vector<std::size_t> blocks) {
    const double e = covered_block_cost(law, blocks, used);
    for (auto& x : blocks) x *= law.granularity;
    out.checkpoints = std::move(blocks);
    out.expected_recompute = law.tokens_of(e / (law.total > 0.0 ? law.total : 1.0));
    return out;
  };
  if (!(law.total > 0.0) || budget == 0) return finish({});
  if (used.empty()) {  // nothing covered: the ordinary exact plan
    out = plan_entry(law, budget);
    return out;
  }
  struct gap {
    std::size_t base;
    std::vector<double> mass;   // local masses, index i − 1 for i = 1..
    std::vector<double> value;  // V_j(m), m = 0..cap (unnormalised)
    std::size_t taken = 0;
  };
  std::vector<gap> gaps;
  std::size_t useful_total = 0;
  for (std::size_t j = 0; j < bases.size(); ++j) {
    const std::size_t lo = bases[j], hi = j + 1 < bases.size() ? bases[j + 1] : n + 1;
    if (hi <= lo + 1) continue;
    gap g{lo,
          std::vector<double>(law.mass.begin() + static_cast<std::ptrdiff_t>(lo),
                              law.mass.begin() + static_cast<std::ptrdiff_t>(hi - 1)),
          {},
          0};
    double z = 0.0;
    std::size_t useful = 0;
    for (double p : g.mass) {
      z += p;
      useful += p > 0.0 ? 1 : 0;
    }
    if (!(z > 0.0)) continue;
    useful_total += useful;
    const std::size_t cap = budget < useful ? budget : useful;
    g.value = optimal_frontier(g.mass, cap);
    for (double& v : g.value) v *= z;
    gaps.push_back(std::move(g));
  }
  if (budget >= useful_total) {  // every useful uncovered block gets a checkpoint
    std::vector<std::size_t> blocks;
    for (const auto& g : gaps) {
      for (std::size_t i = 1; i <= g.mass.size(); ++i) {
        if (g.mass[i - 1] > 0.0) blocks.push_back(g.base + i);
      }
    }
    return finish(std::move(blocks));
  }
  // Greedy over the convex marginals: the next gain of every gap in a max-heap.
  using item = std::pair<double, std::size_t>;
  std::priority_queue<item> heap;
  for (std::size_t j = 0; j < gaps.size(); ++j) {
    if (gaps[j].value.size() > 1) heap.emplace(gaps[j].value[0] - gaps[j].value[1], j);
  }
  for (std::size_t left = budget; left > 0 && !heap.empty(); --left) {
    const std::size_t j = heap.top().second;
    heap.pop();
    gap& g = gaps[j];
    ++g.taken;
    if (g.taken + 1 < g.value.size()) heap.emplace(g.value[g.taken] - g.value[g.taken + 1], j);
  }
  std::vector<std::size_t> blocks;
  for (const auto& g : gaps) {
    if (g.taken == 0) continue;
    const auto p = place_optimal(g.mass, g.taken);
    for (std::size_t i : p.checkpoints) blocks.push_back(g.base + i);
  }
  return finish(std::move(blocks));
}

HYBRIDCACHE_NAMESPACE_END
