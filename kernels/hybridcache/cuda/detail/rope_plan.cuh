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

/// Threads per block of the RoPE kernels (4 warps; one warp rotates one head vector at a time).
inline constexpr unsigned rope_block_threads = 128;
/// Head vectors (rows) a block takes per work item: 32 per warp.
inline constexpr std::size_t rope_rows_per_item = 128;
/// Shared-memory budget of the cos/sin table (bytes), below the 48 KiB that needs no opt-in.
inline constexpr std::size_t rope_table_budget = 40 * 1024;

/// Launch geometry of the RoPE kernels (plain values; kernels receive it by value).
struct rope_row_plan {
  std::size_t head_dim = 0;
  std::size_t rotary_dim = 0;
  std::size_t shared_bytes = 0;  ///< dynamic shared memory: cos then sin of rotary_dim/2 angles
  bool fits = false;             ///< false when the table exceeds `rope_table_budget`
};

/// The plan for head vectors of `head_dim` elements rotated on their first `rotary_dim`.
constexpr rope_row_plan make_rope_row_plan(std::size_t head_dim, std::size_t rotary_dim) noexcept {
  rope_row_plan p;
  p.head_dim = head_dim;
  p.rotary_dim = rotary_dim;
  p.shared_bytes = align_up(rotary_dim / 2 * 2 * sizeof(float));
  p.fits = p.shared_bytes <= rope_table_budget;
  return p;
}

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
