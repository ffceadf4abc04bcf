// SPDX-License-Identifier: Apache-2.0
// Output of `hybridcache simulate`: terminal tables (fmt), CSV and JSON (nlohmann); the gnuplot
// data, scripts and plots are in sim_plot.hpp. Files are written atomically (temporary file, then
// rename), so an interrupted or failed run never leaves a half-written file behind.
#pragma once

#include <cstdio>
#include <filesystem>
#include <hybridcache/sim/segment_reuse.hpp>
#include <hybridcache/sim/sparse_prefix.hpp>
#include <string>
#include <vector>

namespace hybridcache_cli::sim_out {

namespace fs = std::filesystem;

/// Everything one `simulate` run produced.
struct run_results {
  std::vector<hybridcache::sparse_prefix_result> sparse;
  std::vector<hybridcache::segment_reuse_result> segments;  // 0 or 1
  std::vector<hybridcache::ttft_breakdown> fig14;
  std::size_t fig14_segments = 11, fig14_tokens = 2400;
  hybridcache::segment_reuse_options segment_options;
};

void print_sparse_table(std::FILE* out, const hybridcache::sparse_prefix_result& r);
void print_dominance(std::FILE* out, const hybridcache::sparse_prefix_result& r);
void print_segment_table(std::FILE* out, const hybridcache::segment_reuse_result& r);
void print_fig14(std::FILE* out, const run_results& r);

/// Writes `content` to `path` through a temporary file in the same directory and a rename.
void write_atomic(const fs::path& path, const std::string& content);

/// sparse_prefix.csv, dominance.csv, segment_namespaces.csv, segment_ttft.csv, fig14.csv and
/// simulate.json under `dir`. @returns the paths written.
std::vector<fs::path> write_data(const fs::path& dir, const run_results& r);

}  // namespace hybridcache_cli::sim_out
