#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Batched apply and compose of segment summaries over storage views (HYPIC eq. 6; DESIGN.md §3),
/// the host twin of `<hybridcache/cuda/state/compose.cuh>`: the same four entry points, the same
/// argument order, layouts and errors, so an engine writes one call and the memory space of its
/// views picks the backend (STYLE.md §4).
///
/// A summary is the affine map S ↦ T·S + S₀ on dk×dv states (row-major, K-first). For every batch
/// entry b of B independent (head, layer, request) slots:
///   apply:    out_b = T_b·prev_b + add_b                           (one step of HYPIC eq. 6)
///   compose:  (T, S) = (T_then·T_first, T_then·S_first + S_then)   ("first, then `then`")
/// Families, as `segment_summary` stores them:
///  - scalar / diagonal (`apply_elementwise`, `compose_elementwise`): log-decays ℓ (1 or dk per
///    entry, `double`), T = Diag(e^{ℓ}); ℓ = −∞ is a hard reset, composes to −∞ and multiplies to
///    exactly 0 (no NaN for finite states). Identity: ℓ = 0, S = 0.
///  - dense (`apply_dense`, `compose_dense`): T as a dk×dk matrix. Identity: T = I, S = 0.
///
/// Views: log-decays `[B, n]` (n = 1 or dk), states `[B, dk, dv]`, transitions `[B, dk, dk]`, each
/// with unit stride on its last axis (batch and row strides are free). Outputs may alias inputs
/// for the element-wise families; for the dense family `out` must not alias `prev`, `first_*` or a
/// transition (a GEMM reads its operands while writing), but may alias `add` / `then_s`. An empty
/// batch (B = 0) or an empty state does nothing.
///
/// Backends: these overloads take `host_view`s. Views in `device_space` select the CUDA overloads
/// of `<hybridcache/cuda/state/compose.cuh>` (which also take a `cudaStream_t` and return
/// `cudaError_t`); without that header, a device view is a compile error naming it, never a host
/// loop over device memory. The per-element math is `detail::affine_scalar` and
/// `compose_log_decay`, the functions the kernels call.

#include <cstddef>
#include <string>
#include <type_traits>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/detail/batch_views.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/detail/gemm.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// out_b = Diag(e^{ℓ_b})·prev_b + add_b, row by row, as the CUDA kernel does it: one decay factor
/// per row, then `affine_scalar` over the row's dv columns.
template <class LogDecay, class Prev, class Add, class Out>
void apply_elementwise_rows(const LogDecay& log_decay, std::size_t n, const Prev& prev,
                            const Add& add, const Out& out, std::size_t b, std::size_t dk,
                            std::size_t dv) {
  using Real = typename Out::value_type;
  for (std::size_t r = 0; r < dk; ++r) {
    const Real f = static_cast<Real>(decay_factor(log_decay(b, n == 1 ? 0 : r)));
    affine_scalar(&out(b, r, 0), &prev(b, r, 0), &add(b, r, 0), dv, f);
  }
}

}  // namespace detail

/// Batched apply of scalar/diagonal summaries: out_b = Diag(e^{ℓ_b})·prev_b + add_b
/// (HYPIC eq. 6, one step, for every batch entry b).
///
/// @param log_decay `[B, n]` doubles, n = 1 (scalar family) or dk (diagonal), each ≤ 0 or −∞.
/// @param prev,add,out `[B, dk, dv]`, float or double; `out` may alias `prev` or `add`.
/// @throws invalid_argument on mismatched extents or non-unit row strides.
///
/// ```cpp
/// // two heads, dk = 4, dv = 8, one scalar log-decay each
/// auto ld = hybridcache::strided_view<const double, 2>(log_decays.data(), {2, 1});
/// auto s = hybridcache::strided_view<float, 3>(states.data(), {2, 4, 8});
/// hybridcache::apply_elementwise(ld, s, cached_end_states, s);  // in place
/// ```
template <host_view LogDecay, host_view Prev, host_view Add, host_view Out>
requires detail::apply_elementwise_views<LogDecay, Prev, Add, Out>
void apply_elementwise(LogDecay log_decay, Prev prev, Add add, Out out) {
  const std::size_t B = prev.extent(0), dk = prev.extent(1), dv = prev.extent(2);
  detail::check_batch_rank3(prev, "prev", B, dk, dv);
  detail::check_batch_rank3(add, "add", B, dk, dv);
  detail::check_batch_rank3(out, "out", B, dk, dv);
  const std::size_t n = detail::check_batch_log_decay(log_decay, "log_decay", B, dk);
  if (dv == 0) return;
  for (std::size_t b = 0; b < B; ++b)
    detail::apply_elementwise_rows(log_decay, n, prev, add, out, b, dk, dv);
}

/// Batched compose of scalar/diagonal summaries, "first, then `then`":
/// ℓ = ℓ_first + ℓ_then, S = Diag(e^{ℓ_then})·S_first + S_then (the monoid of DESIGN.md §3 on
/// diagonal transitions; a scalar side broadcasts over dk).
///
/// @param first_log,then_log `[B, 1]` or `[B, dk]` doubles.
/// @param out_log `[B, max(n_first, n_then)]` doubles (may alias an input of equal width).
/// @param first_state,then_state,out_state `[B, dk, dv]` (out may alias either input).
/// @throws invalid_argument on mismatched extents or non-contiguous rows / log-decays.
template <host_view Log1, host_view S1, host_view Log2, host_view S2, host_view LogOut,
          host_view SOut>
requires detail::compose_elementwise_views<Log1, S1, Log2, S2, LogOut, SOut>
void compose_elementwise(Log1 first_log, S1 first_state, Log2 then_log, S2 then_state,
                         LogOut out_log, SOut out_state) {
  const std::size_t B = first_state.extent(0), dk = first_state.extent(1),
                    dv = first_state.extent(2);
  detail::check_batch_rank3(then_state, "then_state", B, dk, dv);
  detail::check_batch_rank3(out_state, "out_state", B, dk, dv);
  const std::size_t n1 = detail::check_batch_log_decay(first_log, "first_log", B, dk);
  const std::size_t n2 = detail::check_batch_log_decay(then_log, "then_log", B, dk);
  const std::size_t no = n1 > n2 ? n1 : n2;
  detail::check_batch_log_out(out_log, B, no);
  for (std::size_t b = 0; b < B; ++b) {
    // The state first: it reads ℓ_then, which out_log may alias.
    if (dv != 0)
      detail::apply_elementwise_rows(then_log, n2, first_state, then_state, out_state, b, dk, dv);
    detail::compose_log_decay(&out_log(b, 0), &first_log(b, 0), n1, &then_log(b, 0), n2);
  }
}

/// Batched apply of dense summaries: out_b = T_b·prev_b + add_b (one dk×dk by dk×dv GEMM per
/// entry, Eigen on the host).
///
/// @param transition `[B, dk, dk]`; prev, add, out `[B, dk, dv]`. `out` must not alias `prev` or
///        `transition` (it may alias `add`).
/// @throws invalid_argument on mismatched extents or non-unit row strides.
template <host_view Trans, host_view Prev, host_view Add, host_view Out>
requires detail::apply_dense_views<Trans, Prev, Add, Out>
void apply_dense(Trans transition, Prev prev, Add add, Out out) {
  const std::size_t B = prev.extent(0), dk = prev.extent(1), dv = prev.extent(2);
  detail::check_batch_rank3(transition, "transition", B, dk, dk);
  detail::check_batch_rank3(prev, "prev", B, dk, dv);
  detail::check_batch_rank3(add, "add", B, dk, dv);
  detail::check_batch_rank3(out, "out", B, dk, dv);
  if (dk == 0 || dv == 0) return;
  for (std::size_t b = 0; b < B; ++b) {
    auto o = detail::as_matrix(&out(b, 0, 0), dk, dv, out.stride(1));
    o = detail::as_matrix(&add(b, 0, 0), dk, dv, add.stride(1));
    o.noalias() += detail::as_matrix(&transition(b, 0, 0), dk, dk, transition.stride(1)) *
                   detail::as_matrix(&prev(b, 0, 0), dk, dv, prev.stride(1));
  }
}

/// Batched compose of dense summaries, "first, then `then`": T = T_then·T_first and
/// S = T_then·S_first + S_then.
///
/// @param first_t,then_t,out_t `[B, dk, dk]`; first_s,then_s,out_s `[B, dk, dv]`. Outputs must not
///        alias `first_*` or `then_t` (out_s may alias then_s).
/// @throws invalid_argument on mismatched extents or non-unit row strides.
template <host_view T1, host_view S1, host_view T2, host_view S2, host_view TOut, host_view SOut>
requires detail::compose_dense_views<T1, S1, T2, S2, TOut, SOut>
void compose_dense(T1 first_t, S1 first_s, T2 then_t, S2 then_s, TOut out_t, SOut out_s) {
  const std::size_t B = first_s.extent(0), dk = first_s.extent(1), dv = first_s.extent(2);
  detail::check_batch_rank3(first_t, "first_t", B, dk, dk);
  detail::check_batch_rank3(then_t, "then_t", B, dk, dk);
  detail::check_batch_rank3(out_t, "out_t", B, dk, dk);
  detail::check_batch_rank3(then_s, "then_s", B, dk, dv);
  detail::check_batch_rank3(out_s, "out_s", B, dk, dv);
  if (dk == 0) return;
  for (std::size_t b = 0; b < B; ++b) {
    const auto t2 = detail::as_matrix(&then_t(b, 0, 0), dk, dk, then_t.stride(1));
    detail::as_matrix(&out_t(b, 0, 0), dk, dk, out_t.stride(1)).noalias() =
        t2 * detail::as_matrix(&first_t(b, 0, 0), dk, dk, first_t.stride(1));
    if (dv == 0) continue;
    auto o = detail::as_matrix(&out_s(b, 0, 0), dk, dv, out_s.stride(1));
    o = detail::as_matrix(&then_s(b, 0, 0), dk, dv, then_s.stride(1));
    o.noalias() += t2 * detail::as_matrix(&first_s(b, 0, 0), dk, dv, first_s.stride(1));
  }
}

// ---------------------------------------------------------------------------------------------
// Device views without the CUDA backend: a compile error that names the header to include. The
// trailing pack also catches the device overloads' `cudaStream_t` argument; the overloads of
// <hybridcache/cuda/state/compose.cuh> are more specialised and win whenever that header is seen.

/// Device views need `<hybridcache/cuda/state/compose.cuh>` (compiled with nvcc).
template <view LogDecay, view Prev, view Add, view Out, class... Stream>
requires(device_view<LogDecay> || device_view<Prev> || device_view<Add> ||
         device_view<Out>) void apply_elementwise(LogDecay, Prev, Add, Out, Stream...) {
  HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(Prev, "hybridcache/cuda/state/compose.cuh");
}

/// Device views need `<hybridcache/cuda/state/compose.cuh>` (compiled with nvcc).
template <view Log1, view S1, view Log2, view S2, view LogOut, view SOut, class... Stream>
requires(device_view<Log1> || device_view<S1> || device_view<Log2> || device_view<S2> ||
         device_view<LogOut> ||
         device_view<SOut>) void compose_elementwise(Log1, S1, Log2, S2, LogOut, SOut, Stream...) {
  HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(S1, "hybridcache/cuda/state/compose.cuh");
}

/// Device views need `<hybridcache/cuda/state/compose.cuh>` (compiled with nvcc).
template <view Trans, view Prev, view Add, view Out, class... Stream>
requires(device_view<Trans> || device_view<Prev> || device_view<Add> ||
         device_view<Out>) void apply_dense(Trans, Prev, Add, Out, Stream...) {
  HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(Prev, "hybridcache/cuda/state/compose.cuh");
}

/// Device views need `<hybridcache/cuda/state/compose.cuh>` (compiled with nvcc).
template <view T1, view S1, view T2, view S2, view TOut, view SOut, class... Stream>
requires(device_view<T1> || device_view<S1> || device_view<T2> || device_view<S2> ||
         device_view<TOut> ||
         device_view<SOut>) void compose_dense(T1, S1, T2, S2, TOut, SOut, Stream...) {
  HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(S1, "hybridcache/cuda/state/compose.cuh");
}

HYBRIDCACHE_NAMESPACE_END
