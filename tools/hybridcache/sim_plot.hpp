// SPDX-License-Identifier: Apache-2.0
// Plots of `hybridcache simulate`: gnuplot data and scripts, and the plots themselves when
// gnuplot is installed. Kept apart from the CSV/JSON writers (sim_output.hpp): the data files do
// not depend on a plotting program.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/sim_output.hpp"

namespace hybridcache_cli::sim_out {

/// `p` as a single-quoted gnuplot string (a quote inside is doubled).
std::string gp_quote(const fs::path& p);

/// The first lines of a .gp script: the pngcairo terminal (png where gnuplot lacks cairo) or the
/// svg one, at `w`×`h` pixels, then `set termoption noenhanced` (labels are printed verbatim).
std::string gp_terminal(bool png, int w, int h);

/// Runs gnuplot (`$HYBRIDCACHE_GNUPLOT` overrides the program) on each (plot, script) pair.
/// @returns the plots written. When gnuplot is absent nothing runs and `note` says
/// "gnuplot not found (install gnuplot-nox): wrote <written>, no plots"; a script gnuplot fails
/// on is skipped and named in `note`.
std::vector<fs::path> run_gnuplot(const std::vector<std::pair<fs::path, fs::path>>& jobs,
                                  std::string_view written, std::string& note);

/// reduction.gp / ttft_workers.gp (+ their .dat inputs) under `dir`, then runs gnuplot on them
/// when it is installed (`$HYBRIDCACHE_GNUPLOT` overrides the program). @returns the plot files
/// written (empty when gnuplot is absent or failed; `note` then says why).
std::vector<fs::path> write_plots(const fs::path& dir, const run_results& r, std::string& note);

}  // namespace hybridcache_cli::sim_out
