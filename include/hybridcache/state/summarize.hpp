#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `summarize`: the segment summary (T_C, S_C|0) of one head's tokens (HYPIC §4.2: "computing
/// T_C by running the recurrence from S_0 = I, u = 0" and S_C|0 from S_0 = 0).
///
/// Scalar and diagonal families use the closed form
///   ℓ = Σ_i g_i,   S_C|0 = Σ_i Diag(e^{Σ_{j>i} g_j}) k_i v_iᵀ = K̃ᵀ V,
/// with the suffix sums Σ_{j>i} g_j accumulated in double (never a difference of two prefix
/// sums, so −∞ gates and 10⁵-token segments stay exact) and one GEMM.
///
/// The dense family (delta rule) has two paths:
/// - per token: the augmented matrix M = [T | S] (dk × (dk+dv)) from [I | 0], updated with
///   M ← D_i M, M ← M + k_i z_iᵀ, z_i = β_i([0 | v_i] − kᵢᵀM) (one mat-vec and one rank-1 update);
/// - chunked WY (flash-linear-attention's form, chunk 64 by default). Within a chunk with local
///   cumulative log-decays γ_t (one per token, or per key row for KDA),
///     N_{ti} = β_t ⟨k_t e^{γ_t}, k_i e^{−γ_i}⟩ (t > i),   A = (I + N)⁻¹,
///     W = A·diag(β)·(K ⊙ e^{γ}),   U = A·diag(β)·V,   K̃_t = k_t ⊙ e^{γ_n − γ_t},
///     chunk transition  D(γ_n) − K̃ᵀW,   chunk state  K̃ᵀU,
///   applied to the running [T | S] as  M ← D(γ_n)·M + K̃ᵀ([0 | U] − W·M): three GEMMs per chunk.
///   The decay factors are split as e^{γ_t − γ_i} = e^{γ_t}·e^{−γ_i} (one exponential per token
///   and key row, not one per pair), and a chunk is closed early once a local log-decay passes
///   −τ (τ = 40 in float, 300 in double), so neither factor overflows or underflows; a −∞ gate
///   closes its chunk. Only the chunk's last token may carry an unbounded decay, and its e^{−γ}
///   is never needed.
/// `summarize_method::automatic` takes the chunked path for segments of ≥ 16 tokens with dk ≥ 32,
/// where it is faster (bench/state/state_bench.cpp), and the per-token path otherwise.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/detail/gemm.hpp"
#include "hybridcache/state/detail/token_step.hpp"
#include "hybridcache/state/summary.hpp"
#include "hybridcache/state/token_inputs.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// How `summarize` computes a dense (delta-rule) summary. Scalar and diagonal families always
/// use their closed form.
enum class summarize_method : std::uint8_t { automatic = 0, per_token = 1, chunked = 2 };

struct summarize_options {
  summarize_method method = summarize_method::automatic;
  /// WY chunk length (1..256); 64 as in flash-linear-attention.
  std::size_t chunk = 64;
};

namespace detail {

/// Under `automatic`, the chunked path is taken from this many tokens and this key dimension up
/// (measured: at dk = 128 WY wins from 16 tokens, 3.5× at 512; at dk = 16 the two are even).
inline constexpr std::size_t chunked_min_length = 16;
inline constexpr std::size_t chunked_min_dk = 32;

template <class Real>
constexpr double chunk_log_range() noexcept {
  return std::is_same_v<Real, float> ? 40.0 : 300.0;
}

/// Closed form for the scalar and diagonal families (rule::additive).
template <class Real>
segment_summary<Real> summarize_diagonal_family(const token_inputs<Real>& in) {
  const std::size_t L = in.length, dk = in.dk, dv = in.dv;
  const gate_kind gk = in.gate();
  std::vector<Real> kw(L * dk);
  std::vector<double> ld(gk == gate_kind::diagonal ? dk : 1, 0.0);
  if (gk == gate_kind::none) {
    std::copy(in.k.begin(), in.k.end(), kw.begin());
  } else if (gk == gate_kind::scalar) {
    double s = 0.0;  // Σ_{j>t} g_j
    for (std::size_t t = L; t-- > 0;) {
      const Real w = static_cast<Real>(decay_factor(s));
      for (std::size_t r = 0; r < dk; ++r) kw[t * dk + r] = w * in.k[t * dk + r];
      s += static_cast<double>(in.log_gate[t]);
    }
    ld[0] = s;
  } else {
    for (std::size_t t = L; t-- > 0;) {
      Real* w = kw.data() + t * dk;
      decay_factors(ld.data(), w, dk);  // e^{Σ_{j>t} g_j}, row by row, vectorised
      for (std::size_t r = 0; r < dk; ++r) {
        w[r] *= in.k[t * dk + r];
        ld[r] += static_cast<double>(in.log_gate[t * dk + r]);
      }
    }
  }
  std::vector<Real> st(dk * dv, Real(0));
  if (L != 0) {
    as_matrix(st.data(), dk, dv).noalias() =
        as_matrix(static_cast<const Real*>(kw.data()), L, dk).transpose() *
        as_matrix(in.v.data(), L, dv);
  }
  return summary_access::make<Real>(
      gk == gate_kind::diagonal ? transition_family::diagonal : transition_family::scalar, L, dk,
      dv, std::move(ld), {}, std::move(st));
}

template <class Real>
segment_summary<Real> split_augmented(const std::vector<Real>& m, std::size_t L, std::size_t dk,
                                      std::size_t dv) {
  const std::size_t w = dk + dv;
  std::vector<Real> t(dk * dk), s(dk * dv);
  for (std::size_t r = 0; r < dk; ++r) {
    std::copy_n(m.data() + r * w, dk, t.data() + r * dk);
    std::copy_n(m.data() + r * w + dk, dv, s.data() + r * dv);
  }
  return summary_access::make<Real>(transition_family::dense, L, dk, dv, {}, std::move(t),
                                    std::move(s));
}

/// Dense summary, token by token.
template <class Real>
segment_summary<Real> summarize_dense_per_token(const token_inputs<Real>& in) {
  const std::size_t L = in.length, dk = in.dk, dv = in.dv, w = dk + dv;
  const gate_kind gk = in.gate();
  std::vector<Real> m(dk * w, Real(0)), x(w), f(dk);
  for (std::size_t r = 0; r < dk; ++r) m[r * w + r] = Real(1);
  for (std::size_t t = 0; t < L; ++t) {
    const Real* g = gk == gate_kind::none     ? nullptr
                    : gk == gate_kind::scalar ? in.log_gate.data() + t
                                              : in.log_gate.data() + t * dk;
    delta_token(m.data(), dk, w, dk, in.k.data() + t * dk, in.v.data() + t * dv, in.beta[t], gk,
                g, x.data(), f.data());
  }
  return split_augmented(m, L, dk, dv);
}

/// Dense summary by the chunked WY representation (see the file comment).
template <class Real>
segment_summary<Real> summarize_dense_chunked(const token_inputs<Real>& in, std::size_t chunk) {
  const std::size_t L = in.length, dk = in.dk, dv = in.dv, w = dk + dv;
  const gate_kind gk = in.gate();
  const std::size_t C = chunk;
  const double tau = chunk_log_range<Real>();

  std::vector<Real> m(dk * w, Real(0));  // running [T | S]
  std::vector<Real> gram(C * C), inv_scratch(C * C), rhs(C * w), wu(C * w), z(C * w);
  std::vector<Real> ktil(C * dk), kp, kn, at(C), bi(C), end_factor;
  std::vector<double> gam;       // local cumulative log-decays: n (scalar) or n·dk (diagonal)
  std::vector<double> to_end;    // Σ_{j>t} g_j within the chunk (scalar gate)
  std::vector<double> end_decay;  // γ_n: 1 or dk entries
  if (gk == gate_kind::diagonal) {
    kp.resize(C * dk);
    kn.resize(C * dk);
    gam.resize(C * dk);
    end_decay.resize(dk);
  } else {
    gam.resize(C);
    to_end.resize(C);
    end_decay.resize(1);
  }

  bool first = true;
  std::size_t s = 0;
  while (s < L) {
    // --- choose the chunk [s, s + n) and its local cumulative log-decays.
    std::size_t n = 0;
    if (gk == gate_kind::none) {
      n = std::min(C, L - s);
    } else if (gk == gate_kind::scalar) {
      double acc = 0.0;
      while (s + n < L && n < C) {
        acc += static_cast<double>(in.log_gate[s + n]);
        gam[n++] = acc;
        if (!(acc >= -tau)) break;  // e^{−γ_i} below must stay finite
      }
    } else {
      std::fill_n(end_decay.begin(), dk, 0.0);  // reused as the running cumulative sum
      while (s + n < L && n < C) {
        bool close = false;
        for (std::size_t r = 0; r < dk; ++r) {
          end_decay[r] += static_cast<double>(in.log_gate[(s + n) * dk + r]);
          gam[n * dk + r] = end_decay[r];
          close = close || !(end_decay[r] >= -tau);
        }
        ++n;
        if (close) break;
      }
    }
    const Real* kc = in.k.data() + s * dk;
    const Real* vc = in.v.data() + s * dv;
    const Real* bc = in.beta.data() + s;

    // --- decays to the chunk end (suffix sums), the chunk's own decay, K̃.
    if (gk == gate_kind::none) {
      end_decay[0] = 0.0;
      std::copy_n(kc, n * dk, ktil.data());
    } else if (gk == gate_kind::scalar) {
      double sfx = 0.0;
      for (std::size_t t = n; t-- > 0;) {
        to_end[t] = sfx;
        sfx += static_cast<double>(in.log_gate[s + t]);
      }
      end_decay[0] = sfx;
      for (std::size_t t = 0; t < n; ++t) {
        const Real f = static_cast<Real>(decay_factor(to_end[t]));
        for (std::size_t r = 0; r < dk; ++r) ktil[t * dk + r] = f * kc[t * dk + r];
      }
    } else {
      // One exponential per (token, row): a = e^{γ_t} ∈ [e^{−τ}, 1] for t < n−1 (the chunk rule),
      // so 1/a is finite and e^{γ_n − γ_t} = e^{γ_n}·(1/a) needs no second exponential; the last
      // row's e^{−γ} may be unbounded and is never needed (it pairs only with later tokens).
      const double* last = gam.data() + (n - 1) * dk;
      for (std::size_t r = 0; r < dk; ++r) end_decay[r] = last[r];
      std::vector<Real>& end_f = end_factor;
      end_f.resize(dk);
      decay_factors(last, end_f.data(), dk);
      for (std::size_t t = 0; t < n; ++t) {
        const Real* kt = kc + t * dk;
        Real* kpt = kp.data() + t * dk;
        Real* knt = kn.data() + t * dk;
        Real* ktt = ktil.data() + t * dk;
        if (t + 1 < n) {
          decay_factors(gam.data() + t * dk, kpt, dk);  // a = e^{γ_t}, vectorised
          for (std::size_t r = 0; r < dk; ++r) {
            const Real a = kpt[r];
            const Real b = Real(1) / a;
            kpt[r] = a * kt[r];
            knt[r] = b * kt[r];
            ktt[r] = end_f[r] * b * kt[r];
          }
        } else {
          for (std::size_t r = 0; r < dk; ++r) {
            kpt[r] = end_f[r] * kt[r];
            knt[r] = Real(0);
            ktt[r] = kt[r];
          }
        }
      }
    }

    if (gk == gate_kind::scalar) {
      for (std::size_t t = 0; t < n; ++t) {
        at[t] = static_cast<Real>(decay_factor(gam[t]));
        bi[t] = t + 1 < n ? static_cast<Real>(decay_factor(-gam[t])) : Real(0);
      }
    }
    // --- N = StrictLower(diag(β) (K K̂ᵀ ⊙ decay)), then A = (I + N)⁻¹ in place.
    auto G = as_matrix(gram.data(), n, n);
    if (gk == gate_kind::diagonal) {
      G.noalias() = as_matrix(static_cast<const Real*>(kp.data()), n, dk) *
                    as_matrix(static_cast<const Real*>(kn.data()), n, dk).transpose();
    } else {
      auto K = as_matrix(kc, n, dk);
      G.noalias() = K * K.transpose();
    }
    for (std::size_t t = 0; t < n; ++t) {
      const Real bt = bc[t];
      Real* row = gram.data() + t * n;
      if (gk == gate_kind::scalar) {
        // e^{γ_t − γ_i} = e^{γ_t}·e^{−γ_i}: both finite by the chunk rule (−γ_i ≤ τ for i < t).
        const Real f = bt * at[t];
        for (std::size_t i = 0; i < t; ++i) row[i] *= f * bi[i];
      } else {
        for (std::size_t i = 0; i < t; ++i) row[i] *= bt;
      }
    }
    invert_unit_lower(gram.data(), n, n, inv_scratch.data());

    // --- right-hand sides [diag(β)(K ⊙ e^{γ}) | diag(β) V] and [W | U] = A·rhs.
    for (std::size_t t = 0; t < n; ++t) {
      const Real bt = bc[t];
      Real* row = rhs.data() + t * w;
      if (gk == gate_kind::diagonal) {
        for (std::size_t r = 0; r < dk; ++r) row[r] = bt * kp[t * dk + r];
      } else {
        const Real f = gk == gate_kind::scalar ? bt * at[t] : bt;
        for (std::size_t r = 0; r < dk; ++r) row[r] = f * kc[t * dk + r];
      }
      for (std::size_t c = 0; c < dv; ++c) row[dk + c] = bt * vc[t * dv + c];
    }
    auto WU = as_matrix(wu.data(), n, w);
    WU.noalias() = as_matrix(static_cast<const Real*>(gram.data()), n, n) *
                   as_matrix(static_cast<const Real*>(rhs.data()), n, w);

    // --- Z = [0 | U] − W·M, then M ← D(γ_n)·M + K̃ᵀ Z.
    auto M = as_matrix(m.data(), dk, w);
    auto Z = as_matrix(z.data(), n, w);
    auto Kt = as_matrix(static_cast<const Real*>(ktil.data()), n, dk);
    if (first) {
      // M = [I | 0]: W·M = [W | 0], D(γ_n)·M = [D | 0].
      Z.leftCols(dk) = -WU.leftCols(dk);
      Z.rightCols(dv) = WU.rightCols(dv);
      M.setZero();
      for (std::size_t r = 0; r < dk; ++r)
        m[r * w + r] = static_cast<Real>(decay_factor(end_decay[gk == gate_kind::diagonal ? r : 0]));
      first = false;
    } else {
      Z.leftCols(dk).setZero();
      Z.rightCols(dv) = WU.rightCols(dv);
      Z.noalias() -= WU.leftCols(dk) * M;
      if (gk == gate_kind::scalar) {
        M *= static_cast<Real>(decay_factor(end_decay[0]));
      } else if (gk == gate_kind::diagonal) {
        scale_rows_by_decay(m.data(), end_decay.data(), dk, w);
      }
    }
    M.noalias() += Kt.transpose() * Z;
    s += n;
  }
  if (first) {  // L == 0
    for (std::size_t r = 0; r < dk; ++r) m[r * w + r] = Real(1);
  }
  return split_augmented(m, L, dk, dv);
}

}  // namespace detail

/// The summary (T_C, S_C|0) of one head's segment (see the file comment for the paths).
///
/// @param in   per-token inputs; their shapes select the variant (token_inputs.hpp table).
/// @param r    the write rule.
/// @param opts dense-path choice and WY chunk length.
/// @returns a scalar, diagonal or dense summary of `in.length` tokens; length 0 gives the
///          identity of the family.
/// @throws invalid_argument on mismatched sizes, non-finite inputs or log-gates > 0 / NaN.
///
/// Example (Gated DeltaNet, dk = 2, dv = 1, two tokens):
/// @code
///   std::vector<float> k{1, 0, 0, 1}, v{1, 2}, beta{0.5f, 0.5f}, g{-0.1f, -0.2f};
///   hybridcache::token_inputs<float> in{2, 2, 1, k, v, beta, g};
///   auto s = hybridcache::summarize(in, hybridcache::transition_rule::delta);
///   // s.family() == family::dense, s.transition().size() == 4, s.end_state().size() == 2
/// @endcode
template <class Real>
segment_summary<Real> summarize(const token_inputs<Real>& in, transition_rule r,
                                const summarize_options& opts = {}) {
  detail::validate(in, r);
  if (opts.chunk == 0 || opts.chunk > 256)
    hybridcache::detail::throw_invalid("opts.chunk", opts.chunk, "must lie in [1, 256]");
  if (r == transition_rule::additive) return detail::summarize_diagonal_family(in);
  const bool chunked =
      opts.method == summarize_method::chunked ||
      (opts.method == summarize_method::automatic && in.length >= detail::chunked_min_length &&
       in.dk >= detail::chunked_min_dk);
  return chunked ? detail::summarize_dense_chunked(in, opts.chunk)
                 : detail::summarize_dense_per_token(in);
}

HYBRIDCACHE_NAMESPACE_END
