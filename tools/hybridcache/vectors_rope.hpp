// SPDX-License-Identifier: Apache-2.0
// RoPE realign golden vectors: cached keys [tokens, heads, head_dim] moved by `delta` positions,
// both pair layouts, full and partial rotary, unscaled and linearly scaled θ. The reference is
// written out here (not the library's realign): θ_i = base^{−2i/d_rot} / factor and the angle
// delta·θ_i in long double, then the rotation (x c − y s, x s + y c) in double.
//
// Bound (per element of a rotated pair (x, y)): a kernel's angle carries a relative error of a
// few u (pow, the product with delta) and sin/cos a few ulps, so
//   |err| ≤ γ(depth·u)·(|x| + |y|)·(1 + |delta·θ_i|) + u_out|ref|,  depth = 3 + 8
// (two products and a sum, 4 u for the angle, 4 u for sin/cos); pass-through dimensions are
// copies (weight 0: exact up to the output rounding).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <hybridcache/rope/realign.hpp>
#include <hybridcache/storage/view.hpp>

#include "hybridcache/vectors_common.hpp"

namespace hybridcache_cli::vectors {

inline void rope_cases(writer& wr, prng& rng, const std::filesystem::path* cand) {
  struct cfg {
    const char* name;
    hybridcache::rope_layout layout;
    std::size_t rotary;
    double factor;  // linear scaling (1 = none)
    std::int64_t delta;
  };
  const cfg cfgs[] = {
      {"half_split/full/unscaled", hybridcache::rope_layout::half_split, 64, 1.0, 1000},
      {"interleaved/full/unscaled", hybridcache::rope_layout::interleaved, 64, 1.0, -37},
      {"half_split/partial/linear4", hybridcache::rope_layout::half_split, 32, 4.0, 4096},
      {"interleaved/partial/linear4", hybridcache::rope_layout::interleaved, 32, 4.0, -513}};
  const std::size_t tokens = 16, heads = 2, d = 64;
  const double base = 10000.0;
  for (const input_grids& gr : grids)
    for (const cfg& c : cfgs) {
      const std::string name = std::string("rope/realign/") + c.name + "/" + gr.dtype;
      const auto keys = gr.symmetric(-1).draw(rng, tokens * heads * d);
      std::vector<double> ref(keys), weight(keys.size(), 0.0);
      const std::size_t half = c.rotary / 2;
      for (std::size_t row = 0; row < tokens * heads; ++row)
        for (std::size_t i = 0; i < half; ++i) {
          const long double theta =
              std::pow(static_cast<long double>(base),
                       -2.0L * static_cast<long double>(i) / static_cast<long double>(c.rotary)) /
              static_cast<long double>(c.factor);
          const long double ang = static_cast<long double>(c.delta) * theta;
          const double cs = static_cast<double>(std::cos(ang)),
                       sn = static_cast<double>(std::sin(ang));
          const std::size_t a = c.layout == hybridcache::rope_layout::half_split ? i : 2 * i;
          const std::size_t b =
              c.layout == hybridcache::rope_layout::half_split ? i + half : 2 * i + 1;
          const double x = keys[row * d + a], y = keys[row * d + b];
          ref[row * d + a] = x * cs - y * sn;
          ref[row * d + b] = x * sn + y * cs;
          const double w =
              (std::fabs(x) + std::fabs(y)) * (1.0 + std::fabs(static_cast<double>(ang)));
          weight[row * d + a] = w;
          weight[row * d + b] = w;
        }
      nlohmann::json params = {{"head_dim", d},
                               {"rotary_dim", c.rotary},
                               {"base", base},
                               {"layout", c.layout == hybridcache::rope_layout::half_split
                                              ? "half_split (GPT-NeoX: pair i, i + rotary_dim/2)"
                                              : "interleaved (GPT-J: pair 2i, 2i+1)"},
                               {"scaling", c.factor == 1.0 ? "none" : "linear"},
                               {"factor", c.factor},
                               {"delta", c.delta}};
      nlohmann::json expected = nlohmann::json::object();
      expected["keys"] = expected_entry(wr.reference<double>(name, "keys", ref, {tokens, heads, d}),
                                        wr.bound(name, "keys", weight, {tokens, heads, d}),
                                        {tokens, heads, d}, 0.0, 11.0, -1, 0);
      wr.cases.push_back(
          {{"name", name},
           {"kind", "rope_realign"},
           {"input_dtype", gr.dtype},
           {"params", params},
           {"conventions",
            "keys [tokens, heads, head_dim] rotated at their old "
            "positions; expected = R(delta) keys, theta_i = "
            "base^(-2i/rotary_dim)/factor"},
           {"inputs", {{"keys", wr.input<float>(name, "keys", keys, {tokens, heads, d})}}},
           {"expected", expected}});
      if (cand) {
        hybridcache::rope_params p;
        p.head_dim = d;
        p.rotary_dim = c.rotary;
        p.base = base;
        p.layout = c.layout;
        if (c.factor != 1.0) p.scaling = hybridcache::rope_scaling::linear(c.factor);
        std::vector<float> src(keys.begin(), keys.end()), dst(src.size());
        hybridcache::realign_keys(
            p, hybridcache::strided_view<const float, 3>(src.data(), {tokens, heads, d}),
            hybridcache::strided_view<float, 3>(dst.data(), {tokens, heads, d}), c.delta);
        save_below<float>(*cand, candidate_path(*cand, name, "keys"), dst, {tokens, heads, d},
                          "--candidate-out");
      }
    }
}

}  // namespace hybridcache_cli::vectors
