// SPDX-License-Identifier: Apache-2.0
// `hybridcache vectors --out DIR`: versioned, deterministic golden vectors (npy + manifest.json)
// for engine kernels; see docs/verification.md.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>
#include <hybridcache/version.hpp>
#include <nlohmann/json.hpp>

#include "hybridcache/command.hpp"
#include "hybridcache/vectors_keys.hpp"
#include "hybridcache/vectors_planner.hpp"
#include "hybridcache/vectors_rope.hpp"
#include "hybridcache/vectors_select.hpp"
#include "hybridcache/vectors_state.hpp"

namespace {

namespace hv = hybridcache_cli::vectors;

constexpr std::uint64_t default_seed = 15;

hv::injection parse_injection(const std::string& s) {
  if (s == "none") return hv::injection::none;
  if (s == "transposed_state") return hv::injection::transposed_state;
  if (s == "gate_after_update") return hv::injection::gate_after_update;
  if (s == "no_q_scale") return hv::injection::no_q_scale;
  if (s == "beta_placement") return hv::injection::beta_placement;
  if (s == "ulp") return hv::injection::ulp;
  if (s == "score_offset") return hv::injection::score_offset;
  if (s == "selection_swap") return hv::injection::selection_swap;
  if (s == "key_byte") return hv::injection::key_byte;
  if (s == "non_finite") return hv::injection::non_finite;
  throw hybridcache_cli::usage_error{
      "--inject must be none, transposed_state, gate_after_update, "
      "no_q_scale, beta_placement, ulp, score_offset, selection_swap, key_byte or non_finite "
      "(got " +
      s + ")"};
}

nlohmann::json conventions() {
  return {{"state", "keys x values (dk x dv, row-major); FLA's [B, H, K, V]"},
          {"layout",
           "FLA default [B, T, H, K] (v, o: [B, T, H, V]; g, beta: [B, T, H]); "
           "Gated DeltaProduct k, v, beta have T*num_householder time rows"},
          {"gates", "log-space, applied to the old state before the update"},
          {"outputs", "o_t = (scale * q_t)^T S_t after token t; scale null = K^-1/2"},
          {"rwkv7", "S_t = (Diag(exp(w_t)) + b_t a_t^T) S_{t-1} + k_t v_t^T; q is RWKV's r"},
          {"kda", "S_t = (I - beta k k^T) Diag(exp(g_t)) S_{t-1} + beta k v^T"},
          {"gated_delta_product",
           "per token S <- exp(g_t) S, then num_householder steps "
           "S <- (I - beta k k^T) S + beta k v^T"},
          {"mamba1",
           "our keys = mamba's state (N = K), values = channels (D = V): q = C, k = B, "
           "v = u, dt = delta after bias/softplus [B, T, H, V], A [H, K, V] (transpose of "
           "mamba's [D, N]); o_t = C_t^T S_t (scale 1, no D skip); S_t = exp(dt A) * S + "
           "B (dt * u)^T"},
          {"summary",
           "transition T_C (dense families, K x K) or log_decay (sum of log-gates: 1, K, "
           "or K*V for mamba1) and end_state from S_0 = 0"},
          {"compose_apply", "state = T_B (T_A P + S_A) + S_B for the split [0, split), [split, L)"},
          {"tolerance",
           "|cand - ref| <= gamma(depth*u_acc + steps*u_store) * bound_weight + "
           "u_out*|ref|, gamma(x) = x/(1-x), depth = depth_per_token*t + depth_extra, "
           "t = 1 + index along time_axis (or steps); see docs/verification.md"},
          {"exact",
           "expected entries with compare = exact (selections, layer plans, namespace "
           "encodings, keys) must match element for element; no tolerance"},
          {"inputs",
           "exact dyadic rationals j*2^-s from SplitMix64 integers: bf16 cases have "
           "<= 8 significant bits, fp32 cases <= 21; stored as float32"}};
}

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv);
  const auto out = a.get("out");
  if (!out) throw hybridcache_cli::usage_error{"--out DIR is required"};
  const std::uint64_t seed = a.get_size("seed").value_or(default_seed);
  const auto t0 = std::chrono::steady_clock::now();
  hv::writer w{std::filesystem::path(*out)};
  std::filesystem::create_directories(w.dir);
  std::optional<hv::candidate_spec> cand;
  if (auto c = a.get("candidate-out")) {
    cand =
        hv::candidate_spec{std::filesystem::path(*c), parse_injection(a.get_or("inject", "none"))};
    std::filesystem::create_directories(cand->dir);
  }
  hv::prng rng(seed);
  hv::state_output_cases(w, rng, cand ? &*cand : nullptr, {64, 256});
  hv::state_summary_cases(w, rng, cand ? &*cand : nullptr);
  hv::planner_cases(w, rng, cand ? &cand->dir : nullptr);
  hv::rope_cases(w, rng, cand ? &cand->dir : nullptr);
  hv::select_cases(w, rng, cand ? &*cand : nullptr);
  hv::key_cases(w, rng, cand ? &*cand : nullptr);
  if (cand && cand->inj == hv::injection::ulp) hv::inject_ulp(w, *cand);
  if (cand && cand->inj == hv::injection::non_finite) hv::inject_non_finite(w, *cand);
  nlohmann::json manifest = {
      {"format", "hybridcache-golden-vectors"},
      {"format_version", hv::format_version},
      {"generator", std::string("hybridcache ") + hybridcache::version_string},
      {"seed", seed},
      {"reference_dtype", "float64"},
      {"files",
       {{"inputs", std::string("<case>/") + std::string(hv::input_prefix) + "<input>.npy"},
        {"references", std::string("<case>/") + std::string(hv::reference_prefix) + "<key>.npy"},
        {"bound_weights", std::string("<case>/") + std::string(hv::bound_prefix) + "<key>.npy"},
        {"candidate_outputs",
         std::string("<case>/") + std::string(hv::candidate_prefix) +
             "<key>.npy, in the --candidate directory of `hybridcache verify`; no file here "
             "starts with " +
             std::string(hv::candidate_prefix)}}},
      {"conventions", conventions()},
      {"cases", w.cases}};
  hv::write_below(w.dir, w.dir / "manifest.json", manifest.dump(1) + "\n", "--out");
  std::uintmax_t bytes = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(w.dir))
    if (e.is_regular_file()) bytes += e.file_size();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print("wrote {} cases, {:.1f} MB, to {} in {:.2f} s\n", w.cases.size(),
             static_cast<double>(bytes) / 1e6, w.dir.string(), secs);
  return 0;
}

const hybridcache_cli::registrar reg{
    {"vectors", "write golden test vectors (npy + manifest.json) for engine kernels",
     "usage: hybridcache vectors --out DIR [--seed N] [--candidate-out DIR [--inject KIND]]\n"
     "  Writes deterministic inputs (exact in bf16/fp32), float64 references and derived\n"
     "  tolerance weights for every state family, RoPE realign, the planner, sparse-Q scores,\n"
     "  token selections and layer plans (exact), and segment/namespace keys under a published\n"
     "  test secret (exact), and a manifest.json describing them: <case>/in_<input>.npy,\n"
     "  <case>/ref_<key>.npy and <case>/bound_<key>.npy (format_version 3).\n"
     "  --candidate-out DIR  also write the library's own float32 results as a candidate,\n"
     "                       <case>/out_<key>.npy (what `hybridcache verify` reads)\n"
     "  --inject KIND        with an injected error (negative controls): transposed_state,\n"
     "                       gate_after_update, no_q_scale, beta_placement, ulp,\n"
     "                       score_offset, selection_swap, key_byte, non_finite",
     run}};

}  // namespace
