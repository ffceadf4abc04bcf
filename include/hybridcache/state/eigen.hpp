#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Eigen views of summaries and an Eigen overload of `apply`, for callers that keep states as
/// Eigen matrices. The state is row-major dk×dv (K-first), the transition row-major dk×dk.

#include <Eigen/Core>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/compose.hpp"
#include "hybridcache/state/detail/gemm.hpp"
#include "hybridcache/state/summary.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Row-major dynamic Eigen matrix, the library's dense layout.
template <class Real>
using state_matrix = detail::row_matrix<Real>;

/// S_C|0 as a read-only dk×dv Eigen map (valid while the summary lives).
template <class Real>
Eigen::Map<const state_matrix<Real>> end_state_matrix(const segment_summary<Real>& s) {
  return {s.end_state().data(), static_cast<Eigen::Index>(s.dk()),
          static_cast<Eigen::Index>(s.dv())};
}

/// T_C (materialised for every family) as a read-only dk×dk Eigen map.
template <class Real>
Eigen::Map<const state_matrix<Real>> transition_matrix(const segment_summary<Real>& s) {
  return {s.transition().data(), static_cast<Eigen::Index>(s.dk()),
          static_cast<Eigen::Index>(s.dk())};
}

/// T_C·prefix + S_C|0 for an Eigen prefix state of shape dk×dv.
/// @throws invalid_argument on a shape mismatch or non-finite values.
template <class Real, class Derived>
state_matrix<Real> apply(const segment_summary<Real>& s, const Eigen::MatrixBase<Derived>& prefix) {
  if (static_cast<std::size_t>(prefix.rows()) != s.dk() ||
      static_cast<std::size_t>(prefix.cols()) != s.dv())
    detail::throw_invalid("prefix.shape",
                          std::to_string(prefix.rows()) + "x" + std::to_string(prefix.cols()),
                          "must be dk x dv = " + std::to_string(s.dk()) + "x" +
                              std::to_string(s.dv()));
  const state_matrix<Real> p = prefix.template cast<Real>();
  const auto out =
      hybridcache::apply(s, std::span<const Real>(p.data(), static_cast<std::size_t>(p.size())));
  return Eigen::Map<const state_matrix<Real>>(out.data(), p.rows(), p.cols());
}

HYBRIDCACHE_NAMESPACE_END
