#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Exact checkpoint placement in a prefix **tree** (DESIGN §7): many cached sequences that share
/// prefixes, one budget of M recurrent states for all of them.
///
/// Nodes are block boundaries of cached sequences; node 0 is the root (the empty prefix, whose
/// state is free). A request's usable match ends at node v with probability ŵ(v) (the weights,
/// normalised). With checkpoint set S, anchor(v) is the deepest node of S ∪ {0} on the
/// root→v path (v included), and
///
///     E[r] = Σ_v ŵ(v) · (depth(v) − depth(anchor(v))).
///
/// On a chain this is exactly the paper's problem (`place_optimal`). The solver
/// (detail/tree_dp.hpp, derivation in docs/design/tree_dp.md) first drops the nodes that can never
/// be the unique best anchor (weightless subtrees, weightless non-branching nodes), then runs an
/// exact DP over (anchor, node, budget) with (min,+) knapsack merging over children, each vector
/// capped by its subtree's count of weighted nodes. Time O(Σ_a |subtree(a)| · min(n_w, M)) over
/// the reduced tree in the worst case. Peak memory O(n + Σ_x min(n_w(x), M) + M·√Δ), Δ the
/// largest fan-out of the reduced tree (so O(n + M·√n) on a star, O(n·min(M, h + 1) + M·√n) for
/// reduced height h); the exact terms are in detail/tree_dp.hpp. `optimal_tree_frontier` adds
/// its output, max_budget + 1 doubles.
///
/// `place_optimal_tree` (one budget) first searches a price λ whose minimiser of E[r] + λ|S| has
/// exactly M checkpoints — such a plan is optimal for M (detail/tree_lagrangian.hpp,
/// docs/design/tree_dp.md §7) — at O(Σ depth) or O(n log n) per price on the reduced tree, and
/// runs the DP only when no price certifies M (V is not convex on trees).
///
/// @code
///   // root ─ 1 (depth 100) ─┬─ 2 (depth 110, w 0.5)
///   //                       └─ 3 (depth 120, w 0.5)
///   std::vector<std::size_t> parent{0, 0, 1, 1};
///   std::vector<double> depth{0, 100, 110, 120};
///   std::vector<double> weight{0, 0, 1, 1};
///   hybridcache::tree_view t{parent, depth, weight};
///   auto plan = hybridcache::place_optimal_tree(t, 1);  // {1}: the junction serves both
///   // plan.expected_recompute == 0.5 * 10 + 0.5 * 20 == 15 (a leaf alone would leave 55)
/// @endcode

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/detail/normalise.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/placement/detail/tree_dp.hpp"
#include "hybridcache/placement/detail/tree_lagrangian.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A rooted tree in topological order, node 0 = root. Non-owning.
struct tree_view {
  std::span<const std::size_t> parent;  ///< parent[v] < v for v ≥ 1 (parent[0] is ignored)
  std::span<const double> depth;        ///< tokens; depth[0] == 0, depth[v] > depth[parent[v]]
  std::span<const double> weight;       ///< ≥ 0, finite, not all 0; normalised inside
};

/// An optimal tree plan: checkpoint node ids (ascending, never 0) and their E[r] in tokens.
struct tree_placement {
  std::vector<std::size_t> checkpoints;
  double expected_recompute = 0.0;
};

namespace detail {

/// Validates `tree` (every rule of DESIGN §7) and returns it with normalised weights.
/// The weights are normalised as `place_optimal` normalises a chain's (detail/problem.hpp): first
/// multiplied by the exact power of two `scale_to_unit` (detail/normalise.hpp) that brings the
/// largest into [1, 2), then divided by their sum, which is then in [1, 2n) — so finite weights
/// never overflow the sum (1e308 + 1e308) and subnormal ones keep their ratios.
/// @throws invalid_argument naming the offending argument and value.
inline tree_problem make_tree_problem(tree_view tree) {
  const std::size_t n = tree.parent.size();
  if (n == 0) throw_invalid("tree.parent.size()", n, "the tree needs at least the root");
  if (tree.depth.size() != n)
    throw_invalid("tree.depth.size()", tree.depth.size(),
                  "must equal tree.parent.size() = " + std::to_string(n));
  if (tree.weight.size() != n)
    throw_invalid("tree.weight.size()", tree.weight.size(),
                  "must equal tree.parent.size() = " + std::to_string(n));
  if (tree.depth[0] != 0.0) throw_invalid("tree.depth[0]", tree.depth[0], "the root's depth is 0");
  double max_w = 0.0;
  for (std::size_t v = 0; v < n; ++v) {
    const double w = tree.weight[v];
    if (!std::isfinite(w) || w < 0.0)
      throw_invalid(indexed("tree.weight", v), w, "weights must be finite and >= 0");
    if (w > max_w) max_w = w;
    if (v == 0) continue;
    const std::size_t p = tree.parent[v];
    if (p >= v)
      throw_invalid(indexed("tree.parent", v), p, "must be < v (nodes in topological order)");
    const double d = tree.depth[v];
    if (!std::isfinite(d) || !(d > tree.depth[p]))
      throw_invalid(indexed("tree.depth", v), d,
                    "must be finite and > the parent's depth " + to_display(tree.depth[p]));
  }
  if (!(max_w > 0.0)) throw_invalid("tree.weight", "all 0", "at least one weight must be > 0");
  const unit_scale scale = scale_to_unit(max_w);  // exact, subnormal- and overflow-safe
  tree_problem pb{tree.parent, tree.depth, std::vector<double>(n)};
  double total = 0.0;
  for (std::size_t v = 0; v < n; ++v) {
    pb.weight[v] = scale(tree.weight[v]);
    total += pb.weight[v];
  }
  for (double& w : pb.weight) w /= total;  // total ∈ [1, 2n): finite and normal
  return pb;
}

/// E[r] of `checkpoints` on a validated problem, by one pass in topological order.
inline double tree_recompute(const tree_problem& pb, std::span<const std::size_t> checkpoints) {
  const std::size_t n = pb.parent.size();
  std::vector<char> is_ck(n, 0);
  for (std::size_t i = 0; i < checkpoints.size(); ++i) {
    if (checkpoints[i] >= n)
      throw_invalid(indexed("checkpoints", i), checkpoints[i],
                    "must be < the node count " + std::to_string(n));
    is_ck[checkpoints[i]] = 1;
  }
  std::vector<double> anchor_depth(n, 0.0);
  double er = 0.0;
  for (std::size_t v = 1; v < n; ++v) {
    anchor_depth[v] = is_ck[v] ? pb.depth[v] : anchor_depth[pb.parent[v]];
    er += pb.weight[v] * (pb.depth[v] - anchor_depth[v]);
  }
  return er;
}

}  // namespace detail

/// E[r] = Σ_v ŵ(v)(depth(v) − depth(anchor(v))) of a given checkpoint set (any order; duplicates
/// and the root are allowed and change nothing).
/// @throws invalid_argument for a bad tree (see `place_optimal_tree`) or a checkpoint id ≥ the
///         node count.
[[nodiscard]] inline double expected_recompute_tree(tree_view tree,
                                                    std::span<const std::size_t> checkpoints) {
  return detail::tree_recompute(detail::make_tree_problem(tree), checkpoints);
}

/// The exact optimal plan with at most `budget` checkpoints: a certified priced plan where one
/// exists, else the budget DP (see the file comment). The result has
/// min(budget, useful) checkpoints at most, useful = the number of non-root nodes with weight > 0
/// (checkpoints on all of them give E[r] = 0); a larger budget is fine.
/// @returns node ids ascending, never 0, and their E[r].
/// @throws invalid_argument for sizes that differ, an empty tree, parent[v] ≥ v, depth[0] ≠ 0, a
///         depth not strictly increasing along an edge (or not finite), NaN/inf/negative or
///         all-zero weights. Finite weights whose sum overflows a double are fine (normalised as
///         by `place_optimal`).
[[nodiscard]] inline tree_placement place_optimal_tree(tree_view tree, std::size_t budget) {
  const auto pb = detail::make_tree_problem(tree);
  const std::size_t n = pb.parent.size();
  const std::size_t m = budget < n ? budget : n;
  tree_placement out;
  out.checkpoints = detail::solve_tree_budget(pb, m);
  out.expected_recompute = detail::tree_recompute(pb, out.checkpoints);
  return out;
}

/// V(M) = the optimal E[r] for every budget M = 0..max_budget (size max_budget + 1);
/// nonincreasing, V(0) = Σ ŵ(v) depth(v), and V(M) = 0 from M = useful on. The DP itself runs to
/// min(max_budget, n) only; the output's max_budget + 1 doubles are the rest of the memory.
/// @throws invalid_argument as `place_optimal_tree`, and naming `max_budget + 1` when the output
///         would not fit in `max_allocation_bytes` (checked.hpp), as `optimal_frontier` does.
[[nodiscard]] inline std::vector<double> optimal_tree_frontier(tree_view tree,
                                                               std::size_t max_budget) {
  const auto pb = detail::make_tree_problem(tree);
  // The frontier has max_budget + 1 entries: checked before sizing it (as optimal_frontier).
  (void)checked_count<double>(checked_add(max_budget, std::size_t{1}, "max_budget", "1"),
                              "max_budget + 1");
  const std::size_t n = pb.parent.size();
  const std::size_t m = max_budget < n ? max_budget : n;
  detail::tree_dp dp(pb, m, /*compress=*/true);
  std::vector<double> v = dp.frontier();
  v.resize(max_budget + 1, v.back());
  return v;
}

HYBRIDCACHE_NAMESPACE_END
