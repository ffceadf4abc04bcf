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
#include <limits>
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

/// Hand-over on eviction (docs/design/conditioned_law.md §6): the exact best subset of at most
/// `budget` of the block indices `candidates` (increasing, each in 1..⌊L/B⌋) for an entry with
/// block law `law`, given the block indices `covered` (increasing, ≥ 1) that other retained
/// entries serve. It minimises the same cost as `plan_entry_covered`,
///
///     E'[r](S) = Σ_k P_k (k − max(ℓ_U(k), ℓ_S(k))),    S ⊆ candidates, |S| ≤ budget,
///
/// but over a given candidate set (an entry's own checkpoints and the states it may take over
/// from an evicted entry sharing its prefix) instead of the whole grid. Exact by a shortest path
/// with at most `budget` interior nodes over 0 < a_1 < … < a_n < n_end: the edge a_i → a_j costs
/// Σ_{a_i ≤ k < a_j} P_k (k − max(a_i, ℓ_U(k))) — the depths a_i serves until the next chosen
/// candidate. A checkpoint never increases the cost, so with n ≤ budget every candidate is kept and
/// otherwise an optimum keeps exactly `budget`: the path skips exactly r = n − budget candidates,
/// and D(j, s) = min_{h ≤ s} D(j − 1 − h, s − h) + w(j − 1 − h, j) over the hops that skip h,
/// O(n · r² + (r + 1) · ⌊L/B⌋) — a hand-over offers at most M states, so r ≤ M and is
/// usually 1. Returns the chosen
/// block indices, increasing (ties: the earliest-found optimum, so the result is deterministic).
/// @throws invalid_argument naming `candidates[i]` / `covered[i]` when not strictly increasing,
///         0, or (candidates) above ⌊L/B⌋.
inline std::vector<std::size_t> select_covered(const entry_block_law& law,
                                               std::span<const std::size_t> candidates,
                                               std::size_t budget,
                                               std::span<const std::size_t> covered) {
  const std::size_t nb = law.mass.size();
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i] == 0 || candidates[i] > nb || (i > 0 && candidates[i] <= candidates[i - 1]))
      detail::throw_invalid(detail::indexed("candidates", i), candidates[i],
                            "must be in 1..L/B and strictly increasing");
  }
  for (std::size_t i = 0; i < covered.size(); ++i) {
    if (covered[i] == 0 || (i > 0 && covered[i] <= covered[i - 1]))
      detail::throw_invalid(detail::indexed("covered", i), covered[i],
                            "must be >= 1 and strictly increasing");
  }
  const std::size_t n = candidates.size();
  if (n <= budget) return {candidates.begin(), candidates.end()};
  if (budget == 0) return {};
  // ℓ_U(k) for k = 0..nb.
  std::vector<std::size_t> lu(nb + 1, 0);
  for (std::size_t k = 1, u = 0, cur = 0; k <= nb; ++k) {
    while (u < covered.size() && covered[u] <= k) cur = covered[u++];
    lu[k] = cur;
  }
  // Nodes: 0 = the start (position 0), 1..n = candidates, n + 1 = the end (position nb + 1).
  // A checkpoint never raises the cost, so some optimum keeps exactly `budget` candidates, i.e.
  // skips exactly r = n − budget of them: a path 0 → … → n + 1 whose hops i → j skip j − i − 1.
  const std::size_t r = n - budget;
  const auto pos = [&](std::size_t v) { return v == 0 ? 0 : v <= n ? candidates[v - 1] : nb + 1; };
  const std::size_t width = r + 1;
  // w[i · width + h]: the edge i → i + 1 + h (h = 0..r skipped), when i + 1 + h ≤ n + 1.
  std::vector<double> w((n + 1) * width, 0.0);
  for (std::size_t i = 0; i <= n; ++i) {
    const std::size_t a = pos(i);
    double acc = 0.0;
    std::size_t k = a == 0 ? 1 : a;
    for (std::size_t h = 0; h <= r && i + 1 + h <= n + 1; ++h) {
      for (const std::size_t end = pos(i + 1 + h); k < end; ++k)
        acc += law.mass[k - 1] * static_cast<double>(k - std::max(a, lu[k]));
      w[i * width + h] = acc;
    }
  }
  constexpr double inf = std::numeric_limits<double>::infinity();
  // d[j · width + s]: the least cost of the depths below pos(j) reaching node j with s skipped.
  std::vector<double> d((n + 2) * width, inf);
  std::vector<std::size_t> from((n + 2) * width, 0);
  d[0] = 0.0;
  for (std::size_t j = 1; j <= n + 1; ++j) {
    for (std::size_t h = 0; h <= r && h + 1 <= j; ++h) {  // hop from i = j − 1 − h
      const std::size_t i = j - 1 - h;
      const double edge = w[i * width + h];
      for (std::size_t s = h; s <= r; ++s) {
        const double v = d[i * width + s - h] + edge;
        if (v < d[j * width + s]) {
          d[j * width + s] = v;
          from[j * width + s] = i;
        }
      }
    }
  }
  std::vector<std::size_t> out;
  out.reserve(budget);
  for (std::size_t j = from[(n + 1) * width + r], s = r - (n - j); j > 0;) {
    out.push_back(pos(j));
    const std::size_t i = from[j * width + s];
    s -= j - 1 - i;
    j = i;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

HYBRIDCACHE_NAMESPACE_END
