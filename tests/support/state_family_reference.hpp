#pragma once
// SPDX-License-Identifier: Apache-2.0
// Independent double-precision references for the families of issue 15 (Mamba1's selective SSM,
// RWKV-7's DPLR rule, Gated DeltaProduct) and for per-token outputs. They do NOT use the library:
// every token's transition is built as an explicit matrix from the update rule as the engines
// write it (mamba_ssm selective_scan_ref; FLA dplr/naive.py and gated_delta_product/naive.py),
// the state is advanced by plain loops, and the read-out is o_t = (scale·q_t)ᵀ S_t.
//
// The elementwise (Mamba1) transition acts on the dk·dv state as a (dk·dv)×(dk·dv) diagonal
// matrix; it is built explicitly (`vec_transition`) for small heads, and as its dk×dv diagonal
// otherwise.

#include <cmath>
#include <cstddef>
#include <vector>

#include "support/state_reference.hpp"

namespace hc_ref {

// ---------------------------------------------------------------- Mamba1 (selective SSM)

/// Inputs in our orientation: k = B_t (dk = N), v = u_t (dv = D), dt = Δ_t (dv), a (dk×dv).
struct selective {
  std::size_t L = 0, dk = 0, dv = 0;
  std::vector<double> k, v, dt, a;
};

/// E_t[n, c] = exp(Δ_t[c]·A[n, c]): the elementwise transition of token t (dk×dv).
inline mat selective_decay(const selective& in, std::size_t t) {
  mat e(in.dk, in.dv);
  for (std::size_t n = 0; n < in.dk; ++n)
    for (std::size_t c = 0; c < in.dv; ++c)
      e(n, c) = std::exp(in.dt[t * in.dv + c] * in.a[n * in.dv + c]);
  return e;
}

/// The same transition as an explicit (dk·dv)×(dk·dv) matrix on vec(S) (row-major vec).
inline mat vec_transition(const mat& e) {
  mat m(e.rows * e.cols, e.rows * e.cols);
  for (std::size_t i = 0; i < e.a.size(); ++i) m(i, i) = e.a[i];
  return m;
}

struct selective_result {
  mat E;  // Π_t E_t (elementwise): the segment transition
  mat S;  // end state
};

/// S_t = E_t ⊙ S_{t−1} + B_t (Δ_t ⊙ u_t)ᵀ over [begin, end) from s0, applied as the explicit
/// (dk·dv)² matrix when `explicit_matrix`.
inline selective_result run(const selective& in, mat s0, std::size_t begin, std::size_t end,
                            bool explicit_matrix = false) {
  selective_result r{mat(in.dk, in.dv), std::move(s0)};
  for (auto& x : r.E.a) x = 1.0;
  for (std::size_t t = begin; t < end; ++t) {
    const mat e = selective_decay(in, t);
    if (explicit_matrix) {
      mat vs(in.dk * in.dv, 1);
      vs.a = r.S.a;
      r.S.a = mul(vec_transition(e), vs).a;
    } else {
      for (std::size_t i = 0; i < e.a.size(); ++i) r.S.a[i] *= e.a[i];
    }
    for (std::size_t i = 0; i < e.a.size(); ++i) r.E.a[i] *= e.a[i];
    for (std::size_t n = 0; n < in.dk; ++n)
      for (std::size_t c = 0; c < in.dv; ++c)
        r.S(n, c) += in.k[t * in.dk + n] * in.dt[t * in.dv + c] * in.v[t * in.dv + c];
  }
  return r;
}

inline selective random_selective(std::mt19937_64& rng, std::size_t L, std::size_t dk,
                                  std::size_t dv) {
  selective s{L, dk, dv, {}, {}, {}, {}};
  std::normal_distribution<double> nd;
  std::uniform_real_distribution<double> udt(0.001, 0.1), ua(-4.0, -0.5);
  s.k.resize(L * dk);
  s.v.resize(L * dv);
  s.dt.resize(L * dv);
  s.a.resize(dk * dv);
  for (auto& x : s.k) x = nd(rng);
  for (auto& x : s.v) x = nd(rng);
  for (auto& x : s.dt) x = udt(rng);
  for (auto& x : s.a) x = ua(rng);
  return s;
}

// ---------------------------------------------------------------- RWKV-7 (DPLR)

struct dplr {
  std::size_t L = 0, dk = 0, dv = 0;
  std::vector<double> k, v, a, b, w;
};

/// T_t = Diag(e^{w_t}) + b_t a_tᵀ (FLA's h ← e^{w}⊙h + b(aᵀh) on a [K, V] state).
inline mat dplr_transition(const dplr& in, std::size_t t) {
  mat m(in.dk, in.dk);
  for (std::size_t r = 0; r < in.dk; ++r) {
    for (std::size_t c = 0; c < in.dk; ++c) m(r, c) = in.b[t * in.dk + r] * in.a[t * in.dk + c];
    m(r, r) += std::exp(in.w[t * in.dk + r]);
  }
  return m;
}

inline result run(const dplr& in, mat s0, std::size_t begin, std::size_t end) {
  result r{mat::eye(in.dk), std::move(s0)};
  for (std::size_t t = begin; t < end; ++t) {
    const mat tr = dplr_transition(in, t);
    mat u(in.dk, in.dv);
    for (std::size_t i = 0; i < in.dk; ++i)
      for (std::size_t c = 0; c < in.dv; ++c) u(i, c) = in.k[t * in.dk + i] * in.v[t * in.dv + c];
    r.S = add(mul(tr, r.S), u);
    r.T = mul(tr, r.T);
  }
  return r;
}

/// RWKV-7-like inputs: a = −κ̂ (unit), b = κ̂·α with α ∈ (0, 1), so T = D + b aᵀ stays a
/// contraction-ish matrix; w ∈ [−0.5, −0.01].
inline dplr random_dplr(std::mt19937_64& rng, std::size_t L, std::size_t dk, std::size_t dv) {
  dplr d{L, dk, dv, {}, {}, {}, {}, {}};
  std::normal_distribution<double> nd;
  std::uniform_real_distribution<double> ua(0.05, 0.95), uw(-0.5, -0.01);
  d.k.resize(L * dk);
  d.v.resize(L * dv);
  d.a.resize(L * dk);
  d.b.resize(L * dk);
  d.w.resize(L * dk);
  for (auto& x : d.v) x = nd(rng);
  for (auto& x : d.w) x = uw(rng);
  for (std::size_t t = 0; t < L; ++t) {
    double n2 = 0, m2 = 0;
    std::vector<double> kap(dk), kk(dk);
    for (std::size_t r = 0; r < dk; ++r) {
      kap[r] = nd(rng);
      kk[r] = nd(rng);
      n2 += kap[r] * kap[r];
      m2 += kk[r] * kk[r];
    }
    for (std::size_t r = 0; r < dk; ++r) {
      const double kh = kap[r] / std::sqrt(n2);
      d.a[t * dk + r] = -kh;
      d.b[t * dk + r] = kh * ua(rng);
      d.k[t * dk + r] = kk[r] / std::sqrt(m2);
    }
  }
  return d;
}

// ---------------------------------------------------------------- Gated DeltaProduct

struct delta_product {
  std::size_t L = 0, dk = 0, dv = 0, nh = 1;
  bool per_key_gate = false;
  std::vector<double> k, v, beta, g;  // k: L·nh·dk, v: L·nh·dv, beta: L·nh, g: 0 | L | L·dk
};

/// T_t = H_{nh} ⋯ H_1 D(g_t), H_j = I − β_j k_j k_jᵀ; u_t accumulated through the same steps.
inline result run(const delta_product& in, mat s0, std::size_t begin, std::size_t end) {
  const std::size_t dk = in.dk;
  result r{mat::eye(dk), std::move(s0)};
  for (std::size_t t = begin; t < end; ++t) {
    mat d = mat::eye(dk);
    if (!in.g.empty())
      for (std::size_t i = 0; i < dk; ++i)
        d(i, i) = std::exp(in.per_key_gate ? in.g[t * dk + i] : in.g[t]);
    r.S = mul(d, r.S);
    r.T = mul(d, r.T);
    for (std::size_t j = 0; j < in.nh; ++j) {
      const std::size_t row = t * in.nh + j;
      const double beta = in.beta[row];
      mat h = mat::eye(dk), u(dk, in.dv);
      for (std::size_t a = 0; a < dk; ++a) {
        for (std::size_t b = 0; b < dk; ++b)
          h(a, b) -= beta * in.k[row * dk + a] * in.k[row * dk + b];
        for (std::size_t c = 0; c < in.dv; ++c)
          u(a, c) = beta * in.k[row * dk + a] * in.v[row * in.dv + c];
      }
      r.S = add(mul(h, r.S), u);
      r.T = mul(h, r.T);
    }
  }
  return r;
}

inline delta_product random_delta_product(std::mt19937_64& rng, std::size_t L, std::size_t dk,
                                          std::size_t dv, std::size_t nh, bool gated,
                                          bool per_key_gate = false) {
  delta_product d;
  d.L = L;
  d.dk = dk;
  d.dv = dv;
  d.nh = nh;
  d.per_key_gate = per_key_gate;
  const tokens base = random_tokens(rng, L * nh, dk, dv, true, gate::none);
  d.k = base.k;
  d.v = base.v;
  d.beta = base.beta;
  std::uniform_real_distribution<double> ug(-0.3, -0.001);
  if (gated) {
    d.g.resize(per_key_gate ? L * dk : L);
    for (auto& x : d.g) x = ug(rng);
  }
  return d;
}

// ---------------------------------------------------------------- outputs

/// o_t = scale · q_tᵀ S_t for states S_1..S_L given one by one.
struct readout {
  std::vector<double> o;
  void add(const std::vector<double>& q, std::size_t t, const mat& s, double scale) {
    for (std::size_t c = 0; c < s.cols; ++c) {
      double acc = 0;
      for (std::size_t r = 0; r < s.rows; ++r) acc += scale * q[t * s.rows + r] * s(r, c);
      o.push_back(acc);
    }
  }
};

/// Outputs of any of the unified variants (state_reference.hpp tokens) from s0.
inline std::vector<double> outputs(const tokens& in, const std::vector<double>& q, double scale,
                                   mat s) {
  readout ro;
  for (std::size_t t = 0; t < in.L; ++t) {
    s = run_state(in, s, t, t + 1);
    ro.add(q, t, s, scale);
  }
  return ro.o;
}

template <class In>
std::vector<double> outputs(const In& in, const std::vector<double>& q, double scale, mat s) {
  readout ro;
  for (std::size_t t = 0; t < in.L; ++t) {
    s = run(in, s, t, t + 1).S;
    ro.add(q, t, s, scale);
  }
  return ro.o;
}

/// Rounds every element through Real.
template <class Real>
void round_through(std::vector<double>& x) {
  for (auto& e : x) e = static_cast<double>(static_cast<Real>(e));
}

inline std::vector<double> random_vector(std::mt19937_64& rng, std::size_t n) {
  std::normal_distribution<double> nd;
  std::vector<double> x(n);
  for (auto& e : x) e = nd(rng);
  return x;
}

}  // namespace hc_ref
