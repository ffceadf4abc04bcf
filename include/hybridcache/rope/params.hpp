#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Rotary position embedding (RoPE, RoFormer) parameters: base, rotary dimensions (full or
/// partial), pair layout, and frequency scaling.
///
/// A key of head dimension d is rotated on its first d_rot dimensions (d_rot even, d_rot <= d;
/// partial rotary when d_rot < d, the rest pass through). The d_rot/2 pairs rotate by angle
/// position·θ_i with the unscaled frequencies
///
///     θ_i = base^(−2i/d_rot),   i = 0 .. d_rot/2 − 1        (DESIGN.md §3)
///
/// Pair i is (i, i + d_rot/2) in the half-split layout (GPT-NeoX, Llama in HF) and (2i, 2i+1) in
/// the interleaved layout (GPT-J, Meta's original Llama). Scalings change θ_i only:
///  - linear (position interpolation): θ_i / factor;
///  - llama3: with wavelength λ_i = 2π/θ_i, L = original_max_position,
///    λ_i < L/high_freq_factor keeps θ_i, λ_i > L/low_freq_factor uses θ_i/factor, and between the
///    two θ_i is blended, (1 − s)·θ_i/factor + s·θ_i with s = (L/λ_i − low)/(high − low).
/// These match Hugging Face transformers' `rope_type` "linear" and "llama3".

#include <cmath>
#include <cstddef>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/rope/detail/rotate.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Which dimensions form a rotation pair (see the file comment).
enum class rope_layout {
  half_split,   ///< GPT-NeoX: pair (i, i + d_rot/2)
  interleaved,  ///< GPT-J: pair (2i, 2i + 1)
};

/// Frequency scaling; changes θ_i only.
enum class rope_scaling_kind { none, linear, llama3 };

/// Scaling parameters. `factor` is used by both scalings; the rest by llama3 (defaults are
/// Llama 3.1's: factor 8, low 1, high 4, original context 8192).
struct rope_scaling {
  rope_scaling_kind kind = rope_scaling_kind::none;
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  double original_max_position = 8192.0;

  static rope_scaling linear(double factor) { return {rope_scaling_kind::linear, factor}; }
  static rope_scaling llama3(double factor = 8.0, double low = 1.0, double high = 4.0,
                             double original_max_position = 8192.0) {
    return {rope_scaling_kind::llama3, factor, low, high, original_max_position};
  }
};

/// RoPE of one attention layer. A plain aggregate: kernels receive it by value.
struct rope_params {
  std::size_t head_dim = 128;    ///< d: elements per head vector
  std::size_t rotary_dim = 128;  ///< d_rot: rotated leading dimensions (even, <= head_dim)
  double base = 10000.0;         ///< θ base
  rope_layout layout = rope_layout::half_split;
  rope_scaling scaling{};

  /// Throws `invalid_argument` naming the bad field: head_dim == 0, rotary_dim odd, zero or larger
  /// than head_dim, base not finite or <= 1, factor not finite or <= 0, llama3 with
  /// high_freq_factor <= low_freq_factor or a non-positive original context.
  void validate() const {
    if (head_dim == 0) detail::throw_invalid("head_dim", head_dim, "must be > 0");
    if (rotary_dim == 0 || rotary_dim % 2 != 0 || rotary_dim > head_dim) {
      detail::throw_invalid("rotary_dim", rotary_dim,
                            "must be even, > 0 and <= head_dim = " + std::to_string(head_dim));
    }
    if (!std::isfinite(base) || !(base > 1.0))
      detail::throw_invalid("base", base, "must be finite and > 1");
    if (scaling.kind == rope_scaling_kind::none) return;
    if (!std::isfinite(scaling.factor) || !(scaling.factor > 0.0))
      detail::throw_invalid("scaling.factor", scaling.factor, "must be finite and > 0");
    if (scaling.kind == rope_scaling_kind::llama3) {
      if (!std::isfinite(scaling.low_freq_factor) || !(scaling.low_freq_factor > 0.0))
        detail::throw_invalid("scaling.low_freq_factor", scaling.low_freq_factor,
                              "must be finite and > 0");
      if (!std::isfinite(scaling.high_freq_factor) ||
          !(scaling.high_freq_factor > scaling.low_freq_factor))
        detail::throw_invalid("scaling.high_freq_factor", scaling.high_freq_factor,
                              "must be finite and > low_freq_factor");
      if (!std::isfinite(scaling.original_max_position) || !(scaling.original_max_position > 0.0))
        detail::throw_invalid("scaling.original_max_position", scaling.original_max_position,
                              "must be finite and > 0");
    }
  }

  /// The plain-value form the shared host/device math takes.
  [[nodiscard]] HYBRIDCACHE_HOST_DEVICE detail::rope_frequency frequency_params() const noexcept {
    return {static_cast<double>(rotary_dim),
            base,
            static_cast<int>(scaling.kind),
            scaling.factor,
            scaling.low_freq_factor,
            scaling.high_freq_factor,
            scaling.original_max_position};
  }

  /// Scaled frequency θ_i of pair i (no validation; call `validate()` once).
  [[nodiscard]] HYBRIDCACHE_HOST_DEVICE double theta(std::size_t i) const noexcept {
    return detail::rope_theta(frequency_params(), static_cast<double>(i));
  }

  /// All d_rot/2 scaled frequencies.
  /// @throws invalid_argument when the parameters are invalid.
  [[nodiscard]] std::vector<double> frequencies() const {
    validate();
    std::vector<double> out(rotary_dim / 2);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = theta(i);
    return out;
  }
};

HYBRIDCACHE_NAMESPACE_END
