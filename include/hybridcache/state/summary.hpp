#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `segment_summary<Real>`: the cached pair (T_C, S_C|0) of one segment of one head.
///
/// T_C = T_L ⋯ T_1 is the segment-cumulative transition and S_C|0 the end state from S_0 = 0
/// (HYPIC §3.1, eq. 4). Summaries are affine maps S ↦ T_C·S + S_C|0 and form a monoid under
/// composition (DESIGN.md §3): (T₂, S₂)∘(T₁, S₁) = (T₂T₁, T₂S₁ + S₂), identity (I, 0).
///
/// Storage by family (HYPIC Table 3):
/// - scalar:   one log-decay ℓ (T_C = e^{ℓ} I), as `double`;
/// - diagonal: dk log-decays (T_C = Diag(e^{ℓ_r})), as `double`;
/// - dense:    the dk×dk matrix T_C, row-major, in `Real`.
/// Log-decays are sums of per-token log-gates, so a 10⁵-token segment whose gates are all near
/// 1 (ℓ ≈ −10⁻²) keeps full precision and one whose gates are near 0 gives ℓ ≈ −10⁵·c (its
/// transition is correctly 0 when exponentiated) without ever forming 0·∞ or 0/0.
///
/// `transition()` materialises T_C as a dk×dk matrix for every family on first use (thread-safe,
/// cached); the algebra itself never needs that matrix for the scalar and diagonal families.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

template <class Real>
class segment_summary;

namespace detail {
struct summary_access;  // grants the algorithms in state/ write access to a summary's buffers
}  // namespace detail

/// The (T_C, S_C|0) pair of a segment (see the file comment).
/// @tparam Real float or double: the element type of the end state and of a dense T_C.
template <class Real>
class segment_summary {
  static_assert(std::is_same_v<Real, float> || std::is_same_v<Real, double>,
                "segment_summary<Real>: Real must be float or double");

 public:
  using value_type = Real;

  /// An empty 0×0 summary (only assignable); use `identity(dk, dv)` for the monoid identity.
  segment_summary() = default;

  /// The monoid identity (I, 0) of a dk×dv head: scalar family, ℓ = 0, length 0.
  /// @throws invalid_argument if dk or dv is 0.
  static segment_summary identity(std::size_t dk, std::size_t dv) {
    check_dims(dk, dv);
    return segment_summary(transition_family::scalar, 0, dk, dv, std::vector<double>(1, 0.0), {},
                           std::vector<Real>(dk * dv, Real(0)));
  }

  /// A scalar-family summary (T_C = e^{log_decay} I).
  /// @throws invalid_argument on bad sizes, non-finite states or log_decay > 0 / NaN.
  static segment_summary scalar(std::size_t dk, std::size_t dv, std::size_t length,
                                double log_decay, std::vector<Real> end_state) {
    check_dims(dk, dv);
    check_state(end_state, dk, dv);
    std::vector<double> ld{log_decay};
    check_log_decay(ld);
    return segment_summary(transition_family::scalar, length, dk, dv, std::move(ld), {},
                           std::move(end_state));
  }

  /// A diagonal-family summary (T_C = Diag(e^{log_decay[r]}), dk entries).
  /// @throws invalid_argument on bad sizes or values.
  static segment_summary diagonal(std::size_t dk, std::size_t dv, std::size_t length,
                                  std::vector<double> log_decay, std::vector<Real> end_state) {
    check_dims(dk, dv);
    if (log_decay.size() != dk)
      hybridcache::detail::throw_invalid("log_decay.size()", log_decay.size(),
                                         "a diagonal summary needs dk = " + std::to_string(dk) +
                                             " log-decays");
    check_log_decay(log_decay);
    check_state(end_state, dk, dv);
    return segment_summary(transition_family::diagonal, length, dk, dv, std::move(log_decay), {},
                           std::move(end_state));
  }

  /// A dense-family summary (T_C given as a dk×dk row-major matrix).
  /// @throws invalid_argument on bad sizes or non-finite values.
  static segment_summary dense(std::size_t dk, std::size_t dv, std::size_t length,
                               std::vector<Real> transition, std::vector<Real> end_state) {
    check_dims(dk, dv);
    if (transition.size() != dk * dk)
      hybridcache::detail::throw_invalid("transition.size()", transition.size(),
                                         "must equal dk*dk = " + std::to_string(dk * dk));
    check_finite(std::span<const Real>(transition), "transition");
    check_state(end_state, dk, dv);
    return segment_summary(transition_family::dense, length, dk, dv, {}, std::move(transition),
                           std::move(end_state));
  }

  segment_summary(const segment_summary& o)
      : family_(o.family_),
        length_(o.length_),
        dk_(o.dk_),
        dv_(o.dv_),
        log_decay_(o.log_decay_),
        dense_(o.dense_),
        state_(o.state_) {}
  segment_summary(segment_summary&& o) noexcept
      : family_(o.family_),
        length_(o.length_),
        dk_(o.dk_),
        dv_(o.dv_),
        log_decay_(std::move(o.log_decay_)),
        dense_(std::move(o.dense_)),
        state_(std::move(o.state_)),
        materialised_(o.materialised_.exchange(nullptr)) {}
  segment_summary& operator=(const segment_summary& o) {
    if (this != &o) *this = segment_summary(o);
    return *this;
  }
  segment_summary& operator=(segment_summary&& o) noexcept {
    if (this != &o) {
      family_ = o.family_;
      length_ = o.length_;
      dk_ = o.dk_;
      dv_ = o.dv_;
      log_decay_ = std::move(o.log_decay_);
      dense_ = std::move(o.dense_);
      state_ = std::move(o.state_);
      delete materialised_.exchange(o.materialised_.exchange(nullptr));
    }
    return *this;
  }
  ~segment_summary() { delete materialised_.load(std::memory_order_acquire); }

  /// The transition family (scalar ⊂ diagonal ⊂ dense).
  [[nodiscard]] transition_family family() const noexcept { return family_; }
  /// Number of tokens summarised (0 for the identity).
  [[nodiscard]] std::size_t length() const noexcept { return length_; }
  [[nodiscard]] std::size_t dk() const noexcept { return dk_; }
  [[nodiscard]] std::size_t dv() const noexcept { return dv_; }

  /// S_C|0: dk·dv values, row-major (K-first).
  [[nodiscard]] std::span<const Real> end_state() const noexcept { return state_; }

  /// Log-decays: one (scalar family), dk (diagonal) or none (dense).
  [[nodiscard]] std::span<const double> log_decay() const noexcept { return log_decay_; }

  /// T_C as a dk×dk row-major matrix, for every family. Dense: the stored matrix. Scalar and
  /// diagonal: built from the log-decays on first call and cached (safe to call concurrently;
  /// the span stays valid while the summary lives and is not assigned to).
  [[nodiscard]] std::span<const Real> transition() const {
    if (family_ == transition_family::dense) return dense_;
    std::vector<Real>* m = materialised_.load(std::memory_order_acquire);
    if (m == nullptr) {
      auto* fresh = new std::vector<Real>(dk_ * dk_, Real(0));
      for (std::size_t r = 0; r < dk_; ++r)
        (*fresh)[r * dk_ + r] = static_cast<Real>(
            detail::decay_factor(log_decay_[family_ == transition_family::scalar ? 0 : r]));
      if (materialised_.compare_exchange_strong(m, fresh, std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
        m = fresh;
      } else {
        delete fresh;  // another thread won; `m` now holds its matrix
      }
    }
    return *m;
  }

  /// The decay factor e^{ℓ_r} of row r for scalar/diagonal summaries.
  [[nodiscard]] double decay(std::size_t r) const noexcept {
    HYBRIDCACHE_ASSERT(family_ != transition_family::dense, "decay() of a dense summary");
    return detail::decay_factor(log_decay_[family_ == transition_family::scalar ? 0 : r]);
  }

 private:
  friend struct detail::summary_access;

  segment_summary(transition_family f, std::size_t length, std::size_t dk, std::size_t dv,
                  std::vector<double> log_decay, std::vector<Real> dense, std::vector<Real> st)
      : family_(f),
        length_(length),
        dk_(dk),
        dv_(dv),
        log_decay_(std::move(log_decay)),
        dense_(std::move(dense)),
        state_(std::move(st)) {}

  // dk·dv (the state) and dk·dk (a dense transition, also materialised on demand for the other
  // families) must be representable and allocatable: checked before any buffer is sized.
  static void check_dims(std::size_t dk, std::size_t dv) {
    if (dk == 0) hybridcache::detail::throw_invalid("dk", dk, "must be >= 1");
    if (dv == 0) hybridcache::detail::throw_invalid("dv", dv, "must be >= 1");
    (void)checked_count<Real>(checked_mul(dk, dv, "dk", "dv"), "dk * dv");
    (void)checked_count<Real>(checked_mul(dk, dk, "dk", "dk"), "dk * dk");
  }
  static void check_state(const std::vector<Real>& s, std::size_t dk, std::size_t dv) {
    if (s.size() != dk * dv)
      hybridcache::detail::throw_invalid("end_state.size()", s.size(),
                                         "must equal dk*dv = " + std::to_string(dk * dv));
    check_finite(std::span<const Real>(s), "end_state");
  }
  static void check_log_decay(const std::vector<double>& ld) {
    for (std::size_t i = 0; i < ld.size(); ++i)
      if (!(ld[i] <= 0.0))
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed("log_decay", i), ld[i],
                                           "log-decays must be <= 0 (or -inf)");
  }
  template <class T>
  static void check_finite(std::span<const T> xs, std::string_view name) {
    detail::check_finite(xs, name);
  }

  transition_family family_ = transition_family::scalar;
  std::size_t length_ = 0;
  std::size_t dk_ = 0;
  std::size_t dv_ = 0;
  std::vector<double> log_decay_;  // 1 (scalar), dk (diagonal), 0 (dense)
  std::vector<Real> dense_;        // dk*dk (dense only)
  std::vector<Real> state_;        // dk*dv
  mutable std::atomic<std::vector<Real>*> materialised_{nullptr};
};

namespace detail {

/// Write access for the library's own algorithms (summarize, compose, rerotate, bf16).
struct summary_access {
  template <class Real>
  static segment_summary<Real> make(transition_family f, std::size_t length, std::size_t dk,
                                    std::size_t dv, std::vector<double> log_decay,
                                    std::vector<Real> dense, std::vector<Real> st) {
    return segment_summary<Real>(f, length, dk, dv, std::move(log_decay), std::move(dense),
                                 std::move(st));
  }
  template <class Real>
  static std::vector<Real>& state(segment_summary<Real>& s) noexcept {
    return s.state_;
  }
  template <class Real>
  static std::vector<Real>& dense(segment_summary<Real>& s) noexcept {
    return s.dense_;
  }
  /// Mutable log-decays; drops the cached materialised transition, which they determine.
  template <class Real>
  static std::vector<double>& log_decay(segment_summary<Real>& s) noexcept {
    delete s.materialised_.exchange(nullptr);
    return s.log_decay_;
  }
  template <class Real>
  static void set_length(segment_summary<Real>& s, std::size_t length) noexcept {
    s.length_ = length;
  }
};

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
