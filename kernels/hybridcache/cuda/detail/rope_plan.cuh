#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Launch plan of the delta-RoPE kernels (cuda/rope/realign.cuh, cuda/detail/rope_tile.cuh):
/// threads per block, the shared-memory tile and its padded row stride. Plain C++ (no CUDA types),
/// so tests/cuda_shared/ checks the geometry with the host compiler.

#include <cstddef>

#include "hybridcache/config.hpp"
#include "hybridcache/cuda/detail/launch.cuh"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda::detail {

/// Threads per block of the RoPE kernels.
inline constexpr unsigned rope_block_threads = 128;
/// Shared-memory budget of one tile (bytes), below the 48 KiB that needs no opt-in.
inline constexpr std::size_t rope_tile_budget = 40 * 1024;

/// Launch geometry of the RoPE kernels (plain values; kernels receive it by value).
struct rope_tile_plan {
  std::size_t head_dim = 0;
  std::size_t rotary_dim = 0;
  std::size_t row_stride = 0;     ///< elements per padded shared-memory row
  std::size_t rows_per_tile = 0;  ///< rows one block handles at a time (1..rope_block_threads)
  std::size_t shared_bytes = 0;   ///< dynamic shared memory: cos/sin table + tile
  std::size_t table_bytes = 0;    ///< offset of the tile (the table, rounded up to 256)
};

/// Padded shared-memory row stride (in elements of `elem_bytes`) for rows of `head_dim` elements:
/// the smallest stride ≥ head_dim whose byte size is an odd number of 4-byte words, so that 32
/// threads reading the same column of 32 consecutive rows hit 32 different banks. Element sizes
/// that do not divide 4 get head_dim + 1.
constexpr std::size_t rope_padded_stride(std::size_t head_dim, std::size_t elem_bytes) noexcept {
  if (elem_bytes == 0 || 4 % elem_bytes != 0) return head_dim + 1;
  const std::size_t per_word = 4 / elem_bytes;  // elements per 4-byte word
  std::size_t words = (head_dim + per_word - 1) / per_word;
  if (words % 2 == 0) ++words;
  return words * per_word;
}

/// The plan for rows of `head_dim` elements of `elem_bytes` bytes; `rows_per_tile == 0` when not
/// even one row fits the shared-memory budget.
constexpr rope_tile_plan make_rope_tile_plan(std::size_t head_dim, std::size_t rotary_dim,
                                             std::size_t elem_bytes) noexcept {
  rope_tile_plan p;
  p.head_dim = head_dim;
  p.rotary_dim = rotary_dim;
  p.row_stride = rope_padded_stride(head_dim, elem_bytes);
  p.table_bytes = align_up(rotary_dim / 2 * 2 * sizeof(float));
  const std::size_t row_bytes = p.row_stride * elem_bytes;
  std::size_t rows = p.table_bytes >= rope_tile_budget || row_bytes == 0
                         ? 0
                         : (rope_tile_budget - p.table_bytes) / row_bytes;
  if (rows > rope_block_threads) rows = rope_block_threads;
  p.rows_per_tile = rows;
  p.shared_bytes = p.table_bytes + rows * row_bytes;
  return p;
}

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
