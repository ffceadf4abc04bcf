// SPDX-License-Identifier: Apache-2.0
// The tree scenario of `hybridcache simulate` (docs/tree_simulation.md): option parsing, trace
// building (synthetic multi-turn, Mooncake hash_ids, system prompts + ShareGPT, L-Eval), the
// sweep of <hybridcache/sim/tree.hpp>, tables, tree.csv and one gnuplot plot per trace.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <hybridcache/sim/tree/simulate.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hybridcache/command.hpp"

namespace hybridcache_cli::sim_tree {

namespace fs = std::filesystem;

/// Help text of the tree options (appended to `simulate`'s usage).
extern const char* const usage;

/// What the tree scenario runs.
struct options {
  std::vector<std::string> traces{"multi-turn"};  ///< empty = skip the scenario
  hybridcache::tree_options sweep{};
  std::optional<std::size_t> block;     ///< tokens per node (default 64; Mooncake: 512)
  std::optional<std::size_t> sessions;  ///< synthetic multi-turn sessions
  /// KV accounting, one sweep each (default: unlimited only; see replay.hpp).
  std::vector<hybridcache::kv_mode> kv_modes{hybridcache::kv_mode::unlimited};
  double kv_bytes = 0.0;  ///< --kv-budget: the KV pool / the KV share of the joint pool
};

/// Reads --tree, --tree-budgets, --tree-policies, --tree-block, --tree-sessions, --tree-chunk,
/// --tree-path-cap, --kv-budget, --kv-mode, --tree-requests, --tree-victims.
/// @throws usage_error for bad values.
options parse(const hybridcache_cli::args& a);

/// Shared workload knobs of `simulate` that the tree traces also follow.
struct workload {
  fs::path data;
  std::optional<std::size_t> requests;
  std::uint64_t seed = 1;
  double zipf = 1.0;
  bool bytes_tokenizer = false;
  hybridcache::model_shape model = hybridcache::qwen3_5_0_8b;
};

/// Prints every name `--tree-policies` takes, one per line as `name<TAB>kind`, in report order
/// then the ablations. Kinds: `library` (the library's row), `engine` (a faithful engine row:
/// the yardstick of the library's row and one of its candidates, `faithful_tree_policy_names`),
/// `hindsight` (an engine row tuned on the trace it is scored on), `reference` (offline) and
/// `ablation` (`tree_policy_variants`, run only when named). Scripts read the engine rows from
/// here rather than keeping their own list (scripts/tree_cells.py).
void list_policies(std::FILE* out);

/// Builds and replays every tree trace, prints the tables to stdout and returns the results.
std::vector<hybridcache::tree_result> run(const options& o, const workload& w, bool progress);

/// tree.csv under `dir`, plus tree_<trace>.gp/.dat and, when gnuplot runs, tree_<trace>.png/.svg;
/// tree_requests.csv when any row logged its requests, tree_victims.csv with `victims`
/// (--tree-victims, even when no row gave a state up).
/// @returns the files written; `note` says why plots are missing.
std::vector<fs::path> write(const fs::path& dir, const std::vector<hybridcache::tree_result>& r,
                            bool plot, std::string& note, bool victims = false);

}  // namespace hybridcache_cli::sim_tree
