#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Element-wise math of the scalar and diagonal transition families and of RoPE state re-rotation,
/// written once for host code and CUDA kernels alike: raw pointers and values only, no Eigen, no
/// `std::vector`, no exceptions, every function `HYBRIDCACHE_HOST_DEVICE`. The host algorithms in
/// `state/` call exactly these functions, so the host tests cover the code a kernel runs.
///
/// Conventions (DESIGN.md §3): a state S is dk×dv row-major (K-first), element (r, c) at
/// `s[r*dv + c]`. Decays are carried in log space as `double`: a scalar-family transition is
/// e^{ℓ}·I (one ℓ), a diagonal one Diag(e^{ℓ_r}) (dk values). ℓ ∈ [−∞, 0]; ℓ = −∞ is a hard reset
/// (transition 0) and composes without NaN because log-decays are only ever added (−∞ + x = −∞)
/// and exponentiated, never subtracted or divided.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <bit>

#include "hybridcache/config.hpp"
#include "hybridcache/rope/angle.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// e^{ℓ} for a log-decay ℓ ∈ [−∞, 0]; exp(−∞) = 0 exactly, so a hard reset needs no special case.
HYBRIDCACHE_HOST_DEVICE inline double decay_factor(double log_decay) noexcept {
  return ::exp(log_decay);
}

/// Bit casts usable on host and device.
HYBRIDCACHE_HOST_DEVICE inline std::uint32_t float_as_bits(float f) noexcept {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  return std::bit_cast<std::uint32_t>(f);
#endif
}
HYBRIDCACHE_HOST_DEVICE inline float bits_as_float(std::uint32_t u) noexcept {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

/// e^{x} for x ∈ [−∞, 0] in float, written so that loops over it vectorise without fast-math
/// flags (std::exp does not): the clamp x ≥ −104 and the underflow flush are integer operations
/// (non-positive floats order by their bit patterns), x = n·ln2 + r with |r| ≤ ln2/2 (two-part
/// ln2), a degree-7 Taylor polynomial for e^{r} and 2^{n} assembled in the exponent bits.
/// Accuracy ≤ 3 ulp (test "exp_nonpositive"); results below e^{−87.3} (the normal range) and
/// x = −∞ give exactly 0, so a hard reset stays exact. Positive x and NaN are out of contract.
HYBRIDCACHE_HOST_DEVICE inline float exp_nonpositive(float x) noexcept {
  std::uint32_t u = float_as_bits(x);
  u = u < 0xC2D00000u ? u : 0xC2D00000u;  // max(x, −104) for x ≤ 0 (−104.0f = 0xC2D00000)
  const float xc = bits_as_float(u);
  const std::int32_t ni = static_cast<std::int32_t>(xc * 1.44269504088896341f - 0.5f);  // round
  const float n = static_cast<float>(ni);
  float r = xc - n * 0.693145751953125f;  // ln2 high part (exact product for |n| < 2^8)
  r -= n * 1.428606765330187045e-06f;     // ln2 low part
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const std::uint32_t keep = ni >= -126 ? 0xFFFFFFFFu : 0u;  // flush below the normal range
  const std::uint32_t scale = (static_cast<std::uint32_t>(ni + 127) << 23) & keep;
  return p * bits_as_float(scale);
}

/// out[i] = e^{x[i]} for log-decays x[i] ∈ [−∞, 0]: the fast float kernel for float, std::exp in
/// double for double (its accuracy is what double callers pay for).
HYBRIDCACHE_HOST_DEVICE inline void decay_factors(const double* x, float* out,
                                                  std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = exp_nonpositive(static_cast<float>(x[i]));
}
HYBRIDCACHE_HOST_DEVICE inline void decay_factors(const float* x, float* out,
                                                  std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = exp_nonpositive(x[i]);
}
HYBRIDCACHE_HOST_DEVICE inline void decay_factors(const double* x, double* out,
                                                  std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = ::exp(x[i]);
}

/// out[i] = factor·prev[i] + add[i] for i < n: the scalar-family affine map e^{ℓ}·S_prev + S
/// (HYPIC eq. 4/6 with T = e^{ℓ} I). `out` may alias `prev` or `add`. With factor = 0 the result
/// is `add` even where prev is finite-but-huge (0·x = 0 for finite x).
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline void affine_scalar(Real* out, const Real* prev, const Real* add,
                                                  std::size_t n, Real factor) noexcept {
  for (std::size_t i = 0; i < n; ++i) out[i] = factor * prev[i] + add[i];
}

/// out[r, c] = e^{ℓ_r}·prev[r, c] + add[r, c]: the diagonal-family affine map
/// Diag(e^{ℓ})·S_prev + S. `out` may alias `prev` or `add`.
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline void affine_diagonal(Real* out, const Real* prev, const Real* add,
                                                    const double* log_decay, std::size_t dk,
                                                    std::size_t dv) noexcept {
  for (std::size_t r = 0; r < dk; ++r) {
    const Real f = static_cast<Real>(decay_factor(log_decay[r]));
    const std::size_t o = r * dv;
    for (std::size_t c = 0; c < dv; ++c) out[o + c] = f * prev[o + c] + add[o + c];
  }
}

/// Scales row r of a rows×cols row-major matrix by e^{ℓ_r} in place (Diag(e^{ℓ})·M).
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline void scale_rows_by_decay(Real* m, const double* log_decay,
                                                        std::size_t rows,
                                                        std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r) {
    const Real f = static_cast<Real>(decay_factor(log_decay[r]));
    for (std::size_t c = 0; c < cols; ++c) m[r * cols + c] *= f;
  }
}

/// Scales column c of a rows×cols row-major matrix by e^{ℓ_c} in place (M·Diag(e^{ℓ})).
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline void scale_cols_by_decay(Real* m, const double* log_decay,
                                                        std::size_t rows,
                                                        std::size_t cols) noexcept {
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c)
      m[r * cols + c] *= static_cast<Real>(decay_factor(log_decay[c]));
}

/// Composition of log-decays: the transition of "first, then `then`" is
/// e^{ℓ_then}·e^{ℓ_first} = e^{ℓ_first + ℓ_then}. `first_n`/`then_n` are 1 (scalar family, the
/// value broadcasts over dk) or dk (diagonal); `out` has max(first_n, then_n) entries and may
/// alias either input.
HYBRIDCACHE_HOST_DEVICE inline void compose_log_decay(double* out, const double* first,
                                                      std::size_t first_n, const double* then,
                                                      std::size_t then_n) noexcept {
  const std::size_t n = first_n > then_n ? first_n : then_n;
  for (std::size_t i = 0; i < n; ++i)
    out[i] = first[first_n == 1 ? 0 : i] + then[then_n == 1 ? 0 : i];
}

/// Scalar/diagonal summary composition in one call: (ℓ, S) = (ℓ₂, S₂)∘(ℓ₁, S₁) with
/// ℓ = ℓ₁ + ℓ₂ and S = Diag(e^{ℓ₂})·S₁ + S₂ (the monoid of DESIGN.md §3 restricted to
/// diagonal transitions). `then_n` ∈ {1, dk} says whether ℓ₂ is scalar or per-row; likewise
/// `first_n`. Outputs may alias the `then` inputs or the `first` inputs.
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline void compose_diagonal_family(
    double* out_log, Real* out_state, const double* first_log, std::size_t first_n,
    const Real* first_state, const double* then_log, std::size_t then_n, const Real* then_state,
    std::size_t dk, std::size_t dv) noexcept {
  if (then_n == 1) {
    affine_scalar(out_state, first_state, then_state, dk * dv,
                  static_cast<Real>(decay_factor(then_log[0])));
  } else {
    affine_diagonal(out_state, first_state, then_state, then_log, dk, dv);
  }
  compose_log_decay(out_log, first_log, first_n, then_log, then_n);
}

// ---------------------------------------------------------------------------------------------
// RoPE re-rotation of a state. The angle math (θ_i with its scalings, the double-precision
// product offset·θ_i reduced by a two-part 2π before sin/cos, the pair layout) is the rope
// component's public host/device code in rope/angle.hpp, shared rather than repeated.

/// Rotates the rows of a K-first state (row stride dv) by R(offset): for every rotary pair
/// (a, b), row_a ← c·row_a − s·row_b and row_b ← s·row_a + c·row_b with
/// (c, s) = (cos, sin)(offset·θ_i). Rows ≥ rotary_dim are untouched (partial rotary).
/// HYPIC eq. 7: S_{C|b} = R(b − a)·S_{C|a} for scalar-family layers, whose transitions commute
/// with R. Preconditions: rotary_dim even and ≤ dk; `freq` from a validated `rope_params`.
template <class Real>
HYBRIDCACHE_HOST_DEVICE inline void rope_rotate_rows(Real* s, std::size_t dv,
                                                     const ::hybridcache::rope_frequency& freq,
                                                     std::size_t rotary_dim, bool interleaved,
                                                     double offset) noexcept {
  const std::size_t pairs = rotary_dim / 2;
  for (std::size_t i = 0; i < pairs; ++i) {
    const double theta = ::hybridcache::rope_theta(freq, static_cast<double>(i));
    const double angle = ::hybridcache::rope_reduced_angle(offset, theta);
    const Real c = static_cast<Real>(::cos(angle));
    const Real sn = static_cast<Real>(::sin(angle));
    std::size_t a = 0, b = 0;
    ::hybridcache::rope_pair(interleaved, rotary_dim, i, &a, &b);
    Real* ra = s + a * dv;
    Real* rb = s + b * dv;
    for (std::size_t col = 0; col < dv; ++col) {
      const Real x = ra[col];
      const Real y = rb[col];
      ra[col] = c * x - sn * y;
      rb[col] = sn * x + c * y;
    }
  }
}

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
