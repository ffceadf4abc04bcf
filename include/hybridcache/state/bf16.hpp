#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// bfloat16 storage with fp32 compute: segment summaries stored in bf16 (half the bytes of fp32
/// in a cache pool) and applied in fp32, and `round_to_bf16`. The storage type is the library's
/// `hybridcache::bfloat16` (numeric.hpp: round to nearest even, host/device). A bf16-state
/// overload of `run_recurrence` lives in recurrence.hpp.
///
/// Measured drift (tests/state/bf16_test.cpp, "bf16 drift"; numbers in docs/state.md): with
/// the state kept in bf16 between tokens and each token computed in fp32, the relative Frobenius
/// error against the double reference over 2k–32k steps stays within `bf16_drift_bound`: a few
/// bf16 half-ulps (2⁻⁹ ≈ 0.2 %) for decaying and delta-rule variants, growing like √steps only
/// for ungated additive attention, whose state never forgets.
///
/// Log-decays stay in double: they are 1 or dk numbers and carry the long-segment accuracy
/// (summary.hpp). Converting back gives an fp32 summary whose end state and dense transition are
/// the bf16-rounded values.

#include <cstddef>
#include <span>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/numeric.hpp"
#include "hybridcache/state/compose.hpp"
#include "hybridcache/state/summary.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// fp32 → bf16 → fp32: the value a bf16 store keeps.
HYBRIDCACHE_HOST_DEVICE inline float round_to_bf16(float f) noexcept {
  return static_cast<float>(bfloat16(f));
}

/// A segment summary with bf16 storage (see the file comment).
struct bf16_summary {
  transition_family family = transition_family::scalar;
  std::size_t length = 0;
  std::size_t dk = 0;
  std::size_t dv = 0;
  std::vector<double> log_decay;      ///< 1 (scalar), dk (diagonal), 0 (dense)
  std::vector<bfloat16> transition;   ///< dk·dk (dense only)
  std::vector<bfloat16> end_state;    ///< dk·dv

  /// Bytes of bulk storage (states and transitions, not the bookkeeping).
  [[nodiscard]] std::size_t bytes() const noexcept {
    return (transition.size() + end_state.size()) * sizeof(bfloat16) +
           log_decay.size() * sizeof(double);
  }
};

/// Rounds an fp32 summary to bf16 storage (round to nearest even).
inline bf16_summary to_bf16(const segment_summary<float>& s) {
  bf16_summary b;
  b.family = s.family();
  b.length = s.length();
  b.dk = s.dk();
  b.dv = s.dv();
  b.log_decay.assign(s.log_decay().begin(), s.log_decay().end());
  if (s.family() == transition_family::dense) {
    const auto t = s.transition();
    b.transition.resize(t.size());
    for (std::size_t i = 0; i < t.size(); ++i) b.transition[i] = bfloat16(t[i]);
  }
  const auto st = s.end_state();
  b.end_state.resize(st.size());
  for (std::size_t i = 0; i < st.size(); ++i) b.end_state[i] = bfloat16(st[i]);
  return b;
}

/// The fp32 summary holding the bf16 values exactly.
/// @throws invalid_argument if the stored sizes are inconsistent.
inline segment_summary<float> to_float(const bf16_summary& b) {
  std::vector<float> st(b.end_state.size());
  for (std::size_t i = 0; i < st.size(); ++i) st[i] = static_cast<float>(b.end_state[i]);
  switch (b.family) {
    case transition_family::scalar:
      if (b.log_decay.size() != 1)
        detail::throw_invalid("log_decay.size()", b.log_decay.size(), "scalar summaries keep 1");
      return segment_summary<float>::scalar(b.dk, b.dv, b.length, b.log_decay[0], std::move(st));
    case transition_family::diagonal:
      return segment_summary<float>::diagonal(b.dk, b.dv, b.length, b.log_decay, std::move(st));
    case transition_family::dense: {
      std::vector<float> t(b.transition.size());
      for (std::size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(b.transition[i]);
      return segment_summary<float>::dense(b.dk, b.dv, b.length, std::move(t), std::move(st));
    }
  }
  detail::throw_invalid("family", static_cast<int>(b.family), "unknown family");
}

/// T_C·prefix + S_C|0 with bf16-stored (T_C, S_C|0) and fp32 arithmetic.
inline std::vector<float> apply(const bf16_summary& b, std::span<const float> prefix_state) {
  return hybridcache::apply(to_float(b), prefix_state);
}

HYBRIDCACHE_NAMESPACE_END
