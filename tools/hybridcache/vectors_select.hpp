// SPDX-License-Identifier: Apache-2.0
// Sparse-Q golden vectors (SparseX §3.2–3.4; docs/select.md): attention scores with a float64
// reference and a derived bound, token selections and layer plans compared exactly.
//
// References are written out here from the paper's wording, never by the library code under
// test: scores one query and one key at a time in double (eqs. 1–2), selections with std::set,
// layer plans from the mode rule of docs/select.md.
//
// Score bound. For query i of head h with visible keys j ≤ pos_i, a kernel's logit carries an
// absolute error ≤ γ(d)·A_hi with A_hi = max_j scale·Σ_c |q_c k_jc| (a length-d dot product);
// the max-subtracted softmax then moves p_hij by a relative 2·γ(d)·A_hi, the exponential by 4 u
// (its budget), the row sum and the division by γ(T + 1), the sum over the H·n_q rows and the
// final normalisation by γ(H·n_q + 1). Since γ_a + γ_b ≤ γ_{a+b},
//     |ŝ_j − s_j| ≤ γ(depth·u)·w_j + u_out|s_j|,
//     w_j = 1/(H n_q) Σ_{h,i} p_hij (2 A_hi + 1),   depth = d + T + H·n_q + 8.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <hybridcache/select/layer_plan.hpp>
#include <hybridcache/select/scores.hpp>
#include <hybridcache/select/selection.hpp>
#include <hybridcache/storage/view.hpp>

#include "hybridcache/vectors_common.hpp"

namespace hybridcache_cli::vectors {

/// Reused ranges → non-reuse positions (everything not covered), ascending.
inline std::vector<std::size_t> ref_non_reuse(
    const std::vector<std::pair<std::size_t, std::size_t>>& reused, std::size_t T) {
  std::vector<bool> covered(T, false);
  for (const auto& [b, e] : reused)
    for (std::size_t j = b; j < e; ++j) covered[j] = true;
  std::vector<std::size_t> out;
  for (std::size_t j = 0; j < T; ++j)
    if (!covered[j]) out.push_back(j);
  return out;
}

/// Sparse-Q scores in double, textbook: for each head and query, the causal softmax of
/// scale·q·k over keys 0..pos, averaged over heads and queries. Also the bound weights w_j.
/// q [nq, H, d], k [T, Hkv, d] (flattened, row-major).
inline void ref_scores(const std::vector<double>& q, const std::vector<std::size_t>& pos,
                       std::size_t H, const std::vector<double>& k, std::size_t T, std::size_t Hkv,
                       std::size_t d, std::vector<double>& s, std::vector<double>& w) {
  const std::size_t nq = pos.size();
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  s.assign(T, 0.0);
  w.assign(T, 0.0);
  for (std::size_t h = 0; h < H; ++h) {
    const std::size_t kh = h / (H / Hkv);
    for (std::size_t i = 0; i < nq; ++i) {
      const std::size_t n = pos[i] + 1;
      std::vector<double> logit(n), p(n);
      double m = -INFINITY, A = 0.0;
      for (std::size_t j = 0; j < n; ++j) {
        double dot = 0.0, abs_dot = 0.0;
        for (std::size_t c = 0; c < d; ++c) {
          const double x = q[(i * H + h) * d + c], y = k[(j * Hkv + kh) * d + c];
          dot += x * y;
          abs_dot += std::fabs(x * y);
        }
        logit[j] = scale * dot;
        A = std::max(A, scale * abs_dot);
        m = std::max(m, logit[j]);
      }
      double z = 0.0;
      for (std::size_t j = 0; j < n; ++j) z += (p[j] = std::exp(logit[j] - m));
      for (std::size_t j = 0; j < n; ++j) {
        s[j] += p[j] / z;
        w[j] += p[j] / z * (2.0 * A + 1.0);
      }
    }
  }
  const double norm = static_cast<double>(H) * static_cast<double>(nq);
  for (std::size_t j = 0; j < T; ++j) {
    s[j] /= norm;
    w[j] /= norm;
  }
}

/// The selection sets from the wording of SparseX §3.2–3.3 (docs/select.md), with sets.
struct ref_selection_sets {
  std::vector<double> non_reuse, key, overflow, tail, recompute, mask;
};

inline ref_selection_sets ref_select(const std::vector<double>& s,
                                     const std::vector<std::pair<std::size_t, std::size_t>>& reused,
                                     std::size_t top_k, std::size_t block, std::size_t fallback) {
  const std::size_t T = s.size();
  const auto nr = ref_non_reuse(reused, T);
  const std::set<std::size_t> nr_set(nr.begin(), nr.end());
  // Key tokens: reused tokens ordered by score descending, ties to the lower index.
  std::vector<std::size_t> cand;
  for (std::size_t j = 0; j < T; ++j)
    if (!nr_set.count(j)) cand.push_back(j);
  std::stable_sort(cand.begin(), cand.end(),
                   [&](std::size_t a, std::size_t b) { return s[a] > s[b]; });
  cand.resize(std::min(top_k, cand.size()));
  // Overflow: one block on each side of every maximal non-reuse interval, reused tokens only.
  std::set<std::size_t> ov;
  for (std::size_t i = 0; i < nr.size();) {
    std::size_t e = i;
    while (e + 1 < nr.size() && nr[e + 1] == nr[e] + 1) ++e;
    const std::size_t a = nr[i], b = nr[e] + 1;
    for (std::size_t j = a >= block ? a - block : 0; j < a; ++j)
      if (!nr_set.count(j)) ov.insert(j);
    for (std::size_t j = b; j < std::min(T, b + block); ++j)
      if (!nr_set.count(j)) ov.insert(j);
    i = e + 1;
  }
  // Tail fallback: the prompt ends in a reused segment.
  std::set<std::size_t> tail;
  if (!reused.empty() && reused.back().second == T) {
    const auto [b, e] = reused.back();
    for (std::size_t j = e - std::min(e - b, fallback); j < e; ++j) tail.insert(j);
  }
  std::set<std::size_t> all(nr_set);
  all.insert(cand.begin(), cand.end());
  all.insert(ov.begin(), ov.end());
  all.insert(tail.begin(), tail.end());
  ref_selection_sets r;
  const auto d = [](const auto& c) { return std::vector<double>(c.begin(), c.end()); };
  r.non_reuse = d(nr);
  r.key = d(cand);
  r.overflow = d(ov);
  r.tail = d(tail);
  r.recompute = d(all);
  r.mask.assign(T, 0.0);
  for (std::size_t j : all) r.mask[j] = 1.0;
  return r;
}

/// Moves one element of a float32 candidate file (below `root`) past reference + tolerance
/// (negative control).
inline void push_past_bound(const std::filesystem::path& root, const std::filesystem::path& file,
                            std::size_t i, double ref, double tol) {
  auto cv = hybridcache::npy::load(file.string());
  float x = static_cast<float>(ref + tol);
  while (static_cast<double>(x) - ref <= tol) x = std::nextafter(x, INFINITY);
  cv.values[i] = static_cast<double>(x);
  const std::vector<float> f(cv.values.begin(), cv.values.end());
  save_below<float>(root, file, f, cv.shape, "--candidate-out");
}

using range_list = std::vector<std::pair<std::size_t, std::size_t>>;

inline nlohmann::json ranges_json(const range_list& r) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [b, e] : r) j.push_back({b, e});
  return j;
}

inline std::vector<hybridcache::token_range> to_ranges(const range_list& r) {
  std::vector<hybridcache::token_range> out;
  for (const auto& [b, e] : r) out.push_back({b, e});
  return out;
}

/// Scores (two shapes, both input grids), selections (four layouts) and layer plans.
inline void select_cases(writer& wr, prng& rng, const candidate_spec* cand) {
  namespace hc = hybridcache;
  struct score_cfg {
    const char* name;
    std::size_t T, H, Hkv, d;
    range_list reused;
  };
  // gqa: two reuse stretches (blocked GEMM path); jump: a query gap > 256 positions (the
  // column-panel path of select/scores.hpp).
  const score_cfg cfgs[] = {{"gqa", 160, 4, 2, 32, {{0, 48}, {64, 112}, {112, 144}}},
                            {"jump", 320, 2, 1, 64, {{8, 290}}}};
  for (const input_grids& gr : grids)
    for (const score_cfg& c : cfgs) {
      const std::string name = std::string("select/scores/") + c.name + "/" + gr.dtype;
      const auto pos = ref_non_reuse(c.reused, c.T);
      const std::size_t nq = pos.size();
      const auto q = gr.symmetric(0).draw(rng, nq * c.H * c.d);
      const auto k = gr.symmetric(0).draw(rng, c.T * c.Hkv * c.d);
      std::vector<double> s, w;
      ref_scores(q, pos, c.H, k, c.T, c.Hkv, c.d, s, w);
      const double depth = static_cast<double>(c.d + c.T + c.H * nq + 8);
      nlohmann::json inputs = {
          {"queries", wr.input<float>(name, "queries", q, {nq, c.H, c.d})},
          {"positions", wr.input<std::int64_t>(name, "positions",
                                               std::vector<double>(pos.begin(), pos.end()), {nq})},
          {"keys", wr.input<float>(name, "keys", k, {c.T, c.Hkv, c.d})}};
      nlohmann::json expected = nlohmann::json::object();
      expected["scores"] =
          expected_entry(wr.reference<double>(name, "scores", s, {c.T}),
                         wr.bound(name, "scores", w, {c.T}), {c.T}, 0.0, depth, -1, 1);
      wr.cases.push_back(
          {{"name", name},
           {"kind", "sparse_q_scores"},
           {"input_dtype", gr.dtype},
           {"params",
            {{"T", c.T}, {"heads", c.H}, {"kv_heads", c.Hkv}, {"d", c.d}, {"scale", nullptr}}},
           {"conventions",
            "queries [n_q, heads, d] of the non-reuse tokens at `positions`, keys [T, kv_heads, "
            "d]; "
            "query head h reads kv head h / (heads / kv_heads); scores[j] = mean over heads and "
            "queries of softmax_j(scale q.k_j) over j <= position (causal), scale null = d^-1/2"},
           {"inputs", inputs},
           {"expected", expected}});
      if (cand) {
        std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), out(c.T);
        std::vector<std::int64_t> pi(pos.begin(), pos.end());
        hc::sparse_q_scores(hc::strided_view<const float, 3>(qf.data(), {nq, c.H, c.d}),
                            hc::vector_view<const std::int64_t>(pi.data(), {nq}),
                            hc::strided_view<const float, 3>(kf.data(), {c.T, c.Hkv, c.d}),
                            hc::vector_view<float>(out.data(), {c.T}));
        save_below<float>(cand->dir, candidate_path(cand->dir, name, "scores"), out, {c.T},
                          "--candidate-out");
        if (cand->inj == injection::score_offset && c.name == std::string("gqa") &&
            gr.dtype == std::string("fp32")) {
          const auto tol = tolerances(expected["scores"], s, w, hybridcache::error_model{});
          push_past_bound(cand->dir, candidate_path(cand->dir, name, "scores"), pos.front(),
                          s[pos.front()], tol[pos.front()]);
        }
      }
    }

  // Selections: scores on a coarse grid (j·2⁻⁶, j ∈ 0..15) so that ties are common and the tie
  // rule (lower index first) decides.
  struct sel_cfg {
    const char* name;
    std::size_t T;
    range_list reused;
    std::size_t top_k, block, fallback;
  };
  const sel_cfg sels[] = {
      {"tail", 64, {{0, 16}, {16, 40}, {48, 64}}, 5, 4, 8},  // adjacent segments, ends reused
      {"clamped_k", 80, {{4, 30}, {30, 60}}, 100, 16, 64},   // k > reused tokens, clipped block
      {"no_reuse", 50, {}, 3, 16, 64},                       // nothing reused
      {"all_reused", 96, {{0, 96}}, 10, 16, 64}};            // no sparse-Q token at all
  ref_selection_sets plan_sel;
  std::size_t plan_T = 0;
  for (const sel_cfg& c : sels) {
    const std::string name = std::string("select/selection/") + c.name;
    const auto s = grid{0, 15, 6}.draw(rng, c.T);
    const auto r = ref_select(s, c.reused, c.top_k, c.block, c.fallback);
    if (plan_T == 0) {
      plan_sel = r;
      plan_T = c.T;
    }
    std::vector<double> flat;
    for (const auto& [b, e] : c.reused) {
      flat.push_back(static_cast<double>(b));
      flat.push_back(static_cast<double>(e));
    }
    nlohmann::json inputs = {
        {"scores", wr.input<double>(name, "scores", s, {c.T})},
        {"reused", wr.input<std::int64_t>(name, "reused", flat, {c.reused.size(), 2})}};
    nlohmann::json expected = nlohmann::json::object();
    const auto ex = [&](const std::string& key, const std::vector<double>& v) {
      if (key == "recompute_mask")
        expected[key] =
            exact_entry(wr.reference<std::uint8_t>(name, key, v, {v.size()}), {v.size()});
      else
        expected[key] =
            exact_entry(wr.reference<std::int64_t>(name, key, v, {v.size()}), {v.size()});
    };
    ex("key", r.key);
    ex("overflow", r.overflow);
    ex("tail", r.tail);
    ex("recompute", r.recompute);
    ex("recompute_mask", r.mask);
    wr.cases.push_back(
        {{"name", name},
         {"kind", "token_selection"},
         {"params",
          {{"T", c.T},
           {"reused", ranges_json(c.reused)},
           {"top_k", c.top_k},
           {"block_size", c.block},
           {"fallback_tokens", c.fallback}}},
         {"conventions",
          "reused: half-open [begin, end) token ranges; key = the top_k reused tokens by score, "
          "best first, ties to the lower index; overflow = reused tokens within block_size of a "
          "maximal non-reuse interval (ascending); tail = last fallback_tokens tokens of the final "
          "reused range when it ends the prompt; recompute = non-reuse | key | overflow | tail "
          "(ascending); recompute_mask[j] = 1 iff j in recompute"},
         {"inputs", inputs},
         {"expected", expected}});
    if (cand) {
      const auto rr = to_ranges(c.reused);
      hc::selection_options opt;
      opt.top_k = c.top_k;
      opt.block_size = c.block;
      opt.fallback_tokens = c.fallback;
      const auto got = hc::select_tokens(s, rr, opt);
      const auto save = [&](const std::string& key, const std::vector<std::size_t>& v) {
        std::vector<std::int64_t> x(v.begin(), v.end());
        save_below<std::int64_t>(cand->dir, candidate_path(cand->dir, name, key), x, {x.size()},
                                 "--candidate-out");
      };
      auto key = got.key;
      if (cand->inj == injection::selection_swap && name == "select/selection/tail")
        std::swap(key[0], key[1]);  // two key tokens reported out of order
      save("key", key);
      save("overflow", got.overflow);
      save("tail", got.tail);
      save("recompute", got.recompute);
      save_below<std::uint8_t>(cand->dir, candidate_path(cand->dir, name, "recompute_mask"),
                               got.recompute_mask, {c.T}, "--candidate-out");
    }
  }

  // Layer plans over the first selection: modes 0 = full, 1 = select, 2 = sparse; masks [L, T].
  const std::size_t L = 8;
  const std::vector<std::size_t> thresholds = {0, 1, 3, L};
  const std::string name = "select/layer_plan/L8";
  std::vector<double> modes, masks;
  for (std::size_t thr : thresholds)
    for (std::size_t l = 0; l < L; ++l) {
      // docs/select.md: layers < thr − 1 full, layer max(thr, 1) − 1 selects (dense unless
      // thr = 0, where it recomputes only I_nr), the rest sparse; thr = L: all dense.
      int mode = l + 1 < thr ? 0 : (l + 1 == std::max<std::size_t>(thr, 1) ? 1 : 2);
      if (thr == L) mode = 0;
      modes.push_back(mode);
      for (std::size_t j = 0; j < plan_T; ++j) {
        double m = 1.0;
        if (mode == 1 && thr == 0)
          m = std::binary_search(plan_sel.non_reuse.begin(), plan_sel.non_reuse.end(),
                                 static_cast<double>(j))
                  ? 1.0
                  : 0.0;
        if (mode == 2) m = plan_sel.mask[j];
        masks.push_back(m);
      }
    }
  const std::size_t nt = thresholds.size();
  nlohmann::json inputs = {
      {"thresholds",
       wr.input<std::int64_t>(name, "thresholds",
                              std::vector<double>(thresholds.begin(), thresholds.end()), {nt})},
      {"non_reuse",
       wr.input<std::int64_t>(name, "non_reuse", plan_sel.non_reuse, {plan_sel.non_reuse.size()})},
      {"recompute_mask", wr.input<std::uint8_t>(name, "recompute_mask", plan_sel.mask, {plan_T})}};
  nlohmann::json expected = nlohmann::json::object();
  expected["modes"] =
      exact_entry(wr.reference<std::uint8_t>(name, "modes", modes, {nt, L}), {nt, L});
  expected["masks"] = exact_entry(wr.reference<std::uint8_t>(name, "masks", masks, {nt, L, plan_T}),
                                  {nt, L, plan_T});
  wr.cases.push_back(
      {{"name", name},
       {"kind", "layer_plan"},
       {"params", {{"layers", L}, {"T", plan_T}, {"selection_from", "select/selection/tail"}}},
       {"conventions",
        "one plan per threshold l*: modes[l] 0 = full, 1 = select, 2 = sparse; layers < l*-1 "
        "full, layer max(l*,1)-1 select, later layers sparse, l* = layers: all full; masks[l][j] "
        "= 1 when token j is recomputed at layer l (full: all; select: all, or only non_reuse "
        "when l* = 0; sparse: recompute_mask)"},
       {"inputs", inputs},
       {"expected", expected}});
  if (cand) {
    hc::token_selection sel;
    for (double j : plan_sel.non_reuse) sel.non_reuse.push_back(static_cast<std::size_t>(j));
    for (double m : plan_sel.mask) sel.recompute_mask.push_back(static_cast<std::uint8_t>(m));
    std::vector<std::uint8_t> cm, cmask;
    for (std::size_t thr : thresholds) {
      const auto p = hc::make_layer_plan(L, thr, sel);
      for (std::size_t l = 0; l < L; ++l) {
        cm.push_back(static_cast<std::uint8_t>(p.modes[l]));
        const auto& m = p.mask(l);
        cmask.insert(cmask.end(), m.begin(), m.end());
      }
    }
    save_below<std::uint8_t>(cand->dir, candidate_path(cand->dir, name, "modes"), cm, {nt, L},
                             "--candidate-out");
    save_below<std::uint8_t>(cand->dir, candidate_path(cand->dir, name, "masks"), cmask,
                             {nt, L, plan_T}, "--candidate-out");
  }
}

}  // namespace hybridcache_cli::vectors
