#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Independent references for RoPE tests: frequencies and absolute-position rotation in long
/// double straight from the definitions (RoFormer; Hugging Face's "linear" and "llama3" rope
/// types), and binary16 / bfloat16 decoding by the textbook formula with nearest-value encoding by
/// search.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace hcref {

struct rope_ref_config {
  std::size_t head_dim;
  std::size_t rotary_dim;
  long double base;
  bool interleaved;
  int scaling;  // 0 none, 1 linear, 2 llama3
  long double factor = 1, low = 1, high = 4, original = 8192;
};

/// θ_i, computed in long double from the definitions.
inline long double rope_theta(const rope_ref_config& c, std::size_t i) {
  const long double inv = 1.0L / std::pow(c.base, static_cast<long double>(2 * i) /
                                                      static_cast<long double>(c.rotary_dim));
  if (c.scaling == 1) return inv / c.factor;
  if (c.scaling == 2) {
    const long double pi = 3.141592653589793238462643383279502884L;
    const long double wavelen = 2 * pi / inv;
    if (wavelen < c.original / c.high) return inv;
    if (wavelen > c.original / c.low) return inv / c.factor;
    const long double smooth = (c.original / wavelen - c.low) / (c.high - c.low);
    return (1 - smooth) * inv / c.factor + smooth * inv;
  }
  return inv;
}

/// R(position)·k for one head vector, in long double (the key "computed directly" at a position).
inline std::vector<long double> rope_at(const rope_ref_config& c, const std::vector<double>& k,
                                        long double position) {
  std::vector<long double> out(k.begin(), k.end());
  const std::size_t half = c.rotary_dim / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const long double angle = position * rope_theta(c, i);
    const long double cs = std::cos(angle), sn = std::sin(angle);
    const std::size_t a = c.interleaved ? 2 * i : i;
    const std::size_t b = c.interleaved ? 2 * i + 1 : i + half;
    out[a] = k[a] * cs - k[b] * sn;
    out[b] = k[a] * sn + k[b] * cs;
  }
  return out;
}

/// Index of the partner of element j in its rotation pair (j itself when not rotated).
inline std::size_t rope_partner(const rope_ref_config& c, std::size_t j) {
  if (j >= c.rotary_dim) return j;
  if (c.interleaved) return j ^ 1u;
  const std::size_t half = c.rotary_dim / 2;
  return j < half ? j + half : j - half;
}

/// binary16 bits -> value by the formula (−1)^s · 2^(e−15) · (1 + m/1024), subnormals
/// 2^(−14) · m/1024.
inline double half_value(std::uint16_t h) {
  const int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0) v = std::ldexp(m / 1024.0, -14);
  else if (e == 31) v = m ? std::nan("") : INFINITY;
  else v = std::ldexp(1.0 + m / 1024.0, e - 15);
  return s ? -v : v;
}

/// bfloat16 bits -> value: (−1)^s · 2^(e−127) · (1 + m/128), subnormals 2^(−126) · m/128.
inline double bfloat16_value(std::uint16_t b) {
  const int s = b >> 15, e = (b >> 7) & 0xff, m = b & 0x7f;
  double v;
  if (e == 0) v = std::ldexp(m / 128.0, -126);
  else if (e == 255) v = m ? std::nan("") : INFINITY;
  else v = std::ldexp(1.0 + m / 128.0, e - 127);
  return s ? -v : v;
}

/// Nearest representable value to x among `values` (finite, ascending, non-negative), ties to the
/// one with an even last bit; values past the largest finite by at least half an ulp go to
/// infinity. Returns the bits (sign applied).
template <class Decode>
std::uint16_t nearest_bits(double x, std::uint16_t max_finite_bits, Decode decode) {
  const bool neg = std::signbit(x);
  const double a = std::fabs(x);
  std::uint16_t lo = 0, hi = max_finite_bits;
  // Binary search on the monotone positive encodings.
  while (hi - lo > 1) {
    const std::uint16_t mid = static_cast<std::uint16_t>((lo + hi) / 2);
    if (decode(mid) <= a) lo = mid;
    else hi = mid;
  }
  std::uint16_t best;
  if (a >= decode(max_finite_bits)) {
    const double ulp = decode(max_finite_bits) - decode(static_cast<std::uint16_t>(max_finite_bits - 1));
    best = a >= decode(max_finite_bits) + ulp / 2 ? static_cast<std::uint16_t>(max_finite_bits + 1)
                                                    : max_finite_bits;
  } else {
    const double dl = a - decode(lo), dh = decode(hi) - a;
    best = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
  }
  return static_cast<std::uint16_t>(best | (neg ? 0x8000 : 0));
}

}  // namespace hcref
