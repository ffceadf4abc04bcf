#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Derived, precision-aware tolerances for checking an engine's kernel against the reference.
///
/// **The bound.** A kernel computes the recurrence S_t = T_t S_{t−1} + u_t (and o_t = s·q_tᵀS_t)
/// in a floating-point format of unit roundoff u (2⁻²⁴ fp32, 2⁻¹¹ fp16, 2⁻⁸ bf16, 2⁻⁵³ fp64),
/// from inputs that are exact in that format (the golden vectors guarantee it). Each token is a
/// fixed sequence of products and sums of depth n (a dot product of length dk counts dk, Higham,
/// *Accuracy and Stability of Numerical Algorithms*, §3.1: |fl(xᵀy) − xᵀy| ≤ γ_n |x|ᵀ|y|,
/// γ_n = n·u/(1 − n·u)). Propagating the per-token errors through the later transitions, as in
/// the product-of-matrices bound (Higham Lemma 3.7 / §3.5), gives for every element
///
///   |Ŝ_t − S_t| ≤ γ(t·n·u + t·u_s) · M_t,        M_t = |T_t|·M_{t−1} + |u_t|,  M_0 = |S_0|
///
/// where |T_t| is the absolute value of the transition *as computed* (for the delta rule
/// |S| + |β||k|(|k|ᵀ|S|), not |I − βkkᵀ|·|S|, which can be smaller), u_s the unit roundoff of the
/// format the state is stored in between tokens (0 when it stays in the accumulator format), and
/// γ(x) = x/(1 − x). M_t is the condition-like sum: the same recurrence run on absolute values,
/// computed here in double. An output adds the read-out, a dot product of length dk after one
/// scaling: |ô_t − o_t| ≤ γ(t·n·u + (dk + 1)·u + t·u_s) · Σ_r |s·q_{t,r}| M_t[r, :]. Writing the
/// result to an output array of unit roundoff u_o adds u_o·|reference|.
///
/// **Per-token depth n** (ops on the path of one state element):
/// | family | n |
/// |---|---|
/// | additive (linear, RetNet/Mamba2, GLA) | 2, + 1 + c_exp with a gate |
/// | delta (DeltaNet, Gated DeltaNet, KDA) | dk + 4, + 1 + c_exp with a gate |
/// | DPLR (RWKV-7) | dk + 5 + c_exp |
/// | selective (Mamba1) | 5 + c_exp |
/// | Gated DeltaProduct | n_h·(dk + 4), + 1 + c_exp with a gate |
/// c_exp = 4 is the error budget of a kernel's exponential in units of u (CUDA's `__expf`/`ex2`
/// path is within 2 ulp, plus the log2(e) scaling).
///
/// **Dense transitions (delta rule, DPLR, DeltaProduct) use a normwise bound.** Their |T| has
/// positive off-diagonal mass, so the componentwise M_t above grows like (1 + β‖k‖₁²)^t and the
/// bound turns vacuous within tens of tokens, although the transitions are contractions in the
/// 2-norm. For them the local error of step j is bounded componentwise by γ_n·ℓ_j with
/// ℓ_j = |D S_{j−1}| + |β k|(|k|ᵀ|D S_{j−1}|) + |u_j| (DPLR: |D S| + |b|(|a|ᵀ|S|) + |k vᵀ|), plus
/// |S_j| for the storage rounding, and propagates through ‖T_t ⋯ T_{j+1}‖₂ ≤ Π ‖T_i‖₂ (each norm
/// computed from the explicit matrix in double, ×(1 + 10⁻¹²)):
///
///   ‖Ŝ_t − S_t‖_F ≤ γ_n e_t,   e_t = ‖T_t‖₂ e_{t−1} + ‖ℓ_t‖_F,   e_0 = 0,
///
/// which bounds every element. It is cast in the same form γ(t·n·u + t·u_s)·w as the
/// componentwise bound with w = e_t / t (valid because γ_{tn} ≥ t·γ_n), and for outputs
/// w = ‖s q_t‖₂ e_t / t + (|s q_t|ᵀ|S_t|)[c] with the read-out depth dk + 1 added.
///
/// The bound holds for any evaluation that performs these sums in any order (the γ bound of a
/// sum is order-independent). Chunked (WY) kernels instead invert a unit-lower-triangular chunk
/// matrix; their rounding error is not covered by this argument in the worst case, but the
/// library's own chunked float path is measured against it and stays far inside (see
/// docs/verification.md). The bound is first order in nothing: γ absorbs every product of
/// (1 + δ) factors, so it is rigorous whenever t·n·u < 1, and vacuous (∞) otherwise.

#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <Eigen/Dense>
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

#include "hybridcache/state/delta_product.hpp"
#include "hybridcache/state/dplr.hpp"
#include "hybridcache/state/selective.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Floating-point formats a kernel accumulates, stores or writes in.
enum class precision : std::uint8_t { fp64 = 0, fp32 = 1, fp16 = 2, bf16 = 3 };

/// Unit roundoff u = 2^{−p} (p the significand bits incl. the implicit one).
constexpr double unit_roundoff(precision p) noexcept {
  switch (p) {
    case precision::fp64:
      return 0x1p-53;
    case precision::fp32:
      return 0x1p-24;
    case precision::fp16:
      return 0x1p-11;
    case precision::bf16:
      return 0x1p-8;
  }
  return 1.0;
}

constexpr std::string_view to_string(precision p) noexcept {
  switch (p) {
    case precision::fp64:
      return "fp64";
    case precision::fp32:
      return "fp32";
    case precision::fp16:
      return "fp16";
    case precision::bf16:
      return "bf16";
  }
  return "?";
}

/// "fp64" | "fp32" | "fp16" | "bf16" (also "float64", "float32", "float16", "bfloat16").
inline std::optional<precision> parse_precision(std::string_view s) noexcept {
  if (s == "fp64" || s == "float64") return precision::fp64;
  if (s == "fp32" || s == "float32") return precision::fp32;
  if (s == "fp16" || s == "float16") return precision::fp16;
  if (s == "bf16" || s == "bfloat16") return precision::bf16;
  return std::nullopt;
}

/// γ(x) = x/(1 − x) for the accumulated relative error x = Σ n_i u_i; +∞ once x ≥ 1.
constexpr double gamma_of(double x) noexcept {
  return x < 1.0 ? x / (1.0 - x) : std::numeric_limits<double>::infinity();
}

/// The error budget of a kernel's exponential, in units of u.
inline constexpr double exp_budget_ulps = 4.0;

/// How the candidate computed: accumulator, state storage between tokens, output array.
struct error_model {
  precision accumulate = precision::fp32;
  precision state_storage = precision::fp32;
  precision output = precision::fp32;
};

/// The tolerance of one element: γ(depth·u_acc + store_steps·u_s)·weight + u_out·|ref|, u_s = 0
/// when the state is stored in the accumulator format. `weight` is the condition-like sum M
/// (times |s·q| for outputs), `depth` the op depth along the element's path, `store_steps` the
/// number of times the state was rounded to storage before it.
constexpr double element_tolerance(double weight, double depth, double store_steps, double ref,
                                   const error_model& m) noexcept {
  const double ua = unit_roundoff(m.accumulate);
  const double us = m.state_storage == m.accumulate ? 0.0 : unit_roundoff(m.state_storage);
  const double uo = m.output == precision::fp64 ? 0.0 : unit_roundoff(m.output);
  // weight is itself a double sum of non-negative terms: its own rounding (≤ γ_depth of 2⁻⁵³)
  // is covered by the factor (1 + 2⁻³⁰).
  return gamma_of(depth * ua + store_steps * us) * weight * (1.0 + 0x1p-30) +
         uo * (ref < 0 ? -ref : ref);
}

/// Condition-like sums of one head over a segment: M_t for the final state, the read-out weights
/// Σ_r |s·q_{t,r}| M_t[r, :] for each output, and the per-token depth n of the family.
struct bound_weights {
  std::vector<double> o;      ///< L·dv (empty when no q was given)
  std::vector<double> state;  ///< dk·dv: M_L
  double depth_per_token = 0;
};

namespace detail {
template <class Step>
bound_weights abs_run(std::size_t L, std::size_t dk, std::size_t dv, std::span<const double> q,
                      double scale, std::span<const double> initial_state, Step&& step) {
  bound_weights w;
  w.state.assign(dk * dv, 0.0);
  for (std::size_t i = 0; i < initial_state.size(); ++i) w.state[i] = std::fabs(initial_state[i]);
  if (!q.empty()) w.o.assign(L * dv, 0.0);
  for (std::size_t t = 0; t < L; ++t) {
    step(t, w.state.data());
    if (q.empty()) continue;
    for (std::size_t r = 0; r < dk; ++r) {
      const double a = std::fabs(scale * q[t * dk + r]);
      for (std::size_t c = 0; c < dv; ++c) w.o[t * dv + c] += a * w.state[r * dv + c];
    }
  }
  return w;
}

}  // namespace detail

namespace detail {

/// One step of a dense-transition recurrence, in double: the explicit transition `t` (dk×dk),
/// the write `u` (dk×dv) and the componentwise local-error weight `loc` given the state before it.
struct dense_step {
  Eigen::MatrixXd t, u, loc;
};

/// The normwise bound of the file comment. `step(j, S)` returns step j's matrices for state S;
/// `steps_per_token` steps make one token (Gated DeltaProduct: n_h).
template <class Step>
bound_weights normwise_run(std::size_t L, std::size_t steps_per_token, std::size_t dk,
                           std::size_t dv, std::span<const double> q, double scale,
                           std::span<const double> initial_state, Step&& step) {
  using mat = Eigen::MatrixXd;
  mat S = mat::Zero(static_cast<Eigen::Index>(dk), static_cast<Eigen::Index>(dv));
  for (std::size_t i = 0; i < initial_state.size(); ++i)
    S(static_cast<Eigen::Index>(i / dv), static_cast<Eigen::Index>(i % dv)) = initial_state[i];
  bound_weights w;
  if (!q.empty()) w.o.assign(L * dv, 0.0);
  double e = 0.0;
  for (std::size_t t = 0; t < L; ++t) {
    for (std::size_t j = 0; j < steps_per_token; ++j) {
      const dense_step st = step(t * steps_per_token + j, S);
      S = st.t * S + st.u;
      const double norm =
          Eigen::SelfAdjointEigenSolver<mat>(st.t.transpose() * st.t, Eigen::EigenvaluesOnly)
              .eigenvalues()
              .maxCoeff();
      e = std::sqrt(std::max(norm, 0.0)) * (1.0 + 1e-12) * e + (st.loc + S.cwiseAbs()).norm();
    }
    if (q.empty()) continue;
    const double tt = static_cast<double>(t + 1);
    double qn = 0.0;
    for (std::size_t r = 0; r < dk; ++r) qn += (scale * q[t * dk + r]) * (scale * q[t * dk + r]);
    qn = std::sqrt(qn);
    for (std::size_t c = 0; c < dv; ++c) {
      double dot = 0.0;
      for (std::size_t r = 0; r < dk; ++r)
        dot += std::fabs(scale * q[t * dk + r]) *
               std::fabs(S(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c)));
      w.o[t * dv + c] = qn * e / tt + dot;
    }
  }
  w.state.assign(dk * dv, L == 0 ? 0.0 : e / static_cast<double>(L));
  return w;
}

/// The delta-rule step D-then-(I − βkkᵀ) with write βkvᵀ, for state S.
inline dense_step delta_step(const Eigen::VectorXd& d, const Eigen::VectorXd& k,
                             const Eigen::VectorXd& v, double beta, const Eigen::MatrixXd& S) {
  const auto n = k.size();
  dense_step st;
  st.t = (Eigen::MatrixXd::Identity(n, n) - beta * k * k.transpose()) * d.asDiagonal();
  st.u = beta * k * v.transpose();
  const Eigen::MatrixXd ds = (d.asDiagonal() * S).cwiseAbs();
  st.loc = ds + std::fabs(beta) * k.cwiseAbs() * (k.cwiseAbs().transpose() * ds) + st.u.cwiseAbs();
  return st;
}

template <class Real>
Eigen::VectorXd vec(std::span<const Real> x, std::size_t offset, std::size_t n) {
  Eigen::VectorXd r(static_cast<Eigen::Index>(n));
  for (std::size_t i = 0; i < n; ++i)
    r(static_cast<Eigen::Index>(i)) = static_cast<double>(x[offset + i]);
  return r;
}

}  // namespace detail

/// Bound weights of the unified recurrence (token_inputs table) over a segment.
/// @param q empty (state only) or L·dk queries; `scale` the read-out scale.
template <class Real>
bound_weights abs_bound_weights(const token_inputs<Real>& in, transition_rule r,
                                std::span<const double> q, double scale,
                                std::span<const double> initial_state) {
  detail::validate(in, r);
  const std::size_t dk = in.dk, dv = in.dv;
  const gate_kind gk = in.gate();
  const double gate_ops = gk == gate_kind::none ? 0.0 : 1.0 + exp_budget_ulps;
  if (r == transition_rule::delta) {
    auto w = detail::normwise_run(
        in.length, 1, dk, dv, q, scale, initial_state,
        [&](std::size_t t, const Eigen::MatrixXd& S) {
          Eigen::VectorXd d = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(dk));
          for (std::size_t row = 0; row < dk; ++row) {
            if (gk == gate_kind::scalar)
              d(static_cast<Eigen::Index>(row)) = std::exp(static_cast<double>(in.log_gate[t]));
            if (gk == gate_kind::diagonal)
              d(static_cast<Eigen::Index>(row)) =
                  std::exp(static_cast<double>(in.log_gate[t * dk + row]));
          }
          return detail::delta_step(d, detail::vec(in.k, t * dk, dk), detail::vec(in.v, t * dv, dv),
                                    static_cast<double>(in.beta[t]), S);
        });
    w.depth_per_token = static_cast<double>(dk) + 4.0 + gate_ops;
    return w;
  }
  auto w =
      detail::abs_run(in.length, dk, dv, q, scale, initial_state, [&](std::size_t t, double* m) {
        std::vector<double> kd(in.k.begin() + t * dk, in.k.begin() + (t + 1) * dk),
            vd(in.v.begin() + t * dv, in.v.begin() + (t + 1) * dv);
        for (std::size_t row = 0; row < dk; ++row) {
          const double g = gk == gate_kind::none ? 0.0
                           : gk == gate_kind::scalar
                               ? static_cast<double>(in.log_gate[t])
                               : static_cast<double>(in.log_gate[t * dk + row]);
          const double f = std::exp(g);
          for (std::size_t c = 0; c < dv; ++c) m[row * dv + c] *= f;
        }
        for (std::size_t row = 0; row < dk; ++row)
          for (std::size_t c = 0; c < dv; ++c) m[row * dv + c] += std::fabs(kd[row] * vd[c]);
      });
  w.depth_per_token = 2.0 + gate_ops;
  return w;
}

/// Bound weights of RWKV-7's DPLR recurrence (normwise, see the file comment).
template <class Real>
bound_weights abs_bound_weights(const dplr_inputs<Real>& in, std::span<const double> q,
                                double scale, std::span<const double> initial_state) {
  detail::validate(in);
  const std::size_t dk = in.dk, dv = in.dv;
  auto w = detail::normwise_run(
      in.length, 1, dk, dv, q, scale, initial_state, [&](std::size_t t, const Eigen::MatrixXd& S) {
        const Eigen::VectorXd a = detail::vec(in.a, t * dk, dk), b = detail::vec(in.b, t * dk, dk);
        const Eigen::VectorXd k = detail::vec(in.k, t * dk, dk), v = detail::vec(in.v, t * dv, dv);
        Eigen::VectorXd d = detail::vec(in.log_gate, t * dk, dk).array().exp().matrix();
        detail::dense_step st;
        st.t = Eigen::MatrixXd(d.asDiagonal()) + b * a.transpose();
        st.u = k * v.transpose();
        st.loc = (d.asDiagonal() * S).cwiseAbs() +
                 b.cwiseAbs() * (a.cwiseAbs().transpose() * S.cwiseAbs()) + st.u.cwiseAbs();
        return st;
      });
  w.depth_per_token = static_cast<double>(dk) + 5.0 + exp_budget_ulps;
  return w;
}

/// Bound weights of Mamba1's selective SSM: M ← E ⊙ M + |k||Δ ⊙ v|ᵀ.
template <class Real>
bound_weights abs_bound_weights(const selective_inputs<Real>& in, std::span<const double> q,
                                double scale, std::span<const double> initial_state) {
  detail::validate(in);
  const std::size_t dk = in.dk, dv = in.dv;
  auto w =
      detail::abs_run(in.length, dk, dv, q, scale, initial_state, [&](std::size_t t, double* m) {
        for (std::size_t n = 0; n < dk; ++n)
          for (std::size_t c = 0; c < dv; ++c)
            m[n * dv + c] = std::exp(detail::selective_log_decay(in, t, n, c)) * m[n * dv + c] +
                            std::fabs(static_cast<double>(in.k[t * dk + n]) *
                                      static_cast<double>(in.dt[t * dv + c]) *
                                      static_cast<double>(in.v[t * dv + c]));
      });
  w.depth_per_token = 5.0 + exp_budget_ulps;
  return w;
}

/// Bound weights of Gated DeltaProduct (normwise): per token the gate with the first of its
/// n_h delta steps.
template <class Real>
bound_weights abs_bound_weights(const delta_product_inputs<Real>& in, std::span<const double> q,
                                double scale, std::span<const double> initial_state) {
  detail::validate(in);
  const std::size_t dk = in.dk, dv = in.dv, nh = in.householder;
  const bool per_key = !in.log_gate.empty() && in.log_gate.size() != in.length;
  auto w = detail::normwise_run(
      in.length, nh, dk, dv, q, scale, initial_state,
      [&](std::size_t row, const Eigen::MatrixXd& S) {
        const std::size_t t = row / nh;
        Eigen::VectorXd d = Eigen::VectorXd::Ones(static_cast<Eigen::Index>(dk));
        if (!in.log_gate.empty() && row % nh == 0)
          for (std::size_t r = 0; r < dk; ++r)
            d(static_cast<Eigen::Index>(r)) =
                std::exp(static_cast<double>(in.log_gate[per_key ? t * dk + r : t]));
        return detail::delta_step(d, detail::vec(in.k, row * dk, dk),
                                  detail::vec(in.v, row * dv, dv),
                                  static_cast<double>(in.beta[row]), S);
      });
  w.depth_per_token = static_cast<double>(nh) * (static_cast<double>(dk) + 4.0) +
                      (in.log_gate.empty() ? 0.0 : 1.0 + exp_budget_ulps);
  return w;
}

/// The result of checking one candidate array against its reference.
struct check_report {
  std::size_t count = 0;     ///< elements compared
  std::size_t failures = 0;  ///< elements with |err| > tol (NaN counts)
  double max_abs_error = 0;  ///< max |candidate − reference|
  double max_ratio = 0;      ///< max |err| / tol (∞ where tol = 0 < |err|)
  std::size_t worst = 0;     ///< index of max_ratio
  [[nodiscard]] bool passed() const noexcept { return failures == 0; }
};

/// Compares `candidate` with `reference` elementwise under `tolerance[i]` (or one shared value
/// when `tolerance` has one element). NaN or ∞ in the candidate fails.
/// @throws invalid_argument on mismatched sizes.
inline check_report check_close(std::span<const double> candidate,
                                std::span<const double> reference,
                                std::span<const double> tolerance) {
  if (candidate.size() != reference.size())
    ::hybridcache::detail::throw_invalid(
        "candidate.size()", candidate.size(),
        "must equal reference.size() = " + std::to_string(reference.size()));
  if (tolerance.size() != 1 && tolerance.size() != reference.size())
    ::hybridcache::detail::throw_invalid("tolerance.size()", tolerance.size(),
                                         "must be 1 or reference.size()");
  check_report rep;
  rep.count = reference.size();
  for (std::size_t i = 0; i < reference.size(); ++i) {
    const double tol = tolerance.size() == 1 ? tolerance[0] : tolerance[i];
    const double err = std::fabs(candidate[i] - reference[i]);
    double ratio;
    if (!std::isfinite(candidate[i]) || !(err == err)) {
      ratio = std::numeric_limits<double>::infinity();
    } else {
      ratio = err == 0 ? 0.0 : (tol > 0 ? err / tol : std::numeric_limits<double>::infinity());
      if (err > rep.max_abs_error) rep.max_abs_error = err;
    }
    if (!(err <= tol)) ++rep.failures;
    if (ratio > rep.max_ratio || (i == 0 && ratio == 0)) {
      rep.max_ratio = ratio;
      rep.worst = i;
    }
  }
  return rep;
}

HYBRIDCACHE_NAMESPACE_END
