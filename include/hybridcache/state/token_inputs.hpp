#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Per-token inputs of one linear-attention head and the variant they select.
///
/// The unified recurrence (HYPIC eq. 2, DESIGN.md §3) is S_i = T_i·S_{i−1} + u_i with a dk×dv
/// K-first state. What the caller passes decides the variant:
///
/// | rule      | log_gate            | family   | variant                  | T_i                      | u_i       |
/// |-----------|---------------------|----------|--------------------------|--------------------------|-----------|
/// | additive  | empty               | scalar   | plain linear attention   | I                        | k vᵀ      |
/// | additive  | length (scalar)     | scalar   | RetNet/Lightning, Mamba2 | e^{g_i} I                | k vᵀ      |
/// | additive  | length·dk (diag.)   | diagonal | GLA                      | Diag(e^{g_i})            | k vᵀ      |
/// | delta     | empty               | dense    | DeltaNet                 | I − β k kᵀ               | β k vᵀ    |
/// | delta     | length (scalar)     | dense    | Gated DeltaNet           | e^{g_i}(I − β k kᵀ)      | β k vᵀ    |
/// | delta     | length·dk (diag.)   | dense    | KDA                      | (I − β k kᵀ) Diag(e^{g}) | β k vᵀ    |
///
/// Gates are log-decays: finite and ≤ 0, or −∞ (decay exactly 0, a hard reset). When dk = 1 a
/// gate of `length` entries is read as scalar (the two readings coincide).

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// The write rule: additive (u = k vᵀ) or delta (T gains the factor I − β k kᵀ, u = β k vᵀ).
enum class transition_rule : std::uint8_t { additive = 0, delta = 1 };

/// Transition families, ordered by inclusion: scalar ⊂ diagonal ⊂ dense. Composition promotes to
/// the larger family (`promote`).
enum class transition_family : std::uint8_t { scalar = 0, diagonal = 1, dense = 2 };

/// The family of a composition: the larger of the two (scalar ∘ diagonal = diagonal,
/// anything ∘ dense = dense).
constexpr transition_family promote(transition_family a, transition_family b) noexcept {
  return a < b ? b : a;
}

/// Human-readable names, for messages and tools.
constexpr std::string_view to_string(transition_family f) noexcept {
  switch (f) {
    case transition_family::scalar:
      return "scalar";
    case transition_family::diagonal:
      return "diagonal";
    case transition_family::dense:
      return "dense";
  }
  return "?";
}
constexpr std::string_view to_string(transition_rule r) noexcept {
  return r == transition_rule::additive ? "additive" : "delta";
}

/// How the gate of a token_inputs is shaped.
enum class gate_kind : std::uint8_t { none = 0, scalar = 1, diagonal = 2 };

/// One head's per-token inputs; all arrays row-major and contiguous (token-major).
/// @tparam Real float or double.
template <class Real>
struct token_inputs {
  std::size_t length = 0;            ///< number of tokens L
  std::size_t dk = 0;                ///< key dimension (rows of the state)
  std::size_t dv = 0;                ///< value dimension (columns of the state)
  std::span<const Real> k;           ///< L·dk keys
  std::span<const Real> v;           ///< L·dv values
  std::span<const Real> beta;        ///< L write strengths for rule::delta, else empty
  std::span<const Real> log_gate;    ///< empty | L (scalar) | L·dk (diagonal) log-decays

  /// The gate's shape (assumes sizes already validated).
  [[nodiscard]] constexpr gate_kind gate() const noexcept {
    if (log_gate.empty()) return gate_kind::none;
    return log_gate.size() == length ? gate_kind::scalar : gate_kind::diagonal;
  }

  /// Tokens [begin, end) as a view of the same arrays.
  /// @throws invalid_argument if the range is not within [0, length].
  [[nodiscard]] token_inputs slice(std::size_t begin, std::size_t end) const {
    if (begin > end || end > length)
      detail::throw_invalid("slice", std::to_string(begin) + ".." + std::to_string(end),
                            "range must lie within [0, " + std::to_string(length) + "]");
    token_inputs r = *this;
    r.length = end - begin;
    r.k = k.subspan(begin * dk, r.length * dk);
    r.v = v.subspan(begin * dv, r.length * dv);
    if (!beta.empty()) r.beta = beta.subspan(begin, r.length);
    switch (gate()) {
      case gate_kind::none: break;
      case gate_kind::scalar: r.log_gate = log_gate.subspan(begin, r.length); break;
      case gate_kind::diagonal: r.log_gate = log_gate.subspan(begin * dk, r.length * dk); break;
    }
    return r;
  }
};

/// The family a rule and inputs produce (DESIGN.md §3 table).
template <class Real>
[[nodiscard]] constexpr transition_family family_of(const token_inputs<Real>& in,
                                                    transition_rule r) noexcept {
  if (r == transition_rule::delta) return transition_family::dense;
  return in.gate() == gate_kind::diagonal ? transition_family::diagonal : transition_family::scalar;
}

namespace detail {

template <class Real>
void check_finite(std::span<const Real> xs, std::string_view name) {
  for (std::size_t i = 0; i < xs.size(); ++i)
    if (!std::isfinite(xs[i])) throw_invalid(indexed(name, i), xs[i], "must be finite");
}

/// One array-size requirement of a family's inputs: `got` must equal `want` (= `what`).
struct size_requirement {
  std::string_view name;
  std::size_t got;
  std::size_t want;
  std::string_view what;
};

/// The preamble shared by the family validators (state/dplr.hpp, state/selective.hpp): `Real`
/// is float or double, dk ≥ 1, dv ≥ 1, and every array has its required size.
/// @throws invalid_argument naming "dk", "dv" or "<array>.size()" and the bad value.
template <class Real>
void check_family_shape(std::size_t dk, std::size_t dv,
                        std::initializer_list<size_requirement> sizes) {
  static_assert(std::is_floating_point_v<Real>,
                "family inputs<Real>: Real must be float or double");
  if (dk == 0) throw_invalid("dk", dk, "must be >= 1");
  if (dv == 0) throw_invalid("dv", dv, "must be >= 1");
  for (const auto& s : sizes)
    if (s.got != s.want)
      throw_invalid(std::string(s.name) + ".size()", s.got,
                    "must equal " + std::string(s.what) + " = " + std::to_string(s.want));
}

/// Log-gates must be ≤ 0 (decays in [0, 1]); −∞ is allowed (decay 0), NaN and +∞ are not.
template <class Real>
void check_log_gates(std::span<const Real> g, std::string_view name) {
  for (std::size_t i = 0; i < g.size(); ++i)
    if (!(g[i] <= Real(0)))
      throw_invalid(indexed(name, i), g[i], "log-gates must be <= 0 (or -inf); decays lie in [0, 1]");
}

/// Validates shapes and values of `in` for rule `r`.
/// @throws invalid_argument naming the field and the bad value.
template <class Real>
void validate(const token_inputs<Real>& in, transition_rule r) {
  static_assert(std::is_floating_point_v<Real>, "token_inputs<Real>: Real must be float or double");
  if (in.dk == 0) throw_invalid("dk", in.dk, "must be >= 1");
  if (in.dv == 0) throw_invalid("dv", in.dv, "must be >= 1");
  // The state (dk·dv) and a dense transition (dk·dk) are allocated by every algorithm that
  // consumes these inputs, even for length 0: both must be representable and allocatable.
  (void)checked_count<Real>(checked_mul(in.dk, in.dv, "dk", "dv"), "dk * dv");
  (void)checked_count<Real>(checked_mul(in.dk, in.dk, "dk", "dk"), "dk * dk");
  // length·dk and length·dv must not wrap: a wrapped product could equal a short span's size.
  const std::size_t kn = checked_mul(in.length, in.dk, "length", "dk");
  const std::size_t vn = checked_mul(in.length, in.dv, "length", "dv");
  if (in.k.size() != kn)
    throw_invalid("k.size()", in.k.size(), "must equal length*dk = " + std::to_string(kn));
  if (in.v.size() != vn)
    throw_invalid("v.size()", in.v.size(), "must equal length*dv = " + std::to_string(vn));
  if (r == transition_rule::delta) {
    if (in.beta.size() != in.length)
      throw_invalid("beta.size()", in.beta.size(),
                    "rule::delta needs one beta per token (" + std::to_string(in.length) + ")");
  } else if (!in.beta.empty()) {
    throw_invalid("beta.size()", in.beta.size(), "rule::additive takes no beta (must be empty)");
  }
  const std::size_t g = in.log_gate.size();
  if (g != 0 && g != in.length && g != kn)
    throw_invalid("log_gate.size()", g,
                  "must be 0 (no gate), length = " + std::to_string(in.length) +
                      " (scalar) or length*dk = " + std::to_string(kn) + " (diagonal)");
  check_finite(in.k, "k");
  check_finite(in.v, "v");
  check_finite(in.beta, "beta");
  check_log_gates(in.log_gate, "log_gate");
}

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
