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
