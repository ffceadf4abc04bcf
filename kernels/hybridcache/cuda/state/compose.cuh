#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// CUDA backend of `<hybridcache/state/compose.hpp>` (its batched view API,
/// state/compose_views.hpp): batched apply and compose of segment summaries (HYPIC eq. 6;
/// DESIGN.md §3 "Linear-attention state") for B independent (head, layer, request) slots at once.
/// `apply_elementwise` & co. with device views land here (overloads at the end of this
/// file); the `cuda::` spellings below are the same functions.
///
/// A summary is the affine map S ↦ T·S + S₀ on dk×dv states (row-major, K-first). For every
/// batch entry b:
///   apply:    out_b = T_b·prev_b + add_b                      (one step of HYPIC eq. 6)
///   compose:  (T, S) = (T_then·T_first, T_then·S_first + S_then)   ("first, then `then`")
/// Families, as the host stores them:
///  - scalar / diagonal: log-decays ℓ (1 or dk per entry, `double`), T = Diag(e^{ℓ}); the kernels
///    call the host's `detail::decay_factor`, `affine_scalar` and `compose_log_decay`, so
///    −∞ (hard reset) composes to −∞ and multiplies to exactly 0 on both sides alike;
///  - dense: T as a dk×dk matrix; apply and compose are batched GEMMs with the "+ S" fused into
///    the epilogue (own tiled kernel: docs/cuda.md explains why not cuBLAS).
/// Mixed dense ∘ diagonal composition is not offered here: promote the diagonal operand to a dense
/// matrix first (`segment_summary::transition()` on the host does exactly that).
///
/// Views are device views: log-decays `[B, n]` (n = 1 or dk), states `[B, dk, dv]`, transitions
/// `[B, dk, dk]`, each with unit stride on its last axis. Outputs may alias inputs for the
/// element-wise families; for the dense family `out` must not alias `prev` / `first_*` (a GEMM
/// reads its operands while writing). No workspace is needed.

#include <cstddef>
#include <string>
#include <type_traits>

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/error.hpp"
#include "hybridcache/state/detail/batch_views.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda {
namespace detail {

/// A batch of row-major matrices: element (b, i, j) at p[b·batch + i·ld + j].
template <class T>
struct batched_matrix {
  T* p;
  std::size_t batch, ld;
};

// --------------------------------------------------------------------------------------------
// Element-wise families.

template <class Real>
struct elementwise_args {
  batched_matrix<const Real> prev, add;
  batched_matrix<Real> out;
  const double* log_decay;
  std::size_t log_batch, log_n;  // stride between entries, entries per batch (1 or dk)
  std::size_t batches, dk, dv;
};

/// out = Diag(e^{ℓ})·prev + add. Block (32, 8): threadIdx.y picks a row, x walks its columns;
/// each thread evaluates the row's decay factor once.
template <class Real>
__global__ void apply_elementwise_kernel(elementwise_args<Real> a) {
  const std::size_t rows = a.batches * a.dk;
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(blockDim.y) + threadIdx.y; g < rows;
       g += static_cast<std::size_t>(gridDim.x) * blockDim.y) {
    const std::size_t b = g / a.dk, r = g % a.dk;
    const double ld = a.log_decay[b * a.log_batch + (a.log_n == 1 ? 0 : r)];
    const Real f = static_cast<Real>(hybridcache::detail::decay_factor(ld));
    const Real* prev = a.prev.p + b * a.prev.batch + r * a.prev.ld;
    const Real* add = a.add.p + b * a.add.batch + r * a.add.ld;
    Real* out = a.out.p + b * a.out.batch + r * a.out.ld;
    for (std::size_t c = threadIdx.x; c < a.dv; c += blockDim.x)
      hybridcache::detail::affine_scalar(out + c, prev + c, add + c, 1, f);
  }
}

/// out_log = first_log + then_log per entry (broadcasting a scalar side), by the host's
/// `compose_log_decay`. (A template only so that the header may define it in many TUs.)
template <class Unused = void>
__global__ void compose_log_decay_kernel(const double* first, std::size_t first_batch,
                                         std::size_t first_n, const double* then,
                                         std::size_t then_batch, std::size_t then_n, double* out,
                                         std::size_t out_batch, std::size_t out_n,
                                         std::size_t batches) {
  const std::size_t total = batches * out_n;
  for (std::size_t g = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; g < total;
       g += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t b = g / out_n, i = g % out_n;
    hybridcache::detail::compose_log_decay(out + b * out_batch + i,
                                           first + b * first_batch + (first_n == 1 ? 0 : i), 1,
                                           then + b * then_batch + (then_n == 1 ? 0 : i), 1);
  }
}

// --------------------------------------------------------------------------------------------
// Dense family: D_b = A_b·B_b (+ C_b), A m×k, B k×n, C and D m×n.

inline constexpr unsigned gemm_tile_m = 64, gemm_tile_n = 64, gemm_tile_k = 16;
inline constexpr unsigned gemm_threads = 256;  // 16×16 threads, 4×4 outputs each

template <class Real>
struct gemm_args {
  batched_matrix<const Real> a, b, c;  // c.p may be null (no addend)
  batched_matrix<Real> d;
  std::size_t m, n, k, batches;
};

template <class Real>
__global__ void __launch_bounds__(gemm_threads) batched_gemm_kernel(gemm_args<Real> g) {
  // A tile, transposed (as[kk][i]) and padded by one: the loads below write it with kk fastest,
  // and a row length of 65 words spreads those writes over the banks.
  __shared__ Real as[gemm_tile_k][gemm_tile_m + 1];
  __shared__ Real bs[gemm_tile_k][gemm_tile_n];
  const unsigned tx = threadIdx.x % 16, ty = threadIdx.x / 16;
  const std::size_t i0 = static_cast<std::size_t>(blockIdx.y) * gemm_tile_m;
  const std::size_t j0 = static_cast<std::size_t>(blockIdx.x) * gemm_tile_n;
  for (std::size_t bt = blockIdx.z; bt < g.batches; bt += gridDim.z) {
    const Real* A = g.a.p + bt * g.a.batch;
    const Real* B = g.b.p + bt * g.b.batch;
    Real acc[4][4] = {};
    for (std::size_t k0 = 0; k0 < g.k; k0 += gemm_tile_k) {
      for (unsigned e = threadIdx.x; e < gemm_tile_m * gemm_tile_k; e += gemm_threads) {
        const unsigned ii = e / gemm_tile_k, kk = e % gemm_tile_k;  // consecutive threads: along k
        const std::size_t i = i0 + ii, k = k0 + kk;
        as[kk][ii] = (i < g.m && k < g.k) ? A[i * g.a.ld + k] : Real(0);
      }
      for (unsigned e = threadIdx.x; e < gemm_tile_k * gemm_tile_n; e += gemm_threads) {
        const unsigned kk = e / gemm_tile_n, jj = e % gemm_tile_n;  // consecutive threads: along n
        const std::size_t k = k0 + kk, j = j0 + jj;
        bs[kk][jj] = (k < g.k && j < g.n) ? B[k * g.b.ld + j] : Real(0);
      }
      __syncthreads();
#pragma unroll
      for (unsigned kk = 0; kk < gemm_tile_k; ++kk) {
        Real af[4], bf[4];
#pragma unroll
        for (unsigned r = 0; r < 4; ++r) af[r] = as[kk][ty * 4 + r];
#pragma unroll
        for (unsigned c = 0; c < 4; ++c) bf[c] = bs[kk][tx * 4 + c];
#pragma unroll
        for (unsigned r = 0; r < 4; ++r)
#pragma unroll
          for (unsigned c = 0; c < 4; ++c) acc[r][c] += af[r] * bf[c];
      }
      __syncthreads();
    }
    const Real* C = g.c.p == nullptr ? nullptr : g.c.p + bt * g.c.batch;
    Real* D = g.d.p + bt * g.d.batch;
#pragma unroll
    for (unsigned r = 0; r < 4; ++r) {
      const std::size_t i = i0 + ty * 4 + r;
      if (i >= g.m) continue;
#pragma unroll
      for (unsigned c = 0; c < 4; ++c) {
        const std::size_t j = j0 + tx * 4 + c;
        if (j < g.n) D[i * g.d.ld + j] = acc[r][c] + (C != nullptr ? C[i * g.c.ld + j] : Real(0));
      }
    }
  }
}

template <class Real>
cudaError_t launch_batched_gemm(const gemm_args<Real>& g, cudaStream_t stream) {
  if (g.batches == 0 || g.m == 0 || g.n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(ceil_div(g.n, gemm_tile_n)),
                  static_cast<unsigned>(ceil_div(g.m, gemm_tile_m)),
                  static_cast<unsigned>(g.batches < 65535 ? g.batches : 65535));
  if (grid.x > 65535 * 1024u || grid.y > 65535) return cudaErrorInvalidValue;
  batched_gemm_kernel<Real><<<grid, gemm_threads, 0, stream>>>(g);
  return last_launch_error();
}

inline unsigned elementwise_grid(std::size_t rows, unsigned rows_per_block) {
  const std::size_t blocks = ceil_div(rows, rows_per_block);
  return static_cast<unsigned>(blocks == 0 ? 1 : (blocks < 65535 ? blocks : 65535));
}

// --------------------------------------------------------------------------------------------
// Host-side checks: the host overloads' own (state/detail/batch_views.hpp), so both backends
// accept the same views and word their errors alike.

using ::hybridcache::detail::check_batch_log_decay;
using ::hybridcache::detail::check_batch_log_out;
using ::hybridcache::detail::check_batch_rank3;

/// An output batch (mutable elements).
template <class V>
batched_matrix<typename V::element_type> as_batched(const V& v) {
  return {v.data(), v.stride(0), v.stride(1)};
}
/// An input batch (read-only elements, whatever the view's constness).
template <class V>
batched_matrix<const typename V::value_type> as_input(const V& v) {
  return {v.data(), v.stride(0), v.stride(1)};
}

template <class... V>
concept same_real = ::hybridcache::detail::same_real_views<V...>;

}  // namespace detail

/// Batched apply of scalar/diagonal summaries: out_b = Diag(e^{ℓ_b})·prev_b + add_b
/// (HYPIC eq. 6, one step, for every batch entry b).
///
/// @param log_decay device `[B, n]` doubles, n = 1 (scalar family) or dk (diagonal), each ≤ 0 or
///                  −∞ (not checked on the device).
/// @param prev,add,out device `[B, dk, dv]`, float or double; `out` may alias `prev` or `add`.
/// @throws invalid_argument on mismatched extents or non-unit row strides.
template <device_view LogDecay, device_view Prev, device_view Add, device_view Out>
requires(LogDecay::rank == 2 && Prev::rank == 3 && Add::rank == 3 && Out::rank == 3 &&
         std::same_as<typename LogDecay::value_type, double> && detail::same_real<Prev, Add, Out> &&
         !std::is_const_v<typename Out::element_type>) cudaError_t
    apply_elementwise(LogDecay log_decay, Prev prev, Add add, Out out, cudaStream_t stream) {
  const std::size_t B = prev.extent(0), dk = prev.extent(1), dv = prev.extent(2);
  detail::check_batch_rank3(prev, "prev", B, dk, dv);
  detail::check_batch_rank3(add, "add", B, dk, dv);
  detail::check_batch_rank3(out, "out", B, dk, dv);
  const std::size_t n = detail::check_batch_log_decay(log_decay, "log_decay", B, dk);
  using Real = typename Out::value_type;
  detail::elementwise_args<Real> a{detail::as_input(prev),
                                   detail::as_input(add),
                                   detail::as_batched(out),
                                   log_decay.data(),
                                   log_decay.stride(0),
                                   n,
                                   B,
                                   dk,
                                   dv};
  if (B * dk * dv == 0) return cudaSuccess;
  detail::apply_elementwise_kernel<Real>
      <<<detail::elementwise_grid(B * dk, 8), dim3(32, 8), 0, stream>>>(a);
  return detail::last_launch_error();
}

/// Batched compose of scalar/diagonal summaries, "first, then `then`":
/// ℓ = ℓ_first + ℓ_then, S = Diag(e^{ℓ_then})·S_first + S_then (the host's
/// `compose_diagonal_family`, entry by entry).
///
/// @param first_log,then_log device `[B, 1]` or `[B, dk]` doubles.
/// @param out_log  device `[B, max(n_first, n_then)]` doubles (may alias an input of equal width).
/// @param first_state,then_state,out_state device `[B, dk, dv]` (out may alias either input).
template <device_view Log1, device_view S1, device_view Log2, device_view S2, device_view LogOut,
          device_view SOut>
requires(Log1::rank == 2 && Log2::rank == 2 && LogOut::rank == 2 && S1::rank == 3 &&
         S2::rank == 3 && SOut::rank == 3 && std::same_as<typename Log1::value_type, double> &&
         std::same_as<typename Log2::value_type, double> &&
         std::same_as<typename LogOut::element_type, double> && detail::same_real<S1, S2, SOut> &&
         !std::is_const_v<typename SOut::element_type>) cudaError_t
    compose_elementwise(Log1 first_log, S1 first_state, Log2 then_log, S2 then_state,
                        LogOut out_log, SOut out_state, cudaStream_t stream) {
  const std::size_t B = first_state.extent(0), dk = first_state.extent(1),
                    dv = first_state.extent(2);
  detail::check_batch_rank3(then_state, "then_state", B, dk, dv);
  detail::check_batch_rank3(out_state, "out_state", B, dk, dv);
  const std::size_t n1 = detail::check_batch_log_decay(first_log, "first_log", B, dk);
  const std::size_t n2 = detail::check_batch_log_decay(then_log, "then_log", B, dk);
  const std::size_t no = n1 > n2 ? n1 : n2;
  detail::check_batch_log_out(out_log, B, no);
  if (B == 0) return cudaSuccess;
  using Real = typename SOut::value_type;
  // The state first (it reads ℓ_then, which out_log may alias), then the log-decays.
  detail::elementwise_args<Real> a{detail::as_input(first_state),
                                   detail::as_input(then_state),
                                   detail::as_batched(out_state),
                                   then_log.data(),
                                   then_log.stride(0),
                                   n2,
                                   B,
                                   dk,
                                   dv};
  if (dk * dv != 0) {
    detail::apply_elementwise_kernel<Real>
        <<<detail::elementwise_grid(B * dk, 8), dim3(32, 8), 0, stream>>>(a);
    HYBRIDCACHE_DETAIL_CUDA_TRY(detail::last_launch_error());
  }
  const std::size_t total = B * no;
  const unsigned grid = static_cast<unsigned>(
      detail::ceil_div(total, 256) < 65535 ? detail::ceil_div(total, 256) : 65535);
  detail::compose_log_decay_kernel<>
      <<<grid, 256, 0, stream>>>(first_log.data(), first_log.stride(0), n1, then_log.data(),
                                 then_log.stride(0), n2, out_log.data(), out_log.stride(0), no, B);
  return detail::last_launch_error();
}

/// Batched apply of dense summaries: out_b = T_b·prev_b + add_b, a batched GEMM (dk×dk by dk×dv)
/// with the addition fused into the epilogue. 2·B·dk²·dv flops.
///
/// @param transition device `[B, dk, dk]`; prev, add, out device `[B, dk, dv]`. `out` must not
///        alias `prev` or `transition` (it may alias `add`).
template <device_view Trans, device_view Prev, device_view Add, device_view Out>
requires(Trans::rank == 3 && Prev::rank == 3 && Add::rank == 3 && Out::rank == 3 &&
         detail::same_real<Trans, Prev, Add, Out> &&
         !std::is_const_v<typename Out::element_type>) cudaError_t
    apply_dense(Trans transition, Prev prev, Add add, Out out, cudaStream_t stream) {
  const std::size_t B = prev.extent(0), dk = prev.extent(1), dv = prev.extent(2);
  detail::check_batch_rank3(transition, "transition", B, dk, dk);
  detail::check_batch_rank3(prev, "prev", B, dk, dv);
  detail::check_batch_rank3(add, "add", B, dk, dv);
  detail::check_batch_rank3(out, "out", B, dk, dv);
  using Real = typename Out::value_type;
  const detail::gemm_args<Real> g{detail::as_input(transition),
                                  detail::as_input(prev),
                                  detail::as_input(add),
                                  detail::as_batched(out),
                                  dk,
                                  dv,
                                  dk,
                                  B};
  return detail::launch_batched_gemm(g, stream);
}

/// Batched compose of dense summaries, "first, then `then`": T = T_then·T_first and
/// S = T_then·S_first + S_then (two batched GEMMs, the second with the addition fused).
///
/// @param first_t,then_t,out_t device `[B, dk, dk]`; first_s,then_s,out_s device `[B, dk, dv]`.
///        Outputs must not alias `first_*` or `then_t` (out_s may alias then_s).
template <device_view T1, device_view S1, device_view T2, device_view S2, device_view TOut,
          device_view SOut>
requires(T1::rank == 3 && S1::rank == 3 && T2::rank == 3 && S2::rank == 3 && TOut::rank == 3 &&
         SOut::rank == 3 && detail::same_real<T1, S1, T2, S2, TOut, SOut> &&
         !std::is_const_v<typename TOut::element_type> &&
         !std::is_const_v<typename SOut::element_type>) cudaError_t
    compose_dense(T1 first_t, S1 first_s, T2 then_t, S2 then_s, TOut out_t, SOut out_s,
                  cudaStream_t stream) {
  const std::size_t B = first_s.extent(0), dk = first_s.extent(1), dv = first_s.extent(2);
  detail::check_batch_rank3(first_t, "first_t", B, dk, dk);
  detail::check_batch_rank3(then_t, "then_t", B, dk, dk);
  detail::check_batch_rank3(out_t, "out_t", B, dk, dk);
  detail::check_batch_rank3(then_s, "then_s", B, dk, dv);
  detail::check_batch_rank3(out_s, "out_s", B, dk, dv);
  using Real = typename SOut::value_type;
  const detail::batched_matrix<const Real> none{nullptr, 0, 0};
  const detail::gemm_args<Real> gt{detail::as_input(then_t),
                                   detail::as_input(first_t),
                                   none,
                                   detail::as_batched(out_t),
                                   dk,
                                   dk,
                                   dk,
                                   B};
  HYBRIDCACHE_DETAIL_CUDA_TRY(detail::launch_batched_gemm(gt, stream));
  const detail::gemm_args<Real> gs{detail::as_input(then_t),
                                   detail::as_input(first_s),
                                   detail::as_input(then_s),
                                   detail::as_batched(out_s),
                                   dk,
                                   dv,
                                   dk,
                                   B};
  return detail::launch_batched_gemm(gs, stream);
}

}  // namespace cuda

// ---------------------------------------------------------------------------------------------
// The host API's device overloads: `apply_elementwise`, `compose_elementwise`,
// `apply_dense` and `compose_dense` (state/compose_views.hpp) with device views, a stream last
// and a `cudaError_t` result. They are more specialised than the host header's missing-backend
// fallback, so including this header is what makes device views compile.

/// Device overload of `apply_elementwise` (host contract in state/compose_views.hpp).
template <device_view LogDecay, device_view Prev, device_view Add, device_view Out>
requires detail::apply_elementwise_views<LogDecay, Prev, Add, Out> cudaError_t
apply_elementwise(LogDecay log_decay, Prev prev, Add add, Out out, cudaStream_t stream) {
  return cuda::apply_elementwise(log_decay, prev, add, out, stream);
}
/// `apply_elementwise` on the default stream.
template <device_view LogDecay, device_view Prev, device_view Add, device_view Out>
requires detail::apply_elementwise_views<LogDecay, Prev, Add, Out> cudaError_t
apply_elementwise(LogDecay log_decay, Prev prev, Add add, Out out) {
  return cuda::apply_elementwise(log_decay, prev, add, out, cudaStream_t{});
}

/// Device overload of `compose_elementwise` (host contract in state/compose_views.hpp).
template <device_view Log1, device_view S1, device_view Log2, device_view S2, device_view LogOut,
          device_view SOut>
requires detail::compose_elementwise_views<Log1, S1, Log2, S2, LogOut, SOut> cudaError_t
compose_elementwise(Log1 first_log, S1 first_state, Log2 then_log, S2 then_state, LogOut out_log,
                    SOut out_state, cudaStream_t stream) {
  return cuda::compose_elementwise(first_log, first_state, then_log, then_state, out_log, out_state,
                                   stream);
}
/// `compose_elementwise` on the default stream.
template <device_view Log1, device_view S1, device_view Log2, device_view S2, device_view LogOut,
          device_view SOut>
requires detail::compose_elementwise_views<Log1, S1, Log2, S2, LogOut, SOut> cudaError_t
compose_elementwise(Log1 first_log, S1 first_state, Log2 then_log, S2 then_state, LogOut out_log,
                    SOut out_state) {
  return cuda::compose_elementwise(first_log, first_state, then_log, then_state, out_log, out_state,
                                   cudaStream_t{});
}

/// Device overload of `apply_dense` (host contract in state/compose_views.hpp).
template <device_view Trans, device_view Prev, device_view Add, device_view Out>
requires detail::apply_dense_views<Trans, Prev, Add, Out> cudaError_t
apply_dense(Trans transition, Prev prev, Add add, Out out, cudaStream_t stream) {
  return cuda::apply_dense(transition, prev, add, out, stream);
}
/// `apply_dense` on the default stream.
template <device_view Trans, device_view Prev, device_view Add, device_view Out>
requires detail::apply_dense_views<Trans, Prev, Add, Out> cudaError_t apply_dense(Trans transition,
                                                                                  Prev prev,
                                                                                  Add add,
                                                                                  Out out) {
  return cuda::apply_dense(transition, prev, add, out, cudaStream_t{});
}

/// Device overload of `compose_dense` (host contract in state/compose_views.hpp).
template <device_view T1, device_view S1, device_view T2, device_view S2, device_view TOut,
          device_view SOut>
requires detail::compose_dense_views<T1, S1, T2, S2, TOut, SOut> cudaError_t compose_dense(
    T1 first_t, S1 first_s, T2 then_t, S2 then_s, TOut out_t, SOut out_s, cudaStream_t stream) {
  return cuda::compose_dense(first_t, first_s, then_t, then_s, out_t, out_s, stream);
}
/// `compose_dense` on the default stream.
template <device_view T1, device_view S1, device_view T2, device_view S2, device_view TOut,
          device_view SOut>
requires detail::compose_dense_views<T1, S1, T2, S2, TOut, SOut> cudaError_t
compose_dense(T1 first_t, S1 first_s, T2 then_t, S2 then_s, TOut out_t, SOut out_s) {
  return cuda::compose_dense(first_t, first_s, then_t, then_s, out_t, out_s, cudaStream_t{});
}

HYBRIDCACHE_NAMESPACE_END
