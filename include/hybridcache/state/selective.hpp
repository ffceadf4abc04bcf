#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Mamba1's selective SSM as a transition family: an **elementwise** transition over the whole
/// dk×dv state (one decay per (state, channel) pair), its summary, composition and application.
///
/// Conventions follow mamba_ssm's `selective_scan_ref` (mamba_ssm/ops/selective_scan_interface.py)
/// mapped onto ours (keys × values, DESIGN.md §3): Mamba's state x ∈ ℝ^{D×N} (channels × state
/// size) is our Sᵀ, so dk = N (Mamba's B_t is our key k_t, C_t our query q_t) and dv = D (the
/// input u_t is our value v_t). Per token
///
///   S_t[n, c] = e^{Δ_t[c]·A[n, c]} · S_{t−1}[n, c] + k_t[n] · Δ_t[c] · v_t[c]
///
/// i.e. S_t = E_t ⊙ S_{t−1} + k_t (Δ_t ⊙ v_t)ᵀ with E_t = exp(A ⊙ 1Δ_tᵀ) (mamba's deltaA and
/// deltaB_u). Here `a` is stored keys × values (a[n·dv + c] = Mamba's A[c, n]) and Δ_t ≥ 0 is the
/// step after bias and softplus. The per-token log-decay Δ_t[c]·A[n, c] is formed in double: for
/// float inputs that product is exact (24 + 24 significant bits < 53).
///
/// The summary of a segment is (ℓ, S_C|0) with ℓ ∈ [−∞, 0]^{dk×dv} the summed log-decays and
///   S_C|0 = Σ_t e^{Σ_{j>t} ℓ_j} ⊙ k_t (Δ_t ⊙ v_t)ᵀ      (suffix sums in double, as for GLA).
/// It is the affine map S ↦ e^{ℓ} ⊙ S + S_C|0; composition adds log-decays:
///   compose(first, then) = (ℓ₁ + ℓ₂, e^{ℓ₂} ⊙ S₁ + S₂),   identity (0, 0).
///
/// **Promotion.** scalar ⊂ diagonal ⊂ elementwise: a scalar (ℓ) or diagonal (ℓ_r) summary is the
/// elementwise one with ℓ broadcast over the row (and column), so composing either with an
/// elementwise summary gives an elementwise summary. An elementwise and a dense transition do not
/// compose into either family (their product is a general linear map of the dk·dv state, which
/// no model caches), so that composition throws; no model layer mixes them.
///
/// There is no separate chunked path: the closed form above is already one pass of O(L·dk·dv)
/// with no inverse (the transition is elementwise), which is what a chunked kernel computes.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/summary.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {
struct elementwise_access;
}  // namespace detail

/// One head's (one channel group's) selective-SSM inputs, token-major and contiguous.
/// @tparam Real float or double.
template <class Real>
struct selective_inputs {
  std::size_t length = 0;    ///< tokens L
  std::size_t dk = 0;        ///< state size N (rows of S)
  std::size_t dv = 0;        ///< channels D (columns of S)
  std::span<const Real> k;   ///< L·dk: Mamba's B_t
  std::span<const Real> v;   ///< L·dv: Mamba's input u_t
  std::span<const Real> dt;  ///< L·dv: Δ_t ≥ 0 (after bias and softplus)
  std::span<const Real> a;   ///< dk·dv: A ≤ 0, keys × values (a[n·dv + c] = A_mamba[c, n])

  /// Tokens [begin, end) as a view of the same arrays (`a` is shared).
  /// @throws invalid_argument if the range is not within [0, length].
  [[nodiscard]] selective_inputs slice(std::size_t begin, std::size_t end) const {
    if (begin > end || end > length)
      hybridcache::detail::throw_invalid(
          "slice", std::to_string(begin) + ".." + std::to_string(end),
          "range must lie within [0, " + std::to_string(length) + "]");
    selective_inputs r = *this;
    r.length = end - begin;
    r.k = k.subspan(begin * dk, r.length * dk);
    r.v = v.subspan(begin * dv, r.length * dv);
    r.dt = dt.subspan(begin * dv, r.length * dv);
    return r;
  }
};

/// The (e^{ℓ}, S_C|0) summary of a selective-SSM segment: elementwise log-decays ℓ (dk·dv, double)
/// and the zero-start end state (dk·dv, `Real`), both row-major keys × values.
template <class Real>
class elementwise_summary {
  static_assert(std::is_same_v<Real, float> || std::is_same_v<Real, double>,
                "elementwise_summary<Real>: Real must be float or double");

 public:
  using value_type = Real;

  elementwise_summary() = default;

  /// The identity (ℓ = 0, S = 0) of a dk×dv head.
  /// @throws invalid_argument if dk or dv is 0.
  static elementwise_summary identity(std::size_t dk, std::size_t dv) {
    check_dims(dk, dv);
    return elementwise_summary(0, dk, dv, std::vector<double>(dk * dv, 0.0),
                               std::vector<Real>(dk * dv, Real(0)));
  }

  /// A summary from its parts.
  /// @throws invalid_argument on bad sizes, log-decays > 0 / NaN or a non-finite state.
  static elementwise_summary make(std::size_t dk, std::size_t dv, std::size_t length,
                                  std::vector<double> log_decay, std::vector<Real> end_state) {
    check_dims(dk, dv);
    if (log_decay.size() != dk * dv)
      hybridcache::detail::throw_invalid("log_decay.size()", log_decay.size(),
                                         "must equal dk*dv = " + std::to_string(dk * dv));
    for (std::size_t i = 0; i < log_decay.size(); ++i)
      if (!(log_decay[i] <= 0.0))
        hybridcache::detail::throw_invalid(hybridcache::detail::indexed("log_decay", i),
                                           log_decay[i], "log-decays must be <= 0 (or -inf)");
    if (end_state.size() != dk * dv)
      hybridcache::detail::throw_invalid("end_state.size()", end_state.size(),
                                         "must equal dk*dv = " + std::to_string(dk * dv));
    detail::check_finite(std::span<const Real>(end_state), "end_state");
    return elementwise_summary(length, dk, dv, std::move(log_decay), std::move(end_state));
  }

  [[nodiscard]] std::size_t length() const noexcept { return length_; }
  [[nodiscard]] std::size_t dk() const noexcept { return dk_; }
  [[nodiscard]] std::size_t dv() const noexcept { return dv_; }
  /// ℓ: dk·dv summed log-decays, row-major keys × values.
  [[nodiscard]] std::span<const double> log_decay() const noexcept { return log_decay_; }
  /// S_C|0: dk·dv values, row-major keys × values.
  [[nodiscard]] std::span<const Real> end_state() const noexcept { return state_; }

 private:
  friend struct detail::elementwise_access;
  elementwise_summary(std::size_t length, std::size_t dk, std::size_t dv, std::vector<double> ld,
                      std::vector<Real> st)
      : length_(length), dk_(dk), dv_(dv), log_decay_(std::move(ld)), state_(std::move(st)) {}
  static void check_dims(std::size_t dk, std::size_t dv) {
    if (dk == 0) hybridcache::detail::throw_invalid("dk", dk, "must be >= 1");
    if (dv == 0) hybridcache::detail::throw_invalid("dv", dv, "must be >= 1");
  }

  std::size_t length_ = 0, dk_ = 0, dv_ = 0;
  std::vector<double> log_decay_;
  std::vector<Real> state_;
};

namespace detail {
/// The library's own constructor (no validation: callers guarantee the invariants).
struct elementwise_access {
  template <class Real>
  static elementwise_summary<Real> make(std::size_t length, std::size_t dk, std::size_t dv,
                                        std::vector<double> ld, std::vector<Real> st) {
    return elementwise_summary<Real>(length, dk, dv, std::move(ld), std::move(st));
  }
};
}  // namespace detail

namespace detail {

/// Validates shapes and values of selective-SSM inputs.
/// @throws invalid_argument naming the field and the bad value.
template <class Real>
void validate(const selective_inputs<Real>& in) {
  check_family_shape<Real>(in.dk, in.dv,
                           {{"k", in.k.size(), in.length * in.dk, "length*dk"},
                            {"v", in.v.size(), in.length * in.dv, "length*dv"},
                            {"dt", in.dt.size(), in.length * in.dv, "length*dv"},
                            {"a", in.a.size(), in.dk * in.dv, "dk*dv"}});
  check_finite(in.k, "k");
  check_finite(in.v, "v");
  for (std::size_t i = 0; i < in.dt.size(); ++i)
    if (!(in.dt[i] >= Real(0)) || !std::isfinite(in.dt[i]))
      throw_invalid(indexed("dt", i), in.dt[i], "steps must be finite and >= 0");
  for (std::size_t i = 0; i < in.a.size(); ++i)
    if (!(in.a[i] <= Real(0)) || !std::isfinite(in.a[i]))
      throw_invalid(indexed("a", i), in.a[i], "A must be finite and <= 0 (decays lie in [0, 1])");
}

/// The log-decay Δ_t[c]·A[n, c] of one element, in double (exact for float inputs).
template <class Real>
inline double selective_log_decay(const selective_inputs<Real>& in, std::size_t t, std::size_t n,
                                  std::size_t c) noexcept {
  return static_cast<double>(in.dt[t * in.dv + c]) * static_cast<double>(in.a[n * in.dv + c]);
}

/// Advances the dk×dv state `s` over tokens [begin, end): S ← E_t ⊙ S + k_t (Δ_t ⊙ v_t)ᵀ.
template <class Real>
void advance(const selective_inputs<Real>& in, std::size_t begin, std::size_t end,
             Real* s) noexcept {
  const std::size_t dk = in.dk, dv = in.dv;
  for (std::size_t t = begin; t < end; ++t) {
    const Real* k = in.k.data() + t * dk;
    const Real* v = in.v.data() + t * dv;
    const Real* d = in.dt.data() + t * dv;
    for (std::size_t n = 0; n < dk; ++n) {
      Real* row = s + n * dv;
      for (std::size_t c = 0; c < dv; ++c) {
        const Real e = static_cast<Real>(decay_factor(selective_log_decay(in, t, n, c)));
        row[c] = e * row[c] + k[n] * (d[c] * v[c]);
      }
    }
  }
}

}  // namespace detail

/// The summary (ℓ, S_C|0) of a selective-SSM segment by the closed form in the file comment.
/// @returns an elementwise summary of `in.length` tokens (the identity for length 0).
/// @throws invalid_argument on mismatched sizes, non-finite inputs, Δ < 0 or A > 0.
///
/// Example (N = 1, D = 1, two tokens, A = −1, Δ = 0.5):
/// @code
///   std::vector<double> k{1, 1}, v{2, 2}, dt{0.5, 0.5}, a{-1};
///   hybridcache::selective_inputs<double> in{2, 1, 1, k, v, dt, a};
///   auto s = hybridcache::summarize(in);  // ℓ = −1, S = e^{−0.5}·1 + 1
/// @endcode
template <class Real>
elementwise_summary<Real> summarize(const selective_inputs<Real>& in) {
  detail::validate(in);
  const std::size_t dk = in.dk, dv = in.dv;
  std::vector<double> ld(dk * dv, 0.0);  // running suffix sums Σ_{j>t} ℓ_j
  std::vector<Real> st(dk * dv, Real(0));
  for (std::size_t t = in.length; t-- > 0;) {
    const Real* k = in.k.data() + t * dk;
    const Real* v = in.v.data() + t * dv;
    const Real* d = in.dt.data() + t * dv;
    for (std::size_t n = 0; n < dk; ++n)
      for (std::size_t c = 0; c < dv; ++c) {
        const std::size_t i = n * dv + c;
        st[i] += static_cast<Real>(detail::decay_factor(ld[i])) * (k[n] * (d[c] * v[c]));
        ld[i] += detail::selective_log_decay(in, t, n, c);
      }
  }
  return detail::elementwise_access::make<Real>(in.length, dk, dv, std::move(ld), std::move(st));
}

/// Runs the selective SSM token by token from `initial_state` (dk·dv) and returns the end state.
/// @throws invalid_argument on bad inputs or a mis-sized / non-finite initial state.
template <class Real>
std::vector<Real> run_recurrence(const selective_inputs<Real>& in,
                                 std::span<const std::type_identity_t<Real>> initial_state) {
  detail::validate(in);
  detail::check_initial_state(initial_state, in.dk, in.dv, "initial_state");
  std::vector<Real> s(initial_state.begin(), initial_state.end());
  detail::advance(in, 0, in.length, s.data());
  return s;
}

namespace detail {
template <class Real>
void check_compatible(const elementwise_summary<Real>& a, std::size_t dk, std::size_t dv,
                      std::string_view name) {
  if (a.dk() == 0)
    throw_invalid(std::string(name) + ".dk()", a.dk(),
                  "empty (default-constructed) summary; use identity(dk, dv)");
  if (a.dk() != dk || a.dv() != dv)
    throw_invalid(
        std::string(name) + ".shape", std::to_string(a.dk()) + "x" + std::to_string(a.dv()),
        "summaries must share dk x dv = " + std::to_string(dk) + "x" + std::to_string(dv));
}

/// A scalar/diagonal summary as elementwise log-decays; throws for a dense one.
template <class Real>
std::vector<double> elementwise_log_decay(const segment_summary<Real>& s, std::string_view name) {
  if (s.dk() == 0)
    throw_invalid(std::string(name) + ".dk()", 0,
                  "empty (default-constructed) summary; use identity(dk, dv)");
  if (s.family() == transition_family::dense)
    throw_invalid(std::string(name) + ".family()", std::string(to_string(s.family())),
                  "a dense transition does not compose with an elementwise (selective SSM) one");
  const auto ld = s.log_decay();
  std::vector<double> out(s.dk() * s.dv());
  for (std::size_t n = 0; n < s.dk(); ++n)
    for (std::size_t c = 0; c < s.dv(); ++c) out[n * s.dv() + c] = ld[ld.size() == 1 ? 0 : n];
  return out;
}

/// (ℓ₁ + ℓ₂, e^{ℓ₂} ⊙ S₁ + S₂).
template <class Real>
elementwise_summary<Real> compose_elementwise(std::size_t length, std::size_t dk, std::size_t dv,
                                              std::span<const double> l1, std::span<const Real> s1,
                                              std::span<const double> l2,
                                              std::span<const Real> s2) {
  std::vector<double> ld(dk * dv);
  std::vector<Real> st(dk * dv);
  for (std::size_t i = 0; i < dk * dv; ++i) {
    ld[i] = l1[i] + l2[i];
    st[i] = static_cast<Real>(decay_factor(l2[i])) * s1[i] + s2[i];
  }
  return elementwise_access::make<Real>(length, dk, dv, std::move(ld), std::move(st));
}
}  // namespace detail

/// The summary of "`first`, then `then`" for two elementwise summaries.
/// @throws invalid_argument if the shapes differ or a summary is empty.
template <class Real>
elementwise_summary<Real> compose(const elementwise_summary<Real>& first,
                                  const elementwise_summary<Real>& then) {
  detail::check_compatible(first, first.dk(), first.dv(), "first");
  detail::check_compatible(then, first.dk(), first.dv(), "then");
  return detail::compose_elementwise<Real>(first.length() + then.length(), first.dk(), first.dv(),
                                           first.log_decay(), first.end_state(), then.log_decay(),
                                           then.end_state());
}

/// A scalar or diagonal summary, then an elementwise one (promotion to elementwise).
/// @throws invalid_argument if `first` is dense or empty, or the shapes differ.
template <class Real>
elementwise_summary<Real> compose(const segment_summary<Real>& first,
                                  const elementwise_summary<Real>& then) {
  const auto l1 = detail::elementwise_log_decay(first, "first");
  detail::check_compatible(then, first.dk(), first.dv(), "then");
  return detail::compose_elementwise<Real>(first.length() + then.length(), first.dk(), first.dv(),
                                           l1, first.end_state(), then.log_decay(),
                                           then.end_state());
}

/// An elementwise summary, then a scalar or diagonal one (promotion to elementwise).
/// @throws invalid_argument if `then` is dense or empty, or the shapes differ.
template <class Real>
elementwise_summary<Real> compose(const elementwise_summary<Real>& first,
                                  const segment_summary<Real>& then) {
  const auto l2 = detail::elementwise_log_decay(then, "then");
  detail::check_compatible(first, then.dk(), then.dv(), "first");
  return detail::compose_elementwise<Real>(first.length() + then.length(), then.dk(), then.dv(),
                                           first.log_decay(), first.end_state(), l2,
                                           then.end_state());
}

/// e^{ℓ} ⊙ prefix_state + S_C|0 (HYPIC eq. 4 for the elementwise family).
/// @throws invalid_argument on a mis-sized or non-finite prefix state or an empty summary.
template <class Real>
std::vector<Real> apply(const elementwise_summary<Real>& s,
                        std::span<const std::type_identity_t<Real>> prefix_state) {
  detail::check_compatible(s, s.dk(), s.dv(), "summary");
  detail::check_initial_state(prefix_state, s.dk(), s.dv(), "prefix_state");
  std::vector<Real> out(s.dk() * s.dv());
  const auto ld = s.log_decay();
  const auto st = s.end_state();
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<Real>(detail::decay_factor(ld[i])) * prefix_state[i] + st[i];
  return out;
}

HYBRIDCACHE_NAMESPACE_END
