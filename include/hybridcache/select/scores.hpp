#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Sparse-Q attention scores (SparseX §3.2, eqs. 1–2): how much attention the queries of the
/// non-reuse tokens pay to each token of the prompt.
///
/// With I_nr the non-reuse positions (ascending), Q_sq = Q[I_nr] and K the keys of all T tokens,
///
///     A_h = softmax(Q_sq,h K_hᵀ / √d + M_causal[I_nr, :])          (eq. 1, per head h)
///     s_j = 1/(H·|I_nr|) · Σ_h Σ_i A_h[i, j]                         (eq. 2, averaged)
///
/// SparseX sums over queries and aggregates across heads (§3.2, "global score aggregated across
/// attention heads"); the mean used here ranks tokens identically and makes Σ_j s_j = 1. Grouped
/// query attention is supported: query head h reads kv head h / (H / H_kv).
///
/// Host implementation: per head, queries are taken in blocks of B rows; Eigen GEMMs form the
/// B × (last visible key + 1) logits (in column panels where the block's positions jump, so keys
/// no row of a panel can see are not multiplied), then each row is masked, exponentiated (max-subtracted) and
/// normalised row by row (each row is cache-resident while it is exponentiated and summed), and
/// added into per-block column sums that are folded into double accumulators. Memory is bounded
/// by the workspace (B·T logits, 16 MiB by default), not by |I_nr|·T.
/// Cost O(H·|I_nr|·T·d) (SparseX Table 4 note).

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Tuning of `sparse_q_scores`.
struct sparse_q_options {
  /// Logit scale; 0 means 1/√d.
  double scale = 0.0;
  /// Bytes of logits held at once; the query block is workspace / (T · sizeof(scalar)), clamped
  /// to [min_query_block, max_query_block]. 0 means 16 MiB. Larger blocks amortise the packing
  /// of K_h that every GEMM call repeats: on the benchmark shape (T = 8192, d = 128) blocks of
  /// 16/64/256/512 queries reach about 30/75/90/100% of one big GEMM's rate.
  std::size_t workspace_bytes = 0;
  std::size_t min_query_block = 16;
  std::size_t max_query_block = 512;
};

namespace detail {

template <class Q, class P, class K, class Out>
concept sparse_q_views =
    Q::rank == 3 && K::rank == 3 && P::rank == 1 && Out::rank == 1 &&
    std::same_as<typename Q::value_type, typename K::value_type> &&
    (std::same_as<typename Q::value_type, float> || std::same_as<typename Q::value_type, double>) &&
    std::integral<typename P::value_type> && std::floating_point<typename Out::element_type> &&
    !std::is_const_v<typename Out::element_type>;


/// Extent checks shared by the host and the CUDA `sparse_q_scores` (one message per case).
/// @throws invalid_argument naming the mismatched extent.
template <class Q, class P, class K, class Out>
void check_sparse_q_shapes(const Q& queries, const P& positions, const K& keys,
                           const Out& scores) {
  const std::size_t nq = queries.extent(0), heads = queries.extent(1), d = queries.extent(2);
  const std::size_t t_len = keys.extent(0), kv_heads = keys.extent(1);
  if (keys.extent(2) != d)
    detail::throw_invalid("keys.extent(2)", keys.extent(2),
                          "must equal the query head dim " + std::to_string(d));
  if (positions.extent(0) != nq)
    detail::throw_invalid("positions.extent(0)", positions.extent(0),
                          "must equal queries.extent(0) = " + std::to_string(nq));
  if (scores.extent(0) != t_len)
    detail::throw_invalid("scores.extent(0)", scores.extent(0),
                          "must equal keys.extent(0) = " + std::to_string(t_len));
  if (kv_heads == 0 || heads % kv_heads != 0)
    detail::throw_invalid("keys.extent(1)", kv_heads,
                          "kv heads must divide the query heads " + std::to_string(heads));
  if (d == 0) detail::throw_invalid("queries.extent(2)", d, "head dim must be > 0");
}

/// The input rule of `sparse_q_scores` (docs/select.md, "Errors"): every query element and every
/// element of **every** key row is finite — also the rows after the last query position, which no
/// query of this call reads (a later call with a later query would), and −∞ components, which
/// would give a −∞ logit that a softmax silently turns into weight 0. The CUDA overload enforces
/// the same rule on device views with a scan kernel (cuda/select/scores.cuh), so a key cache
/// accepted by one is accepted by the other.
/// @throws invalid_argument naming the first non-finite element (`queries[i][h][c]`,
///         `keys[j][h][c]`).
template <class Q, class K>
void check_sparse_q_finite(const Q& queries, const K& keys) {
  auto name = [](std::string_view what, std::size_t a, std::size_t b, std::size_t c) {
    return indexed(indexed(indexed(what, a), b), c);
  };
  for (std::size_t i = 0; i < queries.extent(0); ++i)
    for (std::size_t h = 0; h < queries.extent(1); ++h)
      for (std::size_t c = 0; c < queries.extent(2); ++c)
        if (const auto x = queries(i, h, c); !std::isfinite(x))
          throw_invalid(name("queries", i, h, c), x, "queries must be finite");
  for (std::size_t j = 0; j < keys.extent(0); ++j)
    for (std::size_t h = 0; h < keys.extent(1); ++h)
      for (std::size_t c = 0; c < keys.extent(2); ++c)
        if (const auto x = keys(j, h, c); !std::isfinite(x))
          throw_invalid(name("keys", j, h, c), x,
                        "every key row must be finite, also rows after the last query position");
}
}  // namespace detail

/// Computes s_j for every token j (see the file comment) into `scores`.
///
/// @param queries   non-reuse queries `[n_q, heads, d]` (already RoPE-rotated at their positions).
/// @param positions `[n_q]`: position of each query in the prompt, strictly increasing, < T.
/// @param keys      keys of the whole prompt `[T, kv_heads, d]` (cached keys RoPE-aligned).
/// @param scores    output `[T]`; s_j for j after the last query position is 0 (causal).
/// @throws invalid_argument on mismatched extents, heads not a multiple of kv_heads, positions
///         not strictly increasing or out of range, a non-positive or non-finite scale, a
///         non-finite query or key element (every key row counts, `detail::check_sparse_q_finite`),
///         or finite inputs whose scaled logit (q·scale)·k overflows the scalar type (named as
///         `queries[i] * keys[j]`, the head in the message). `scores` is then all zero.
template <host_view Q, host_view P, host_view K, host_view Out>
  requires detail::sparse_q_views<Q, P, K, Out>
void sparse_q_scores(Q queries, P positions, K keys, Out scores, sparse_q_options opt = {}) {
  using scalar = typename Q::value_type;
  using row_matrix = Eigen::Matrix<scalar, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using row_vector = Eigen::Matrix<scalar, 1, Eigen::Dynamic>;
  const std::size_t nq = queries.extent(0), heads = queries.extent(1), d = queries.extent(2);
  const std::size_t t_len = keys.extent(0), kv_heads = keys.extent(1);
  detail::check_sparse_q_shapes(queries, positions, keys, scores);
  for (std::size_t i = 0; i < nq; ++i) {
    const auto p = positions(i);
    bool bad = static_cast<std::size_t>(p) >= t_len;
    if constexpr (std::is_signed_v<decltype(p)>) bad = bad || p < 0;
    if (bad) detail::throw_invalid(detail::indexed("positions", i), p,
                                   "must be in [0, " + std::to_string(t_len) + ")");
    if (i > 0 && !(positions(i - 1) < p))
      detail::throw_invalid(detail::indexed("positions", i), p, "positions must increase strictly");
  }
  const double scale = opt.scale == 0.0 ? 1.0 / std::sqrt(static_cast<double>(d)) : opt.scale;
  if (!std::isfinite(scale) || !(scale > 0.0))
    detail::throw_invalid("options.scale", opt.scale, "must be finite and > 0 (0 = 1/sqrt(d))");
  for (std::size_t j = 0; j < t_len; ++j) scores(j) = 0;
  detail::check_sparse_q_finite(queries, keys);
  if (nq == 0 || heads == 0 || t_len == 0) return;

  const std::size_t workspace = opt.workspace_bytes ? opt.workspace_bytes : (std::size_t{16} << 20);
  std::size_t block = workspace / (t_len * sizeof(scalar));
  block = std::clamp(block, std::max<std::size_t>(opt.min_query_block, 1),
                     std::max<std::size_t>(opt.max_query_block, 1));
  block = std::min(block, nq);

  const auto eidx = [](std::size_t v) { return static_cast<Eigen::Index>(v); };
  // Reports the first key whose scaled logit with query i of head h is not finite (rare path: the
  // logits are recomputed one by one, in the scalar type, as the GEMM formed them).
  const auto throw_logit_overflow = [&](std::size_t h, std::size_t i, Eigen::Index visible,
                                        const auto& k) {
    for (Eigen::Index j = 0; j < visible; ++j) {
      scalar x = 0;
      for (std::size_t c = 0; c < d; ++c)
        x += static_cast<scalar>(queries(i, h, c) * scale) * k(j, eidx(c));
      if (!std::isfinite(x))
        detail::throw_invalid(
            detail::indexed("queries", i) + " * " + detail::indexed("keys", std::size_t(j)), x,
            "the scaled logit (q*scale).k at head " + std::to_string(h) + " overflows " +
                (sizeof(scalar) == sizeof(float) ? "float (|x| > 3.4e38)"
                                                 : "double (|x| > 1.8e308)") +
                " although queries and keys are finite: scale them down or compute in double "
                "(the output was zeroed)");
    }
    detail::throw_invalid(detail::indexed("queries", i), std::numeric_limits<double>::quiet_NaN(),
                          "the softmax of its logits at head " + std::to_string(h) +
                              " overflowed (the output was zeroed)");
  };
  row_matrix qb(eidx(block), eidx(d));
  row_matrix logits(eidx(block), eidx(t_len));
  row_vector colsum(eidx(t_len));
  std::vector<double> acc(t_len, 0.0);
  const std::size_t group = heads / kv_heads;
  constexpr std::size_t panel_gap = 256;  // a jump this large starts a new column panel
  using key_map = Eigen::Map<const row_matrix, Eigen::Unaligned,
                             Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>>;
  for (std::size_t h = 0; h < heads; ++h) {
    const auto* kbase = keys.data() + (h / group) * keys.stride(1);
    const key_map k(kbase, eidx(t_len), eidx(d),
                    Eigen::Stride<Eigen::Dynamic, Eigen::Dynamic>(eidx(keys.stride(0)),
                                                                  eidx(keys.stride(2))));
    for (std::size_t i0 = 0; i0 < nq; i0 += block) {
      const std::size_t nb = std::min(block, nq - i0);
      const std::size_t cols = static_cast<std::size_t>(positions(i0 + nb - 1)) + 1;
      for (std::size_t r = 0; r < nb; ++r)
        for (std::size_t c = 0; c < d; ++c)
          qb(eidx(r), eidx(c)) = static_cast<scalar>(queries(i0 + r, h, c) * scale);
      auto s = logits.topLeftCorner(eidx(nb), eidx(cols));
      // Column panels: where the block's positions jump by more than `panel_gap`, the columns
      // past the jump are needed only by the rows after it (rows are sorted by position), so
      // each panel multiplies just that suffix of rows. Every key is still packed once.
      std::size_t c0 = 0, first = 0;
      for (std::size_t r = 0; r < nb; ++r) {
        const std::size_t pr = static_cast<std::size_t>(positions(i0 + r));
        const bool run_ends =
            r + 1 == nb || static_cast<std::size_t>(positions(i0 + r + 1)) - pr > panel_gap;
        if (!run_ends) continue;
        const std::size_t c1 = pr + 1;
        s.block(eidx(first), eidx(c0), eidx(nb - first), eidx(c1 - c0)).noalias() =
            qb.middleRows(eidx(first), eidx(nb - first)) *
            k.middleRows(eidx(c0), eidx(c1 - c0)).transpose();
        c0 = c1;
        first = r + 1;
      }
      auto cs = colsum.head(eidx(cols));
      cs.setZero();
      for (std::size_t r = 0; r < nb; ++r) {
        const auto visible = eidx(static_cast<std::size_t>(positions(i0 + r)) + 1);
        auto row = s.row(eidx(r)).head(visible).array();
        const scalar m = row.maxCoeff();
        row = (row - m).exp();
        const scalar sum = row.sum();
        // Inputs are finite (checked above), so a non-finite sum means a logit overflowed to +∞
        // or NaN. (One overflowing to −∞ under a finite max gets weight 0, as its true value
        // would: e^{x − m} underflows for x < m − 104 in float.)
        if (!std::isfinite(sum)) throw_logit_overflow(h, i0 + r, visible, k);
        const scalar inv = scalar(1) / sum;
        cs.head(visible).array() += inv * row;
      }
      for (std::size_t j = 0; j < cols; ++j) acc[j] += static_cast<double>(cs(eidx(j)));
    }
  }
  const double norm = 1.0 / (static_cast<double>(heads) * static_cast<double>(nq));
  using out_t = typename Out::value_type;
  // acc[j] is a sum of at most H·n_q softmax weights in [0, 1]: finite.
  for (std::size_t j = 0; j < t_len; ++j) scores(j) = static_cast<out_t>(acc[j] * norm);
}

/// Device views need the CUDA backend (`<hybridcache/cuda/select/scores.cuh>`); without it this is
/// a compile error, never a silent host fallback.
template <view Q, view P, view K, view Out>
  requires(device_view<Q> || device_view<K> || device_view<Out>)
void sparse_q_scores(Q, P, K, Out, sparse_q_options = {}) {
  HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(Q, "hybridcache/cuda/select/scores.cuh");
}

HYBRIDCACHE_NAMESPACE_END
