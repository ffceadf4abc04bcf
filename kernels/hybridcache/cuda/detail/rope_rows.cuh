#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The row machinery of the delta-RoPE kernels (`cuda/rope/realign.cuh`).
///
/// A *row* is one head vector (`head_dim` elements, contiguous). L = `plan.lanes_per_row` lanes
/// (8, 16 or 32) rotate one row together, straight between global memory and registers, so a
/// warp works on 32 / L rows at once: lane l of a row takes the pairs i ≡ l (mod L)
/// (`detail::rope_rotate_row_lane`, the host's per-pair rotation, in groups whose loads are all
/// issued before the first store). The lanes of a row read consecutive pairs (coalesced), and no
/// barrier is needed after the block's cos/sin table is built. The table is computed once per block
/// with the host's `rope_theta` + `rope_delta_sincos` (double-precision, range-reduced angle) and
/// kept in shared memory.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/cuda/detail/rope_plan.cuh"
#include "hybridcache/numeric.hpp"
#include "hybridcache/rope/detail/rotate.hpp"
#include "hybridcache/rope/realign.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda::detail {

/// cos/sin of delta·θ_i for i < rotary_dim/2 into shared memory, by the whole block.
__device__ inline void rope_fill_table(const hybridcache::detail::rope_frequency& f,
                                       std::int64_t delta, std::size_t half, float* cs, float* sn) {
  for (std::size_t i = threadIdx.x; i < half; i += blockDim.x) {
    hybridcache::detail::rope_delta_sincos(
        static_cast<double>(delta), hybridcache::detail::rope_theta(f, static_cast<double>(i)),
        &cs[i], &sn[i]);
  }
}

/// a / b, in 32-bit arithmetic when both fit (a 64-bit division is a long software routine).
__device__ inline std::size_t row_div(std::size_t a, std::size_t b) {
  if (((a | b) >> 32) == 0) return static_cast<std::uint32_t>(a) / static_cast<std::uint32_t>(b);
  return a / b;
}

/// Copies one row of `n` elements of `T` global → global, lane `lane` of `lanes` striding along
/// it. `words` selects 4-byte transfers (both pointers 4-byte aligned and n·sizeof(T) a multiple
/// of 4, checked by the caller).
template <class T>
__device__ inline void copy_row_lanes(const T* src, T* dst, std::size_t n, bool words,
                                      unsigned lane, unsigned lanes) {
  if (words) {
    const auto* s = reinterpret_cast<const std::uint32_t*>(src);
    auto* d = reinterpret_cast<std::uint32_t*>(dst);
    const std::size_t nw = n * sizeof(T) / 4;
    for (std::size_t w = lane; w < nw; w += lanes) d[w] = s[w];
  } else {
    for (std::size_t j = lane; j < n; j += lanes) dst[j] = src[j];
  }
}

/// How `copy_row_lanes` moves a row: element by element, in 4-byte words, or in 16-byte vectors
/// with up to 4 loads in flight per lane before their stores.
enum class row_copy : unsigned { elements, words, vectors };

/// Copies one row of `n` elements of `T` global → global in the given mode, lane `lane` of
/// `lanes` striding along it. `words` needs both pointers 4-byte aligned and n·sizeof(T) a
/// multiple of 4; `vectors` the same for 16 (checked by the caller: `rows_movable`).
template <class T>
__device__ inline void copy_row_lanes(const T* src, T* dst, std::size_t n, row_copy mode,
                                      unsigned lane, unsigned lanes) {
  if (mode == row_copy::vectors) {
    constexpr unsigned G = 4;
    const auto* s = reinterpret_cast<const uint4*>(src);
    auto* d = reinterpret_cast<uint4*>(dst);
    const std::size_t nv = n * sizeof(T) / 16;
    for (std::size_t w0 = lane; w0 < nv; w0 += std::size_t{G} * lanes) {
      uint4 v[G];
#pragma unroll
      for (unsigned g = 0; g < G; ++g)
        if (w0 + std::size_t{g} * lanes < nv) v[g] = s[w0 + std::size_t{g} * lanes];
#pragma unroll
      for (unsigned g = 0; g < G; ++g)
        if (w0 + std::size_t{g} * lanes < nv) d[w0 + std::size_t{g} * lanes] = v[g];
    }
  } else {
    copy_row_lanes(src, dst, n, mode == row_copy::words, lane, lanes);
  }
}

/// Lane `lane` (< plan.lanes_per_row) of the threads rotating the row at `src` into `dst` (may
/// be equal: in place).
template <class T>
__device__ inline void rope_row_lanes(const rope_row_plan& plan, bool interleaved, const T* src,
                                      T* dst, const float* cs, const float* sn, unsigned lane) {
  hybridcache::detail::rope_rotate_row_lane(src, dst, plan.head_dim, plan.rotary_dim, interleaved,
                                            cs, sn, hybridcache::detail::rope_load<T>{},
                                            hybridcache::detail::rope_store<T>{}, lane,
                                            plan.lanes_per_row);
}

/// True when `p` is aligned to `bytes` (a power of two).
HYBRIDCACHE_HOST_DEVICE inline bool aligned_to(const void* p, std::size_t bytes) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & (bytes - 1)) == 0;
}

/// Bytes every row start must be aligned to for `rope_row_chunks`: the widest vector it moves.
inline constexpr std::size_t rope_vector_align = 16;

/// True when every row start of view `v` (the last axis is the row) is aligned to `bytes`: the
/// base pointer and the stride of each outer axis that has more than one entry.
template <class V>
bool row_starts_aligned(const V& v, std::size_t bytes) {
  using T = typename V::value_type;
  if (!aligned_to(v.data(), bytes)) return false;
  for (std::size_t r = 0; r + 1 < V::rank; ++r)
    if ((v.stride(r) * sizeof(T)) % bytes != 0 && v.extent(r) > 1) return false;
  return true;
}

/// True when rows of view `v` (contiguous last axis of `head_dim` elements) may take the
/// vector path: whole chunks of pairs ((rotary_dim / 2) % rope_chunk_pairs == 0) and every row
/// start 16-byte aligned. Then every chunk side (C or 2C elements from a multiple of C) is
/// aligned to its own width: 8 bytes for a half-split 16-bit side, 16 or 32 for the others.
template <class V>
bool rope_rows_vectorizable(const V& v, std::size_t rotary_dim,
                            unsigned chunk = hybridcache::detail::rope_chunk_pairs) {
  return (rotary_dim / 2) % chunk == 0 && row_starts_aligned(v, rope_vector_align);
}

/// The widest `row_copy` mode both views' rows of `row_elems` contiguous elements allow.
template <class Src, class Dst>
row_copy rows_movable(const Src& src, const Dst& dst, std::size_t row_elems) {
  using T = typename Dst::value_type;
  if (src.stride(Src::rank - 1) != 1 || dst.stride(Dst::rank - 1) != 1) return row_copy::elements;
  for (const std::size_t bytes : {std::size_t{16}, std::size_t{4}}) {
    if ((row_elems * sizeof(T)) % bytes == 0 && row_starts_aligned(src, bytes) &&
        row_starts_aligned(dst, bytes))
      return bytes == 16 ? row_copy::vectors : row_copy::words;
  }
  return row_copy::elements;
}

/// The vector IO of `rope_rotate_row_chunks` on the device: N consecutive elements in one or two
/// 8- or 16-byte transactions, converted with the hardware's round-to-nearest-even instructions
/// (`cvt.rn.f16x2.f32`, `cvt.rn.bf16x2.f32`), which round every finite value and infinity exactly
/// like the host's `store_float` (a NaN stays a NaN; its payload may differ). The cos/sin values
/// come from shared memory as `float4`. Alignment: see `rope_rows_vectorizable`.
template <class T>
struct rope_vector_io {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, hybridcache::half> ||
                std::is_same_v<T, hybridcache::bfloat16>);
  template <unsigned N>
  static constexpr unsigned words = N * sizeof(T) / 4;

  template <unsigned W>
  __device__ static void load_words(const void* p, std::uint32_t (&w)[W]) {
    if constexpr (W == 2) {
      const uint2 v = *static_cast<const uint2*>(p);
      w[0] = v.x;
      w[1] = v.y;
    } else {
      static_assert(W % 4 == 0);
#pragma unroll
      for (unsigned k = 0; k < W / 4; ++k) {
        const uint4 v = static_cast<const uint4*>(p)[k];
        w[4 * k] = v.x;
        w[4 * k + 1] = v.y;
        w[4 * k + 2] = v.z;
        w[4 * k + 3] = v.w;
      }
    }
  }
  template <unsigned W>
  __device__ static void store_words(void* p, const std::uint32_t (&w)[W]) {
    if constexpr (W == 2) {
      *static_cast<uint2*>(p) = make_uint2(w[0], w[1]);
    } else {
      static_assert(W % 4 == 0);
#pragma unroll
      for (unsigned k = 0; k < W / 4; ++k)
        static_cast<uint4*>(p)[k] = make_uint4(w[4 * k], w[4 * k + 1], w[4 * k + 2], w[4 * k + 3]);
    }
  }

  template <unsigned N>
  __device__ void load(const T* p, float (&out)[N]) const {
    std::uint32_t w[words<N>];
    load_words(p, w);
#pragma unroll
    for (unsigned k = 0; k < words<N>; ++k) {
      if constexpr (std::is_same_v<T, float>) {
        out[k] = __uint_as_float(w[k]);
      } else if constexpr (std::is_same_v<T, hybridcache::half>) {
        __half2 h;
        std::memcpy(&h, &w[k], 4);
        const float2 f = __half22float2(h);  // exact
        out[2 * k] = f.x;                    // the lower address is the low half
        out[2 * k + 1] = f.y;
      } else {
        out[2 * k] = __uint_as_float(w[k] << 16);  // exact
        out[2 * k + 1] = __uint_as_float(w[k] & 0xffff0000u);
      }
    }
  }
  template <unsigned N>
  __device__ void store(T* p, const float (&in)[N]) const {
    std::uint32_t w[words<N>];
#pragma unroll
    for (unsigned k = 0; k < words<N>; ++k) {
      if constexpr (std::is_same_v<T, float>) {
        w[k] = __float_as_uint(in[k]);
      } else if constexpr (std::is_same_v<T, hybridcache::half>) {
        const __half2 h = __floats2half2_rn(in[2 * k], in[2 * k + 1]);
        std::memcpy(&w[k], &h, 4);
      } else {
        const __nv_bfloat162 h = __floats2bfloat162_rn(in[2 * k], in[2 * k + 1]);
        std::memcpy(&w[k], &h, 4);
      }
    }
    store_words(p, w);
  }
  template <unsigned N>
  __device__ void table(const float* p, float (&out)[N]) const {
    static_assert(N % 4 == 0);
#pragma unroll
    for (unsigned k = 0; k < N / 4; ++k) {
      const float4 v = reinterpret_cast<const float4*>(p)[k];
      out[4 * k] = v.x;
      out[4 * k + 1] = v.y;
      out[4 * k + 2] = v.z;
      out[4 * k + 3] = v.w;
    }
  }
};

/// `rope_row_lanes` on the vector path (`rope_rows_vectorizable` holds for the row's view):
/// the host's `rope_rotate_row_chunks` with `rope_vector_io`.
template <class T, unsigned C>
__device__ inline void rope_row_chunks(const rope_row_plan& plan, bool interleaved, const T* src,
                                       T* dst, const float* cs, const float* sn, unsigned lane) {
  hybridcache::detail::rope_rotate_row_chunks<C>(src, dst, plan.head_dim, plan.rotary_dim,
                                                 interleaved, cs, sn, rope_vector_io<T>{}, lane,
                                                 plan.lanes_per_row);
}

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
