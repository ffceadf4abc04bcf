#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Full/sparse hybrid attention with a layer threshold (SparseX §3.4, Algorithm 1 phases 1–3).
///
/// With L layers and a threshold ℓ* (the number of leading dense layers, SparseX's boundary):
///  - layers 0 .. ℓ*−2: `full` — every token is recomputed (dense contextualisation);
///  - layer ℓ*−1: `select` — still dense, and its non-reuse queries and keys give the sparse-Q
///    scores (Algorithm 1 lines 11–14 read Q^{ℓ*}, K^{ℓ*});
///  - layers ℓ* .. L−1: `sparse` — only R = I_nr ∪ S_key ∪ S_ov ∪ S_tail is recomputed; every other
///    token keeps its RoPE-aligned cached K/V (lines 18–23).
/// ℓ* = 0 ("sparse computation from layer 0", §3.4): layer 0 is the `select` layer and recomputes
/// only I_nr (the sparse-Q forward itself); layers 1.. are sparse. ℓ* = L: all layers dense.
/// SparseX sets ℓ* at 15–20% of the layers for small dense models and 10–15% for large or MoE
/// models; `threshold_for` turns such a fraction into a layer count.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/select/selection.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What a layer does in the hybrid plan.
enum class layer_mode : std::uint8_t { full, select, sparse };

/// Per-layer modes and recompute masks. The three distinct masks are stored once; `mask(l)`
/// returns the one layer l uses.
struct layer_plan {
  std::size_t threshold = 0;        ///< ℓ*: number of leading dense layers
  std::size_t selection_layer = 0;  ///< the layer whose attention yields the scores
  std::vector<layer_mode> modes;    ///< one per layer
  std::vector<std::uint8_t> all;    ///< every token (full layers)
  std::vector<std::uint8_t> sparse_q;   ///< I_nr only (the select layer when ℓ* = 0)
  std::vector<std::uint8_t> recompute;  ///< R (sparse layers)

  /// Recompute mask of layer `l` (1 = recompute token j at this layer).
  /// @throws invalid_argument when `l` is not a layer.
  [[nodiscard]] const std::vector<std::uint8_t>& mask(std::size_t l) const {
    if (l >= modes.size())
      detail::throw_invalid("layer", l, "out of range for " + std::to_string(modes.size()) + " layers");
    switch (modes[l]) {
      case layer_mode::full: return all;
      case layer_mode::select: return threshold == 0 ? sparse_q : all;
      case layer_mode::sparse: break;
    }
    return recompute;
  }
  /// Number of tokens recomputed at layer `l`.
  [[nodiscard]] std::size_t recompute_count(std::size_t l) const {
    std::size_t n = 0;
    for (auto m : mask(l)) n += m;
    return n;
  }
  /// Σ over layers of recomputed tokens, divided by L·T (1 = full recompute).
  [[nodiscard]] double recompute_fraction() const {
    if (modes.empty() || all.empty()) return 0.0;
    double total = 0.0;
    for (std::size_t l = 0; l < modes.size(); ++l) total += static_cast<double>(recompute_count(l));
    return total / (static_cast<double>(modes.size()) * static_cast<double>(all.size()));
  }
};

/// ℓ* = ceil(fraction · layers), e.g. `threshold_for(36, 0.15)` = 6.
/// @throws invalid_argument when `fraction` is not in [0, 1].
inline std::size_t threshold_for(std::size_t layers, double fraction) {
  if (!(fraction >= 0.0 && fraction <= 1.0))
    detail::throw_invalid("fraction", fraction, "must be in [0, 1]");
  return static_cast<std::size_t>(std::ceil(fraction * static_cast<double>(layers) - 1e-12));
}

/// Builds the plan for `layers` layers with threshold ℓ* = `threshold` from a selection.
/// @throws invalid_argument when `layers == 0`, `threshold > layers`, `layers` is absurd (more
///         than `max_allocation_bytes` of modes) or a `selection.non_reuse` index lies outside
///         `selection.recompute_mask`.
inline layer_plan make_layer_plan(std::size_t layers, std::size_t threshold,
                                  const token_selection& selection) {
  if (layers == 0) detail::throw_invalid("layers", layers, "must be > 0");
  (void)checked_count<layer_mode>(layers, "layers");
  for (std::size_t i = 0; i < selection.non_reuse.size(); ++i)
    if (selection.non_reuse[i] >= selection.recompute_mask.size())  // indexes sparse_q below
      detail::throw_invalid(
          detail::indexed("selection.non_reuse", i), selection.non_reuse[i],
          "must be < recompute_mask.size() = " + std::to_string(selection.recompute_mask.size()));
  if (threshold > layers)
    detail::throw_invalid("threshold", threshold, "must be <= layers = " + std::to_string(layers));
  layer_plan p;
  p.threshold = threshold;
  p.selection_layer = threshold == 0 ? 0 : threshold - 1;
  p.modes.assign(layers, layer_mode::sparse);
  for (std::size_t l = 0; l < threshold; ++l) p.modes[l] = layer_mode::full;
  if (threshold < layers || threshold == 0) p.modes[p.selection_layer] = layer_mode::select;
  const std::size_t t_len = selection.recompute_mask.size();
  p.all.assign(t_len, 1);
  p.sparse_q.assign(t_len, 0);
  for (std::size_t j : selection.non_reuse) p.sparse_q[j] = 1;
  p.recompute = selection.recompute_mask;
  return p;
}

HYBRIDCACHE_NAMESPACE_END
