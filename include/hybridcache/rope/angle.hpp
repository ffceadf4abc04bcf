#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// RoPE angle math, public because two components use it: `rope/` (delta re-alignment of cached
/// keys) and `state/` (re-rotation of scalar-family states, HYPIC eq. 7). Plain values and
/// pointers, no exceptions, no allocation, every function `HYBRIDCACHE_HOST_DEVICE`, so CUDA
/// kernels and host code compute the same angles.
///
/// θ_i = base^{−2i/d_rot}, changed by the frequency scaling only (`rope_params`' file comment has
/// the linear and llama3 formulas). Precision: the angle Δ·θ_i is formed in double and reduced to
/// [−π, π] (two-constant Cody–Waite) before sin/cos, so it keeps ~1e−10 rad absolute accuracy for
/// |Δ·θ| up to 1e6; forming it in float would err by up to |Δ|·2^−24 ≈ 0.06 rad at Δ = 1e6.
///
/// (These used to live in `rope/detail/rotate.hpp`, which includes this header and keeps the
/// `detail::` spellings as using-declarations.)

#include <cmath>
#include <cstddef>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// RoPE frequency parameters as plain values (see `rope_params`). `scaling`: 0 none, 1 linear,
/// 2 llama3.
struct rope_frequency {
  double rotary_dim;
  double base;
  int scaling;
  double factor;
  double low_freq_factor;
  double high_freq_factor;
  double original_max_position;
};

/// Scaled frequency θ_i (rope_params's file comment has the formulas).
HYBRIDCACHE_HOST_DEVICE inline double rope_theta(const rope_frequency& f, double i) noexcept {
  const double theta = pow(f.base, -2.0 * i / f.rotary_dim);
  if (f.scaling == 1) return theta / f.factor;
  if (f.scaling == 2) {
    constexpr double two_pi = 6.283185307179586476925286766559;
    const double wavelen = two_pi / theta;
    const double low_wavelen = f.original_max_position / f.low_freq_factor;
    const double high_wavelen = f.original_max_position / f.high_freq_factor;
    if (wavelen < high_wavelen) return theta;
    if (wavelen > low_wavelen) return theta / f.factor;
    const double s = (f.original_max_position / wavelen - f.low_freq_factor) /
                     (f.high_freq_factor - f.low_freq_factor);
    return (1.0 - s) * theta / f.factor + s * theta;
  }
  return theta;
}

/// delta·theta reduced to [−π, π]: k = round(a/2π), then a − k·2π with 2π split into a double
/// and its residual, the first product fused (fma) so it adds no rounding. The result's error is
/// that of the product a = delta·theta itself, half an ulp of |a| (6e−11 rad at |a| = 1e6).
HYBRIDCACHE_HOST_DEVICE inline double rope_reduced_angle(double delta, double theta) noexcept {
  constexpr double two_pi_hi = 6.28318530717958623200;      // 2π rounded to double
  constexpr double two_pi_lo = 2.44929359829470635445e-16;  // 2π − two_pi_hi
  constexpr double inv_two_pi = 0.15915494309189533577;
  const double a = delta * theta;
  const double k = nearbyint(a * inv_two_pi);
  return fma(-k, two_pi_lo, fma(-k, two_pi_hi, a));
}

/// cos and sin of the reduced angle, rounded to float.
HYBRIDCACHE_HOST_DEVICE inline void rope_delta_sincos(double delta, double theta, float* c,
                                                      float* s) noexcept {
  const double r = rope_reduced_angle(delta, theta);
  *c = static_cast<float>(cos(r));
  *s = static_cast<float>(sin(r));
}

/// Element offsets of pair i's two members: (i, i + d_rot/2) half-split, (2i, 2i+1) interleaved.
HYBRIDCACHE_HOST_DEVICE inline void rope_pair(bool interleaved, std::size_t rotary_dim,
                                              std::size_t i, std::size_t* a,
                                              std::size_t* b) noexcept {
  if (interleaved) {
    *a = 2 * i;
    *b = 2 * i + 1;
  } else {
    *a = i;
    *b = i + rotary_dim / 2;
  }
}

HYBRIDCACHE_NAMESPACE_END
