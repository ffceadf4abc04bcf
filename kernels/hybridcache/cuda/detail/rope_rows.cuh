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

#include <cstddef>
#include <cstdint>

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/cuda/detail/rope_plan.cuh"
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

/// True when `p` is aligned to 4 bytes.
HYBRIDCACHE_HOST_DEVICE inline bool word_aligned(const void* p) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & 3u) == 0;
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

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
