#pragma once
// SPDX-License-Identifier: Apache-2.0
// Independent references for the tree placement tests, written from DESIGN.md §7 and sharing no
// code with include/hybridcache/placement/tree.hpp:
//  - tree_recompute(): E[r] by walking every node up to its deepest checkpointed ancestor, in
//    long double;
//  - tree_brute_force(): the minimum over every subset of the non-root nodes (n ≤ 16);
//  - random_tree(): the shapes the tests sweep (chains, stars, binary, caterpillars, random).
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace hybridcache_test {

struct tree_case {
  std::vector<std::size_t> parent;
  std::vector<double> depth;
  std::vector<double> weight;
};

/// Σ_v w(v)(depth(v) − depth(anchor(v))) / Σ_v w(v), anchor found by walking up parent links.
inline long double tree_recompute(const tree_case& t, const std::vector<std::size_t>& cps) {
  const std::size_t n = t.parent.size();
  std::vector<bool> ck(n, false);
  for (std::size_t c : cps) ck[c] = true;
  long double num = 0, den = 0;
  for (std::size_t v = 0; v < n; ++v) {
    std::size_t a = v;
    while (a != 0 && !ck[a]) a = t.parent[a];
    num += static_cast<long double>(t.weight[v]) *
           (static_cast<long double>(t.depth[v]) - static_cast<long double>(t.depth[a]));
    den += t.weight[v];
  }
  return num / den;
}

/// best[m] = min E[r] over subsets of {1..n−1} with at most m elements, m = 0..n−1.
inline std::vector<long double> tree_brute_force(const tree_case& t) {
  const std::size_t n = t.parent.size();
  std::vector<long double> best(n, std::numeric_limits<long double>::infinity());
  std::vector<std::size_t> cps;
  for (std::size_t mask = 0; mask < (std::size_t{1} << (n - 1)); ++mask) {
    cps.clear();
    for (std::size_t i = 0; i + 1 < n; ++i)
      if (mask >> i & 1u) cps.push_back(i + 1);
    const long double r = tree_recompute(t, cps);
    if (r < best[cps.size()]) best[cps.size()] = r;
  }
  for (std::size_t m = 1; m < n; ++m)
    if (best[m - 1] < best[m]) best[m] = best[m - 1];
  return best;
}

/// V(m), m = 0..max_m, by the textbook recursion with no reduction and no caps, for trees too
/// big for the brute force (n ≤ ~100): g(v, a)[k] = least cost of subtree(v) when the nearest
/// checkpoint above v is a and at most k checkpoints lie in subtree(v); children merged one at
/// a time by (min,+) over every split. Costs are unnormalised, divided at the end.
inline std::vector<long double> tree_reference_dp(const tree_case& t, std::size_t max_m) {
  const std::size_t n = t.parent.size();
  const long double inf = std::numeric_limits<long double>::infinity();
  std::vector<std::vector<std::size_t>> kids(n);
  for (std::size_t v = 1; v < n; ++v) kids[t.parent[v]].push_back(v);
  // memo[v][a] for a an ancestor of v (or the root): vector over k.
  std::vector<std::vector<std::vector<long double>>> memo(n,
                                                          std::vector<std::vector<long double>>(n));
  auto merge_children = [&](std::size_t v, std::size_t a) {
    std::vector<long double> acc(max_m + 1, 0.0L);
    for (std::size_t c : kids[v]) {
      const auto& g = memo[c][a];
      std::vector<long double> out(max_m + 1, inf);
      for (std::size_t i = 0; i <= max_m; ++i)
        for (std::size_t j = 0; i + j <= max_m; ++j)
          out[i + j] = std::min(out[i + j], acc[i] + g[j]);
      acc = out;
    }
    return acc;
  };
  for (std::size_t v = n; v-- > 1;) {
    // Anchors: every proper ancestor of v (the root included).
    const auto with_v = merge_children(v, v);  // children when v is a checkpoint
    for (std::size_t a = t.parent[v];; a = t.parent[a]) {
      const auto without = merge_children(v, a);
      std::vector<long double> g(max_m + 1, inf);
      const long double own =
          static_cast<long double>(t.weight[v]) *
          (static_cast<long double>(t.depth[v]) - static_cast<long double>(t.depth[a]));
      for (std::size_t k = 0; k <= max_m; ++k) {
        g[k] = own + without[k];
        if (k >= 1) g[k] = std::min(g[k], with_v[k - 1]);
      }
      memo[v][a] = g;
      if (a == 0) break;
    }
  }
  long double total = 0;
  for (double w : t.weight) total += w;
  auto root = merge_children(0, 0);
  for (auto& x : root) x /= total;
  return root;
}

enum class tree_shape { chain, star, binary, caterpillar, random };

/// A tree of n nodes of the given shape; depths grow by an integer or fractional step per edge;
/// weights small integers (ties are common), some zero, and the root sometimes weighted.
inline tree_case random_tree(std::mt19937& rng, std::size_t n, tree_shape shape, bool fractional) {
  tree_case t;
  t.parent.assign(n, 0);
  t.depth.assign(n, 0.0);
  t.weight.assign(n, 0.0);
  for (std::size_t v = 1; v < n; ++v) {
    std::size_t p = 0;
    switch (shape) {
      case tree_shape::chain:
        p = v - 1;
        break;
      case tree_shape::star:
        p = 0;
        break;
      case tree_shape::binary:
        p = (v - 1) / 2;
        break;
      case tree_shape::caterpillar:
        p = v % 2 == 1 ? (v >= 2 ? v - 2 : 0) : v - 1;
        break;
      case tree_shape::random:
        p = rng() % v;
        break;
    }
    t.parent[v] = p;
    const double step = fractional ? 0.25 + static_cast<double>(rng() % 17) / 8.0
                                   : static_cast<double>(1 + rng() % 4);
    t.depth[v] = t.depth[p] + step;
  }
  for (std::size_t v = 0; v < n; ++v)
    t.weight[v] = rng() % 3 == 0 ? 0.0 : static_cast<double>(rng() % 4);
  t.weight[n - 1] += 1.0;  // never all zero
  return t;
}

}  // namespace hybridcache_test
