#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Launch plan of the delta-RoPE kernels (cuda/rope/realign.cuh, cuda/detail/rope_rows.cuh):
/// threads per block, the rows a block takes per work item and the shared memory of the block's
/// cos/sin table. Plain C++ (no CUDA types), so tests/cuda_shared/ checks it with the host
/// compiler.

#include <cstddef>

#include "hybridcache/config.hpp"
#include "hybridcache/cuda/detail/launch.cuh"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda::detail {

/// Threads per block of the RoPE kernels (4 warps).
inline constexpr unsigned rope_block_threads = 128;
/// Head vectors (rows) a block takes per work item.
inline constexpr std::size_t rope_rows_per_item = 128;
/// Shared-memory budget of the cos/sin table (bytes), below the 48 KiB that needs no opt-in.
inline constexpr std::size_t rope_table_budget = 40 * 1024;

/// Launch geometry of the RoPE kernels (plain values; kernels receive it by value).
struct rope_row_plan {
  std::size_t head_dim = 0;
  std::size_t rotary_dim = 0;
  std::size_t shared_bytes = 0;  ///< dynamic shared memory: cos then sin of rotary_dim/2 angles
  unsigned lanes_per_row = 32;   ///< threads that rotate one row together (8, 16 or 32)
  bool fits = false;             ///< false when the table exceeds `rope_table_budget`
};

/// Lanes per row: as many as give each lane a full group of `group` pairs, a power of two from
/// 8 to 32. A warp then rotates 32 / lanes rows at once, so a row of few pairs still keeps a
/// whole group of loads in flight per lane (head_dim 128 = 64 pairs with the default group of
/// 4: 16 lanes, two rows per warp). Measured on an H100 against one warp per row (docs/cuda.md):
/// never slower, 1.0-1.4x faster.
constexpr unsigned rope_lanes_per_row(std::size_t rotary_dim, unsigned group) noexcept {
  const std::size_t per_lane = rotary_dim / 2 / (group == 0 ? 1 : group);
  unsigned lanes = 8;
  while (lanes < 32 && std::size_t{lanes} * 2 <= per_lane) lanes *= 2;
  return lanes;
}

/// The plan for head vectors of `head_dim` elements rotated on their first `rotary_dim`;
/// `group` is the pairs a lane rotates per group (`detail::rope_lane_group`).
constexpr rope_row_plan make_rope_row_plan(std::size_t head_dim, std::size_t rotary_dim,
                                           unsigned group) noexcept {
  rope_row_plan p;
  p.head_dim = head_dim;
  p.rotary_dim = rotary_dim;
  p.shared_bytes = align_up(rotary_dim / 2 * 2 * sizeof(float));
  p.lanes_per_row = rope_lanes_per_row(rotary_dim, group);
  p.fits = p.shared_bytes <= rope_table_budget;
  return p;
}

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
