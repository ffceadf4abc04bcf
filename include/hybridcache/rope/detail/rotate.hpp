#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// RoPE math shared by the host implementation and CUDA kernels: plain values and pointers, no
/// exceptions, no allocation, every function `HYBRIDCACHE_HOST_DEVICE`.
///
/// Delta rotation (SparseX §3.1; HYPIC §4.3 "KV RoPE re-rotation"): with R_m the RoPE rotation at
/// position m, R_m^T R_n = R_{n−m}, so a cached key k̂_n = R_n k moved to n' = n + Δ is
/// k̂_{n'} = R_Δ k̂_n — no need to recover the unrotated k. Each pair (x, y) of frequency θ_i becomes
///
///     x' = x·cos(Δθ_i) − y·sin(Δθ_i),   y' = x·sin(Δθ_i) + y·cos(Δθ_i).
///
/// Precision: Δ·θ_i is formed in double and reduced to [−π, π] (two-constant Cody–Waite) before
/// sin/cos, so the rotation angle keeps ~1e−10 rad absolute accuracy for |Δ·θ| up to 1e6;
/// forming it in float would err by up to |Δ|·2^−24 ≈ 0.06 rad at Δ = 1e6.
/// The pair rotation itself runs in float (one rounding per output for fp32 storage).

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "hybridcache/config.hpp"
#include "hybridcache/rope/angle.hpp"

// Tells GCC the loops of `rope_rotate_row_disjoint` carry no dependence between iterations (the
// rows do not overlap), which restrict alone does not convey once the function is inlined.
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#define HYBRIDCACHE_DETAIL_IVDEP _Pragma("GCC ivdep")
#elif defined(__clang__)
#define HYBRIDCACHE_DETAIL_IVDEP _Pragma("clang loop vectorize(assume_safety)")
#else
#define HYBRIDCACHE_DETAIL_IVDEP
#endif

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

// The angle math moved to the public <hybridcache/rope/angle.hpp>; the detail:: spellings stay.
using ::hybridcache::rope_delta_sincos;
using ::hybridcache::rope_frequency;
using ::hybridcache::rope_pair;
using ::hybridcache::rope_reduced_angle;
using ::hybridcache::rope_theta;

/// Rotates one head vector: reads `src[0..head_dim)`, writes `dst[0..head_dim)` (may be the same
/// pointer: each pair is read before it is written). `cs`/`sn` hold cos/sin of pair i's angle.
/// `Load(T) -> float` and `Store(float) -> T` convert the storage type.
template <class T, class Load, class Store>
HYBRIDCACHE_HOST_DEVICE inline void rope_rotate_row(const T* src, T* dst, std::size_t head_dim,
                                                    std::size_t rotary_dim, bool interleaved,
                                                    const float* cs, const float* sn, Load load,
                                                    Store store) noexcept {
  const std::size_t half = rotary_dim / 2;
  if (interleaved) {
    for (std::size_t i = 0; i < half; ++i) {
      const float x = load(src[2 * i]), y = load(src[2 * i + 1]);
      dst[2 * i] = store(x * cs[i] - y * sn[i]);
      dst[2 * i + 1] = store(x * sn[i] + y * cs[i]);
    }
  } else {
    for (std::size_t i = 0; i < half; ++i) {
      const float x = load(src[i]), y = load(src[i + half]);
      dst[i] = store(x * cs[i] - y * sn[i]);
      dst[i + half] = store(x * sn[i] + y * cs[i]);
    }
  }
  if (src != dst) {
    for (std::size_t j = rotary_dim; j < head_dim; ++j) dst[j] = src[j];
  }
}

/// `rope_rotate_row` for rows that do not overlap (`__restrict`), converting with `Load`/`Store`
/// inline: the single-pass form host loops vectorise without run-time alias checks (float and
/// bfloat16 rows). Same arithmetic, same results.
template <class T, class Load, class Store>
HYBRIDCACHE_HOST_DEVICE inline void rope_rotate_row_disjoint(
    const T* __restrict src, T* __restrict dst, std::size_t head_dim, std::size_t rotary_dim,
    bool interleaved, const float* __restrict cs, const float* __restrict sn, Load load,
    Store store) noexcept {
  const std::size_t half = rotary_dim / 2;
  if (interleaved) {
    HYBRIDCACHE_DETAIL_IVDEP
    for (std::size_t i = 0; i < half; ++i) {
      const float x = load(src[2 * i]), y = load(src[2 * i + 1]);
      dst[2 * i] = store(x * cs[i] - y * sn[i]);
      dst[2 * i + 1] = store(x * sn[i] + y * cs[i]);
    }
  } else {
    HYBRIDCACHE_DETAIL_IVDEP
    for (std::size_t i = 0; i < half; ++i) {
      const float x = load(src[i]), y = load(src[i + half]);
      dst[i] = store(x * cs[i] - y * sn[i]);
      dst[i + half] = store(x * sn[i] + y * cs[i]);
    }
  }
  for (std::size_t j = rotary_dim; j < head_dim; ++j) dst[j] = src[j];
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
