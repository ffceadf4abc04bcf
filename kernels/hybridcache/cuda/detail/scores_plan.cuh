#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Launch plan of the sparse-Q scoring kernel (cuda/select/scores.cuh): block shape and dynamic
/// shared memory. Plain C++ (no CUDA types), so tests/cuda_shared/ checks it with the host
/// compiler.

#include <cstddef>

#include "hybridcache/config.hpp"
#include "hybridcache/cuda/detail/launch.cuh"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda::detail {

inline constexpr unsigned scores_threads = 128;  ///< 4 warps
inline constexpr unsigned scores_queries = 16;   ///< queries per block (4 per warp)
inline constexpr unsigned scores_key_tile = 32;  ///< keys per tile (one per lane)
inline constexpr unsigned scores_q_per_warp = scores_queries / (scores_threads / 32);

/// Dynamic shared memory of the scoring kernel: scaled queries [16][d], a key tile [32][d + 1]
/// (padded: lane l reads row l, column c → bank (l·(d+1) + c) mod 32, distinct) and the per-warp
/// partial sums [4][32].
constexpr std::size_t scores_shared_bytes(std::size_t d, std::size_t scalar_bytes) noexcept {
  return (scores_queries * d + scores_key_tile * (d + 1) + scores_key_tile * 4) * scalar_bytes;
}

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
