#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// CUDA backend of `<hybridcache/select/scores.hpp>`: sparse-Q attention scores on the device
/// (SparseX §3.2, eqs. 1–2),
///
///     s_j = 1/(H·|I_nr|) · Σ_h Σ_i softmax_j(q_{i,h}·k_{j,kv(h)}·scale, j ≤ pos_i),
///
/// with the same arguments, validation and conventions as the host overload (causal mask, GQA
/// kv head h / (H / H_kv), scale 0 → 1/√d).
///
/// Kernel: a thread block takes 16 queries of one head. It streams the visible keys through shared
/// memory in tiles of 32 (lane = key, warp = 4 queries, so each thread forms 4 dot products per
/// key from shared memory) twice: pass 1 reduces each query's softmax normaliser (m, l) with the
/// shared `detail::softmax_push` / `softmax_merge` (select/detail/online_softmax.hpp), pass 2 adds
/// the block's Σ_i e^{x_ij − m_i}/l_i for every key into a double accumulator with one atomic per
/// key and block. A last kernel scales by 1/(H·|I_nr|). Memory is O(T) (the accumulator), never
/// O(|I_nr|·T); work is 2·H·|I_nr|·T·d multiply-adds (the logits are recomputed rather than
/// stored). Atomic accumulation order varies between runs, so results are reproducible to
/// rounding, not bit for bit.
///
/// Input rule: the host overload's (`detail::check_sparse_q_finite`): every query element and
/// every element of every key row — also rows after the last query position — must be finite. A
/// kernel cannot throw, so a first kernel scans the device inputs and, if any element is not
/// finite, every score is written as NaN (which `select_tokens` rejects); a logit that overflows
/// the scalar type gives non-finite scores too. The rule is the same on both sides: an input the
/// host rejects is never scored on the device.
///
/// Workspace (explicit, no hidden allocation): `sparse_q_scores_workspace_bytes(nq, T)` bytes,
/// 256-byte aligned. Positions may be a host view (validated like the host overload, then copied
/// into the workspace with `cudaMemcpyAsync`) or a device view (then strictly increasing positions
/// < T are a precondition; a position ≥ T is clamped to T − 1 so no key outside the prompt is
/// read).

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/cuda/detail/scores_plan.cuh"
#include "hybridcache/select/detail/online_softmax.hpp"
#include "hybridcache/select/scores.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

namespace cuda {

/// Bytes of device workspace `sparse_q_scores` needs for `num_queries` queries over a prompt of
/// `tokens` tokens: a double accumulator per token, room for the positions, and the flag of the
/// non-finite input scan.
constexpr std::size_t sparse_q_scores_workspace_bytes(std::size_t num_queries,
                                                      std::size_t tokens) noexcept {
  return detail::align_up(tokens * sizeof(double)) +
         detail::align_up(num_queries * sizeof(std::int64_t)) + detail::align_up(sizeof(unsigned));
}

namespace detail {

template <class Scalar, class Pos>
struct scores_args {
  const Scalar* q;
  const Pos* pos;
  const Scalar* k;
  double* acc;
  std::size_t nq, heads, d, t_len, group;
  std::size_t qs[3], ks[3], pos_stride;
  Scalar scale;
};

template <class Pos>
__device__ inline std::size_t clamp_position(Pos p, std::size_t t_len) {
  if constexpr (std::is_signed_v<Pos>) {
    if (p < 0) return 0;
  }
  const auto u = static_cast<std::size_t>(p);
  return u < t_len ? u : t_len - 1;
}

template <class Scalar, class Pos>
__global__ void __launch_bounds__(scores_threads)
    sparse_q_scores_kernel(scores_args<Scalar, Pos> a) {
  using hybridcache::detail::softmax_state;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Scalar* qs = reinterpret_cast<Scalar*>(smem_raw);  // [16][d]
  Scalar* ks = qs + scores_queries * a.d;            // [32][d + 1]
  Scalar* part = ks + scores_key_tile * (a.d + 1);   // [4 warps][32]
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const std::size_t h = blockIdx.y, kvh = h / a.group;
  const std::size_t i0 = static_cast<std::size_t>(blockIdx.x) * scores_queries;
  const std::size_t nqb = a.nq - i0 < scores_queries ? a.nq - i0 : scores_queries;

  for (std::size_t e = threadIdx.x; e < scores_queries * a.d; e += blockDim.x) {
    const std::size_t r = e / a.d, c = e % a.d;
    qs[e] = r < nqb
                ? static_cast<Scalar>(a.q[(i0 + r) * a.qs[0] + h * a.qs[1] + c * a.qs[2]] * a.scale)
                : Scalar(0);
  }
  // Visible keys of this thread's queries (a query slot past nq sees none: limit 0 → masked).
  std::size_t limit[scores_q_per_warp];
  std::size_t last = 0;
  for (unsigned s = 0; s < scores_q_per_warp; ++s) {
    const std::size_t r = warp * scores_q_per_warp + s;
    limit[s] = r < nqb ? clamp_position(a.pos[(i0 + r) * a.pos_stride], a.t_len) + 1 : 0;
  }
  last = clamp_position(a.pos[(i0 + nqb - 1) * a.pos_stride], a.t_len) + 1;

  auto load_tile = [&](std::size_t j0) {
    for (std::size_t e = threadIdx.x; e < scores_key_tile * a.d; e += blockDim.x) {
      const std::size_t r = e / a.d, c = e % a.d, j = j0 + r;
      ks[r * (a.d + 1) + c] = j < last ? a.k[j * a.ks[0] + kvh * a.ks[1] + c * a.ks[2]] : Scalar(0);
    }
  };
  auto logits = [&](Scalar(&x)[scores_q_per_warp]) {
    for (unsigned s = 0; s < scores_q_per_warp; ++s) x[s] = Scalar(0);
    const Scalar* kr = ks + lane * (a.d + 1);
    const Scalar* q0 = qs + warp * scores_q_per_warp * a.d;
    for (std::size_t c = 0; c < a.d; ++c) {
      const Scalar kc = kr[c];
      for (unsigned s = 0; s < scores_q_per_warp; ++s) x[s] += q0[s * a.d + c] * kc;
    }
  };

  // Pass 1: softmax normaliser (m, l) of every query.
  softmax_state<Scalar> st[scores_q_per_warp];
  for (unsigned s = 0; s < scores_q_per_warp; ++s)
    st[s] = hybridcache::detail::softmax_identity<Scalar>();
  for (std::size_t j0 = 0; j0 < last; j0 += scores_key_tile) {
    __syncthreads();
    load_tile(j0);
    __syncthreads();
    Scalar x[scores_q_per_warp];
    logits(x);
    const std::size_t j = j0 + lane;
    for (unsigned s = 0; s < scores_q_per_warp; ++s)
      if (j < limit[s]) st[s] = hybridcache::detail::softmax_push(st[s], x[s]);
  }
  for (unsigned s = 0; s < scores_q_per_warp; ++s) {
    for (int off = 16; off > 0; off /= 2) {
      softmax_state<Scalar> o{__shfl_xor_sync(0xffffffffu, st[s].m, off),
                              __shfl_xor_sync(0xffffffffu, st[s].l, off)};
      st[s] = hybridcache::detail::softmax_merge(st[s], o);
    }
  }
  // Pass 2: Σ over this block's queries of the softmax weights, one atomic per key.
  for (std::size_t j0 = 0; j0 < last; j0 += scores_key_tile) {
    __syncthreads();
    load_tile(j0);
    __syncthreads();
    Scalar x[scores_q_per_warp];
    logits(x);
    const std::size_t j = j0 + lane;
    Scalar sum = 0;
    for (unsigned s = 0; s < scores_q_per_warp; ++s)
      if (j < limit[s]) sum += hybridcache::detail::softmax_weight(st[s], x[s]);
    part[warp * 32 + lane] = sum;
    __syncthreads();
    if (warp == 0 && j < last) {
      Scalar total = 0;
      for (unsigned w = 0; w < scores_threads / 32; ++w) total += part[w * 32 + lane];
      atomicAdd(a.acc + j, static_cast<double>(total));
    }
  }
}

// Sets *flag when an element of the [n0, n1, n2] tensor at `x` (strides `st`) is not finite: the
// device half of the host's `check_sparse_q_finite` (every key row counts).
template <class Scalar>
__global__ void scores_nonfinite_kernel(const Scalar* x, std::size_t n0, std::size_t n1,
                                        std::size_t n2, std::size_t s0, std::size_t s1,
                                        std::size_t s2, unsigned* flag) {
  const std::size_t n = n0 * n1 * n2;
  for (std::size_t e = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const std::size_t c = e % n2, h = (e / n2) % n1, i = e / (n1 * n2);
    if (!isfinite(x[i * s0 + h * s1 + c * s2])) *flag = 1u;  // every writer stores the same value
  }
}

template <class Out>
__global__ void scores_finish_kernel(const double* acc, const unsigned* nonfinite, Out* out,
                                     std::size_t out_stride, std::size_t t_len, double norm) {
  const bool poisoned = *nonfinite != 0u;
  for (std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; j < t_len;
       j += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    out[j * out_stride] = poisoned ? static_cast<Out>(NAN) : static_cast<Out>(acc[j] * norm);
}

}  // namespace detail
}  // namespace cuda

/// Device overload of `sparse_q_scores` (see the host header and this file's comment).
///
/// @param queries,keys device views `[n_q, heads, d]`, `[T, kv_heads, d]` (float or double).
/// @param positions    `[n_q]` integral, host or device view (see the file comment).
/// @param scores       device view `[T]` (floating point).
/// @param workspace    device memory of at least `workspace_bytes` bytes, 256-byte aligned.
/// @param workspace_bytes ≥ `cuda::sparse_q_scores_workspace_bytes(n_q, T)`.
/// @returns the first CUDA error of the enqueued work (`cudaSuccess` when all was enqueued).
/// @throws invalid_argument as the host overload (extents, heads, scale, host positions), or for
///         a workspace that is null or too small. Non-finite inputs (the host's rule: every query
///         element, every key row) cannot be thrown from the device: every score is then NaN.
template <device_view Q, view P, device_view K, device_view Out>
requires detail::sparse_q_views<Q, P, K, Out> cudaError_t
sparse_q_scores(Q queries, P positions, K keys, Out scores, sparse_q_options opt, void* workspace,
                std::size_t workspace_bytes, cudaStream_t stream) {
  using scalar = typename Q::value_type;
  const std::size_t nq = queries.extent(0), heads = queries.extent(1), d = queries.extent(2);
  const std::size_t t_len = keys.extent(0), kv_heads = keys.extent(1);
  detail::check_sparse_q_shapes(queries, positions, keys, scores);
  if constexpr (host_view<P>) {
    for (std::size_t i = 0; i < nq; ++i) {
      const auto p = positions(i);
      bool bad = static_cast<std::size_t>(p) >= t_len;
      if constexpr (std::is_signed_v<decltype(p)>) bad = bad || p < 0;
      if (bad)
        detail::throw_invalid(detail::indexed("positions", i), p,
                              "must be in [0, " + std::to_string(t_len) + ")");
      if (i > 0 && !(positions(i - 1) < p))
        detail::throw_invalid(detail::indexed("positions", i), p,
                              "positions must increase strictly");
    }
  }
  const double scale = opt.scale == 0.0 ? 1.0 / std::sqrt(static_cast<double>(d)) : opt.scale;
  if (!std::isfinite(scale) || !(scale > 0.0))
    detail::throw_invalid("options.scale", opt.scale, "must be finite and > 0 (0 = 1/sqrt(d))");
  const std::size_t need = cuda::sparse_q_scores_workspace_bytes(nq, t_len);
  if (workspace_bytes < need || (workspace == nullptr && need != 0))
    detail::throw_invalid("workspace_bytes", workspace_bytes,
                          "needs cuda::sparse_q_scores_workspace_bytes(n_q, T) = " +
                              std::to_string(need) + " bytes of device memory");
  if (t_len == 0) return cudaSuccess;
  auto* acc = static_cast<double*>(workspace);
  auto* nonfinite = reinterpret_cast<unsigned*>(static_cast<unsigned char*>(workspace) +
                                                cuda::detail::align_up(t_len * sizeof(double)) +
                                                cuda::detail::align_up(nq * sizeof(std::int64_t)));
  HYBRIDCACHE_DETAIL_CUDA_TRY(cudaMemsetAsync(acc, 0, t_len * sizeof(double), stream));
  HYBRIDCACHE_DETAIL_CUDA_TRY(cudaMemsetAsync(nonfinite, 0, sizeof(unsigned), stream));
  {
    auto scan = [&](const scalar* x, std::size_t n0, std::size_t n1, std::size_t n2,
                    const auto& v) -> cudaError_t {
      const std::size_t n = n0 * n1 * n2;
      if (n == 0) return cudaSuccess;
      const unsigned grid =
          static_cast<unsigned>(std::min<std::size_t>(cuda::detail::ceil_div(n, 256), 4096));
      cuda::detail::scores_nonfinite_kernel<scalar><<<grid, 256, 0, stream>>>(
          x, n0, n1, n2, v.stride(0), v.stride(1), v.stride(2), nonfinite);
      return cuda::detail::last_launch_error();
    };
    HYBRIDCACHE_DETAIL_CUDA_TRY(scan(queries.data(), nq, heads, d, queries));
    HYBRIDCACHE_DETAIL_CUDA_TRY(scan(keys.data(), t_len, kv_heads, d, keys));
  }
  if (nq != 0 && heads != 0) {
    const std::size_t smem = cuda::detail::scores_shared_bytes(d, sizeof(scalar));
    auto launch = [&](auto kernel, auto args) -> cudaError_t {
      if (smem > 48 * 1024) {
        HYBRIDCACHE_DETAIL_CUDA_TRY(cudaFuncSetAttribute(
            kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
      }
      const dim3 grid(
          static_cast<unsigned>(cuda::detail::ceil_div(nq, cuda::detail::scores_queries)),
          static_cast<unsigned>(heads));
      kernel<<<grid, cuda::detail::scores_threads, smem, stream>>>(args);
      return cuda::detail::last_launch_error();
    };
    auto fill = [&](auto& args) {
      args.q = queries.data();
      args.k = keys.data();
      args.acc = acc;
      args.nq = nq;
      args.heads = heads;
      args.d = d;
      args.t_len = t_len;
      args.group = heads / kv_heads;
      for (std::size_t r = 0; r < 3; ++r) {
        args.qs[r] = queries.stride(r);
        args.ks[r] = keys.stride(r);
      }
      args.scale = static_cast<scalar>(scale);
    };
    if constexpr (host_view<P>) {
      auto* pos = reinterpret_cast<std::int64_t*>(static_cast<unsigned char*>(workspace) +
                                                  cuda::detail::align_up(t_len * sizeof(double)));
      std::vector<std::int64_t> staged(nq);
      for (std::size_t i = 0; i < nq; ++i) staged[i] = static_cast<std::int64_t>(positions(i));
      // Pageable source: the call returns once the bytes are staged, so `staged` may die after.
      HYBRIDCACHE_DETAIL_CUDA_TRY(cudaMemcpyAsync(pos, staged.data(), nq * sizeof(std::int64_t),
                                                  cudaMemcpyHostToDevice, stream));
      cuda::detail::scores_args<scalar, std::int64_t> args{};
      fill(args);
      args.pos = pos;
      args.pos_stride = 1;
      HYBRIDCACHE_DETAIL_CUDA_TRY(
          launch(cuda::detail::sparse_q_scores_kernel<scalar, std::int64_t>, args));
    } else {
      using pos_t = std::remove_cv_t<typename P::value_type>;
      cuda::detail::scores_args<scalar, pos_t> args{};
      fill(args);
      args.pos = positions.data();
      args.pos_stride = positions.stride(0);
      HYBRIDCACHE_DETAIL_CUDA_TRY(
          launch(cuda::detail::sparse_q_scores_kernel<scalar, pos_t>, args));
    }
  }
  const double norm =
      nq == 0 || heads == 0 ? 0.0 : 1.0 / (static_cast<double>(heads) * static_cast<double>(nq));
  using out_t = typename Out::value_type;
  const unsigned grid =
      static_cast<unsigned>(std::min<std::size_t>(cuda::detail::ceil_div(t_len, 256), 4096));
  cuda::detail::scores_finish_kernel<out_t>
      <<<grid, 256, 0, stream>>>(acc, nonfinite, scores.data(), scores.stride(0), t_len, norm);
  return cuda::detail::last_launch_error();
}

/// Device views without a workspace: a compile error that says what is missing.
template <view Q, view P, view K, view Out>
requires(device_view<Q> || device_view<K> || device_view<Out>) &&
    (device_view<Q> && device_view<K> &&
     device_view<Out>)void sparse_q_scores(Q, P, K, Out, sparse_q_options = {}) {
  static_assert(detail::dependent_false<Q>,
                "hybridcache::sparse_q_scores on device views needs an explicit workspace and "
                "stream: sparse_q_scores(q, pos, k, out, opts, workspace, "
                "cuda::sparse_q_scores_workspace_bytes(n_q, T), stream)");
}

HYBRIDCACHE_NAMESPACE_END
