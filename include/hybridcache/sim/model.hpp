#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Model shapes (what one stored state costs in bytes) and the prefill cost model (what
/// recomputing tokens costs in time) used by the simulations.
///
/// **State bytes.** A hybrid stack has `linear_layers` recurrent layers, each keeping one
/// dk×dv state per value head, and `attention_layers` attention layers keeping K and V per token:
///
///     checkpoint_bytes   = linear_layers · linear_heads · dk · dv · bytes_per_element
///     kv_bytes_per_token = attention_layers · 2 · kv_heads · head_dim · bytes_per_element
///
/// (the short causal-convolution state, kernel 4, is < 1 % of the recurrent state and is left
/// out). The presets *resemble* two public models; their numbers are assumptions taken from the
/// published configurations as we read them, not measurements:
///
/// | preset | layers (linear + attention) | linear heads × dk × dv | KV heads × head dim | dtype |
/// |---|---|---|---|---|
/// | `qwen3_5_0_8b` (≈ Qwen3.5-0.8B) | 18 Gated DeltaNet + 6 attention | 16 × 128 × 128 | 2 × 256 |
/// bf16 | | `qwen3_next_80b_a3b` (≈ Qwen3-Next-80B-A3B) | 36 Gated DeltaNet + 12 attention | 32 ×
/// 128 × 128 | 2 × 256 | bf16 |
///
/// giving 9 MiB and 36 MiB per recurrent checkpoint and 12 KiB and 24 KiB of KV per token.
///
/// **Prefill cost.** The simulations use the library's one prefill model,
/// `hybridcache::prefill_cost_model` (<hybridcache/dispatch/cost_model.hpp>):
///
///     cost(n, p) = overhead + a·n + b·n·(n + 2p)     (n new tokens after p cached ones)
///
/// For a stack of linear and attention layers whose attention costs β per (query, key) pair and
/// whose per-token work (projections, MLP, chunked recurrence) sums to α over the whole stack,
/// prefill costs α·n + β·(n·p + n(n+1)/2), which is the model with a = α + β/2, b = β/2.
///
/// The preset `hypic_fig14_prefill()` is calibrated to HYPIC's Fig. 14 measurements (a
/// Qwen3.5-35B-A3B-like stack, 30 linear + 10 attention layers, one H20 instance): one 2.4k-token
/// segment prefills in 176.8 ms (1061 ms / 6 segments at 2 workers) and the 26.4k-token prompt in
/// 2321 ms. Solving α·n + β·n(n+1)/2 through both points gives α = 0.072241 ms/token and
/// β = 1.1875e-6 ms/pair for the whole stack. The combine side (HYPIC §4.4,
/// `hypic_fig14_composition`): 2.3 ms per composed segment (Fig. 12b's incremental cost), the seam
/// windows recomputed through `cost`, a fixed 45 ms of assembly and 34 ms of cross-node transfer
/// when more than one worker is used (Fig. 14: comm 27–41 ms, combine 85–88 ms).

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

#include "hybridcache/config.hpp"
#include "hybridcache/dispatch/cost_model.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The shape of a hybrid model, for state-size accounting (see the file comment).
struct model_shape {
  std::string_view name;
  std::size_t linear_layers = 0;
  std::size_t attention_layers = 0;
  std::size_t linear_heads = 0;
  std::size_t linear_key_dim = 0;
  std::size_t linear_value_dim = 0;
  std::size_t kv_heads = 0;
  std::size_t head_dim = 0;
  std::size_t bytes_per_element = 2;

  /// Bytes of one recurrent checkpoint (all linear layers).
  [[nodiscard]] constexpr double checkpoint_bytes() const noexcept {
    return static_cast<double>(linear_layers) * static_cast<double>(linear_heads) *
           static_cast<double>(linear_key_dim) * static_cast<double>(linear_value_dim) *
           static_cast<double>(bytes_per_element);
  }
  /// Bytes of attention KV per token (all attention layers).
  [[nodiscard]] constexpr double kv_bytes_per_token() const noexcept {
    return static_cast<double>(attention_layers) * 2.0 * static_cast<double>(kv_heads) *
           static_cast<double>(head_dim) * static_cast<double>(bytes_per_element);
  }
};

/// ≈ Qwen3.5-0.8B (assumed shape, see the file comment).
inline constexpr model_shape qwen3_5_0_8b{"qwen3.5-0.8b", 18, 6, 16, 128, 128, 2, 256, 2};
/// ≈ Qwen3-Next-80B-A3B (assumed shape, see the file comment).
inline constexpr model_shape qwen3_next_80b_a3b{
    "qwen3-next-80b-a3b", 36, 12, 32, 128, 128, 2, 256, 2};

/// The presets, for lookup by name.
inline constexpr std::array<model_shape, 2> model_presets{qwen3_5_0_8b, qwen3_next_80b_a3b};

/// The preset called `name`, if any.
constexpr std::optional<model_shape> find_model(std::string_view name) noexcept {
  for (const auto& m : model_presets) {
    if (m.name == name) return m;
  }
  return std::nullopt;
}

/// HYPIC Fig. 14's prefill calibration (see the file comment): α = 0.072241 ms/token and
/// β = 1.1875e-6 ms/(query, key) pair, as a = α + β/2, b = β/2. Times in milliseconds.
inline prefill_cost_model hypic_fig14_prefill() noexcept {
  constexpr double alpha = 0.072241, beta = 1.1875e-6;
  prefill_cost_model m;
  m.per_token = alpha + beta / 2.0;
  m.per_token_sq = beta / 2.0;
  return m;
}

/// The costs of composing cached segments that are not prefill (HYPIC §4.4), in milliseconds.
struct composition_costs {
  double compose_per_segment = 0.0;  ///< to compose one cached segment's state
  double combine_fixed = 0.0;        ///< fixed assembly work at the combine node
  double transfer_fixed = 0.0;       ///< cross-node transfer when more than one worker is used
};

/// HYPIC Fig. 14's composition costs (see the file comment).
inline constexpr composition_costs hypic_fig14_composition{2.3, 45.0, 34.0};

HYBRIDCACHE_NAMESPACE_END
