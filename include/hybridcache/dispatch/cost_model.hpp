#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Prefill cost of one segment, and the cost of shipping its outputs to the combine node.
///
/// HYPIC's LPT balances token counts |C_i| (eq. 9). Token count is the right load only when prefill
/// time is linear in length; attention-heavy stacks add a quadratic term, and every dispatched
/// segment pays a fixed launch/scheduling overhead. The model here is
///
///     cost(L)     = overhead + a·L + b·L²        (compute on a speed-1 worker)
///     transfer(L) = transfer_overhead + t·L      (send the segment's KV / (T_C, S_C|0) outputs)
///
/// with a = `per_token`, b = `per_token_sq`, t = `transfer_per_token`. A worker of speed s computes
/// in cost(L)/s. Units are the caller's (seconds, milliseconds, or "token equivalents" with a = 1).
///
/// Prefilling n new tokens after p cached ones (`cost(n, p)`) pays the same per-token work and the
/// quadratic term's increment, b·((p+n)² − p²) = b·n·(n + 2p):
///
///     cost(n, p) = overhead + a·n + b·n·(n + 2p),    cost(L, 0) = cost(L).
///
/// (A stack whose attention costs β per (query, key) pair, β·(n·p + n(n+1)/2), is this model with
/// b = β/2 and β/2 added to a; the simulator's HYPIC calibration is written that way.)
/// For a hybrid stack, a ≈ (per-layer linear cost summed over all layers) and b ≈ (attention
/// layers' quadratic cost); `hybrid_stack` builds that sum from per-layer-type counts.

#include <cmath>
#include <cstddef>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Cost of prefilling and transferring one segment of L tokens (see the file comment).
struct prefill_cost_model {
  double per_token = 1.0;           ///< a: linear cost per token
  double per_token_sq = 0.0;        ///< b: quadratic (attention score) cost per token²
  double overhead = 0.0;            ///< fixed cost per dispatched segment
  double transfer_per_token = 0.0;  ///< t: cost to ship one token's outputs to the combine node
  double transfer_overhead = 0.0;   ///< fixed cost per transfer

  /// Throws `invalid_argument` naming the first coefficient that is negative, NaN or infinite.
  void validate() const {
    check("per_token", per_token);
    check("per_token_sq", per_token_sq);
    check("overhead", overhead);
    check("transfer_per_token", transfer_per_token);
    check("transfer_overhead", transfer_overhead);
  }

  /// overhead + a·L + b·L² (no validation: call `validate()` once).
  [[nodiscard]] HYBRIDCACHE_HOST_DEVICE double cost(std::size_t tokens) const noexcept {
    const double l = static_cast<double>(tokens);
    return overhead + per_token * l + per_token_sq * l * l;
  }
  /// overhead + a·n + b·n·(n + 2p): prefill `new_tokens` after `prefix_tokens` cached ones (file
  /// comment); equals `cost(new_tokens)` for an empty prefix.
  [[nodiscard]] HYBRIDCACHE_HOST_DEVICE double cost(std::size_t new_tokens,
                                                    std::size_t prefix_tokens) const noexcept {
    const double n = static_cast<double>(new_tokens);
    const double p = static_cast<double>(prefix_tokens);
    return overhead + per_token * n + per_token_sq * n * (n + 2.0 * p);
  }
  /// transfer_overhead + t·L.
  [[nodiscard]] HYBRIDCACHE_HOST_DEVICE double transfer(std::size_t tokens) const noexcept {
    return transfer_overhead + transfer_per_token * static_cast<double>(tokens);
  }

  /// A model for a hybrid stack: `linear_layers` layers whose prefill is linear in L
  /// (Mamba2/GLA/DeltaNet, each costing `linear_layer_per_token` per token) and `attention_layers`
  /// full-attention layers (each `attention_layer_per_token` per token for projections/MLP plus
  /// `attention_layer_per_token_sq` per token² for the causal score/value products).
  /// @throws invalid_argument for a negative or non-finite coefficient.
  static prefill_cost_model hybrid_stack(std::size_t linear_layers, double linear_layer_per_token,
                                         std::size_t attention_layers,
                                         double attention_layer_per_token,
                                         double attention_layer_per_token_sq,
                                         double overhead = 0.0) {
    check("linear_layer_per_token", linear_layer_per_token);
    check("attention_layer_per_token", attention_layer_per_token);
    check("attention_layer_per_token_sq", attention_layer_per_token_sq);
    check("overhead", overhead);
    prefill_cost_model m;
    m.per_token = static_cast<double>(linear_layers) * linear_layer_per_token +
                  static_cast<double>(attention_layers) * attention_layer_per_token;
    m.per_token_sq = static_cast<double>(attention_layers) * attention_layer_per_token_sq;
    m.overhead = overhead;
    return m;
  }

 private:
  static void check(const char* name, double v) {
    if (!std::isfinite(v) || v < 0.0) detail::throw_invalid(name, v, "must be finite and >= 0");
  }
};

/// `model.cost(lengths[i])` for every segment: the input `lpt_assign` expects.
/// @throws invalid_argument when the model is invalid.
inline std::vector<double> segment_costs(std::span<const std::size_t> lengths,
                                         const prefill_cost_model& model) {
  model.validate();
  std::vector<double> out(lengths.size());
  for (std::size_t i = 0; i < lengths.size(); ++i) out[i] = model.cost(lengths[i]);
  return out;
}

HYBRIDCACHE_NAMESPACE_END
