#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Thin Eigen plumbing for the dense family: row-major maps over raw buffers and the explicit
/// inverse of a small unit lower-triangular matrix built from GEMM-friendly blocks.
///
/// Why an explicit inverse: the chunked WY form needs A = (I + N)⁻¹ for a strictly lower N of
/// size ≤ 64 and then multiplies A by two right-hand sides. Eigen's small triangular solves run
/// far below its GEMM rate, so the inverse is formed by recursive 2×2 blocking,
///   [X₁₁ 0; N₂₁ X₂₂]⁻¹ = [X₁₁⁻¹ 0; −X₂₂⁻¹ N₂₁ X₁₁⁻¹, X₂₂⁻¹],
/// with 16×16 leaves done by forward substitution and the off-diagonal blocks by GEMM.

#include <Eigen/Core>
#include <algorithm>
#include <cstddef>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

template <class Real>
using row_matrix = Eigen::Matrix<Real, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class Real>
using matrix_map = Eigen::Map<row_matrix<Real>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class Real>
using const_matrix_map = Eigen::Map<const row_matrix<Real>, Eigen::Unaligned, Eigen::OuterStride<>>;

/// rows×cols row-major map with leading dimension `ld` (default: cols).
template <class Real>
matrix_map<Real> as_matrix(Real* p, std::size_t rows, std::size_t cols, std::size_t ld = 0) {
  return matrix_map<Real>(p, static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols),
                          Eigen::OuterStride<>(static_cast<Eigen::Index>(ld ? ld : cols)));
}
template <class Real>
const_matrix_map<Real> as_matrix(const Real* p, std::size_t rows, std::size_t cols,
                                 std::size_t ld = 0) {
  return const_matrix_map<Real>(p, static_cast<Eigen::Index>(rows),
                                static_cast<Eigen::Index>(cols),
                                Eigen::OuterStride<>(static_cast<Eigen::Index>(ld ? ld : cols)));
}

/// Leaf size of the blocked inverse.
inline constexpr std::size_t inverse_leaf = 16;

/// Replaces the n×n block at `a` (leading dimension lda), read as I + StrictLower(a), by its
/// inverse: unit lower triangular, zeros above the diagonal. `scratch` holds ≥ n·n elements.
/// The diagonal and upper triangle of the input are ignored.
template <class Real>
void invert_unit_lower(Real* a, std::size_t n, std::size_t lda, Real* scratch) {
  if (n <= inverse_leaf) {
    // Forward substitution, row by row: X[t, j] = −N[t, j] − Σ_{j<i<t} N[t, i]·X[i, j].
    Real row[inverse_leaf];
    for (std::size_t t = 0; t < n; ++t) {
      Real* at = a + t * lda;
      for (std::size_t j = 0; j < t; ++j) {
        Real acc = -at[j];
        for (std::size_t i = j + 1; i < t; ++i) acc -= at[i] * a[i * lda + j];
        row[j] = acc;
      }
      for (std::size_t j = 0; j < t; ++j) at[j] = row[j];
      at[t] = Real(1);
      for (std::size_t j = t + 1; j < n; ++j) at[j] = Real(0);
    }
    return;
  }
  // Split at a multiple of the leaf so every leaf is full except possibly the last.
  std::size_t h = (n / 2 + inverse_leaf - 1) / inverse_leaf * inverse_leaf;
  h = std::min(h, n - 1);
  const std::size_t m = n - h;
  invert_unit_lower(a, h, lda, scratch);
  invert_unit_lower(a + h * lda + h, m, lda, scratch);
  auto x11 = as_matrix<Real>(static_cast<const Real*>(a), h, h, lda);
  auto x22 = as_matrix<Real>(static_cast<const Real*>(a + h * lda + h), m, m, lda);
  auto n21 = as_matrix(a + h * lda, m, h, lda);
  auto tmp = as_matrix(scratch, m, h);
  tmp.noalias() = n21 * x11;
  n21.noalias() = -x22 * tmp;
  as_matrix(a + h, h, m, lda).setZero();
}

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
