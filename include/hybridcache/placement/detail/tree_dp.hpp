#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The exact tree placement DP behind placement/tree.hpp (derivation: docs/design/tree_dp.md).
///
/// 1. **Reduction** (exact): a node whose subtree carries no weight never anchors a weighted node,
///    and a zero-weight node with one weighted branch is dominated by the next kept node down
///    that branch (same weighted nodes served, deeper anchor). Both are dropped; what remains
///    (root, weighted nodes, branch points of weight) is renumbered in DFS preorder, so a subtree
///    is an id range.
/// 2. **DP** over (anchor a, node x, budget k): X_a[x][k] is the least cost of subtree(x) when
///    the nearest checkpoint above x is a and at most k checkpoints lie in subtree(x):
///      X_a[x][k] = min( H[x][k−1],  w(x)(d(x)−d(a)) + (⊕_c X_a[c])[k] ),
///      H[a][k]   = (⊕_{c child of a} X_a[c])[k],
///    ⊕ the (min,+) convolution, each vector capped at min(weighted nodes in the subtree, M).
///    Anchors are solved deepest first; the root is the free anchor, so V(k) = H[root][k].
/// 3. **Positions**: the anchor passes are re-run for the chosen checkpoints only, top-down,
///    recovering every split by argmin over the same sums (`split_children`: prefix merges kept
///    at block ends only, one block of ⌈√r⌉ recomputed at a time).
///
/// **Memory** (n input nodes, m ≤ n reduced nodes, n_w(x) weighted nodes in subtree(x), r(x)
/// children of x in the reduced tree, M the budget). Peak, in 8-byte words:
///
///     O(n)                              validation copy, reduction, index arrays
///   + 2 · Σ_x (min(n_w(x), M) + 1)      H and X (X is one buffer, reused by every anchor pass)
///   + (M + 1)                           the merge accumulator's scratch
///   + 2⌈√r(x)⌉ · (M + 1) + O(r(x))      one split at a time (block ends + one block)
///
/// i.e. O(n + Σ_x min(n_w(x), M) + M·√Δ), Δ the largest fan-out; Σ_x min(n_w(x), M) ≤
/// min(m·M, n_w·(h + 1)) for reduced height h (edges), so O(n·min(M, h + 1) + M·√n). A star of 10⁵
/// weighted leaves at M = 1024 needs 3·10⁵ + 2·1025 words of tables and (315 + 317) · 1025 of split
/// scratch (5.2 MB; 820 MB while every prefix merge of the split was kept). The H tables cannot be
/// dropped: every ancestor's anchor pass reads H[x]. tests/placement/tree_memory_test.cpp
/// checks the bound by counting heap bytes.
///
/// Without step 1 (`compress = false`) this is the plain exact DP the benchmark uses as its
/// baseline.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// A validated tree with normalised weights (built by placement/tree.hpp).
struct tree_problem {
  std::span<const std::size_t> parent;
  std::span<const double> depth;
  std::vector<double> weight;  // normalised, sums to 1
};

/// The reduced tree of step 1 (or the whole tree), renumbered in DFS preorder: subtree(x) is the
/// id range [x, x + size[x]), node 0 the root.
struct reduced_tree {
  std::vector<std::size_t> orig;    ///< reduced id -> original id
  std::vector<std::uint32_t> par;   ///< reduced parent (par[0] = 0)
  std::vector<double> d, w;         ///< depth, normalised weight (w[0] = 0: the root costs 0)
  std::vector<std::size_t> size;    ///< nodes in the subtree
  std::vector<std::size_t> cnt;     ///< non-root nodes of weight > 0 in the subtree
  std::vector<std::size_t> cstart;  ///< children of x: kids[cstart[x] .. cstart[x + 1])
  std::vector<std::uint32_t> kids;
};

/// Step 1: keeps the root, the weighted nodes and the branch points of weight (every node when
/// `compress` is false), each attached to its nearest kept ancestor.
inline reduced_tree reduce_tree(const tree_problem& pb, bool compress) {
  constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
  reduced_tree rt;
  const std::size_t n = pb.parent.size();
  const auto& w = pb.weight;
  std::vector<double> sub(w.begin(), w.end());
  for (std::size_t v = n; v-- > 1;) sub[pb.parent[v]] += sub[v];
  // Kept: root; nodes with weight; nodes with >= 2 children whose subtree has weight.
  std::vector<std::uint32_t> heavy_children(n, 0);
  for (std::size_t v = 1; v < n; ++v)
    if (sub[v] > 0.0 || !compress) ++heavy_children[pb.parent[v]];
  std::vector<char> keep(n, 0);
  keep[0] = 1;
  for (std::size_t v = 1; v < n; ++v) {
    if (!compress)
      keep[v] = 1;
    else
      keep[v] = sub[v] > 0.0 && (w[v] > 0.0 || heavy_children[v] >= 2);
  }
  // Nearest kept ancestor (topological order: parent < child).
  std::vector<std::uint32_t> up(n, 0);
  for (std::size_t v = 1; v < n; ++v) {
    const std::size_t p = pb.parent[v];
    up[v] = keep[p] ? static_cast<std::uint32_t>(p) : up[p];
  }
  // Children lists of the kept tree, then DFS preorder renumbering.
  std::vector<std::uint32_t> head(n, none), next(n, none);
  for (std::size_t v = n; v-- > 1;) {
    if (!keep[v]) continue;
    next[v] = head[up[v]];
    head[up[v]] = static_cast<std::uint32_t>(v);
  }
  rt.orig.clear();
  std::vector<std::uint32_t> newid(n, none);
  std::vector<std::uint32_t> st{0};
  while (!st.empty()) {
    const std::uint32_t v = st.back();
    st.pop_back();
    newid[v] = static_cast<std::uint32_t>(rt.orig.size());
    rt.orig.push_back(v);
    // Push children in reverse so the first child is visited first (any order is valid).
    std::size_t mark = st.size();
    for (std::uint32_t c = head[v]; c != none; c = next[c]) st.push_back(c);
    std::reverse(st.begin() + static_cast<std::ptrdiff_t>(mark), st.end());
  }
  const std::size_t m = rt.orig.size();
  rt.par.assign(m, 0);
  rt.d.assign(m, 0.0);
  rt.w.assign(m, 0.0);
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t v = rt.orig[i];
    rt.par[i] = i == 0 ? 0 : newid[up[v]];
    rt.d[i] = pb.depth[v];
    rt.w[i] = w[v];
  }
  rt.w[0] = 0.0;  // the root's cost is always 0
  rt.size.assign(m, 1);
  rt.cnt.assign(m, 0);
  for (std::size_t i = m; i-- > 0;) {
    if (i != 0 && rt.w[i] > 0.0) ++rt.cnt[i];
    if (i != 0) {
      rt.size[rt.par[i]] += rt.size[i];
      rt.cnt[rt.par[i]] += rt.cnt[i];
    }
  }
  // Children (as id lists, contiguous per parent).
  rt.cstart.assign(m + 1, 0);
  for (std::size_t i = 1; i < m; ++i) ++rt.cstart[rt.par[i] + 1];
  for (std::size_t i = 0; i < m; ++i) rt.cstart[i + 1] += rt.cstart[i];
  rt.kids.assign(m > 0 ? m - 1 : 0, 0);
  std::vector<std::size_t> fill(rt.cstart.begin(), rt.cstart.end() - 1);
  for (std::size_t i = 1; i < m; ++i) rt.kids[fill[rt.par[i]]++] = static_cast<std::uint32_t>(i);
  return rt;
}

/// The DP on one (possibly reduced) tree. Node 0 is the root; ids are in DFS preorder.
class tree_dp {
 public:
  /// Builds the reduced tree of `pb` (or the full tree when `compress` is false) and runs the
  /// bottom-up pass for budgets 0..max_budget.
  tree_dp(const tree_problem& pb, std::size_t max_budget, bool compress)
      : tree_dp(reduce_tree(pb, compress), max_budget) {}

  /// The same DP on a tree already reduced by `reduce_tree` (taken over, not copied).
  tree_dp(reduced_tree rt, std::size_t max_budget) : m_(max_budget) {
    build(std::move(rt));
    solve();
  }

  /// V(k) for k = 0..max_budget (nonincreasing; constant once every weighted node is covered).
  [[nodiscard]] std::vector<double> frontier() const {
    std::vector<double> v(m_ + 1);
    const std::size_t len = cap_strict(0);
    for (std::size_t k = 0; k <= m_; ++k) v[k] = h_[hoff_[0] + std::min(k, len)];
    return v;
  }

  /// Number of non-root nodes with weight > 0: the budget beyond which nothing improves.
  [[nodiscard]] std::size_t useful() const noexcept { return cnt_[0]; }

  /// Checkpoints (original ids, ascending) of an optimal plan with at most k ≤ max_budget.
  [[nodiscard]] std::vector<std::size_t> positions(std::size_t k) {
    std::vector<std::size_t> out;
    struct job {
      std::uint32_t anchor;
      std::size_t budget;
    };
    std::vector<job> todo{{0, std::min(k, cap_strict(0))}};
    std::vector<std::pair<std::uint32_t, std::size_t>> stack;
    while (!todo.empty()) {
      const job j = todo.back();
      todo.pop_back();
      if (j.budget == 0) continue;
      anchor_pass(j.anchor);
      // Descend from the anchor's children with budget split as in H[a] = ⊕ X_a[c].
      stack.clear();
      split_children(j.anchor, j.budget, stack);
      while (!stack.empty()) {
        auto [x, b] = stack.back();
        stack.pop_back();
        if (b == 0) continue;
        const double* xa = &x_[off_[x]];
        const std::size_t lx = cap(x);
        const std::size_t bb = std::min(b, lx);
        if (bb == 0) continue;
        const double ck = h_[hoff_[x] + std::min(bb - 1, cap_strict(x))];
        if (ck <= xa[bb]) {
          out.push_back(orig_[x]);
          todo.push_back({x, std::min(bb - 1, cap_strict(x))});
        } else {
          split_children(x, bb, stack);
        }
      }
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  static constexpr double inf = std::numeric_limits<double>::infinity();

  [[nodiscard]] std::size_t cap(std::size_t x) const noexcept { return std::min(cnt_[x], m_); }
  [[nodiscard]] std::size_t cap_strict(std::size_t x) const noexcept {
    return std::min(cnt_[x] - (w_[x] > 0.0 && x != 0 ? 1 : 0), m_);
  }

  void build(reduced_tree rt) {
    orig_ = std::move(rt.orig);
    par_ = std::move(rt.par);
    d_ = std::move(rt.d);
    w_ = std::move(rt.w);
    size_ = std::move(rt.size);
    cnt_ = std::move(rt.cnt);
    cstart_ = std::move(rt.cstart);
    kids_ = std::move(rt.kids);
    const std::size_t m = orig_.size();
    off_.assign(m + 1, 0);
    hoff_.assign(m + 1, 0);
    for (std::size_t i = 0; i < m; ++i) {
      off_[i + 1] = off_[i] + cap(i) + 1;
      hoff_[i + 1] = hoff_[i] + cap_strict(i) + 1;
    }
    x_.assign(off_[m], inf);
    h_.assign(hoff_[m], inf);
  }

  /// out[0..cap_out] = a ⊕ b (min-plus), a of length la+1, b of length lb+1. Every candidate
  /// a[i] + b[j] is one rounded sum and min is exact (no NaN, no −0: costs are ≥ +0 or +inf), so
  /// the result does not depend on the loop order: the shorter operand runs outside and the inner
  /// loop runs long (and vectorises) — a leaf child has length 2.
  static void convolve(const double* a, std::size_t la, const double* b, std::size_t lb,
                       double* out, std::size_t cap_out) {
    std::fill(out, out + cap_out + 1, inf);
    if (lb > la) {
      std::swap(a, b);
      std::swap(la, lb);
    }
    for (std::size_t j = 0; j <= lb && j <= cap_out; ++j) {
      const double bj = b[j];
      const std::size_t imax = std::min(la, cap_out - j);
      double* o = out + j;
      for (std::size_t i = 0; i <= imax; ++i) o[i] = std::min(o[i], a[i] + bj);
    }
  }

  /// merged[0..len] = ⊕ over the children of x of X_a[c] (all zeros when x has no children).
  void merge_children(std::size_t x, double* merged, std::size_t len) {
    const std::size_t b = cstart_[x], e = cstart_[x + 1];
    if (b == e) {
      std::fill(merged, merged + len + 1, 0.0);
      return;
    }
    const std::uint32_t c0 = kids_[b];
    std::size_t la = std::min(cap(c0), len);
    std::copy(&x_[off_[c0]], &x_[off_[c0]] + la + 1, merged);
    for (std::size_t i = b + 1; i < e; ++i) {
      const std::uint32_t c = kids_[i];
      const std::size_t lc = cap(c);
      const std::size_t lo = std::min(la + lc, len);
      tmp_.resize(lo + 1);
      convolve(merged, la, &x_[off_[c]], lc, tmp_.data(), lo);
      std::copy(tmp_.begin(), tmp_.begin() + static_cast<std::ptrdiff_t>(lo) + 1, merged);
      la = lo;
    }
    // At-most semantics: entries beyond the children's total count repeat the last value.
    for (std::size_t k = la + 1; k <= len; ++k) merged[k] = merged[la];
  }

  /// Fills X_a[x] for every x in subtree(a) \ {a}, deepest first (ids are DFS preorder).
  void anchor_pass(std::size_t a) {
    const double da = d_[a];
    for (std::size_t x = a + size_[a] - 1; x > a; --x) {
      double* xa = &x_[off_[x]];
      const std::size_t lx = cap(x);
      merge_children(x, xa, lx);
      const double own = w_[x] * (d_[x] - da);
      const double* hx = &h_[hoff_[x]];
      const std::size_t hl = cap_strict(x);
      xa[0] += own;
      for (std::size_t k = 1; k <= lx; ++k) xa[k] = std::min(xa[k] + own, hx[std::min(k - 1, hl)]);
    }
  }

  void solve() {
    const std::size_t m = par_.size();
    for (std::size_t a = m; a-- > 0;) {
      anchor_pass(a);
      merge_children(a, &h_[hoff_[a]], cap_strict(a));
    }
  }

  /// Splits budget `b` among the children c_0..c_{r−1} of x so that Σ X_a[c][b_c] =
  /// (⊕ X_a[c])[b] and pushes (c, b_c) on the stack. The split is read backwards from the prefix
  /// merges P_j = X[c_0] ⊕ … ⊕ X[c_j] (capped at b): b_{c_j} is the least k attaining
  /// min_k P_{j−1}[rem − k] + X[c_j][k]. Keeping every P_j would cost r·(b + 1) doubles (820 MB
  /// for a 10⁵-child star at b = 1024), so the children are cut into blocks of s = ⌈√r⌉: the
  /// forward pass keeps only the P_j that end a block, and the backward pass recomputes one block
  /// at a time from the stored P_j before it. Scratch ≤ (⌈r/s⌉ + s)(b + 1) ≤ (2√r + 2)(b + 1)
  /// doubles, at the price of ≤ one more forward pass; every P_j is computed by the same
  /// sequence of convolutions as before, so the split is bit-identical.
  void split_children(std::size_t x, std::size_t b,
                      std::vector<std::pair<std::uint32_t, std::size_t>>& stack) {
    const std::size_t cb = cstart_[x], ce = cstart_[x + 1];
    if (cb == ce) return;
    const std::size_t r = ce - cb;
    const std::uint32_t* kid = &kids_[cb];
    // plen[j] = min(Σ_{i ≤ j} cap(c_i), b): the length of P_j (depends on the caps only).
    plen_.resize(r);
    for (std::size_t j = 0; j < r; ++j)
      plen_[j] = std::min((j == 0 ? 0 : plen_[j - 1]) + cap(kid[j]), b);
    std::size_t s = 1;
    while (s * s < r) ++s;
    const std::size_t blocks = (r + s - 1) / s;
    // Stored block ends: P_{(q+1)s−1} for q = 0..blocks−2 (the start of block q + 1).
    kept_off_.assign(blocks, 0);
    for (std::size_t q = 0; q + 1 < blocks; ++q)
      kept_off_[q + 1] = kept_off_[q] + plen_[(q + 1) * s - 1] + 1;
    kept_.resize(blocks > 1 ? kept_off_[blocks - 1] : 0);
    // Computes P_j for j in block q into block_ (P_j at block_off_[j − qs]).
    auto fill_block = [&](std::size_t q) {
      const std::size_t j0 = q * s, j1 = std::min(j0 + s, r);
      block_off_.resize(j1 - j0 + 1);
      block_off_[0] = 0;
      for (std::size_t j = j0; j < j1; ++j)
        block_off_[j - j0 + 1] = block_off_[j - j0] + plen_[j] + 1;
      block_.resize(block_off_[j1 - j0]);
      for (std::size_t j = j0; j < j1; ++j) {
        const std::uint32_t c = kid[j];
        double* pj = &block_[block_off_[j - j0]];
        if (j == 0) {
          std::copy(&x_[off_[c]], &x_[off_[c]] + plen_[0] + 1, pj);
        } else {
          const double* prev = j == j0 ? &kept_[kept_off_[q - 1]] : &block_[block_off_[j - j0 - 1]];
          convolve(prev, plen_[j - 1], &x_[off_[c]], cap(c), pj, plen_[j]);
        }
      }
    };
    for (std::size_t q = 0; q + 1 < blocks; ++q) {
      fill_block(q);
      const std::size_t last = std::min(q * s + s, r) - 1 - q * s;
      std::copy(&block_[block_off_[last]], &block_[block_off_[last]] + plen_[q * s + s - 1] + 1,
                &kept_[kept_off_[q]]);
    }
    std::size_t rem = std::min(b, plen_[r - 1]);
    for (std::size_t q = blocks; q-- > 0;) {
      fill_block(q);  // for the last block, the forward pass's own work
      const std::size_t j0 = q * s, j1 = std::min(j0 + s, r);
      for (std::size_t j = j1; j-- > std::max<std::size_t>(j0, 1);) {
        const double* prev = j == j0 ? &kept_[kept_off_[q - 1]] : &block_[block_off_[j - j0 - 1]];
        const std::uint32_t c = kid[j];
        const double* xc = &x_[off_[c]];
        const std::size_t lc = cap(c);
        std::size_t best_k = 0;
        double best = inf;
        for (std::size_t kc = 0; kc <= std::min(lc, rem); ++kc) {
          if (rem - kc > plen_[j - 1]) continue;
          const double v = prev[rem - kc] + xc[kc];
          if (v < best) {
            best = v;
            best_k = kc;
          }
        }
        stack.emplace_back(c, best_k);
        rem -= best_k;
      }
    }
    stack.emplace_back(kid[0], rem);
  }

  std::size_t m_;
  std::vector<std::size_t> orig_;   // reduced id -> original id
  std::vector<std::uint32_t> par_;  // reduced parent
  std::vector<double> d_, w_;
  std::vector<std::size_t> size_, cnt_;
  std::vector<std::size_t> cstart_;
  std::vector<std::uint32_t> kids_;
  std::vector<std::size_t> off_, hoff_;
  std::vector<double> x_, h_, tmp_;
  // split_children scratch: block-end prefix merges, one block's prefix merges, their offsets.
  std::vector<double> kept_, block_;
  std::vector<std::size_t> plen_, kept_off_, block_off_;
};

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
