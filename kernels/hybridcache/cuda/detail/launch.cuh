#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Launch arithmetic shared by every kernel of the CUDA backend (grid sizes, workspace alignment).
/// Plain C++ on purpose (no CUDA types), like the per-kernel plans beside it, so the host test
/// suite (tests/cuda_shared/, compiled by the ordinary C++ compiler) checks it.

#include <cstddef>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda::detail {

/// ceil(a / b) for positive b.
HYBRIDCACHE_HOST_DEVICE constexpr std::size_t ceil_div(std::size_t a, std::size_t b) noexcept {
  return (a + b - 1) / b;
}

/// Rounds `bytes` up to a multiple of 256 (cudaMalloc's alignment), so sub-allocations carved out
/// of one workspace stay aligned for any element type and for CUB.
HYBRIDCACHE_HOST_DEVICE constexpr std::size_t align_up(std::size_t bytes) noexcept {
  return (bytes + 255) / 256 * 256;
}

}  // namespace cuda::detail
HYBRIDCACHE_NAMESPACE_END
