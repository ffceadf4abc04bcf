#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// RoPE parameters (base, partial rotary, half-split/interleaved layouts, linear and Llama-3
/// frequency scaling), fp16/bf16 storage types, and delta re-alignment of cached keys
/// (contiguous and paged fused copy-align). See docs/rope.md.

#include "hybridcache/numeric.hpp"
#include "hybridcache/rope/angle.hpp"
#include "hybridcache/rope/params.hpp"
#include "hybridcache/rope/realign.hpp"
