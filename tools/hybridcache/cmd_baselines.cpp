// SPDX-License-Identifier: Apache-2.0
// `hybridcache baselines`: every checkpoint strategy of the paper's Table 1 beside the optimum.
#include <fmt/format.h>

#include <cmath>
#include <fstream>
#include <hybridcache/overlap/weights_io.hpp>
#include <hybridcache/placement.hpp>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hybridcache/command.hpp"

namespace {

using hybridcache_cli::usage_error;
namespace hc = hybridcache;

constexpr std::string_view usage =
    R"(usage: hybridcache baselines --weights FILE|- --budget M [--granularity B]
                             [--block S] [--json]

Prints expected recompute E[r], savings (1 - E[r]/R_nc) and reduction (R_nc/E[r]) of every
checkpoint strategy side by side: none, dense, balanced(M), logarithmic(M), block(S), sqrt and
the exact optimum dp(M). With --granularity B every strategy's positions are moved down to
multiples of B (as engines store state only at block boundaries) and dp is exact over them.

  --weights FILE|-   overlap weights (see `hybridcache plan --help` for the format)
  --budget M         checkpoint budget of balanced, logarithmic and dp
  --granularity B    block size of state storage (default 1)
  --block S          stride of the fixed grid (default: B if B > 1, else 256, capped at N)
  --json             print a JSON array instead of a table)";

struct row {
  std::string name;
  std::vector<std::size_t> checkpoints;
};

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv, {"json"});
  const auto path = a.get("weights");
  const auto budget = a.get_size("budget");
  const std::size_t granularity = a.get_size("granularity").value_or(1);
  const auto block_opt = a.get_size("block");
  const bool json = a.has("json");
  (void)a.get("json");
  a.reject_unknown();
  if (!a.positional().empty()) throw usage_error{"unexpected argument '" + a.positional()[0] + "'"};
  if (!path) throw usage_error{"--weights is required"};
  if (!budget) throw usage_error{"--budget is required"};

  std::vector<double> w;
  if (*path == "-") {
    w = hc::read_weights(std::cin);
  } else {
    std::ifstream in(*path);
    if (!in) throw usage_error{"cannot open --weights file '" + *path + "'"};
    w = hc::read_weights(in);
  }
  const std::size_t n = w.size();
  const std::size_t m = *budget;
  if (block_opt && *block_opt == 0) throw usage_error{"--block must be >= 1"};
  std::size_t block = block_opt.value_or(granularity > 1 ? granularity : 256);
  if (block > n) block = n;

  const auto best = hc::place_optimal(w, m, {.granularity = granularity});
  std::vector<row> rows = {
      {"none", hc::place_none(n)},
      {"dense", hc::place_dense(n)},
  };
  // The fixed strategies through the library's one strategy switch (placement/strategies.hpp).
  const hc::fixed_placement_options fixed{.granularity = granularity, .block_stride = block};
  for (auto s : {hc::placement_strategy::balanced, hc::placement_strategy::logarithmic,
                 hc::placement_strategy::block, hc::placement_strategy::sqrt}) {
    std::string name(hc::to_string(s));
    if (hc::uses_budget(s)) name = fmt::format("{}({})", name, m);
    if (s == hc::placement_strategy::block) name = fmt::format("block({})", block);
    rows.push_back({name, hc::place_fixed(s, n, m, fixed)});
  }
  for (auto& r : rows) r.checkpoints = hc::clip_to_granularity(r.checkpoints, granularity);
  rows.push_back({fmt::format("dp({})", m), best.checkpoints});

  if (json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : rows) {
      const double red = hc::reduction(w, r.checkpoints);
      out.push_back(
          {{"strategy", r.name},
           {"checkpoints", r.checkpoints.size()},
           {"expected_recompute", hc::expected_recompute(w, r.checkpoints)},
           {"savings", hc::savings(w, r.checkpoints)},
           {"reduction", std::isinf(red) ? nlohmann::json(nullptr) : nlohmann::json(red)}});
    }
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  fmt::print("prefix length N = {}, budget M = {}, granularity B = {}\n\n", n, m, granularity);
  fmt::print("{:<18} {:>11} {:>14} {:>9} {:>10}\n", "strategy", "checkpoints", "E[r] tokens",
             "savings", "reduction");
  for (const auto& r : rows) {
    const double red = hc::reduction(w, r.checkpoints);
    fmt::print("{:<18} {:>11} {:>14.6g} {:>8.2f}% {:>10}\n", r.name, r.checkpoints.size(),
               hc::expected_recompute(w, r.checkpoints), 100.0 * hc::savings(w, r.checkpoints),
               std::isinf(red) ? std::string("inf") : fmt::format("{:.3g}x", red));
  }
  return 0;
}

const hybridcache_cli::registrar reg{
    {"baselines", "compare every checkpoint strategy on an overlap histogram", usage, run}};

}  // namespace
