#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// CUDA backend of `<hybridcache/rope/realign.hpp>`: delta-RoPE re-alignment of cached keys on
/// the device, K' = R(Δ)·K, V copied unchanged (SparseX §3.1 Align_Δ and its fused
/// copy-Delta-RoPE kernel over paged blocks; HYPIC §4.3; DESIGN.md §3 RoPE).
///
/// Including this header adds overloads of `realign_keys` and `realign_blocks` for views whose
/// memory space is `device_space`. Their constraints subsume the host header's device fallback
/// (a `static_assert`), so overload resolution picks them; host views still go to the host code.
/// A mix of host and device views is a compile error with its own message.
///
/// Work: one read and one write of every key (and value) element, so the kernels are
/// memory-bound; the figure of merit is GB/s against `cudaMemcpy` of the same bytes
/// (bench/cuda/cuda_bench.cu). L lanes rotate one head vector together (`rope_plan.cuh`). Where
/// the rows are 16-byte aligned and rotary_dim/2 is a multiple of the chunk C, lane l takes the
/// chunks of C consecutive pairs c ≡ l (mod L) with vector loads and stores
/// (`rope_rotate_row_chunks`; C = 8 for 16-bit keys in `realign_keys` where it fits, else 4);
/// otherwise the pairs i ≡ l (mod L) one element at a time (`rope_rotate_row_lane`). Values are
/// copied in 16-byte vectors where their rows allow it. Both paths use the host's
/// `rope_rotate_pair`, fed cos/sin from the host's `rope_theta` / `rope_delta_sincos` (angle
/// Δ·θ_i formed in double and range-reduced), so device and host agree to the last bit wherever
/// the compilers contract the same float operations (nvcc may fuse x·c − y·s into an FMA; results
/// then differ by at most one rounding per output).
///
/// Preconditions the host cannot check without reading device memory (documented, not
/// diagnosed): block ids in the tables lie in [0, pool blocks) — an id outside that range is
/// skipped, never dereferenced —, new blocks are distinct, and with the same pool as source and
/// destination no new block is the old block of another entry (the copies run concurrently).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/cuda/detail/rope_rows.cuh"
#include "hybridcache/rope/detail/rotate.hpp"
#include "hybridcache/rope/params.hpp"
#include "hybridcache/rope/realign.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

namespace cuda::detail {

/// Kernel arguments of the contiguous form: rows (t, h) of `[tokens, heads, head_dim]`.
template <class T>
struct rope_rows_args {
  const T* src;
  T* dst;
  std::size_t tokens, heads;
  std::size_t src_s0, src_s1, dst_s0, dst_s1;  // strides of the token and head axes
};

template <class T>
__global__ void __launch_bounds__(rope_block_threads)
    realign_keys_kernel(rope_rows_args<T> a, rope_row_plan plan,
                        hybridcache::detail::rope_frequency freq, bool interleaved, unsigned vec,
                        std::int64_t delta) {
  extern __shared__ __align__(256) unsigned char smem[];
  const std::size_t half = plan.rotary_dim / 2;
  float* cs = reinterpret_cast<float*>(smem);
  float* sn = cs + half;
  rope_fill_table(freq, delta, half, cs, sn);
  __syncthreads();
  const unsigned L = plan.lanes_per_row, lane = threadIdx.x % L;
  const std::size_t groups = blockDim.x / L;  // rows in flight per block
  const std::size_t rows = a.tokens * a.heads;
  for (std::size_t r = blockIdx.x * groups + threadIdx.x / L; r < rows; r += gridDim.x * groups) {
    const std::size_t t = row_div(r, a.heads), h = r - t * a.heads;
    const T* src = a.src + t * a.src_s0 + h * a.src_s1;
    T* dst = a.dst + t * a.dst_s0 + h * a.dst_s1;
    if (vec == 8) {
      rope_row_chunks<T, 8>(plan, interleaved, src, dst, cs, sn, lane);
    } else if (vec == 4) {
      rope_row_chunks<T, 4>(plan, interleaved, src, dst, cs, sn, lane);
    } else {
      rope_row_lanes<T>(plan, interleaved, src, dst, cs, sn, lane);
    }
  }
}

/// Kernel arguments of the paged form: pools `[blocks, block_size, heads, dim]`.
template <class KT, class VT, class Id>
struct rope_pages_args {
  const KT* k_src;
  KT* k_dst;
  const VT* v_src;
  VT* v_dst;
  const Id* old_blocks;
  const Id* new_blocks;
  std::size_t old_stride, new_stride;  // table strides
  std::size_t block_size, heads, vdim, num_tokens, num_logical;
  std::size_t k_src_blocks, k_dst_blocks, v_src_blocks, v_dst_blocks;  // pool sizes
  std::size_t ks[3], kd[3], vs[4], vd[4];  // strides (k: block, token, head; v: + element)
};

template <class Id>
__device__ inline bool block_id_ok(Id id, std::size_t limit) {
  if constexpr (std::is_signed_v<Id>) {
    if (id < 0) return false;
  }
  return static_cast<std::size_t>(id) < limit;
}

template <class KT, class VT, class Id>
__global__ void __launch_bounds__(rope_block_threads)
    realign_blocks_kernel(rope_pages_args<KT, VT, Id> a, rope_row_plan plan,
                          hybridcache::detail::rope_frequency freq, bool interleaved, bool k_vec,
                          row_copy v_mode, std::int64_t delta) {
  extern __shared__ __align__(256) unsigned char smem[];
  const std::size_t half = plan.rotary_dim / 2;
  float* cs = reinterpret_cast<float*>(smem);
  float* sn = cs + half;
  rope_fill_table(freq, delta, half, cs, sn);
  __syncthreads();
  const std::size_t rows_per_block = a.block_size * a.heads;
  const std::size_t items_per_block = ceil_div(rows_per_block, rope_rows_per_item);
  const std::size_t items = a.num_logical * items_per_block;
  const unsigned L = plan.lanes_per_row, lane = threadIdx.x % L;
  const std::size_t group = threadIdx.x / L, groups = blockDim.x / L;
  for (std::size_t item = blockIdx.x; item < items; item += gridDim.x) {
    const std::size_t b = item / items_per_block, tix = item % items_per_block;
    const std::size_t first_token = b * a.block_size;
    const std::size_t tokens =
        a.num_tokens - first_token < a.block_size ? a.num_tokens - first_token : a.block_size;
    const std::size_t rows = tokens * a.heads;
    const std::size_t r0 = tix * rope_rows_per_item;
    if (r0 >= rows) continue;
    const Id ob = a.old_blocks[b * a.old_stride], nb = a.new_blocks[b * a.new_stride];
    const bool k_ok = block_id_ok(ob, a.k_src_blocks) && block_id_ok(nb, a.k_dst_blocks);
    const bool v_ok = block_id_ok(ob, a.v_src_blocks) && block_id_ok(nb, a.v_dst_blocks);
    if (!k_ok && !v_ok) continue;
    const std::size_t o = static_cast<std::size_t>(ob), w = static_cast<std::size_t>(nb);
    const std::size_t n = rows - r0 < rope_rows_per_item ? rows - r0 : rope_rows_per_item;
    for (std::size_t r = group; r < n; r += groups) {
      const std::size_t g = r0 + r, t = row_div(g, a.heads), h = g - t * a.heads;
      if (k_ok) {
        const KT* ks = a.k_src + o * a.ks[0] + t * a.ks[1] + h * a.ks[2];
        KT* kd = a.k_dst + w * a.kd[0] + t * a.kd[1] + h * a.kd[2];
        if (k_vec) {
          rope_row_chunks<KT, 4>(plan, interleaved, ks, kd, cs, sn, lane);
        } else {
          rope_row_lanes<KT>(plan, interleaved, ks, kd, cs, sn, lane);
        }
      }
      if (v_ok && a.vdim != 0) {
        const VT* vs = a.v_src + o * a.vs[0] + t * a.vs[1] + h * a.vs[2];
        VT* vd = a.v_dst + w * a.vd[0] + t * a.vd[1] + h * a.vd[2];
        if (static_cast<const void*>(vs) == static_cast<const void*>(vd)) continue;
        if (a.vs[3] == 1 && a.vd[3] == 1) {
          copy_row_lanes(vs, vd, a.vdim, v_mode, lane, L);
        } else {
          for (std::size_t j = lane; j < a.vdim; j += L) vd[j * a.vd[3]] = vs[j * a.vs[3]];
        }
      }
    }
  }
}

/// Host side: the plan, or invalid_argument when the cos/sin table exceeds its shared memory.
inline rope_row_plan rope_plan_or_throw(const rope_params& params,
                                        unsigned group = hybridcache::detail::rope_lane_group) {
  const rope_row_plan plan = make_rope_row_plan(params.head_dim, params.rotary_dim, group);
  if (!plan.fits) {
    hybridcache::detail::throw_invalid("params.rotary_dim", params.rotary_dim,
                                       "needs a cos/sin table larger than the CUDA backend's " +
                                           std::to_string(rope_table_budget) +
                                           "-byte shared-memory budget");
  }
  return plan;
}

/// Grid size: enough blocks to cover the work, capped (the kernels loop over the rest).
inline unsigned rope_grid(std::size_t items) {
  constexpr std::size_t cap = 8192;
  return static_cast<unsigned>(items == 0 ? 1 : (items < cap ? items : cap));
}

/// Pairs per chunk of the vector path for keys of type T in views `a` and `b` (0: the
/// element-wise path): 16-bit keys take 8 (16-byte sides) where the rows allow, else 4.
template <class A, class B>
unsigned rope_chunk_for(const A& a, const B& b, std::size_t rotary_dim) {
  using T = typename B::value_type;
  const unsigned wide = sizeof(T) == 2 ? 8u : 4u;
  for (const unsigned c : {wide, 4u})
    if (rope_rows_vectorizable(a, rotary_dim, c) && rope_rows_vectorizable(b, rotary_dim, c))
      return c;
  return 0;
}

template <class Src, class Dst>
void check_same_extents(const Src& src, const Dst& dst, std::size_t upto) {
  for (std::size_t r = 0; r < upto; ++r) {
    if (src.extent(r) != dst.extent(r)) {
      hybridcache::detail::throw_invalid(
          "dst.extent(" + std::to_string(r) + ")", dst.extent(r),
          "must equal src.extent(" + std::to_string(r) + ") = " + std::to_string(src.extent(r)));
    }
  }
}

}  // namespace cuda::detail

/// Device overload of `realign_keys` (see the host header for the contract): dst = R(delta)·src
/// for keys `[tokens, heads, head_dim]` in device memory, enqueued on `stream`.
///
/// @returns the launch status (`cudaSuccess` when enqueued; kernel faults surface at the next
///          synchronising call, as usual for CUDA).
/// @throws invalid_argument for the host-visible errors of the host overload (params, extents,
///         head axis) or a cos/sin table (rotary_dim/2 angles) too large for shared memory.
///
/// ```cpp
/// auto k = hybridcache::cuda::make_view(d_keys.data(), {tokens, heads, 128});
/// cudaError_t e = hybridcache::realign_keys(params, k, k, delta, stream);  // in place
/// ```
template <device_view Src, device_view Dst>
requires detail::rope_view_pair<Src, Dst, 3> cudaError_t realign_keys(const rope_params& params,
                                                                      Src src, Dst dst,
                                                                      std::int64_t delta,
                                                                      cudaStream_t stream) {
  params.validate();
  detail::check_head_axis(src, "src", params.head_dim);
  detail::check_head_axis(dst, "dst", params.head_dim);
  cuda::detail::check_same_extents(src, dst, 2);
  using T = typename Dst::value_type;
  const unsigned vec = cuda::detail::rope_chunk_for(src, dst, params.rotary_dim);
  const auto plan =
      cuda::detail::rope_plan_or_throw(params, vec ? vec : hybridcache::detail::rope_lane_group);
  const std::size_t rows = src.extent(0) * src.extent(1);
  if (rows == 0) return cudaSuccess;
  cuda::detail::rope_rows_args<T> a{src.data(),    dst.data(),    src.extent(0), src.extent(1),
                                    src.stride(0), src.stride(1), dst.stride(0), dst.stride(1)};
  const unsigned grid =
      cuda::detail::rope_grid(cuda::detail::ceil_div(rows, cuda::detail::rope_rows_per_item));
  cuda::detail::realign_keys_kernel<T>
      <<<grid, cuda::detail::rope_block_threads, plan.shared_bytes, stream>>>(
          a, plan, params.frequency_params(), params.layout == rope_layout::interleaved, vec,
          delta);
  return cuda::detail::last_launch_error();
}

/// `realign_keys` on the default stream.
template <device_view Src, device_view Dst>
requires detail::rope_view_pair<Src, Dst, 3> cudaError_t realign_keys(const rope_params& params,
                                                                      Src src, Dst dst,
                                                                      std::int64_t delta) {
  return realign_keys(params, src, dst, delta, cudaStream_t{});
}

namespace cuda::detail {
template <class Src>
constexpr void realign_mixed_spaces() {
  static_assert(hybridcache::detail::dependent_false<Src>,
                "hybridcache::realign_keys: src and dst live in different memory spaces; both "
                "must be device_space views for the CUDA backend (copy host data to the device "
                "first)");
}
}  // namespace cuda::detail

/// Host and device views mixed: a compile error (copy the data to the device first). Two
/// overloads rather than a defaulted stream, so each has the parameter list of the fallback it
/// must be more constrained than.
template <view Src, view Dst>
requires(device_view<Src> || device_view<Dst>) &&
    (!device_view<Src> || !device_view<Dst>)void realign_keys(const rope_params&, Src, Dst,
                                                              std::int64_t) {
  cuda::detail::realign_mixed_spaces<Src>();
}
template <view Src, view Dst>
requires(device_view<Src> || device_view<Dst>) &&
    (!device_view<Src> || !device_view<Dst>)void realign_keys(const rope_params&, Src, Dst,
                                                              std::int64_t, cudaStream_t) {
  cuda::detail::realign_mixed_spaces<Src>();
}

/// Device overload of `realign_blocks` (SparseX's fused copy-Delta-RoPE over paged blocks; see
/// the host header): keys of block `old_blocks[b]` rotated by `delta` into block `new_blocks[b]`,
/// values copied, for the first `num_tokens` token slots. Tables are device views of integers.
///
/// @returns the launch status.
/// @throws invalid_argument for the host-visible errors of the host overload (params, block
///         shapes, table lengths, block_size 0) or a cos/sin table too large for shared memory.
///         Block ids are not validated on the host (they are in device memory): see the file
///         comment.
template <device_view KSrc, device_view VSrc, device_view KDst, device_view VDst, device_view Table>
requires detail::rope_view_pair<KSrc, KDst, 4> && detail::rope_view_pair<VSrc, VDst, 4> &&
    (Table::rank == 1) &&
    std::integral<typename Table::value_type> cudaError_t
    realign_blocks(const rope_params& params, KSrc k_src, VSrc v_src, KDst k_dst, VDst v_dst,
                   Table old_blocks, Table new_blocks, std::size_t num_tokens, std::int64_t delta,
                   cudaStream_t stream) {
  params.validate();
  detail::check_head_axis(k_src, "k_src", params.head_dim);
  detail::check_head_axis(k_dst, "k_dst", params.head_dim);
  const std::size_t bs = k_src.extent(1), heads = k_src.extent(2), vdim = v_src.extent(3);
  auto same_block_shape = [&](const auto& v, const char* name, std::size_t last) {
    const std::size_t want[3] = {bs, heads, last};
    for (std::size_t r = 1; r < 4; ++r) {
      if (v.extent(r) != want[r - 1]) {
        hybridcache::detail::throw_invalid(std::string(name) + ".extent(" + std::to_string(r) + ")",
                                           v.extent(r),
                                           "must equal " + std::to_string(want[r - 1]));
      }
    }
  };
  same_block_shape(k_dst, "k_dst", params.head_dim);
  same_block_shape(v_src, "v_src", vdim);
  same_block_shape(v_dst, "v_dst", vdim);
  if (old_blocks.extent(0) != new_blocks.extent(0)) {
    hybridcache::detail::throw_invalid(
        "new_blocks.extent(0)", new_blocks.extent(0),
        "must equal old_blocks.extent(0) = " + std::to_string(old_blocks.extent(0)));
  }
  if (bs == 0) hybridcache::detail::throw_invalid("k_src.extent(1)", bs, "block_size must be > 0");
  const std::size_t nb = cuda::detail::ceil_div(num_tokens, bs);
  if (nb > old_blocks.extent(0)) {
    hybridcache::detail::throw_invalid("num_tokens", num_tokens,
                                       "needs " + std::to_string(nb) +
                                           " blocks but the tables hold " +
                                           std::to_string(old_blocks.extent(0)));
  }
  using KT = typename KDst::value_type;
  using VT = typename VDst::value_type;
  using Id = typename Table::value_type;
  const auto plan = cuda::detail::rope_plan_or_throw(params);
  if (nb == 0 || heads == 0) return cudaSuccess;
  // Chunks of 4 pairs here for every key type: with the 8-pair path beside it the kernel needed
  // 92 registers instead of 64 and ran slower on an H200 (docs/cuda.md).
  const bool k_vec = cuda::detail::rope_rows_vectorizable(k_src, params.rotary_dim) &&
                     cuda::detail::rope_rows_vectorizable(k_dst, params.rotary_dim);
  const cuda::detail::row_copy v_mode = cuda::detail::rows_movable(v_src, v_dst, vdim);
  cuda::detail::rope_pages_args<KT, VT, Id> a{};
  a.k_src = k_src.data();
  a.k_dst = k_dst.data();
  a.v_src = v_src.data();
  a.v_dst = v_dst.data();
  a.old_blocks = old_blocks.data();
  a.new_blocks = new_blocks.data();
  a.old_stride = old_blocks.stride(0);
  a.new_stride = new_blocks.stride(0);
  a.block_size = bs;
  a.heads = heads;
  a.vdim = vdim;
  a.num_tokens = num_tokens;
  a.num_logical = nb;
  a.k_src_blocks = k_src.extent(0);
  a.k_dst_blocks = k_dst.extent(0);
  a.v_src_blocks = v_src.extent(0);
  a.v_dst_blocks = v_dst.extent(0);
  for (std::size_t r = 0; r < 3; ++r) {
    a.ks[r] = k_src.stride(r);
    a.kd[r] = k_dst.stride(r);
  }
  for (std::size_t r = 0; r < 4; ++r) {
    a.vs[r] = v_src.stride(r);
    a.vd[r] = v_dst.stride(r);
  }
  const std::size_t items =
      nb * cuda::detail::ceil_div(bs * heads, cuda::detail::rope_rows_per_item);
  cuda::detail::realign_blocks_kernel<KT, VT, Id>
      <<<cuda::detail::rope_grid(items), cuda::detail::rope_block_threads, plan.shared_bytes,
         stream>>>(a, plan, params.frequency_params(), params.layout == rope_layout::interleaved,
                   k_vec, v_mode, delta);
  return cuda::detail::last_launch_error();
}

/// `realign_blocks` on the default stream.
template <device_view KSrc, device_view VSrc, device_view KDst, device_view VDst, device_view Table>
requires detail::rope_view_pair<KSrc, KDst, 4> && detail::rope_view_pair<VSrc, VDst, 4> &&
    (Table::rank == 1) &&
    std::integral<typename Table::value_type> cudaError_t
    realign_blocks(const rope_params& params, KSrc k_src, VSrc v_src, KDst k_dst, VDst v_dst,
                   Table old_blocks, Table new_blocks, std::size_t num_tokens, std::int64_t delta) {
  return realign_blocks(params, k_src, v_src, k_dst, v_dst, old_blocks, new_blocks, num_tokens,
                        delta, cudaStream_t{});
}

HYBRIDCACHE_NAMESPACE_END
