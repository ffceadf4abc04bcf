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

// Full unrolling of the fixed-count group loops of `rope_rotate_row_lane` in device code, so the
// group's values stay in registers.
#if defined(__CUDA_ARCH__)
#define HYBRIDCACHE_DETAIL_UNROLL _Pragma("unroll")
#else
#define HYBRIDCACHE_DETAIL_UNROLL
#endif

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

// The angle math moved to the public <hybridcache/rope/angle.hpp>; the detail:: spellings stay.
using ::hybridcache::rope_delta_sincos;
using ::hybridcache::rope_frequency;
using ::hybridcache::rope_pair;
using ::hybridcache::rope_reduced_angle;
using ::hybridcache::rope_theta;

/// Rotates one pair (x, y) by the angle whose cosine is `c` and sine is `s`, in float:
///
///     x' = x·c − y·s,   y' = x·s + y·c.
///
/// Every row function below and the CUDA kernels (cuda/rope/realign.cuh) rotate with this one
/// expression.
HYBRIDCACHE_HOST_DEVICE inline void rope_rotate_pair(float x, float y, float c, float s, float* xo,
                                                     float* yo) noexcept {
  *xo = x * c - y * s;
  *yo = x * s + y * c;
}

/// Rotates one head vector: reads `src[0..head_dim)`, writes `dst[0..head_dim)` (may be the same
/// pointer: each pair is read before it is written). `cs`/`sn` hold cos/sin of pair i's angle.
/// `Load(T) -> float` and `Store(float) -> T` convert the storage type.
template <class T, class Load, class Store>
HYBRIDCACHE_HOST_DEVICE inline void rope_rotate_row(const T* src, T* dst, std::size_t head_dim,
                                                    std::size_t rotary_dim, bool interleaved,
                                                    const float* cs, const float* sn, Load load,
                                                    Store store) noexcept {
  const std::size_t half = rotary_dim / 2;
  float xo, yo;
  if (interleaved) {
    for (std::size_t i = 0; i < half; ++i) {
      rope_rotate_pair(load(src[2 * i]), load(src[2 * i + 1]), cs[i], sn[i], &xo, &yo);
      dst[2 * i] = store(xo);
      dst[2 * i + 1] = store(yo);
    }
  } else {
    for (std::size_t i = 0; i < half; ++i) {
      rope_rotate_pair(load(src[i]), load(src[i + half]), cs[i], sn[i], &xo, &yo);
      dst[i] = store(xo);
      dst[i + half] = store(yo);
    }
  }
  if (src != dst) {
    for (std::size_t j = rotary_dim; j < head_dim; ++j) dst[j] = src[j];
  }
}

/// Pairs one lane rotates per group in `rope_rotate_row_lane` (all their loads come first).
inline constexpr unsigned rope_lane_group = 4;

/// One lane's share of `rope_rotate_row` when `lanes` threads rotate a row together: the pairs
/// i ≡ lane (mod lanes), then, when `src != dst`, the pass-through elements j ≥ rotary_dim with
/// j − rotary_dim ≡ lane (mod lanes). The shares of lanes 0..lanes−1 are disjoint and cover the
/// row, and a lane reads both members of each of its pairs before it writes them, so the lanes
/// may run in any order or concurrently, in place included. Each pair gets `rope_rotate_pair`,
/// so the row equals `rope_rotate_row`'s. The pairs go in groups of `rope_lane_group`, every load
/// of a group before its first store, so a GPU thread keeps several loads in flight (the CUDA
/// kernels run 32 lanes per row).
template <class T, class Load, class Store>
HYBRIDCACHE_HOST_DEVICE inline void rope_rotate_row_lane(const T* src, T* dst, std::size_t head_dim,
                                                         std::size_t rotary_dim, bool interleaved,
                                                         const float* cs, const float* sn,
                                                         Load load, Store store, unsigned lane,
                                                         unsigned lanes) noexcept {
  constexpr unsigned G = rope_lane_group;
  const std::size_t half = rotary_dim / 2;
  const std::size_t step = std::size_t{G} * lanes;
  for (std::size_t i0 = lane; i0 < half; i0 += step) {
    float x[G], y[G];
    HYBRIDCACHE_DETAIL_UNROLL
    for (unsigned g = 0; g < G; ++g) {
      const std::size_t i = i0 + std::size_t{g} * lanes;
      if (i < half) {
        std::size_t a, b;
        rope_pair(interleaved, rotary_dim, i, &a, &b);
        x[g] = load(src[a]);
        y[g] = load(src[b]);
      }
    }
    HYBRIDCACHE_DETAIL_UNROLL
    for (unsigned g = 0; g < G; ++g) {
      const std::size_t i = i0 + std::size_t{g} * lanes;
      if (i < half) {
        std::size_t a, b;
        rope_pair(interleaved, rotary_dim, i, &a, &b);
        float xo, yo;
        rope_rotate_pair(x[g], y[g], cs[i], sn[i], &xo, &yo);
        dst[a] = store(xo);
        dst[b] = store(yo);
      }
    }
  }
  if (src != dst) {
    for (std::size_t j = rotary_dim + lane; j < head_dim; j += lanes) dst[j] = src[j];
  }
}

/// Default chunk of `rope_rotate_row_chunks`: consecutive pairs a lane takes at once (the CUDA
/// kernels move a half-split side with one vector access, an interleaved chunk with one or two;
/// `realign_keys` takes chunks of 8 for 16-bit keys).
inline constexpr unsigned rope_chunk_pairs = 4;

/// Element-wise `IO` for `rope_rotate_row_chunks`: N consecutive elements through `Load`/`Store`
/// one at a time (the host replay in tests; the CUDA kernels pass vector loads and stores).
template <class T, class Load, class Store>
struct rope_elementwise_io {
  Load load_one;
  Store store_one;
  template <unsigned N>
  HYBRIDCACHE_HOST_DEVICE void load(const T* p, float (&out)[N]) const noexcept {
    HYBRIDCACHE_DETAIL_UNROLL
    for (unsigned k = 0; k < N; ++k) out[k] = load_one(p[k]);
  }
  template <unsigned N>
  HYBRIDCACHE_HOST_DEVICE void store(T* p, const float (&in)[N]) const noexcept {
    HYBRIDCACHE_DETAIL_UNROLL
    for (unsigned k = 0; k < N; ++k) p[k] = store_one(in[k]);
  }
  template <unsigned N>
  HYBRIDCACHE_HOST_DEVICE void table(const float* p, float (&out)[N]) const noexcept {
    HYBRIDCACHE_DETAIL_UNROLL
    for (unsigned k = 0; k < N; ++k) out[k] = p[k];
  }
};

/// `rope_rotate_row_lane` with whole chunks of C consecutive pairs: lane
/// `lane` of `lanes` takes the chunks c ≡ lane (mod lanes), that is the pairs [C·c, C·c + C).
/// A half-split chunk is C consecutive elements in each half (x at i, y at i + rotary_dim/2), an
/// interleaved one the 2C consecutive elements from 2i, so each side is one contiguous run that
/// `io` may move with a single vector load or store: `io.load<N>(p, out)` reads the N elements
/// at p, `io.store<N>(p, in)` writes them, `io.table<N>(p, out)` reads N cos (or sin) values.
/// Every pair still gets `rope_rotate_pair` with the same cos/sin, so the row equals
/// `rope_rotate_row`'s bit for bit whatever the lane order; a lane reads a chunk before it
/// writes it, so in place is allowed. The pass-through elements j ≥ rotary_dim (when
/// `src != dst`) go as in `rope_rotate_row_lane`.
///
/// Precondition: (rotary_dim / 2) % C == 0 (the kernels fall back to `rope_rotate_row_lane`).
template <unsigned C = rope_chunk_pairs, class T, class IO>
HYBRIDCACHE_HOST_DEVICE inline void rope_rotate_row_chunks(
    const T* src, T* dst, std::size_t head_dim, std::size_t rotary_dim, bool interleaved,
    const float* cs, const float* sn, const IO& io, unsigned lane, unsigned lanes) noexcept {
  const std::size_t half = rotary_dim / 2;
  const std::size_t step = std::size_t{C} * lanes;
  for (std::size_t i = std::size_t{lane} * C; i < half; i += step) {
    float c[C], s[C];
    io.template table<C>(cs + i, c);
    io.template table<C>(sn + i, s);
    if (interleaved) {
      float v[2 * C], o[2 * C];
      io.template load<2 * C>(src + 2 * i, v);
      HYBRIDCACHE_DETAIL_UNROLL
      for (unsigned g = 0; g < C; ++g)
        rope_rotate_pair(v[2 * g], v[2 * g + 1], c[g], s[g], &o[2 * g], &o[2 * g + 1]);
      io.template store<2 * C>(dst + 2 * i, o);
    } else {
      float x[C], y[C], xo[C], yo[C];
      io.template load<C>(src + i, x);
      io.template load<C>(src + half + i, y);
      HYBRIDCACHE_DETAIL_UNROLL
      for (unsigned g = 0; g < C; ++g) rope_rotate_pair(x[g], y[g], c[g], s[g], &xo[g], &yo[g]);
      io.template store<C>(dst + i, xo);
      io.template store<C>(dst + half + i, yo);
    }
  }
  if (src != dst) {
    for (std::size_t j = rotary_dim + lane; j < head_dim; j += lanes) dst[j] = src[j];
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
      float xo, yo;
      rope_rotate_pair(load(src[2 * i]), load(src[2 * i + 1]), cs[i], sn[i], &xo, &yo);
      dst[2 * i] = store(xo);
      dst[2 * i + 1] = store(yo);
    }
  } else {
    HYBRIDCACHE_DETAIL_IVDEP
    for (std::size_t i = 0; i < half; ++i) {
      float xo, yo;
      rope_rotate_pair(load(src[i]), load(src[i + half]), cs[i], sn[i], &xo, &yo);
      dst[i] = store(xo);
      dst[i + half] = store(yo);
    }
  }
  for (std::size_t j = rotary_dim; j < head_dim; ++j) dst[j] = src[j];
}

}  // namespace detail
HYBRIDCACHE_NAMESPACE_END
