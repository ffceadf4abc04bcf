// SPDX-License-Identifier: Apache-2.0
// `hybridcache demo`: the optimal checkpoint planner against every fixed strategy on built-in
// overlap laws shaped like the sparse prefix caching paper's data sets.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <hybridcache/overlap/synthetic.hpp>
#include <hybridcache/placement.hpp>
#include <string>
#include <vector>

#include "hybridcache/command.hpp"

namespace {

using hybridcache_cli::usage_error;
namespace hc = hybridcache;

constexpr std::string_view usage =
    R"(usage: hybridcache demo [--n N] [--granularity B] [--max-budget M]

Runs the exact checkpoint planner (DP) on built-in overlap-depth laws shaped like the paper's data
sets (document QA: spike near the full length; system prompts: mass at short depths; multimodal)
and prints, per budget, the expected recompute E[r] in tokens and the savings of DP, balanced and
logarithmic placement, then how the fixed grids (block, sqrt, dense) compare with DP at the same
number of checkpoints and how few DP checkpoints match them.

  --n N              cached prefix length (default 8192)
  --granularity B    state storage block size; every strategy is moved to multiples of B
                     (default 64, the flash-linear-attention chunk size)
  --max-budget M     largest budget shown (default 64; budgets 1, 2, 4, ... up to M))";

std::string cell(double er, double nc) {
  return fmt::format("{:>9.1f} {:>5.1f}%", er, 100.0 * (1.0 - er / nc));
}

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv);
  const std::size_t n = a.get_size("n").value_or(8192);
  const std::size_t granularity = a.get_size("granularity").value_or(64);
  const std::size_t max_budget = a.get_size("max-budget").value_or(64);
  a.reject_unknown();
  if (!a.positional().empty()) throw usage_error{"unexpected argument '" + a.positional()[0] + "'"};
  if (n == 0) throw usage_error{"--n must be >= 1"};
  if (granularity == 0 || granularity > n) throw usage_error{"--granularity must be in 1..N"};

  fmt::print("Sparse prefix caching: exact checkpoint placement vs fixed strategies\n");
  fmt::print(
      "prefix length N = {}, checkpoints at multiples of B = {}; E[r] = expected tokens "
      "recomputed per hit, savings = 1 - E[r]/R_nc\n",
      n, granularity);
  const hc::placement_options opts{.granularity = granularity};
  for (auto shape : {hc::overlap_shape::document_qa, hc::overlap_shape::system_prompts,
                     hc::overlap_shape::multimodal}) {
    const auto w = hc::synthetic_overlap(shape, n);
    const double nc = hc::no_cache_recompute(w);
    // E[r] of DP for every budget up to the number of candidates (for "checkpoints to match").
    const auto frontier = hc::optimal_frontier(w, std::max(max_budget, n / granularity), opts);
    fmt::print("\n== {} (no cache: E[r] = R_nc = {:.1f} tokens)\n", hc::to_string(shape), nc);
    fmt::print("{:>6}  {:>16}  {:>16}  {:>16}  {:>9}\n", "budget", "DP", "balanced", "logarithmic",
               "DP gain");
    for (std::size_t m = 1; m <= max_budget; m *= 2) {
      const auto dp = hc::place_optimal(w, m, opts);
      const hc::fixed_placement_options fixed{.granularity = granularity};
      const auto bal = hc::place_fixed(hc::placement_strategy::balanced, n, m, fixed);
      const auto lg = hc::place_fixed(hc::placement_strategy::logarithmic, n, m, fixed);
      const double e_bal = hc::expected_recompute(w, bal);
      const double e_lg = hc::expected_recompute(w, lg);
      const double best_fixed = std::min(e_bal, e_lg);
      fmt::print("{:>6}  {}  {}  {}  {:>8.2f}x\n", m, cell(dp.expected_recompute, nc),
                 cell(e_bal, nc), cell(e_lg, nc),
                 dp.expected_recompute > 0 ? best_fixed / dp.expected_recompute : INFINITY);
    }
    fmt::print("  fixed grids:\n");
    struct grid {
      std::string name;
      std::vector<std::size_t> c;
    };
    const std::size_t stride = std::min<std::size_t>(n, std::max<std::size_t>(granularity, 256));
    const std::vector<grid> grids = {
        {fmt::format("block({})", stride),
         hc::place_fixed(hc::placement_strategy::block, n, 0, {.granularity = 1, .block_stride = stride})},
        {"sqrt", hc::place_fixed(hc::placement_strategy::sqrt, n, 0)},
        {"dense", hc::place_dense(n)},
    };
    for (const auto& g : grids) {
      const auto c = hc::clip_to_granularity(g.c, granularity);
      const double e = hc::expected_recompute(w, c);
      const double e_dp = hc::place_optimal(w, c.size(), opts).expected_recompute;
      // The fewest DP checkpoints that do at least as well as the grid.
      std::size_t match = 0;
      while (match < frontier.size() && frontier[match] > e * (1 + 1e-12)) ++match;
      const std::string match_text = fmt::format("{}", match);
      fmt::print(
          "    {:<11} {:>5} checkpoints: E[r] = {:>9.1f}  DP with as many: {:>9.1f}  "
          "DP checkpoints to match: {}\n",
          g.name, c.size(), e, e_dp, match_text);
    }
  }
  return 0;
}

const hybridcache_cli::registrar reg{
    {"demo", "exact checkpoint placement vs fixed strategies on built-in overlap laws", usage,
     run}};

}  // namespace
