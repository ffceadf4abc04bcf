#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Streaming softmax normaliser (the "online softmax" of Milakov & Gimelshein, as FlashAttention
/// and FlashInfer's `state_t::merge` use it), shared by the sparse-Q scoring of the CUDA backend
/// (`cuda/select/scores.cuh`) and its host tests.
///
/// After logits x_1..x_n a state holds m = max_i x_i and l = Σ_i e^{x_i − m}, so that the softmax
/// weight of any x_j is e^{x_j − m}/l (SparseX eq. 1). Two states over disjoint sets merge as
///
///     m = max(m_a, m_b),   l = l_a·e^{m_a − m} + l_b·e^{m_b − m},
///
/// which is associative and commutative (up to rounding), so threads, warps and blocks can each
/// reduce a slice of the keys and combine in any tree. Identity: (m, l) = (−∞, 0). A −∞ logit
/// (a masked key) is the identity too. The merge never evaluates e^{−∞ − (−∞)}: a side with
/// l = 0 contributes nothing, so merging two identities stays the identity, never NaN.

#include <cmath>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// e^x in the precision of `Real` (float → expf, double → exp), usable in kernels.
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline Real softmax_exp(Real x) noexcept {
  if constexpr (sizeof(Real) == sizeof(float)) {
    return ::expf(x);
  } else {
    return ::exp(x);
  }
}

/// (m, l) of a set of logits; see the file comment.
template <class Real>
struct softmax_state {
  Real m;  ///< running maximum (−∞ for the empty set)
  Real l;  ///< Σ e^{x − m} (0 for the empty set)
};

/// The empty set's state (−∞, 0).
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline softmax_state<Real> softmax_identity() noexcept {
  return {-static_cast<Real>(INFINITY), Real(0)};
}

/// Merge of the states of two disjoint sets of logits.
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline softmax_state<Real> softmax_merge(softmax_state<Real> a,
                                                                 softmax_state<Real> b) noexcept {
  if (b.l == Real(0)) return a;
  if (a.l == Real(0)) return b;
  const Real m = a.m > b.m ? a.m : b.m;
  return {m, a.l * softmax_exp(a.m - m) + b.l * softmax_exp(b.m - m)};
}

/// Adds one logit (a −∞ logit changes nothing).
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline softmax_state<Real> softmax_push(softmax_state<Real> s,
                                                                Real x) noexcept {
  return softmax_merge(
      s, softmax_state<Real>{x, x == -static_cast<Real>(INFINITY) ? Real(0) : Real(1)});
}

/// Softmax weight e^{x − m}/l of logit x in the set `s` describes (0 for the empty set).
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline Real softmax_weight(softmax_state<Real> s, Real x) noexcept {
  if (s.l == Real(0)) return Real(0);
  return softmax_exp(x - s.m) / s.l;
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
