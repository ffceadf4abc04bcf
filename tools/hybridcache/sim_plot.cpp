// SPDX-License-Identifier: Apache-2.0
// The gnuplot side of `hybridcache simulate`'s output (sim_plot.hpp): .dat inputs, .gp scripts
// and, when gnuplot is installed, the PNG/SVG plots. CSV, JSON and the terminal tables are in
// sim_output.cpp.
#include "hybridcache/sim_plot.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace hybridcache_cli::sim_out {

namespace {

using hybridcache::placement_strategy;
using hybridcache::to_string;

// A reduction for log-scale plots: +inf is drawn at 1e4.
double plot_value(double x) { return std::isfinite(x) ? std::min(x, 1e4) : 1e4; }

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace

std::string gp_quote(const fs::path& p) {
  std::string s = p.string(), out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "''";
    else
      out += c;
  }
  return out + "'";
}

std::string gp_terminal(bool png, int w, int h) {
  if (!png)
    return fmt::format(
        "set terminal svg size {},{} dynamic font 'Helvetica,11'\nset termoption noenhanced\n", w,
        h);
  return fmt::format(
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {{ set terminal pngcairo size {},{} font "
      "',10' }} else {{ set terminal png size {},{} }}\nset termoption noenhanced\n",
      w, h, w, h);
}

std::vector<fs::path> run_gnuplot(const std::vector<std::pair<fs::path, fs::path>>& jobs,
                                  std::string_view written, std::string& note) {
  std::vector<fs::path> plots;
  const char* env = std::getenv("HYBRIDCACHE_GNUPLOT");
  const std::string prog = env && *env ? env : "gnuplot";
  if (std::system(("command -v " + shell_quote(prog) + " >/dev/null 2>&1").c_str()) != 0) {
    note = fmt::format("gnuplot not found (install gnuplot-nox): wrote {}, no plots", written);
    return plots;
  }
  for (const auto& [plot, script] : jobs) {
    const int rc = std::system(
        (shell_quote(prog) + " " + shell_quote(fs::absolute(script).string()) + " 2>&1").c_str());
    if (rc != 0) {
      note = "gnuplot failed on " + script.string();
      continue;
    }
    plots.push_back(plot);
  }
  return plots;
}

std::vector<fs::path> write_plots(const fs::path& dir, const run_results& r, std::string& note) {
  const fs::path abs = fs::absolute(dir);
  std::vector<std::pair<fs::path, fs::path>> scripts;  // (plot, script)
  if (!r.sparse.empty()) {
    // reduction.dat: one gnuplot index block per (trace, strategy): x = budget, mean ckpt,
    // reduction.
    std::string dat;
    std::vector<std::vector<std::pair<std::string, std::size_t>>> blocks(r.sparse.size());
    std::size_t index = 0;
    for (std::size_t t = 0; t < r.sparse.size(); ++t) {
      const auto& s = r.sparse[t];
      std::size_t bmin = 1, bmax = 1;
      if (!s.options.budgets.empty()) {
        bmin = *std::min_element(s.options.budgets.begin(), s.options.budgets.end());
        bmax = *std::max_element(s.options.budgets.begin(), s.options.budgets.end());
      }
      for (auto kind : s.options.strategies) {
        dat += fmt::format("# {} {}\n", s.trace_name, to_string(kind));
        for (const auto& row : s.rows) {
          if (row.kind != kind) continue;
          if (hybridcache::uses_budget(kind)) {
            dat += fmt::format("{} {} {}\n", row.budget, std::max(row.mean_checkpoints, 0.5),
                               plot_value(row.reduction));
          } else {  // budget-free: a flat line across the budget axis, one point on the memory axis
            dat += fmt::format("{} {} {}\n{} {} {}\n", bmin, std::max(row.mean_checkpoints, 0.5),
                               plot_value(row.reduction), bmax, std::max(row.mean_checkpoints, 0.5),
                               plot_value(row.reduction));
          }
        }
        dat += "\n\n";
        blocks[t].emplace_back(std::string(to_string(kind)), index++);
      }
    }
    write_atomic(dir / "reduction.dat", dat);
    for (bool png : {true, false}) {
      const int h = 360 * static_cast<int>(r.sparse.size());
      std::string gp = gp_terminal(png, 1200, h);
      gp +=
          fmt::format("set output {}\n", gp_quote(abs / (png ? "reduction.png" : "reduction.svg")));
      gp += fmt::format(
          "set multiplot layout {},2\nset logscale xy 2\nset grid\nset key outside right top\n",
          r.sparse.size());
      gp += fmt::format("set style line 1 lw 2\n");
      for (std::size_t t = 0; t < r.sparse.size(); ++t) {
        const auto& s = r.sparse[t];
        for (int panel = 0; panel < 2; ++panel) {
          gp += fmt::format(
              "set title \"{}: {} (K={}, B={}, R={})\"\n", s.trace_name,
              panel == 0 ? "reduction vs budget M" : "reduction vs checkpoints stored per entry",
              s.options.cache_entries, s.options.granularity, s.options.replan_every);
          gp += fmt::format("set xlabel \"{}\"\nset ylabel \"recurrent-work reduction (x)\"\n",
                            panel == 0 ? "checkpoint budget M" : "mean checkpoints per entry");
          gp += "plot ";
          bool first = true;
          for (const auto& [name, idx] : blocks[t]) {
            if (name == "no_cache") continue;  // identical to kv_only on the recurrent axis
            const bool budgeted = name == "balanced" || name == "logarithmic" || name == "dp" ||
                                  name == "dp_frontier";
            const bool dp = name == "dp" || name == "dp_frontier";
            if (!first) gp += ", ";
            first = false;
            const std::string style = panel == 0
                                          ? (budgeted ? "linespoints" : "lines dt 2")
                                          : (budgeted ? "linespoints" : "points pt 7 ps 1.5");
            gp += fmt::format("{} index {} using {}:3 with {} lw {} title '{}'",
                              gp_quote(abs / "reduction.dat"), idx, panel == 0 ? 1 : 2, style,
                              dp ? 3 : 1, name);
          }
          gp += "\n";
        }
      }
      gp += "unset multiplot\n";
      if (png)
        write_atomic(dir / "reduction_png.gp", gp);
      else
        write_atomic(dir / "reduction_svg.gp", gp);
    }
    scripts.emplace_back(dir / "reduction.png", dir / "reduction_png.gp");
    scripts.emplace_back(dir / "reduction.svg", dir / "reduction_svg.gp");
  }
  if (!r.fig14.empty() || !r.segments.empty()) {
    // Two files, so a missing half never shifts gnuplot's index numbering.
    std::string dat = "# cold dispatch: workers ttft dispatch transfer combine full\n";
    for (const auto& b : r.fig14) {
      dat += fmt::format("{} {} {} {} {} {}\n", b.workers, b.total, b.dispatch, b.transfer,
                         b.combine, b.full);
    }
    std::string seg = "# segment trace: workers composition full prefix naive (mean ms)\n";
    if (!r.segments.empty()) {
      const auto& s = r.segments.front();
      double full = 0, prefix = 0, naive = 0;
      for (const auto& x : s.ttft) {
        if (x.method == "full") full = x.mean;
        if (x.method == "prefix") prefix = x.mean;
        if (x.method == "naive") naive = x.mean;
      }
      for (const auto& x : s.ttft) {
        if (x.method == "composition")
          seg += fmt::format("{} {} {} {} {}\n", x.workers, x.mean, full, prefix, naive);
      }
    }
    if (!r.fig14.empty()) write_atomic(dir / "ttft_fig14.dat", dat);
    if (!r.segments.empty()) write_atomic(dir / "ttft_segments.dat", seg);
    const bool both = !r.fig14.empty() && !r.segments.empty();
    for (bool png : {true, false}) {
      std::string gp = gp_terminal(png, both ? 1200 : 640, 420);
      gp += fmt::format("set output {}\n",
                        gp_quote(abs / (png ? "ttft_workers.png" : "ttft_workers.svg")));
      gp += fmt::format(
          "set multiplot layout 1,{}\nset grid\nset logscale x 2\nset key top right\nset xlabel "
          "\"prefill workers m\"\n"
          "set ylabel \"TTFT (ms, cost model)\"\nset yrange [0:*]\n",
          both ? 2 : 1);
      const std::string d = gp_quote(abs / "ttft_fig14.dat");
      const std::string e = gp_quote(abs / "ttft_segments.dat");
      if (!r.fig14.empty()) {
        gp += fmt::format("set title \"{} cold segments x {} tokens (HYPIC Fig. 14 shape)\"\n",
                          r.fig14_segments, r.fig14_tokens);
        gp += fmt::format(
            "plot {0} using 1:6 with lines dt 2 lw 2 title 'full recompute', "
            "{0} using 1:2 with linespoints lw 3 title 'composition + LPT (total)', "
            "{0} using 1:3 with linespoints title 'dispatch forward', "
            "{0} using 1:($4+$5) with linespoints title 'transfer + combine'\n",
            d);
      }
      if (!r.segments.empty()) {
        gp += "set key bottom left\n";
        gp +=
            fmt::format("set title \"{}: mean TTFT per request\"\n", r.segments.front().trace_name);
        gp += fmt::format(
            "plot {0} using 1:3 with lines dt 2 lw 2 title 'full recompute', "
            "{0} using 1:4 with lines dt 3 lw 2 title 'prefix caching', "
            "{0} using 1:5 with lines dt 4 lw 2 title 'naive addition (inexact)', "
            "{0} using 1:2 with linespoints lw 3 title 'composition + LPT'\n",
            e);
      }
      gp += "unset multiplot\n";
      write_atomic(dir / (png ? "ttft_workers_png.gp" : "ttft_workers_svg.gp"), gp);
    }
    scripts.emplace_back(dir / "ttft_workers.png", dir / "ttft_workers_png.gp");
    scripts.emplace_back(dir / "ttft_workers.svg", dir / "ttft_workers_svg.gp");
  }
  return run_gnuplot(scripts, "the data and the .gp scripts", note);
}

}  // namespace hybridcache_cli::sim_out
