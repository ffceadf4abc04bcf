#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// RoPE re-rotation of scalar-family states (HYPIC §4.2, eq. 7).
///
/// Some scalar-decay layers (e.g. Ring-2.5) rotate K inside the layer: u_i = R(p_i) k_i v_iᵀ.
/// Because T_i = e^{g_i} I commutes with every rotation and R(a + b) = R(a)R(b), the end state of
/// a segment whose first token sits at position b is the one computed at position a, rotated:
///   S_{C|b} = R(b − a)·S_{C|a}.
/// The rotation acts on the key rows of the K-first state. The layer's RoPE is described by the
/// rope component's `rope_params` (rope/params.hpp; DESIGN.md §3): θ_i = base^{−2i/d_rot} with
/// linear or llama3 frequency scaling, half-split (NeoX) or interleaved (GPT-J) pairs, partial
/// rotary dims (rows ≥ d_rot untouched); the angle offset·θ_i is formed in double and reduced
/// before sin/cos (`detail::rope_reduced_angle`), so offsets of 10⁶ positions keep fp32 accuracy.
/// The diagonal and dense families do not commute with R, so re-rotating them is an error.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/rope/params.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/summary.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

namespace detail {

inline void check_rope(const rope_params& p, std::size_t dk) {
  p.validate();
  if (p.head_dim != dk)
    throw_invalid("rope.head_dim", p.head_dim,
                  "must equal the state's dk = " + std::to_string(dk) + " (RoPE acts on keys)");
}

}  // namespace detail

/// Rotates a dk×dv K-first state in place by R(offset): S ← R(offset)·S.
/// @param offset b − a, the position shift (may be negative).
/// @throws invalid_argument on bad RoPE parameters, head_dim ≠ dk, or a state of the wrong size.
template <class Real>
void rerotate_state(std::span<Real> state, std::size_t dk, std::size_t dv, std::int64_t offset,
                    const rope_params& rope) {
  detail::check_rope(rope, dk);
  const std::size_t n = checked_mul(dk, dv, "dk", "dv");  // a wrapped product could match
  if (state.size() != n)
    detail::throw_invalid("state.size()", state.size(), "must equal dk*dv = " + std::to_string(n));
  detail::rope_rotate_rows(state.data(), dv, rope.frequency_params(), rope.rotary_dim,
                           rope.layout == rope_layout::interleaved, static_cast<double>(offset));
}

/// A scalar-family summary moved by `offset` positions: (T_C, R(offset)·S_C|a). T_C = e^{ℓ}I is
/// unchanged (it commutes with R).
/// @throws invalid_argument if the summary is not scalar-family (eq. 7 needs T to commute with R)
///         or the config is bad.
template <class Real>
segment_summary<Real> rerotate(const segment_summary<Real>& s, std::int64_t offset,
                               const rope_params& rope) {
  if (s.family() != transition_family::scalar || s.dk() == 0)
    detail::throw_invalid("summary.family()", std::string(to_string(s.family())),
                          "RoPE re-rotation (HYPIC eq. 7) is exact only for scalar-family "
                          "summaries, whose transition commutes with the rotation");
  segment_summary<Real> out = s;
  auto& st = detail::summary_access::state(out);
  rerotate_state(std::span<Real>(st), s.dk(), s.dv(), offset, rope);
  return out;
}

HYBRIDCACHE_NAMESPACE_END
