#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Forwarding header: the host-side launch planning of the CUDA backend, split per kernel —
/// `detail/launch.cuh` (ceil_div, align_up), `detail/rope_plan.cuh` (delta-RoPE tiles) and
/// `detail/scores_plan.cuh` (sparse-Q scoring). Kept so existing includes compile.

#include "hybridcache/cuda/detail/launch.cuh"       // IWYU pragma: export
#include "hybridcache/cuda/detail/rope_plan.cuh"    // IWYU pragma: export
#include "hybridcache/cuda/detail/scores_plan.cuh"  // IWYU pragma: export
