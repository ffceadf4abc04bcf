// SPDX-License-Identifier: Apache-2.0
// `hybridcache plan`: the exact checkpoint planner for an overlap histogram given as text.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <fstream>
#include <hybridcache/overlap/weights_io.hpp>
#include <hybridcache/placement.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "hybridcache/command.hpp"

namespace {

using hybridcache_cli::usage_error;

constexpr std::string_view usage =
    R"(usage: hybridcache plan --weights FILE|- --budget M [--granularity B]
                        [--method auto|cht|lagrangian] [--json]

Places at most M recurrent-state checkpoints on a cached prefix so that the expected recompute
E[r] = sum_t p_t (t - l(t)) is minimal (exact DP of the sparse prefix caching paper).

  --weights FILE|-   overlap weights, '-' for stdin: numbers separated by whitespace, the i-th
                     (from 0) is the weight of overlap depth i+1; '#' starts a comment; weights are
                     normalised (need not sum to 1), must be finite and >= 0
  --budget M         checkpoints to place (fewer are used when fewer positions carry mass)
  --granularity B    checkpoints only at multiples of B (block-aligned state storage; default 1)
  --method NAME      auto (default), cht (layered DP) or lagrangian (price search)
  --json             print one JSON object instead of text)";

std::vector<double> load_weights(const std::string& path) {
  if (path == "-") return hybridcache::read_weights(std::cin);
  std::ifstream in(path);
  if (!in) throw usage_error{"cannot open --weights file '" + path + "'"};
  return hybridcache::read_weights(in);
}

hybridcache::placement_method parse_method(const std::string& s) {
  if (s == "auto") return hybridcache::placement_method::automatic;
  if (s == "cht") return hybridcache::placement_method::cht;
  if (s == "lagrangian") return hybridcache::placement_method::lagrangian;
  throw usage_error{"--method must be auto, cht or lagrangian, got '" + s + "'"};
}

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv, {"json"});
  const auto path = a.get("weights");
  const auto budget = a.get_size("budget");
  const std::size_t granularity = a.get_size("granularity").value_or(1);
  const std::string method_name = a.get_or("method", "auto");
  const bool json = a.has("json");
  (void)a.get("json");
  a.reject_unknown();
  if (!a.positional().empty()) throw usage_error{"unexpected argument '" + a.positional()[0] + "'"};
  if (!path) throw usage_error{"--weights is required"};
  if (!budget) throw usage_error{"--budget is required"};
  const auto method = parse_method(method_name);

  const auto w = load_weights(*path);
  const auto plan =
      hybridcache::place_optimal(w, *budget, {.granularity = granularity, .method = method});
  const double nc = hybridcache::no_cache_recompute(w);
  const double sav = hybridcache::savings(w, plan.checkpoints);
  const double red = hybridcache::reduction(w, plan.checkpoints);
  if (json) {
    nlohmann::json out = {
        {"n", w.size()},
        {"budget", *budget},
        {"granularity", granularity},
        {"method", method_name},
        {"checkpoints", plan.checkpoints},
        {"expected_recompute", plan.expected_recompute},
        {"no_cache_recompute", nc},
        {"savings", sav},
        {"reduction", std::isinf(red) ? nlohmann::json(nullptr) : nlohmann::json(red)}};
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("prefix length N = {}, budget M = {}, granularity B = {}, method = {}\n", w.size(),
             *budget, granularity, method_name);
  fmt::print("checkpoints ({}): {}\n", plan.checkpoints.size(), fmt::join(plan.checkpoints, " "));
  fmt::print("expected recompute: {:.6g} tokens (no cache: {:.6g})\n", plan.expected_recompute, nc);
  fmt::print("savings: {:.2f}%   reduction: {}\n", 100.0 * sav,
             std::isinf(red) ? std::string("inf") : fmt::format("{:.3g}x", red));
  return 0;
}

const hybridcache_cli::registrar reg{
    {"plan", "optimal checkpoint positions for an overlap histogram", usage, run}};

}  // namespace
