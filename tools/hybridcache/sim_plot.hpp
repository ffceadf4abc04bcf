// SPDX-License-Identifier: Apache-2.0
// Plots of `hybridcache simulate`: gnuplot data and scripts, and the plots themselves when
// gnuplot is installed. Kept apart from the CSV/JSON writers (sim_output.hpp): the data files do
// not depend on a plotting program.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "hybridcache/sim_output.hpp"

namespace hybridcache_cli::sim_out {

/// reduction.gp / ttft_workers.gp (+ their .dat inputs) under `dir`, then runs gnuplot on them
/// when it is installed (`$HYBRIDCACHE_GNUPLOT` overrides the program). @returns the plot files
/// written (empty when gnuplot is absent or failed; `note` then says why).
std::vector<fs::path> write_plots(const fs::path& dir, const run_results& r, std::string& note);

}  // namespace hybridcache_cli::sim_out
