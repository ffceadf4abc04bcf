#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The tile machinery of the delta-RoPE kernels (`cuda/rope/realign.cuh`).
///
/// A *row* is one head vector (`head_dim` elements, contiguous). A thread block moves a tile of
/// `rows_per_tile` rows through shared memory:
///  1. stage in: warps copy rows global → shared, lanes striding along the row (coalesced; in
///     4-byte words when rows are 4-byte aligned, else element by element);
///  2. rotate: thread r rotates row r in place with `detail::rope_rotate_row` — the very function
///     the host `realign_keys` runs — using the block's cos/sin table, which the block computed
///     with the host's `rope_theta` + `rope_delta_sincos` (double-precision, range-reduced angle);
///  3. stage out: shared → global, coalesced again.
/// Rows in shared memory are padded to an odd number of 4-byte words, so in step 2 the 32 threads
/// of a warp (one row each) hit 32 different banks.

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

/// True when `p` is aligned to 4 bytes.
HYBRIDCACHE_HOST_DEVICE inline bool word_aligned(const void* p) noexcept {
  return (reinterpret_cast<std::uintptr_t>(p) & 3u) == 0;
}

/// Copies one row of `n` elements of `T` between global and shared memory (or global↔global),
/// lanes of a warp striding along it. `words` selects 4-byte transfers (both pointers 4-byte
/// aligned and n·sizeof(T) a multiple of 4, checked by the caller).
template <class T>
__device__ inline void copy_row_warp(const T* src, T* dst, std::size_t n, bool words,
                                     unsigned lane) {
  if (words) {
    const auto* s = reinterpret_cast<const std::uint32_t*>(src);
    auto* d = reinterpret_cast<std::uint32_t*>(dst);
    const std::size_t nw = n * sizeof(T) / 4;
    for (std::size_t w = lane; w < nw; w += 32) d[w] = s[w];
  } else {
    for (std::size_t j = lane; j < n; j += 32) dst[j] = src[j];
  }
}

/// Rotates the rows [0, rows) of one tile. `src_row(r)`/`dst_row(r)` give the global address of
/// row r (`dst_row` may equal `src_row`: in place). `words`: rows may move as 4-byte words.
template <class T, class SrcRow, class DstRow>
__device__ inline void rope_tile(const rope_tile_plan& plan, bool interleaved, bool words,
                                 std::size_t rows, SrcRow src_row, DstRow dst_row, const float* cs,
                                 const float* sn, T* tile) {
  const unsigned lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
  for (std::size_t r = warp; r < rows; r += warps)
    copy_row_warp(src_row(r), tile + r * plan.row_stride, plan.head_dim, words, lane);
  __syncthreads();
  if (threadIdx.x < rows) {
    T* row = tile + threadIdx.x * plan.row_stride;
    hybridcache::detail::rope_rotate_row(row, row, plan.head_dim, plan.rotary_dim, interleaved, cs,
                                         sn, hybridcache::detail::rope_load<T>{},
                                         hybridcache::detail::rope_store<T>{});
  }
  __syncthreads();
  for (std::size_t r = warp; r < rows; r += warps)
    copy_row_warp(static_cast<const T*>(tile + r * plan.row_stride), dst_row(r), plan.head_dim,
                  words, lane);
  __syncthreads();
}

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
