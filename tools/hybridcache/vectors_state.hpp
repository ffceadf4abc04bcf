// SPDX-License-Identifier: Apache-2.0
// State-family golden vectors: per family, FLA-layout outputs + final state, summaries (all
// chunk sizes), compose/apply; the float64 references come from the library's double path
// (itself tested against the explicit-matrix reference), the bound weights from
// state/tolerance.hpp. Also the library's own float32 "candidate", with optional injected errors
// (the negative controls of verify).
#pragma once

#include <cmath>
#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <hybridcache/state/compose.hpp>
#include <hybridcache/state/fla.hpp>
#include <hybridcache/state/tolerance.hpp>

#include "hybridcache/vectors_common.hpp"

namespace hybridcache_cli::vectors {

namespace hc = hybridcache;

enum class fam {
  linear,
  retnet,
  mamba2,
  gla,
  deltanet,
  gated_deltanet,
  kda,
  rwkv7,
  gated_delta_product,
  mamba1
};
struct fam_info {
  fam f;
  const char* name;
  const char* fla_op;
};
inline constexpr fam_info families[] = {
    {fam::linear, "linear", "chunk_simple_gla (g=None)"},
    {fam::retnet, "retnet", "chunk_simple_gla (constant g per head)"},
    {fam::mamba2, "mamba2", "chunk_simple_gla (per-token g)"},
    {fam::gla, "gla", "chunk_gla"},
    {fam::deltanet, "deltanet", "chunk_delta_rule"},
    {fam::gated_deltanet, "gated_deltanet", "chunk_gated_delta_rule"},
    {fam::kda, "kda", "chunk_kda"},
    {fam::rwkv7, "rwkv7", "fused_recurrent_rwkv7"},
    {fam::gated_delta_product, "gated_delta_product", "chunk_gated_delta_product"},
    {fam::mamba1, "mamba1", "selective_scan (mamba_ssm)"}};

inline bool is_delta(fam f) {
  return f == fam::deltanet || f == fam::gated_deltanet || f == fam::kda ||
         f == fam::gated_delta_product;
}

/// One head's inputs on the exact grid, in double. Only the fields of the family are filled.
struct head_inputs {
  std::size_t L = 0, dk = 0, dv = 0, nh = 1;
  std::vector<double> q, k, v, beta, g, a, b, dt, A;
};

constexpr std::size_t householder = 2;

inline head_inputs draw_head(fam f, const input_grids& gr, prng& rng, std::size_t L, std::size_t dk,
                             std::size_t dv, std::size_t head) {
  head_inputs h;
  h.L = L;
  h.dk = dk;
  h.dv = dv;
  const int key_extra = static_cast<int>((std::bit_width(dk - 1) + 1) / 2);  // |k_r| < dk^{−1/2}
  const grid kg = gr.symmetric(key_extra), vg = gr.symmetric(-1);
  const grid beta_g = gr.range(0.1, 0.9, 0), gate_g = gr.range(-0.3, -0.004, 0);
  const std::size_t rows = f == fam::gated_delta_product ? L * householder : L;
  h.nh = f == fam::gated_delta_product ? householder : 1;
  h.q = kg.draw(rng, L * dk);
  if (f == fam::mamba1) {
    h.q = vg.draw(rng, L * dk);                          // C
    h.k = vg.draw(rng, L * dk);                          // B
    h.v = vg.draw(rng, L * dv);                          // u
    h.dt = gr.range(0.001, 0.125, 0).draw(rng, L * dv);  // Δ (softplus off)
    h.A = grid{-32, -1, 3}.draw(rng, dk * dv);           // A ∈ [−4, −1/8]
    return h;
  }
  h.k = kg.draw(rng, rows * dk);
  h.v = vg.draw(rng, rows * dv);
  if (is_delta(f)) h.beta = beta_g.draw(rng, rows);
  switch (f) {
    case fam::retnet: {
      const double g = -std::ldexp(1.0, -5 - static_cast<int>(head));
      h.g.assign(L, g);
      break;
    }
    case fam::mamba2:
    case fam::gated_deltanet:
    case fam::gated_delta_product:
      h.g = gate_g.draw(rng, L);
      break;
    case fam::gla:
    case fam::kda:
      h.g = gate_g.draw(rng, L * dk);
      break;
    case fam::rwkv7: {
      h.g = gate_g.draw(rng, L * dk);  // w
      const auto kap = kg.draw(rng, L * dk);
      h.a.resize(L * dk);
      h.b.resize(L * dk);
      for (std::size_t t = 0; t < L; ++t) {
        const int m = 1 + static_cast<int>(rng.between(0, 1));  // α = 2^{−m}: exact
        for (std::size_t r = 0; r < dk; ++r) {
          h.a[t * dk + r] = -kap[t * dk + r];
          h.b[t * dk + r] = std::ldexp(kap[t * dk + r], -m);
        }
      }
      break;
    }
    default:
      break;
  }
  return h;
}

/// Segment outputs and bound weights of one head in `Real`, via the library's family types.
template <class Real>
struct head_eval {
  hc::segment_outputs<Real> out;
  hc::bound_weights w;
};

template <class Real>
std::vector<Real> as(const std::vector<double>& x) {
  return std::vector<Real>(x.begin(), x.end());
}

/// Runs one head in `Real`, applying an injected error where asked.
template <class Real>
hc::segment_outputs<Real> run_head(fam f, const head_inputs& h, const std::vector<double>& init,
                                   std::optional<double> scale, injection inj, bool weights,
                                   hc::bound_weights* w) {
  head_inputs x = h;
  if (inj == injection::no_q_scale) scale = 1.0;
  if (inj == injection::gate_after_update) {
    // S_t = D(S_{t−1} + u_t): for an additive gated family that is the write k scaled by the
    // decay; for Gated DeltaNet (scalar gate, commuting with I − βkkᵀ) the value scaled.
    for (std::size_t t = 0; t < x.L; ++t) {
      if (f == fam::gla || f == fam::mamba2 || f == fam::retnet)
        for (std::size_t r = 0; r < x.dk; ++r)
          x.k[t * x.dk + r] *= std::exp(x.g[f == fam::gla ? t * x.dk + r : t]);
      if (f == fam::gated_deltanet)
        for (std::size_t c = 0; c < x.dv; ++c) x.v[t * x.dv + c] *= std::exp(x.g[t]);
    }
  }
  if (inj == injection::beta_placement && is_delta(f)) {
    // β on the erase only: S − βk(kᵀS) + k vᵀ = delta rule with v/β.
    for (std::size_t i = 0; i < x.beta.size(); ++i)
      for (std::size_t c = 0; c < x.dv; ++c) x.v[i * x.dv + c] /= x.beta[i];
  }
  const auto q = as<Real>(x.q), k = as<Real>(x.k), v = as<Real>(x.v), beta = as<Real>(x.beta),
             g = as<Real>(x.g), a = as<Real>(x.a), b = as<Real>(x.b), dt = as<Real>(x.dt),
             A = as<Real>(x.A), s0 = as<Real>(init);
  const std::span<const Real> qs(q), s0s(s0);
  const double sc = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(x.dk));
  switch (f) {
    case fam::rwkv7: {
      hc::dplr_inputs<Real> in{x.L, x.dk, x.dv, k, v, a, b, g};
      if (weights) *w = hc::abs_bound_weights(in, h.q, sc, init);
      return hc::outputs(in, qs, scale, s0s);
    }
    case fam::mamba1: {
      hc::selective_inputs<Real> in{x.L, x.dk, x.dv, k, v, dt, A};
      if (weights) *w = hc::abs_bound_weights(in, h.q, sc, init);
      return hc::outputs(in, qs, scale, s0s);
    }
    case fam::gated_delta_product: {
      hc::delta_product_inputs<Real> in{x.L, x.dk, x.dv, x.nh, k, v, beta, g};
      if (weights) *w = hc::abs_bound_weights(in, h.q, sc, init);
      return hc::outputs(in, qs, scale, s0s);
    }
    default: {
      hc::token_inputs<Real> in{x.L, x.dk, x.dv, k, v, beta, g};
      const auto r = is_delta(f) ? hc::transition_rule::delta : hc::transition_rule::additive;
      if (weights) *w = hc::abs_bound_weights(in, r, h.q, sc, init);
      return hc::outputs(in, r, qs, scale, s0s);
    }
  }
}

/// FLA layout [B, T, H, X] offset of (b = 0, t, h).
inline std::size_t bthx(std::size_t T, std::size_t H, std::size_t X, std::size_t t, std::size_t h) {
  (void)T;
  return (t * H + h) * X;
}

/// Outputs + final state of every family, FLA layout (B = 1), both input grids.
inline void state_output_cases(writer& w, prng& rng, const candidate_spec* cand,
                               std::vector<std::size_t> lengths) {
  const std::size_t H = 2, K = 16, V = 8;
  for (const input_grids& gr : grids)
    for (const fam_info& fi : families)
      for (std::size_t T : lengths) {
        const fam f = fi.f;
        const std::string name =
            std::string("state/") + fi.name + "/outputs/T" + std::to_string(T) + "/" + gr.dtype;
        const std::size_t rows = f == fam::gated_delta_product ? T * householder : T;
        std::map<std::string, std::pair<std::vector<double>, std::vector<std::size_t>>> in;
        auto put = [&](const std::string& key, std::size_t steps, std::size_t X, std::size_t h,
                       const std::vector<double>& src) {
          auto& [vals, shape] = in[key];
          if (vals.empty()) {
            vals.assign(steps * H * X, 0.0);
            shape = {1, steps, H, X};
          }
          for (std::size_t t = 0; t < steps; ++t)
            for (std::size_t x = 0; x < X; ++x) vals[bthx(steps, H, X, t, h) + x] = src[t * X + x];
        };
        std::vector<double> o(T * H * V), wo(T * H * V), st(H * K * V), wst(H * K * V),
            init(H * K * V);
        std::vector<double> co(T * H * V), cst(H * K * V);  // candidate (float32)
        const std::optional<double> scale =
            f == fam::mamba1 ? std::optional<double>(1.0) : std::nullopt;
        double depth = 0;
        for (std::size_t h = 0; h < H; ++h) {
          const head_inputs hi = draw_head(f, gr, rng, T, K, V, h);
          const auto s0 = gr.symmetric(-1).draw(rng, K * V);
          std::copy(s0.begin(), s0.end(), init.begin() + static_cast<std::ptrdiff_t>(h * K * V));
          put("q", T, K, h, hi.q);
          put("k", rows, K, h, hi.k);
          put("v", rows, V, h, hi.v);
          if (!hi.beta.empty()) put("beta", rows, 1, h, hi.beta);
          if (!hi.g.empty())
            put(f == fam::gla ? "gk" : (f == fam::rwkv7 ? "w" : "g"), T, hi.g.size() / T, h, hi.g);
          if (!hi.a.empty()) put("a", T, K, h, hi.a);
          if (!hi.b.empty()) put("b", T, K, h, hi.b);
          if (!hi.dt.empty()) put("dt", T, V, h, hi.dt);
          if (!hi.A.empty()) {
            auto& [vals, shape] = in["A"];
            if (vals.empty()) {
              vals.assign(H * K * V, 0.0);
              shape = {H, K, V};
            }
            std::copy(hi.A.begin(), hi.A.end(),
                      vals.begin() + static_cast<std::ptrdiff_t>(h * K * V));
          }
          hc::bound_weights bw;
          const auto ref = run_head<double>(f, hi, s0, scale, injection::none, true, &bw);
          depth = bw.depth_per_token;
          for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < V; ++c) {
              o[bthx(T, H, V, t, h) + c] = ref.o[t * V + c];
              wo[bthx(T, H, V, t, h) + c] = bw.o[t * V + c];
            }
          std::copy(ref.final_state.begin(), ref.final_state.end(),
                    st.begin() + static_cast<std::ptrdiff_t>(h * K * V));
          std::copy(bw.state.begin(), bw.state.end(),
                    wst.begin() + static_cast<std::ptrdiff_t>(h * K * V));
          if (cand) {
            const auto c = run_head<float>(f, hi, s0, scale, cand->inj, false, nullptr);
            for (std::size_t t = 0; t < T; ++t)
              for (std::size_t x = 0; x < V; ++x) co[bthx(T, H, V, t, h) + x] = c.o[t * V + x];
            for (std::size_t r = 0; r < K; ++r)
              for (std::size_t x = 0; x < V; ++x)
                cst[h * K * V + r * V + x] =
                    cand->inj == injection::transposed_state
                        ? static_cast<double>(c.final_state[(r * V + x) % K * V + (r * V + x) / K])
                        : static_cast<double>(c.final_state[r * V + x]);
          }
        }
        in["initial_state"] = {init, {1, H, K, V}};
        nlohmann::json inputs = nlohmann::json::object();
        for (auto& [key, val] : in) inputs[key] = w.input<float>(name, key, val.first, val.second);
        nlohmann::json expected = nlohmann::json::object();
        expected["o"] = expected_entry(w.reference<double>(name, "o", o, {1, T, H, V}),
                                       w.bound(name, "o", wo, {1, T, H, V}), {1, T, H, V}, depth,
                                       static_cast<double>(K) + 1.0, 1, T);
        expected["final_state"] = expected_entry(
            w.reference<double>(name, "final_state", st, {1, H, K, V}),
            w.bound(name, "final_state", wst, {1, H, K, V}), {1, H, K, V}, depth, 0.0, -1, T);
        nlohmann::json params = {{"B", 1},
                                 {"T", T},
                                 {"H", H},
                                 {"K", K},
                                 {"V", V},
                                 {"fla_op", fi.fla_op},
                                 {"output_final_state", true}};
        if (f == fam::gated_delta_product) params["num_householder"] = householder;
        params["scale"] = scale ? nlohmann::json(*scale) : nlohmann::json(nullptr);
        w.cases.push_back({{"name", name},
                           {"kind", "state_outputs"},
                           {"family", fi.name},
                           {"input_dtype", gr.dtype},
                           {"params", params},
                           {"inputs", inputs},
                           {"expected", expected}});
        if (cand) {
          save_below<float>(cand->dir, candidate_path(cand->dir, name, "o"), as<float>(co),
                            {1, T, H, V}, "--candidate-out");
          save_below<float>(cand->dir, candidate_path(cand->dir, name, "final_state"),
                            as<float>(cst), {1, H, K, V}, "--candidate-out");
        }
      }
}

/// Tokens [begin, end) of one head.
inline head_inputs slice_head(const head_inputs& h, std::size_t begin, std::size_t end) {
  head_inputs x = h;
  x.L = end - begin;
  const auto cut = [](const std::vector<double>& v, std::size_t per, std::size_t b, std::size_t e) {
    return v.empty() ? v
                     : std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(b * per),
                                           v.begin() + static_cast<std::ptrdiff_t>(e * per));
  };
  const std::size_t nh = h.nh;
  x.q = cut(h.q, h.dk, begin, end);
  x.k = cut(h.k, h.dk * nh, begin, end);
  x.v = cut(h.v, h.dv * nh, begin, end);
  x.beta = cut(h.beta, nh, begin, end);
  x.g = cut(h.g, h.g.size() / std::max<std::size_t>(h.L, 1), begin, end);
  x.a = cut(h.a, h.dk, begin, end);
  x.b = cut(h.b, h.dk, begin, end);
  x.dt = cut(h.dt, h.dv, begin, end);
  return x;
}

/// A summary's arrays: log_decay (scalar/diagonal/elementwise) or transition (dense), end_state.
struct summary_arrays {
  std::vector<double> log_decay, transition, end_state;
};

/// Summarises one head in `Real`; `chunk` > 0 asks for the chunked WY path at that chunk length.
/// With `prefix` non-empty, instead returns apply(compose(summary[0, split), summary[split, L)),
/// prefix) in `end_state`.
template <class Real>
summary_arrays summarize_head(fam f, const head_inputs& h, std::size_t chunk, std::size_t split = 0,
                              const std::vector<double>& prefix = {}) {
  const auto one = [&](const head_inputs& x) {
    const auto k = as<Real>(x.k), v = as<Real>(x.v), beta = as<Real>(x.beta), g = as<Real>(x.g),
               a = as<Real>(x.a), b = as<Real>(x.b), dt = as<Real>(x.dt), A = as<Real>(x.A);
    hc::summarize_options opts;
    if (chunk > 0)
      opts = {hc::summarize_method::chunked, chunk};
    else
      opts.method = hc::summarize_method::per_token;
    switch (f) {
      case fam::rwkv7:
        return hc::summarize(hc::dplr_inputs<Real>{x.L, x.dk, x.dv, k, v, a, b, g}, opts);
      case fam::gated_delta_product:
        return hc::summarize(hc::delta_product_inputs<Real>{x.L, x.dk, x.dv, x.nh, k, v, beta, g},
                             opts);
      default:
        return hc::summarize(
            hc::token_inputs<Real>{x.L, x.dk, x.dv, k, v, beta, g},
            is_delta(f) ? hc::transition_rule::delta : hc::transition_rule::additive, opts);
    }
  };
  summary_arrays out;
  if (f == fam::mamba1) {
    const auto el = [&](const head_inputs& x) {
      const auto k = as<Real>(x.k), v = as<Real>(x.v), dt = as<Real>(x.dt), A = as<Real>(x.A);
      return hc::summarize(hc::selective_inputs<Real>{x.L, x.dk, x.dv, k, v, dt, A});
    };
    if (!prefix.empty()) {
      const auto s = hc::compose(el(slice_head(h, 0, split)), el(slice_head(h, split, h.L)));
      const auto p = as<Real>(prefix);
      const auto r = hc::apply(s, std::span<const Real>(p));
      out.end_state.assign(r.begin(), r.end());
      return out;
    }
    const auto s = el(h);
    out.log_decay.assign(s.log_decay().begin(), s.log_decay().end());
    out.end_state.assign(s.end_state().begin(), s.end_state().end());
    return out;
  }
  if (!prefix.empty()) {
    const auto s = hc::compose(one(slice_head(h, 0, split)), one(slice_head(h, split, h.L)));
    const auto p = as<Real>(prefix);
    const auto r = hc::apply(s, std::span<const Real>(p));
    out.end_state.assign(r.begin(), r.end());
    return out;
  }
  const auto s = one(h);
  if (s.family() == hc::transition_family::dense)
    out.transition.assign(s.transition().begin(), s.transition().end());
  else
    out.log_decay.assign(s.log_decay().begin(), s.log_decay().end());
  out.end_state.assign(s.end_state().begin(), s.end_state().end());
  return out;
}

/// Summaries (per token, or chunked at 16/32/64 for the delta families, DeltaProduct and
/// RWKV-7, which have a chunked WY path) and compose/apply.
inline void state_summary_cases(writer& w, prng& rng, const candidate_spec* cand) {
  const std::size_t L = 100, K = 16, V = 8, split = 40;
  for (const input_grids& gr : grids)
    for (const fam_info& fi : families) {
      const fam f = fi.f;
      const head_inputs h = draw_head(f, gr, rng, L, K, V, 0);
      const std::string base = std::string("state/") + fi.name + "/summarize/" + gr.dtype;
      // Bound weights: end state from 0; transition = the abs recurrence on I with no writes.
      hc::bound_weights bw;
      run_head<double>(f, h, std::vector<double>(K * V, 0.0), 1.0, injection::none, true, &bw);
      const auto ref = summarize_head<double>(f, h, 0);
      nlohmann::json inputs = nlohmann::json::object();
      const auto inp = [&](const std::string& key, const std::vector<double>& v,
                           std::vector<std::size_t> shape) {
        if (!v.empty()) inputs[key] = w.input<float>(base, key, v, std::move(shape));
      };
      const std::size_t rows = h.L * h.nh;
      inp("k", h.k, {rows, K});
      inp("v", h.v, {rows, V});
      inp("beta", h.beta, {rows});
      inp(f == fam::gla ? "gk" : (f == fam::rwkv7 ? "w" : "g"), h.g, {L, h.g.size() / L});
      inp("a", h.a, {L, K});
      inp("b", h.b, {L, K});
      inp("dt", h.dt, {L, V});
      inp("A", h.A, {K, V});
      nlohmann::json expected = nlohmann::json::object();
      expected["end_state"] = expected_entry(
          w.reference<double>(base, "end_state", ref.end_state, {K, V}),
          w.bound(base, "end_state", bw.state, {K, V}), {K, V}, bw.depth_per_token, 0.0, -1, L);
      if (!ref.transition.empty()) {
        head_inputs z = h;  // no writes, K value columns: the recurrence of T from I
        z.dv = K;
        z.v.assign(rows * K, 0.0);
        if (f == fam::mamba1) z.dt.assign(L * K, 0.0);
        std::vector<double> eye(K * K, 0.0);
        for (std::size_t r = 0; r < K; ++r) eye[r * K + r] = 1.0;
        hc::bound_weights tw;
        run_head<double>(f, z, eye, 1.0, injection::none, true, &tw);
        expected["transition"] = expected_entry(
            w.reference<double>(base, "transition", ref.transition, {K, K}),
            w.bound(base, "transition", tw.state, {K, K}), {K, K}, tw.depth_per_token, 0.0, -1, L);
      } else {
        std::vector<double> wl(ref.log_decay.size(), 0.0);
        for (std::size_t t = 0; t < L; ++t)
          for (std::size_t i = 0; i < wl.size(); ++i) {
            if (f == fam::mamba1)
              wl[i] += std::fabs(h.dt[t * V + i % V] * h.A[i]);
            else if (!h.g.empty())
              wl[i] += std::fabs(h.g[wl.size() == 1 ? t : t * K + i]);
          }
        expected["log_decay"] = expected_entry(
            w.reference<double>(base, "log_decay", ref.log_decay, {ref.log_decay.size()}),
            w.bound(base, "log_decay", wl, {wl.size()}), {ref.log_decay.size()},
            f == fam::mamba1 ? 2.0 : 1.0, 0.0, -1, L);
      }
      const bool chunked = is_delta(f) || f == fam::rwkv7;  // families with a chunked WY path
      for (std::size_t chunk :
           chunked ? std::vector<std::size_t>{16, 32, 64} : std::vector<std::size_t>{0}) {
        const std::string name = chunk ? base + "/chunk" + std::to_string(chunk) : base;
        nlohmann::json params = {
            {"K", K}, {"V", V}, {"L", L}, {"layout", "[L, K] token-major, one head"}};
        if (h.nh > 1) params["num_householder"] = h.nh;
        params["chunk"] = chunk ? nlohmann::json(chunk) : nlohmann::json(nullptr);
        w.cases.push_back({{"name", name},
                           {"kind", "state_summary"},
                           {"family", fi.name},
                           {"input_dtype", gr.dtype},
                           {"params", params},
                           {"inputs", inputs},
                           {"expected", expected}});
        if (cand) {
          const auto c = summarize_head<float>(f, h, chunk);
          auto es = c.end_state;
          if (cand->inj == injection::transposed_state)
            for (std::size_t i = 0; i < es.size(); ++i) es[i] = c.end_state[(i % K) * V + i / K];
          save_below<float>(cand->dir, candidate_path(cand->dir, name, "end_state"), as<float>(es),
                            {K, V}, "--candidate-out");
          if (!c.transition.empty())
            save_below<float>(cand->dir, candidate_path(cand->dir, name, "transition"),
                              as<float>(c.transition), {K, K}, "--candidate-out");
          else
            save_below<float>(cand->dir, candidate_path(cand->dir, name, "log_decay"),
                              as<float>(c.log_decay), {c.log_decay.size()}, "--candidate-out");
        }
      }
      // compose/apply: P → [0, split) → [split, L), by composing the two summaries.
      const std::string name = std::string("state/") + fi.name + "/compose_apply/" + gr.dtype;
      const auto P = gr.symmetric(-1).draw(rng, K * V);
      hc::bound_weights pw;
      run_head<double>(f, h, P, 1.0, injection::none, true, &pw);
      const auto exact = summarize_head<double>(f, h, 0, split, P);
      nlohmann::json ca_inputs = inputs;
      ca_inputs["prefix_state"] = w.input<float>(name, "prefix_state", P, {K, V});
      nlohmann::json ca_expected = nlohmann::json::object();
      ca_expected["state"] =
          expected_entry(w.reference<double>(name, "state", exact.end_state, {K, V}),
                         w.bound(name, "state", pw.state, {K, V}), {K, V}, pw.depth_per_token,
                         2.0 * (static_cast<double>(K) + 1.0), -1, L);
      w.cases.push_back({{"name", name},
                         {"kind", "state_compose_apply"},
                         {"family", fi.name},
                         {"input_dtype", gr.dtype},
                         {"params", {{"K", K}, {"V", V}, {"L", L}, {"split", split}}},
                         {"inputs", ca_inputs},
                         {"expected", ca_expected}});
      if (cand) {
        const auto c = summarize_head<float>(f, h, 0, split, P);
        save_below<float>(cand->dir, candidate_path(cand->dir, name, "state"),
                          as<float>(c.end_state), {K, V}, "--candidate-out");
      }
    }
}

/// The `ulp` negative control: in the first output case, one element of the candidate is moved
/// to the nearest float32 strictly beyond reference + tolerance (fp32 error model).
inline void inject_ulp(const writer& w, const candidate_spec& cand) {
  for (const auto& c : w.cases) {
    if (c.at("kind") != "state_outputs") continue;
    const auto& e = c.at("expected").at("o");
    const auto ref = hc::npy::load((w.dir / e.at("reference").get<std::string>()).string());
    const auto wt = hc::npy::load((w.dir / e.at("bound_weight").get<std::string>()).string());
    const auto path = candidate_path(cand.dir, c.at("name").get<std::string>(), "o");
    auto cv = hc::npy::load(path.string());
    const auto tol = tolerances(e, ref.values, wt.values, hc::error_model{});
    const std::size_t i = ref.size() / 2;
    float x = static_cast<float>(ref.values[i] + tol[i]);
    while (static_cast<double>(x) - ref.values[i] <= tol[i]) x = std::nextafter(x, INFINITY);
    cv.values[i] = static_cast<double>(x);
    save_below<float>(cand.dir, path, as<float>(cv.values), cv.shape, "--candidate-out");
    return;
  }
}

/// The `non_finite` negative control: in the first output case, element 3 of the candidate
/// becomes NaN and element 5 +inf (each must fail, whatever its tolerance).
inline void inject_non_finite(const writer& w, const candidate_spec& cand) {
  for (const auto& c : w.cases) {
    if (c.at("kind") != "state_outputs") continue;
    const auto path = candidate_path(cand.dir, c.at("name").get<std::string>(), "o");
    auto cv = hc::npy::load(path.string());
    cv.values[3] = std::nan("");
    cv.values[5] = INFINITY;
    save_below<float>(cand.dir, path, as<float>(cv.values), cv.shape, "--candidate-out");
    return;
  }
}

}  // namespace hybridcache_cli::vectors
