#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The CUDA backend, all of it (compile with nvcc, link `hybridcache::cuda`): device storage and
/// views, and the device overloads of delta-RoPE re-alignment, sparse-Q scoring with key-token
/// top-k, and batched summary apply/compose. See docs/cuda.md. Including a single
/// `<hybridcache/cuda/<component>/<file>.cuh>` is enough for one component.

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/cuda/rope/realign.cuh"
#include "hybridcache/cuda/select/scores.cuh"
#include "hybridcache/cuda/select/selection.cuh"
#include "hybridcache/cuda/state/compose.cuh"
#include "hybridcache/cuda/storage/device_heap.cuh"
