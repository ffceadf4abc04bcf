// SPDX-License-Identifier: Apache-2.0
#include "hybridcache/sim_output.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <hybridcache/error.hpp>
#include <nlohmann/json.hpp>
#include <sstream>
#include <system_error>

namespace hybridcache_cli::sim_out {

namespace {

using hybridcache::sim::strategy;
using hybridcache::sim::to_string;
using json = nlohmann::json;

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024.0 && u < 5) {
    b /= 1024.0;
    ++u;
  }
  return fmt::format("{:.1f} {}", b, units[u]);
}

std::string fmt_reduction(double x) { return std::isinf(x) ? std::string("inf") : fmt::format("{:.2f}x", x); }

std::string budget_text(const hybridcache::sim::strategy_result& r) {
  return hybridcache::sim::uses_budget(r.kind) ? std::to_string(r.budget) : std::string("-");
}

json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

// A reduction factor: +inf (nothing left to recompute) is written "inf", as in the CSV.
json reduction_json(double x) { return std::isinf(x) && x > 0 ? json("inf") : num(x); }

std::string csv_num(double x) { return std::isfinite(x) ? fmt::format("{:.10g}", x) : std::string("inf"); }

// A reduction for log-scale plots: +inf is drawn at 1e4.
double plot_value(double x) { return std::isfinite(x) ? std::min(x, 1e4) : 1e4; }

std::string gp_quote(const fs::path& p) {
  std::string s = p.string(), out = "'";
  for (char c : s) {
    if (c == '\'') out += "''";
    else out += c;
  }
  return out + "'";
}

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace

void print_sparse_table(std::FILE* out, const hybridcache::sim::sparse_prefix_result& r) {
  const auto& o = r.options;
  fmt::print(out, "\nsparse prefix caching — trace {}: {} requests, {} hits ({:.1f}%), mean depth of a hit {:.0f} tokens\n",
             r.trace_name, r.requests, r.hits, r.requests ? 100.0 * static_cast<double>(r.hits) / static_cast<double>(r.requests) : 0.0,
             r.hits ? r.depth_tokens / static_cast<double>(r.hits) : 0.0);
  fmt::print(out, "  last-K cache K = {}, block B = {}, {}, model {} ({} / checkpoint, {} KV / token)\n",
             o.cache_entries, o.granularity,
             o.oracle ? std::string("DP on the trace's own depth law (oracle)")
                      : fmt::format("re-solve every {} requests, gamma = {}{}{}", o.resolve_every, o.gamma,
                                    o.smoothing > 0 ? fmt::format(", smoothing {}", o.smoothing) : std::string(),
                                    fmt::format(", {} law{}", hybridcache::to_string(o.law), o.safeguard ? " + safeguard" : "")),
             o.model.name, human_bytes(o.model.checkpoint_bytes()), human_bytes(o.model.kv_bytes_per_token()));
  fmt::print(out, "  {:<12} {:>6} {:>10} {:>14} {:>9} {:>10} {:>12} {:>12}\n", "strategy", "budget", "ckpt/entry",
             "recomputed", "savings", "reduction", "state/entry", "cache (K)");
  for (const auto& row : r.rows) {
    fmt::print(out, "  {:<12} {:>6} {:>10.1f} {:>14.0f} {:>8.1f}% {:>10} {:>12} {:>12}\n", to_string(row.kind),
               budget_text(row), row.mean_checkpoints, row.recomputed_tokens, 100.0 * row.savings,
               fmt_reduction(row.reduction), human_bytes(row.checkpoint_bytes + row.kv_bytes), human_bytes(row.cache_bytes));
  }
  if (r.dp_fallbacks > 0) {
    fmt::print(out, "  ({} DP placements had no histogram mass yet and used the balanced fallback)\n", r.dp_fallbacks);
  }
}

void print_dominance(std::FILE* out, const hybridcache::sim::sparse_prefix_result& r) {
  using hybridcache::sim::dominance_status;
  for (auto kind : {strategy::dp, strategy::dp_frontier}) {
    const auto checks = hybridcache::sim::check_dominance(r, kind);
    if (checks.empty()) continue;
    std::size_t n[5] = {};
    for (const auto& c : checks) ++n[static_cast<int>(c.status)];
    if (n[static_cast<int>(dominance_status::nothing_to_save)] == checks.size()) {
      fmt::print(out, "  {} vs every fixed baseline: nothing to save (no request overlaps a cached entry)\n", to_string(kind));
      continue;
    }
    const std::size_t compared = checks.size() - n[static_cast<int>(dominance_status::not_comparable)];
    fmt::print(out, "  {} >= every fixed baseline storing <= M per entry: {}/{} hold, {} within 1%, {} fail; {} not comparable"
               " (the baseline stored more than M in an entry)",
               to_string(kind), n[0], compared, n[1], n[2], n[static_cast<int>(dominance_status::not_comparable)]);
    if (n[2] == 0) {
      fmt::print(out, "\n");
      continue;
    }
    fmt::print(out, "; exceptions:\n");
    for (const auto& c : checks) {
      if (c.status != dominance_status::fails) continue;
      fmt::print(out, "    M={:<4} {} {} < {} {} ({:.1f} ckpt/entry, max {})\n", c.budget, to_string(kind),
                 fmt_reduction(c.dp_reduction), to_string(c.baseline), fmt_reduction(c.baseline_reduction),
                 c.baseline_checkpoints, c.baseline_max_checkpoints);
    }
  }
}

void print_segment_table(std::FILE* out, const hybridcache::sim::segment_reuse_result& r) {
  fmt::print(out, "\nsegment reuse — trace {}: {} requests ({} with a cold segment), {:.0f} prompt tokens, prefix-cache hits {:.1f}% of tokens\n",
             r.trace_name, r.requests, r.cold_requests, r.prompt_tokens,
             r.prompt_tokens > 0 ? 100.0 * r.prefix_hit_tokens / r.prompt_tokens : 0.0);
  fmt::print(out, "  {:<14} {:>8} {:>8} {:>8} {:>9} {:>12}\n", "namespace", "lookups", "hits", "misses", "hit rate", "hit tokens");
  for (const auto& n : r.namespaces) {
    fmt::print(out, "  {:<14} {:>8} {:>8} {:>8} {:>8.1f}% {:>12.0f}\n", n.ns, n.lookups, n.hits, n.misses,
               n.lookups ? 100.0 * static_cast<double>(n.hits) / static_cast<double>(n.lookups) : 0.0, n.hit_tokens);
  }
  fmt::print(out, "  {:<22} {:>10} {:>10} {:>10} {:>14}\n", "TTFT (model, ms)", "mean", "p50", "p90", "mean (cold)");
  for (const auto& s : r.ttft) {
    const std::string name = s.method == "composition" ? fmt::format("composition m={}", s.workers) : s.method;
    fmt::print(out, "  {:<22} {:>10.1f} {:>10.1f} {:>10.1f} {:>14.1f}\n", name, s.mean, s.p50, s.p90, s.mean_cold);
  }
}

void print_fig14(std::FILE* out, const run_results& r) {
  if (r.fig14.empty()) return;
  fmt::print(out, "\ncold-segment dispatch (HYPIC Fig. 14 shape): {} cold segments x {} tokens, LPT over m workers\n",
             r.fig14_segments, r.fig14_tokens);
  fmt::print(out, "  {:>3} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12}\n", "m", "dispatch", "transfer", "combine", "TTFT",
             "vs full", "vs serial");
  for (const auto& b : r.fig14) {
    fmt::print(out, "  {:>3} {:>8.0f}ms {:>8.0f}ms {:>8.0f}ms {:>8.0f}ms {:>11.2f}x {:>11.2f}x\n", b.workers, b.dispatch,
               b.transfer, b.combine, b.total, b.speedup_vs_full(), b.speedup_vs_serial());
  }
  fmt::print(out, "  full recompute {:.0f} ms; HYPIC measured 2.0x / 3.6x / 6.1x at m = 2 / 4 / 8\n",
             r.fig14.front().full);
}

void write_atomic(const fs::path& path, const std::string& content) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw hybridcache::invalid_argument("output file", tmp.string(), "cannot create it");
    f << content;
    f.flush();
    if (!f) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw hybridcache::invalid_argument("output file", tmp.string(), "write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw hybridcache::invalid_argument("output file", path.string(), "rename failed");
  }
}

std::vector<fs::path> write_data(const fs::path& dir, const run_results& r) {
  std::vector<fs::path> written;
  auto put = [&](const char* name, const std::string& content) {
    write_atomic(dir / name, content);
    written.push_back(dir / name);
  };
  if (!r.sparse.empty()) {
    std::string csv =
        "trace,strategy,budget,mean_checkpoints,max_checkpoints,depth_tokens,recomputed_tokens,savings,reduction,checkpoint_bytes,kv_bytes,"
        "cache_bytes,cache_entries,granularity,resolve_every,gamma,model\n";
    std::string dom = "trace,dp_strategy,budget,baseline,dp_reduction,baseline_reduction,baseline_checkpoints,holds,status\n";
    for (const auto& s : r.sparse) {
      for (const auto& row : s.rows) {
        csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", s.trace_name, to_string(row.kind),
                           hybridcache::sim::uses_budget(row.kind) ? row.budget : 0, csv_num(row.mean_checkpoints),
                           row.max_checkpoints,
                           csv_num(row.depth_tokens), csv_num(row.recomputed_tokens), csv_num(row.savings),
                           csv_num(row.reduction), csv_num(row.checkpoint_bytes), csv_num(row.kv_bytes),
                           csv_num(row.cache_bytes), s.options.cache_entries, s.options.granularity,
                           s.options.resolve_every, s.options.gamma, s.options.model.name);
      }
      for (auto kind : {strategy::dp, strategy::dp_frontier}) {
        for (const auto& c : hybridcache::sim::check_dominance(s, kind)) {
          dom += fmt::format("{},{},{},{},{},{},{},{},{}\n", s.trace_name, to_string(kind), c.budget, to_string(c.baseline),
                             csv_num(c.dp_reduction), csv_num(c.baseline_reduction), csv_num(c.baseline_checkpoints),
                             c.holds() ? 1 : 0, to_string(c.status));
        }
      }
    }
    put("sparse_prefix.csv", csv);
    put("dominance.csv", dom);
  }
  if (!r.segments.empty()) {
    std::string ns = "trace,namespace,lookups,hits,misses,hit_tokens,miss_tokens\n";
    std::string tt = "trace,method,workers,mean_ms,p50_ms,p90_ms,mean_cold_ms\n";
    for (const auto& s : r.segments) {
      for (const auto& n : s.namespaces) {
        ns += fmt::format("{},{},{},{},{},{},{}\n", s.trace_name, n.ns, n.lookups, n.hits, n.misses, csv_num(n.hit_tokens),
                          csv_num(n.miss_tokens));
      }
      for (const auto& t : s.ttft) {
        tt += fmt::format("{},{},{},{},{},{},{}\n", s.trace_name, t.method, t.workers, csv_num(t.mean), csv_num(t.p50),
                          csv_num(t.p90), csv_num(t.mean_cold));
      }
    }
    put("segment_namespaces.csv", ns);
    put("segment_ttft.csv", tt);
  }
  if (!r.fig14.empty()) {
    std::string f = "workers,dispatch_ms,transfer_ms,combine_ms,ttft_ms,full_ms,serial_ms,speedup_vs_full,speedup_vs_serial\n";
    for (const auto& b : r.fig14) {
      f += fmt::format("{},{},{},{},{},{},{},{},{}\n", b.workers, csv_num(b.dispatch), csv_num(b.transfer), csv_num(b.combine),
                       csv_num(b.total), csv_num(b.full), csv_num(b.serial), csv_num(b.speedup_vs_full()),
                       csv_num(b.speedup_vs_serial()));
    }
    put("fig14.csv", f);
  }
  // One JSON document with everything.
  json j;
  j["sparse_prefix"] = json::array();
  for (const auto& s : r.sparse) {
    json t;
    t["trace"] = s.trace_name;
    t["requests"] = s.requests;
    t["hits"] = s.hits;
    t["prompt_tokens"] = s.prompt_tokens;
    t["depth_tokens"] = s.depth_tokens;
    t["resolves"] = s.resolves;
    t["dp_fallbacks"] = s.dp_fallbacks;
    t["options"] = {{"cache_entries", s.options.cache_entries}, {"granularity", s.options.granularity},
                    {"smoothing", s.options.smoothing}, {"oracle", s.options.oracle},
                    {"law", hybridcache::to_string(s.options.law)}, {"safeguard", s.options.safeguard},
                    {"resolve_every", s.options.resolve_every}, {"gamma", s.options.gamma},
                    {"frontier_tolerance", s.options.frontier_tolerance}, {"model", s.options.model.name},
                    {"checkpoint_bytes", s.options.model.checkpoint_bytes()},
                    {"kv_bytes_per_token", s.options.model.kv_bytes_per_token()}};
    t["rows"] = json::array();
    for (const auto& row : s.rows) {
      t["rows"].push_back({{"strategy", to_string(row.kind)},
                           {"budget", hybridcache::sim::uses_budget(row.kind) ? json(row.budget) : json(nullptr)},
                           {"mean_checkpoints", num(row.mean_checkpoints)}, {"max_checkpoints", row.max_checkpoints},
                           {"depth_tokens", num(row.depth_tokens)},
                           {"recomputed_tokens", num(row.recomputed_tokens)}, {"savings", num(row.savings)},
                           {"reduction", reduction_json(row.reduction)}, {"checkpoint_bytes", num(row.checkpoint_bytes)},
                           {"kv_bytes", num(row.kv_bytes)}, {"cache_bytes", num(row.cache_bytes)}});
    }
    t["dominance"] = json::array();
    for (auto kind : {strategy::dp, strategy::dp_frontier}) {
      for (const auto& c : hybridcache::sim::check_dominance(s, kind)) {
        t["dominance"].push_back({{"dp", to_string(kind)}, {"budget", c.budget}, {"baseline", to_string(c.baseline)},
                                  {"dp_reduction", reduction_json(c.dp_reduction)},
                                  {"baseline_reduction", reduction_json(c.baseline_reduction)},
                                  {"holds", c.holds()}, {"status", to_string(c.status)}});
      }
    }
    j["sparse_prefix"].push_back(t);
  }
  j["segment_reuse"] = json::array();
  for (const auto& s : r.segments) {
    json t;
    t["trace"] = s.trace_name;
    t["requests"] = s.requests;
    t["cold_requests"] = s.cold_requests;
    t["prompt_tokens"] = s.prompt_tokens;
    t["prefix_hit_tokens"] = s.prefix_hit_tokens;
    t["namespaces"] = json::array();
    for (const auto& n : s.namespaces) {
      t["namespaces"].push_back({{"namespace", n.ns}, {"lookups", n.lookups}, {"hits", n.hits}, {"misses", n.misses},
                                 {"hit_tokens", n.hit_tokens}, {"miss_tokens", n.miss_tokens}});
    }
    t["ttft_ms"] = json::array();
    for (const auto& x : s.ttft) {
      t["ttft_ms"].push_back({{"method", x.method}, {"workers", x.workers}, {"mean", num(x.mean)}, {"p50", num(x.p50)},
                              {"p90", num(x.p90)}, {"mean_cold", num(x.mean_cold)}});
    }
    j["segment_reuse"].push_back(t);
  }
  j["cold_dispatch"] = {{"segments", r.fig14_segments}, {"tokens", r.fig14_tokens}, {"rows", json::array()}};
  for (const auto& b : r.fig14) {
    j["cold_dispatch"]["rows"].push_back({{"workers", b.workers}, {"dispatch_ms", b.dispatch}, {"transfer_ms", b.transfer},
                                          {"combine_ms", b.combine}, {"ttft_ms", b.total}, {"full_ms", b.full},
                                          {"speedup_vs_full", b.speedup_vs_full()},
                                          {"speedup_vs_serial", b.speedup_vs_serial()}});
  }
  const auto& c = r.segment_options.cost;
  j["prefill_cost_model"] = {{"attention_layers", c.attention_layers}, {"linear_layers", c.linear_layers},
                             {"attention_per_token_ms", c.attention_per_token}, {"attention_per_pair_ms", c.attention_per_pair},
                             {"linear_per_token_ms", c.linear_per_token}, {"compose_per_segment_ms", c.compose_per_segment},
                             {"combine_fixed_ms", c.combine_fixed}, {"transfer_fixed_ms", c.transfer_fixed},
                             {"seam", r.segment_options.seam}};
  put("simulate.json", j.dump(2) + "\n");
  return written;
}

std::vector<fs::path> write_plots(const fs::path& dir, const run_results& r, std::string& note) {
  const fs::path abs = fs::absolute(dir);
  std::vector<std::pair<std::string, fs::path>> scripts;  // (stem, script)
  const std::string term =
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size {W},{H} font ',10' } "
      "else { set terminal png size {W},{H} }\n";
  auto terminal = [&](bool png, int w, int h) {
    if (!png) return fmt::format("set terminal svg size {},{} dynamic font 'Helvetica,11'\nset termoption noenhanced\n", w, h);
    std::string t = term;
    for (auto [k, v] : {std::pair<std::string, int>{"{W}", w}, {"{H}", h}}) {
      for (std::size_t p; (p = t.find(k)) != std::string::npos;) t.replace(p, k.size(), std::to_string(v));
    }
    return t + "set termoption noenhanced\n";
  };
  if (!r.sparse.empty()) {
    // reduction.dat: one gnuplot index block per (trace, strategy): x = budget, mean ckpt, reduction.
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
          if (hybridcache::sim::uses_budget(kind)) {
            dat += fmt::format("{} {} {}\n", row.budget, std::max(row.mean_checkpoints, 0.5), plot_value(row.reduction));
          } else {  // budget-free: a flat line across the budget axis, one point on the memory axis
            dat += fmt::format("{} {} {}\n{} {} {}\n", bmin, std::max(row.mean_checkpoints, 0.5), plot_value(row.reduction),
                               bmax, std::max(row.mean_checkpoints, 0.5), plot_value(row.reduction));
          }
        }
        dat += "\n\n";
        blocks[t].emplace_back(std::string(to_string(kind)), index++);
      }
    }
    write_atomic(dir / "reduction.dat", dat);
    for (bool png : {true, false}) {
      const int h = 360 * static_cast<int>(r.sparse.size());
      std::string gp = terminal(png, 1200, h);
      gp += fmt::format("set output {}\n", gp_quote(abs / (png ? "reduction.png" : "reduction.svg")));
      gp += fmt::format("set multiplot layout {},2\nset logscale xy 2\nset grid\nset key outside right top\n", r.sparse.size());
      gp += fmt::format("set style line 1 lw 2\n");
      for (std::size_t t = 0; t < r.sparse.size(); ++t) {
        const auto& s = r.sparse[t];
        for (int panel = 0; panel < 2; ++panel) {
          gp += fmt::format("set title \"{}: {} (K={}, B={}, R={})\"\n", s.trace_name,
                            panel == 0 ? "reduction vs budget M" : "reduction vs checkpoints stored per entry",
                            s.options.cache_entries, s.options.granularity, s.options.resolve_every);
          gp += fmt::format("set xlabel \"{}\"\nset ylabel \"recurrent-work reduction (x)\"\n",
                            panel == 0 ? "checkpoint budget M" : "mean checkpoints per entry");
          gp += "plot ";
          bool first = true;
          for (const auto& [name, idx] : blocks[t]) {
            if (name == "no_cache") continue;  // identical to kv_only on the recurrent axis
            const bool budgeted = name == "balanced" || name == "logarithmic" || name == "dp" || name == "dp_frontier";
            const bool dp = name == "dp" || name == "dp_frontier";
            if (!first) gp += ", ";
            first = false;
            const std::string style = panel == 0 ? (budgeted ? "linespoints" : "lines dt 2")
                                                 : (budgeted ? "linespoints" : "points pt 7 ps 1.5");
            gp += fmt::format("{} index {} using {}:3 with {} lw {} title '{}'", gp_quote(abs / "reduction.dat"), idx,
                              panel == 0 ? 1 : 2, style, dp ? 3 : 1, name);
          }
          gp += "\n";
        }
      }
      gp += "unset multiplot\n";
      if (png) write_atomic(dir / "reduction_png.gp", gp);
      else write_atomic(dir / "reduction_svg.gp", gp);
    }
    scripts.emplace_back("reduction.png", dir / "reduction_png.gp");
    scripts.emplace_back("reduction.svg", dir / "reduction_svg.gp");
  }
  if (!r.fig14.empty() || !r.segments.empty()) {
    // Two files, so a missing half never shifts gnuplot's index numbering.
    std::string dat = "# cold dispatch: workers ttft dispatch transfer combine full\n";
    for (const auto& b : r.fig14) {
      dat += fmt::format("{} {} {} {} {} {}\n", b.workers, b.total, b.dispatch, b.transfer, b.combine, b.full);
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
        if (x.method == "composition") seg += fmt::format("{} {} {} {} {}\n", x.workers, x.mean, full, prefix, naive);
      }
    }
    if (!r.fig14.empty()) write_atomic(dir / "ttft_fig14.dat", dat);
    if (!r.segments.empty()) write_atomic(dir / "ttft_segments.dat", seg);
    const bool both = !r.fig14.empty() && !r.segments.empty();
    for (bool png : {true, false}) {
      std::string gp = terminal(png, both ? 1200 : 640, 420);
      gp += fmt::format("set output {}\n", gp_quote(abs / (png ? "ttft_workers.png" : "ttft_workers.svg")));
      gp += fmt::format("set multiplot layout 1,{}\nset grid\nset logscale x 2\nset key top right\nset xlabel \"prefill workers m\"\n"
                        "set ylabel \"TTFT (ms, cost model)\"\nset yrange [0:*]\n",
                        both ? 2 : 1);
      const std::string d = gp_quote(abs / "ttft_fig14.dat");
      const std::string e = gp_quote(abs / "ttft_segments.dat");
      if (!r.fig14.empty()) {
        gp += fmt::format("set title \"{} cold segments x {} tokens (HYPIC Fig. 14 shape)\"\n", r.fig14_segments, r.fig14_tokens);
        gp += fmt::format("plot {0} using 1:6 with lines dt 2 lw 2 title 'full recompute', "
                          "{0} using 1:2 with linespoints lw 3 title 'composition + LPT (total)', "
                          "{0} using 1:3 with linespoints title 'dispatch forward', "
                          "{0} using 1:($4+$5) with linespoints title 'transfer + combine'\n",
                          d);
      }
      if (!r.segments.empty()) {
        gp += "set key bottom left\n";
        gp += fmt::format("set title \"{}: mean TTFT per request\"\n", r.segments.front().trace_name);
        gp += fmt::format("plot {0} using 1:3 with lines dt 2 lw 2 title 'full recompute', "
                          "{0} using 1:4 with lines dt 3 lw 2 title 'prefix caching', "
                          "{0} using 1:5 with lines dt 4 lw 2 title 'naive addition (inexact)', "
                          "{0} using 1:2 with linespoints lw 3 title 'composition + LPT'\n",
                          e);
      }
      gp += "unset multiplot\n";
      write_atomic(dir / (png ? "ttft_workers_png.gp" : "ttft_workers_svg.gp"), gp);
    }
    scripts.emplace_back("ttft_workers.png", dir / "ttft_workers_png.gp");
    scripts.emplace_back("ttft_workers.svg", dir / "ttft_workers_svg.gp");
  }
  std::vector<fs::path> plots;
  const char* env = std::getenv("HYBRIDCACHE_GNUPLOT");
  const std::string prog = env && *env ? env : "gnuplot";
  if (std::system(("command -v " + shell_quote(prog) + " >/dev/null 2>&1").c_str()) != 0) {
    note = "gnuplot not found (install gnuplot-nox): wrote the data and the .gp scripts, no plots";
    return plots;
  }
  for (const auto& [out, script] : scripts) {
    const int rc = std::system((shell_quote(prog) + " " + shell_quote(fs::absolute(script).string()) + " 2>&1").c_str());
    if (rc != 0) {
      note = "gnuplot failed on " + script.string();
      continue;
    }
    plots.push_back(dir / out);
  }
  return plots;
}

}  // namespace hybridcache_cli::sim_out
