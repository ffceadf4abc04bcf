#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Independent double-precision reference for the state algebra tests. It does NOT use the
/// library: every token's transition T_i is built as an explicit dk×dk matrix straight from the
/// DESIGN.md §3 table and multiplied out, S_i = T_i S_{i−1} + u_i, T_C = T_L ⋯ T_1, with plain
/// triple loops. RoPE keys are rotated with long-double angles. Slow by design (O(dk³) per
/// token); tests keep dk small for long sequences.

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace hc_ref {

/// Row-major dense matrix of doubles.
struct mat {
  std::size_t rows = 0, cols = 0;
  std::vector<double> a;
  mat() = default;
  mat(std::size_t r, std::size_t c) : rows(r), cols(c), a(r * c, 0.0) {}
  static mat eye(std::size_t n) {
    mat m(n, n);
    for (std::size_t i = 0; i < n; ++i) m(i, i) = 1.0;
    return m;
  }
  double& operator()(std::size_t r, std::size_t c) { return a[r * cols + c]; }
  double operator()(std::size_t r, std::size_t c) const { return a[r * cols + c]; }
};

inline mat mul(const mat& x, const mat& y) {
  mat z(x.rows, y.cols);
  for (std::size_t i = 0; i < x.rows; ++i)
    for (std::size_t k = 0; k < x.cols; ++k) {
      const double xik = x(i, k);
      for (std::size_t j = 0; j < y.cols; ++j) z(i, j) += xik * y(k, j);
    }
  return z;
}

inline mat add(const mat& x, const mat& y) {
  mat z = x;
  for (std::size_t i = 0; i < z.a.size(); ++i) z.a[i] += y.a[i];
  return z;
}

enum class gate { none, scalar, diagonal };

/// A variant's per-token inputs, in double.
struct tokens {
  std::size_t L = 0, dk = 0, dv = 0;
  bool delta = false;
  gate g = gate::none;
  std::vector<double> k, v, beta, log_gate;
};

/// T_i from the DESIGN.md table.
inline mat token_transition(const tokens& in, std::size_t i) {
  const std::size_t dk = in.dk;
  mat d = mat::eye(dk);  // the gate part
  for (std::size_t r = 0; r < dk; ++r) {
    if (in.g == gate::scalar) d(r, r) = std::exp(in.log_gate[i]);
    if (in.g == gate::diagonal) d(r, r) = std::exp(in.log_gate[i * dk + r]);
  }
  if (!in.delta) return d;
  mat h = mat::eye(dk);  // I − β k kᵀ
  for (std::size_t r = 0; r < dk; ++r)
    for (std::size_t c = 0; c < dk; ++c) h(r, c) -= in.beta[i] * in.k[i * dk + r] * in.k[i * dk + c];
  // Gated DeltaNet: e^g (I − βkkᵀ); KDA: (I − βkkᵀ) Diag(e^g). A scalar gate commutes anyway.
  return mul(h, d);
}

/// u_i = (β) k vᵀ.
inline mat token_write(const tokens& in, std::size_t i) {
  mat u(in.dk, in.dv);
  const double b = in.delta ? in.beta[i] : 1.0;
  for (std::size_t r = 0; r < in.dk; ++r)
    for (std::size_t c = 0; c < in.dv; ++c) u(r, c) = b * in.k[i * in.dk + r] * in.v[i * in.dv + c];
  return u;
}

struct result {
  mat T;  // T_L ⋯ T_1
  mat S;  // end state from S0
};

/// Token-by-token recurrence over tokens [begin, end) from S0 (T accumulated from I).
inline result run(const tokens& in, const mat& s0, std::size_t begin, std::size_t end) {
  result r{mat::eye(in.dk), s0};
  for (std::size_t i = begin; i < end; ++i) {
    const mat t = token_transition(in, i);
    r.S = add(mul(t, r.S), token_write(in, i));
    r.T = mul(t, r.T);
  }
  return r;
}
inline result run(const tokens& in, const mat& s0) { return run(in, s0, 0, in.L); }

/// The state only (no T product): O(dk²·dv) per token, for long runs.
inline mat run_state(const tokens& in, mat s, std::size_t begin, std::size_t end) {
  for (std::size_t i = begin; i < end; ++i)
    s = add(mul(token_transition(in, i), s), token_write(in, i));
  return s;
}
inline result run(const tokens& in) { return run(in, mat(in.dk, in.dv)); }

/// Frobenius norm of a span-like container.
template <class V>
double norm(const V& x) {
  double s = 0;
  for (auto e : x) s += static_cast<double>(e) * static_cast<double>(e);
  return std::sqrt(s);
}

/// ‖a − b‖ / max(‖b‖, floor).
template <class A, class B>
double rel_err(const A& a, const B& b, double floor = 1e-30) {
  double s = 0;
  std::size_t i = 0;
  for (auto e : b) {
    const double d = static_cast<double>(a[i++]) - static_cast<double>(e);
    s += d * d;
  }
  return std::sqrt(s) / std::max(norm(b), floor);
}

/// Random inputs of a variant. Keys are L2-normalised and β ∈ (0.1, 0.9) as DeltaNet-family
/// layers do, so states stay bounded over long sequences; log-gates lie in [lo, hi] ≤ 0.
inline tokens random_tokens(std::mt19937_64& rng, std::size_t L, std::size_t dk, std::size_t dv,
                            bool delta, gate g, double lo = -0.3, double hi = -0.001) {
  tokens t;
  t.L = L;
  t.dk = dk;
  t.dv = dv;
  t.delta = delta;
  t.g = g;
  std::normal_distribution<double> nd;
  std::uniform_real_distribution<double> ub(0.1, 0.9), ug(lo, hi);
  t.k.resize(L * dk);
  t.v.resize(L * dv);
  for (std::size_t i = 0; i < L; ++i) {
    double n2 = 0;
    for (std::size_t r = 0; r < dk; ++r) {
      t.k[i * dk + r] = nd(rng);
      n2 += t.k[i * dk + r] * t.k[i * dk + r];
    }
    for (std::size_t r = 0; r < dk; ++r) t.k[i * dk + r] /= std::sqrt(n2);
  }
  for (auto& x : t.v) x = nd(rng);
  if (delta) {
    t.beta.resize(L);
    for (auto& b : t.beta) b = ub(rng);
  }
  if (g == gate::scalar) t.log_gate.resize(L);
  if (g == gate::diagonal) t.log_gate.resize(L * dk);
  for (auto& x : t.log_gate) x = ug(rng);
  return t;
}

/// Rounds every input to Real and back, so a float test and its double reference see the same
/// numbers.
template <class Real>
tokens rounded(tokens t) {
  for (auto* v : {&t.k, &t.v, &t.beta, &t.log_gate})
    for (auto& x : *v) x = static_cast<double>(static_cast<Real>(x));
  return t;
}

/// A random dk×dv matrix with N(0, 1) entries.
inline mat random_state(std::mt19937_64& rng, std::size_t dk, std::size_t dv) {
  std::normal_distribution<double> nd;
  mat m(dk, dv);
  for (auto& x : m.a) x = nd(rng);
  return m;
}

/// RoPE of one key at position p (DESIGN.md §3), long-double angle, in place.
/// half_split: pairs (i, i + d/2); otherwise (2i, 2i+1). θ_i = base^{−2i/d} / scaling.
inline void rope_key(double* k, std::size_t rotary_dims, bool half_split, double base,
                     double scaling, long long p) {
  for (std::size_t i = 0; i < rotary_dims / 2; ++i) {
    const long double theta =
        std::pow(static_cast<long double>(base),
                 -2.0L * static_cast<long double>(i) / static_cast<long double>(rotary_dims)) /
        static_cast<long double>(scaling);
    const long double ang = static_cast<long double>(p) * theta;
    const double c = static_cast<double>(std::cos(ang)), s = static_cast<double>(std::sin(ang));
    const std::size_t a = half_split ? i : 2 * i;
    const std::size_t b = half_split ? i + rotary_dims / 2 : 2 * i + 1;
    const double x = k[a], y = k[b];
    k[a] = x * c - y * s;
    k[b] = x * s + y * c;
  }
}

}  // namespace hc_ref
