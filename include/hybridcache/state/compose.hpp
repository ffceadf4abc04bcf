#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The composition law: compose two summaries, apply summaries to a prefix state, fold a run.
///
/// Summaries are affine maps S ↦ T·S + S₀ (DESIGN.md §3). For "first, then `then`":
///   compose(first, then) = (T_then·T_first, T_then·S_first + S_then),   identity (I, 0).
/// Applying a run C₁ … C_n to a prefix state S_S gives HYPIC eq. 6,
///   S = (T_{C_n} ⋯ T_{C_1}) S_S + Σ_i (T_{C_n} ⋯ T_{C_{i+1}}) S_{C_i|0},
/// evaluated right-to-left as n affine steps S ← T_{C_i} S + S_{C_i|0} (one dk×dk by dk×dv GEMM
/// per dense step, element-wise scaling for scalar/diagonal steps).
///
/// Families promote (scalar ∘ diagonal = diagonal, anything ∘ dense = dense); products with a
/// scalar or diagonal factor are row/column scalings, never GEMMs. Composition is associative up
/// to floating-point rounding; `fold` composes a run as a balanced tree, which keeps the rounding
/// depth at ⌈log₂ n⌉ and lets a batch of cached segments be pre-combined into one summary.
///
/// Edge cases: the identity composes to the other operand exactly; an empty segment is the
/// identity of its family; a −∞ log-decay (hard reset) composes to −∞ and its factor e^{−∞} = 0
/// multiplies finite states only, so no NaN arises.

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/compose_views.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/detail/gemm.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/summary.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

template <class Real>
void check_compatible(const segment_summary<Real>& a, const segment_summary<Real>& b,
                      std::string_view name) {
  if (a.dk() == 0)
    hybridcache::detail::throw_invalid("summary.dk()", a.dk(),
                                       "empty (default-constructed) summary; use identity(dk, dv)");
  if (b.dk() != a.dk() || b.dv() != a.dv())
    hybridcache::detail::throw_invalid(
        std::string(name) + ".shape",
        std::to_string(b.dk()) + "x" + std::to_string(b.dv()),
        "summaries must share dk x dv = " + std::to_string(a.dk()) + "x" + std::to_string(a.dv()));
}

/// The dk log-decays of a scalar/diagonal summary (the scalar one broadcast).
template <class Real>
std::vector<double> expanded_log_decay(const segment_summary<Real>& s) {
  const auto ld = s.log_decay();
  if (ld.size() == s.dk()) return {ld.begin(), ld.end()};
  return std::vector<double>(s.dk(), ld[0]);
}

/// out = T·prev + S for one summary. `out` must not alias `prev` when s is dense; for scalar and
/// diagonal summaries it may. Both hold dk·dv values.
template <class Real>
void apply_to(const segment_summary<Real>& s, const Real* prev, Real* out) {
  const std::size_t dk = s.dk(), dv = s.dv();
  const Real* st = s.end_state().data();
  switch (s.family()) {
    case transition_family::scalar:
      affine_scalar(out, prev, st, dk * dv, static_cast<Real>(decay_factor(s.log_decay()[0])));
      break;
    case transition_family::diagonal:
      affine_diagonal(out, prev, st, s.log_decay().data(), dk, dv);
      break;
    case transition_family::dense: {
      auto o = as_matrix(out, dk, dv);
      o = as_matrix(st, dk, dv);
      o.noalias() += as_matrix(s.transition().data(), dk, dk) * as_matrix(prev, dk, dv);
      break;
    }
  }
}

}  // namespace detail

/// The summary of "`first`, then `then`": (T_then·T_first, T_then·S_first + S_then).
/// @throws invalid_argument if the shapes differ or a summary is empty (default-constructed).
template <class Real>
segment_summary<Real> compose(const segment_summary<Real>& first,
                              const segment_summary<Real>& then) {
  detail::check_compatible(first, then, "then");
  const std::size_t dk = first.dk(), dv = first.dv();
  const transition_family f = promote(first.family(), then.family());
  const std::size_t length = first.length() + then.length();
  using acc = detail::summary_access;
  if (f != transition_family::dense) {
    const auto l1 = first.log_decay(), l2 = then.log_decay();
    std::vector<double> ld(std::max(l1.size(), l2.size()));
    std::vector<Real> st(dk * dv);
    detail::compose_diagonal_family(ld.data(), st.data(), l1.data(), l1.size(),
                                    first.end_state().data(), l2.data(), l2.size(),
                                    then.end_state().data(), dk, dv);
    return acc::make<Real>(f, length, dk, dv, std::move(ld), {}, std::move(st));
  }
  std::vector<Real> t(dk * dk), st(dk * dv);
  if (then.family() == transition_family::dense) {
    const auto T2 = detail::as_matrix(then.transition().data(), dk, dk);
    if (first.family() == transition_family::dense) {
      detail::as_matrix(t.data(), dk, dk).noalias() =
          T2 * detail::as_matrix(first.transition().data(), dk, dk);
    } else {  // T2 · Diag(e^{ℓ1}): scale columns
      std::copy(then.transition().begin(), then.transition().end(), t.begin());
      const auto l1 = detail::expanded_log_decay(first);
      detail::scale_cols_by_decay(t.data(), l1.data(), dk, dk);
    }
  } else {  // Diag(e^{ℓ2}) · T1 (first is dense): scale rows
    std::copy(first.transition().begin(), first.transition().end(), t.begin());
    const auto l2 = detail::expanded_log_decay(then);
    detail::scale_rows_by_decay(t.data(), l2.data(), dk, dk);
  }
  detail::apply_to(then, first.end_state().data(), st.data());
  return acc::make<Real>(transition_family::dense, length, dk, dv, {}, std::move(t), std::move(st));
}

namespace detail {
template <class Real>
segment_summary<Real> fold_range(std::span<const segment_summary<Real>> run) {
  if (run.size() == 1) return run[0];
  const std::size_t mid = run.size() / 2;
  return hybridcache::compose(fold_range(run.first(mid)), fold_range(run.subspan(mid)));
}

}  // namespace detail

/// HYPIC eq. 4/6 for one segment: T_C·prefix_state + S_C|0.
/// @param prefix_state dk·dv values, row-major.
/// @throws invalid_argument on a mis-sized or non-finite prefix state or an empty summary.
template <class Real>
std::vector<Real> apply(const segment_summary<Real>& s,
                        std::span<const std::type_identity_t<Real>> prefix_state) {
  detail::check_compatible(s, s, "summary");
  detail::check_initial_state(prefix_state, s.dk(), s.dv(), "prefix_state");
  std::vector<Real> out(s.dk() * s.dv());
  detail::apply_to(s, prefix_state.data(), out.data());
  return out;
}

/// HYPIC eq. 6: applies the run C₁, …, C_n (in order) to `prefix_state`. An empty run returns
/// the prefix state.
/// @throws invalid_argument on shape mismatches, an empty summary or a bad prefix state.
template <class Real>
std::vector<Real> apply(std::span<const segment_summary<Real>> run,
                        std::span<const std::type_identity_t<Real>> prefix_state) {
  std::vector<Real> cur(prefix_state.begin(), prefix_state.end());
  if (run.empty()) return cur;
  for (std::size_t i = 0; i < run.size(); ++i)
    detail::check_compatible(run[0], run[i], hybridcache::detail::indexed("run", i));
  detail::check_initial_state(prefix_state, run[0].dk(), run[0].dv(), "prefix_state");
  std::vector<Real> next(cur.size());
  for (const auto& s : run) {
    detail::apply_to(s, cur.data(), next.data());
    cur.swap(next);
  }
  return cur;
}

/// Overload for a vector of summaries.
template <class Real>
std::vector<Real> apply(const std::vector<segment_summary<Real>>& run,
                        std::span<const std::type_identity_t<Real>> prefix_state) {
  return hybridcache::apply(std::span<const segment_summary<Real>>(run), prefix_state);
}

/// Composes a run C₁, …, C_n into one summary as a balanced binary tree.
/// @throws invalid_argument if the run is empty (it has no shape: use identity(dk, dv)) or the
///         shapes differ.
template <class Real>
segment_summary<Real> fold(std::span<const segment_summary<Real>> run) {
  if (run.empty())
    hybridcache::detail::throw_invalid("run.size()", 0,
                                       "fold of no summaries has no shape; use identity(dk, dv)");
  for (std::size_t i = 0; i < run.size(); ++i)
    detail::check_compatible(run[0], run[i], hybridcache::detail::indexed("run", i));
  return detail::fold_range(run);
}

template <class Real>
segment_summary<Real> fold(const std::vector<segment_summary<Real>>& run) {
  return fold(std::span<const segment_summary<Real>>(run));
}

HYBRIDCACHE_NAMESPACE_END
