#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// 16-bit storage types for cached keys: IEEE binary16 (`half`) and bfloat16 (`bfloat16`).
///
/// These are *storage* types, as in a KV cache: arithmetic happens in float after `to_float`, and
/// results are stored back with `from_float`, which rounds to nearest, ties to even. Conversions are
/// branch-light bit manipulations (after F. Giesen's public-domain half routines) marked
/// `HYBRIDCACHE_HOST_DEVICE`, so CUDA kernels and host code round identically. NaN stays NaN
/// (quietened), ±Inf stays ±Inf, values beyond the range overflow to ±Inf, and subnormals are
/// handled exactly. Other 16-bit types (`Eigen::half`, `__half`) work with the library's
/// algorithms through `detail::load_float` / `detail::store_float`, which fall back to
/// `static_cast<float>` and `T(float)`.

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

/// binary16 bits -> float (exact).
HYBRIDCACHE_HOST_DEVICE inline float half_bits_to_float(std::uint16_t h) noexcept {
  constexpr std::uint32_t shifted_exp = 0x7c00u << 13;
  std::uint32_t o = (static_cast<std::uint32_t>(h) & 0x7fffu) << 13;
  const std::uint32_t exp = shifted_exp & o;
  o += (127u - 15u) << 23;
  if (exp == shifted_exp) {
    o += (128u - 16u) << 23;  // Inf / NaN
  } else if (exp == 0) {
    o += 1u << 23;  // subnormal: renormalise through a float subtraction (exact)
    o = float_bits(bits_float(o) - bits_float(113u << 23));
  }
  return bits_float(o | ((static_cast<std::uint32_t>(h) & 0x8000u) << 16));
}

/// float -> binary16 bits, round to nearest even.
HYBRIDCACHE_HOST_DEVICE inline std::uint16_t float_to_half_bits(float x) noexcept {
  std::uint32_t f = float_bits(x);
  const std::uint32_t sign = f & 0x80000000u;
  f ^= sign;
  std::uint32_t o;
  if (f >= ((127u + 16u) << 23)) {  // overflow, Inf or NaN
    o = f > (255u << 23) ? 0x7e00u : 0x7c00u;
  } else if (f < (113u << 23)) {  // result is subnormal or zero: let float addition round
    constexpr std::uint32_t denorm_magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    o = float_bits(bits_float(f) + bits_float(denorm_magic)) - denorm_magic;
  } else {
    const std::uint32_t mant_odd = (f >> 13) & 1u;
    f += (static_cast<std::uint32_t>(15 - 127) << 23) + 0xfffu;  // rebias (mod 2^32) + round
    f += mant_odd;
    o = f >> 13;
  }
  return static_cast<std::uint16_t>(o | (sign >> 16));
}

/// bfloat16 bits -> float (exact).
HYBRIDCACHE_HOST_DEVICE inline float bfloat16_bits_to_float(std::uint16_t b) noexcept {
  return bits_float(static_cast<std::uint32_t>(b) << 16);
}

/// float -> bfloat16 bits, round to nearest even; NaN stays (quiet) NaN.
HYBRIDCACHE_HOST_DEVICE inline std::uint16_t float_to_bfloat16_bits(float x) noexcept {
  const std::uint32_t f = float_bits(x);
  if ((f & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((f >> 16) | 0x40u);
  return static_cast<std::uint16_t>((f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
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
