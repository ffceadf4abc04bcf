#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Numeric vocabulary shared by every component: the 16-bit storage floats `half` (IEEE binary16)
/// and `bfloat16`, their conversions, and `splitmix64_mix`, the one 64-bit integer mixer.
///
/// `half` and `bfloat16` are *storage* types, as in a KV cache or a bf16 state pool: arithmetic
/// happens in float after conversion, and results are stored back rounding to nearest, ties to
/// even. Conversions are branch-free bit manipulations (after F. Giesen's public-domain half
/// routines) marked `HYBRIDCACHE_HOST_DEVICE`, so CUDA kernels and host code round identically.
/// NaN stays NaN (quietened), ±Inf stays ±Inf, values beyond the range overflow to ±Inf, and
/// subnormals are handled exactly. Other 16-bit types (`Eigen::half`, `__half`) work with the
/// library's algorithms through `detail::load_float` / `detail::store_float`, which fall back to
/// `static_cast<float>` and `T(float)`.
///
/// (These types used to live in `rope/half.hpp`, a path removed in 0.2.)

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

namespace detail {
HYBRIDCACHE_HOST_DEVICE inline std::uint32_t float_bits(float f) noexcept {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
HYBRIDCACHE_HOST_DEVICE inline float bits_float(std::uint32_t u) noexcept {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// binary16 bits -> float (exact). Branch-free (every case computed, one selected) so that host
/// loops over rows vectorise.
HYBRIDCACHE_HOST_DEVICE inline float half_bits_to_float(std::uint16_t h) noexcept {
  constexpr std::uint32_t shifted_exp = 0x7c00u << 13;
  const std::uint32_t hu = h;
  std::uint32_t o = (hu & 0x7fffu) << 13;
  const std::uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  o += exp == shifted_exp ? ((128u - 16u) << 23) : 0u;  // Inf / NaN keep all exponent bits
  // Subnormal: renormalise through an exact float subtraction.
  const std::uint32_t sub = float_bits(bits_float(o + (1u << 23)) - bits_float(113u << 23));
  o = exp == 0 ? sub : o;
  return bits_float(o | ((hu & 0x8000u) << 16));
}

/// float -> binary16 bits, round to nearest even. Branch-free like `half_bits_to_float`.
HYBRIDCACHE_HOST_DEVICE inline std::uint16_t float_to_half_bits(float x) noexcept {
  std::uint32_t f = float_bits(x);
  const std::uint32_t sign = f & 0x80000000u;
  f ^= sign;
  // Overflow, Inf or NaN (|x| >= 2^16): Inf, or a quiet NaN.
  const std::uint32_t big = f > (255u << 23) ? 0x7e00u : 0x7c00u;
  // Result subnormal or zero (|x| < 2^-14): let a float addition do the rounding.
  constexpr std::uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  const std::uint32_t small = float_bits(bits_float(f) + bits_float(denorm_magic)) - denorm_magic;
  // Normal: rebias the exponent (mod 2^32) and round the 13 dropped bits to nearest even.
  const std::uint32_t normal =
      (f + (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu + ((f >> 13) & 1u)) >> 13;
  const std::uint32_t o = f >= ((127u + 16u) << 23) ? big : f < (113u << 23) ? small : normal;
  return static_cast<std::uint16_t>(o | (sign >> 16));
}

/// bfloat16 bits -> float (exact).
HYBRIDCACHE_HOST_DEVICE inline float bfloat16_bits_to_float(std::uint16_t b) noexcept {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}

/// float -> bfloat16 bits, round to nearest even; NaN stays (quiet) NaN.
HYBRIDCACHE_HOST_DEVICE inline std::uint16_t float_to_bfloat16_bits(float x) noexcept {
  const std::uint32_t f = float_bits(x);
  const std::uint32_t nan = (f >> 16) | 0x40u;
  const std::uint32_t rounded = (f + 0x7fffu + ((f >> 16) & 1u)) >> 16;
  return static_cast<std::uint16_t>((f & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}
}  // namespace detail

/// IEEE 754 binary16 storage value.
struct half {
  std::uint16_t bits = 0;
  half() = default;
  HYBRIDCACHE_HOST_DEVICE explicit half(float f) noexcept : bits(detail::float_to_half_bits(f)) {}
  HYBRIDCACHE_HOST_DEVICE explicit operator float() const noexcept {
    return detail::half_bits_to_float(bits);
  }
  HYBRIDCACHE_HOST_DEVICE static half from_bits(std::uint16_t b) noexcept {
    half h;
    h.bits = b;
    return h;
  }
};

/// bfloat16 storage value (the top 16 bits of a float, rounded to nearest even).
struct bfloat16 {
  std::uint16_t bits = 0;
  bfloat16() = default;
  HYBRIDCACHE_HOST_DEVICE explicit bfloat16(float f) noexcept
      : bits(detail::float_to_bfloat16_bits(f)) {}
  HYBRIDCACHE_HOST_DEVICE explicit operator float() const noexcept {
    return detail::bfloat16_bits_to_float(bits);
  }
  HYBRIDCACHE_HOST_DEVICE static bfloat16 from_bits(std::uint16_t b) noexcept {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half>);
static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>);

/// SplitMix64's output function (Steele, Lea & Flood, "Fast splittable pseudorandom number
/// generators", OOPSLA 2014; the finaliser of Java's SplittableRandom):
///   z ← (z ⊕ (z ≫ 30))·0xBF58476D1CE4E5B9;  z ← (z ⊕ (z ≫ 27))·0x94D049BB133111EB;  z ⊕ (z ≫ 31).
/// A bijection of 64-bit words with full avalanche; the one integer mixer of the library (seeded
/// streams, synthetic token ids, non-cryptographic table hashes). Not a keyed hash: use the
/// segment/ hash policies for anything an adversary can choose.
HYBRIDCACHE_HOST_DEVICE constexpr std::uint64_t splitmix64_mix(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The SplitMix64 increment (2⁶⁴/φ, odd): state_{k+1} = state_k + splitmix64_gamma.
inline constexpr std::uint64_t splitmix64_gamma = 0x9E3779B97F4A7C15ull;

namespace detail {
/// Reads a stored element as float (float, double, half, bfloat16, or any type convertible to
/// float such as Eigen::half).
template <class T>
HYBRIDCACHE_HOST_DEVICE inline float load_float(const T& v) noexcept {
  return static_cast<float>(v);
}
/// Stores a float as `T`, rounding to nearest even for the 16-bit types.
template <class T>
HYBRIDCACHE_HOST_DEVICE inline T store_float(float f) noexcept {
  return static_cast<T>(f);
}
}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
