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

using hybridcache::placement_strategy;
using hybridcache::to_string;
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

std::string fmt_reduction(double x) {
  return std::isinf(x) ? std::string("inf") : fmt::format("{:.2f}x", x);
}

std::string budget_text(const hybridcache::strategy_result& r) {
  return hybridcache::uses_budget(r.kind) ? std::to_string(r.budget) : std::string("-");
}

json num(double x) { return std::isfinite(x) ? json(x) : json(nullptr); }

std::string csv_num(double x) {
  return std::isfinite(x) ? fmt::format("{:.10g}", x) : std::string("inf");
}

// A reduction factor: +inf (nothing left to recompute) is written "inf", as in the CSV.
json reduction_json(double x) { return std::isinf(x) && x > 0 ? json("inf") : num(x); }

// A namespace in tables and files: the tenant's name for a tenant-only namespace (the traces'
// form), else the key's text form (`ns{}` for the shared namespace).
std::string ns_label(const hybridcache::namespace_key& ns) {
  if (ns.tenant() && !ns.knowledge_base() && !ns.adapter() && !ns.model() && ns.extras().empty())
    return *ns.tenant();
  return ns.to_string();
}

}  // namespace

void print_sparse_table(std::FILE* out, const hybridcache::sparse_prefix_result& r) {
  const auto& o = r.options;
  fmt::print(
      out,
      "\nsparse prefix caching — trace {}: {} requests, {} hits ({:.1f}%), mean depth of a hit "
      "{:.0f} tokens\n",
      r.trace_name, r.requests, r.hits,
      r.requests ? 100.0 * static_cast<double>(r.hits) / static_cast<double>(r.requests) : 0.0,
      r.hits ? r.depth_tokens / static_cast<double>(r.hits) : 0.0);
  fmt::print(
      out, "  last-K cache K = {}, block B = {}, {}, model {} ({} / checkpoint, {} KV / token)\n",
      o.cache_entries, o.granularity,
      o.oracle ? std::string("DP on the trace's own depth law (oracle)")
               : fmt::format(
                     "re-solve every {} requests, gamma = {}{}{}", o.replan_every, o.gamma,
                     o.smoothing > 0 ? fmt::format(", smoothing {}", o.smoothing) : std::string(),
                     fmt::format(", {} law{}", hybridcache::to_string(o.law),
                                 o.safeguard ? " + safeguard" : "")),
      o.model.name, human_bytes(o.model.checkpoint_bytes()),
      human_bytes(o.model.kv_bytes_per_token()));
  fmt::print(out, "  {:<12} {:>6} {:>10} {:>14} {:>9} {:>10} {:>12} {:>12}\n", "strategy", "budget",
             "ckpt/entry", "recomputed", "savings", "reduction", "state/entry", "cache (K)");
  for (const auto& row : r.rows) {
    fmt::print(out, "  {:<12} {:>6} {:>10.1f} {:>14.0f} {:>8.1f}% {:>10} {:>12} {:>12}\n",
               to_string(row.kind), budget_text(row), row.mean_checkpoints, row.recomputed_tokens,
               100.0 * row.savings, fmt_reduction(row.reduction),
               human_bytes(row.checkpoint_bytes + row.kv_bytes), human_bytes(row.cache_bytes));
  }
  if (r.dp_fallbacks > 0) {
    fmt::print(out,
               "  ({} DP placements had no histogram mass yet and used the balanced fallback)\n",
               r.dp_fallbacks);
  }
}

void print_dominance(std::FILE* out, const hybridcache::sparse_prefix_result& r) {
  using hybridcache::dominance_status;
  for (auto kind : {placement_strategy::dp, placement_strategy::dp_frontier}) {
    const auto checks = hybridcache::check_dominance(r, kind);
    if (checks.empty()) continue;
    std::size_t n[5] = {};
    for (const auto& c : checks) ++n[static_cast<int>(c.status)];
    if (n[static_cast<int>(dominance_status::nothing_to_save)] == checks.size()) {
      fmt::print(
          out,
          "  {} vs every fixed baseline: nothing to save (no request overlaps a cached entry)\n",
          to_string(kind));
      continue;
    }
    const std::size_t compared =
        checks.size() - n[static_cast<int>(dominance_status::not_comparable)];
    fmt::print(out,
               "  {} >= every fixed baseline storing <= M per entry: {}/{} hold, {} within 1%, {} "
               "fail; {} not comparable"
               " (the baseline stored more than M in an entry)",
               to_string(kind), n[0], compared, n[1], n[2],
               n[static_cast<int>(dominance_status::not_comparable)]);
    if (n[2] == 0) {
      fmt::print(out, "\n");
      continue;
    }
    fmt::print(out, "; exceptions:\n");
    for (const auto& c : checks) {
      if (c.status != dominance_status::fails) continue;
      fmt::print(out, "    M={:<4} {} {} < {} {} ({:.1f} ckpt/entry, max {})\n", c.budget,
                 to_string(kind), fmt_reduction(c.dp_reduction), to_string(c.baseline),
                 fmt_reduction(c.baseline_reduction), c.baseline_checkpoints,
                 c.baseline_max_checkpoints);
    }
  }
}

void print_segment_table(std::FILE* out, const hybridcache::segment_reuse_result& r) {
  fmt::print(out,
             "\nsegment reuse — trace {}: {} requests ({} with a cold segment), {:.0f} prompt "
             "tokens, prefix-cache hits {:.1f}% of tokens\n",
             r.trace_name, r.requests, r.cold_requests, r.prompt_tokens,
             r.prompt_tokens > 0 ? 100.0 * r.prefix_hit_tokens / r.prompt_tokens : 0.0);
  fmt::print(out, "  {:<14} {:>8} {:>8} {:>8} {:>9} {:>12}\n", "namespace", "lookups", "hits",
             "misses", "hit rate", "hit tokens");
  for (const auto& n : r.namespaces) {
    fmt::print(
        out, "  {:<14} {:>8} {:>8} {:>8} {:>8.1f}% {:>12.0f}\n", ns_label(n.ns), n.lookups, n.hits,
        n.misses,
        n.lookups ? 100.0 * static_cast<double>(n.hits) / static_cast<double>(n.lookups) : 0.0,
        n.hit_tokens);
  }
  fmt::print(out, "  {:<22} {:>10} {:>10} {:>10} {:>14}\n", "TTFT (model, ms)", "mean", "p50",
             "p90", "mean (cold)");
  for (const auto& s : r.ttft) {
    const std::string name =
        s.method == "composition" ? fmt::format("composition m={}", s.workers) : s.method;
    fmt::print(out, "  {:<22} {:>10.1f} {:>10.1f} {:>10.1f} {:>14.1f}\n", name, s.mean, s.p50,
               s.p90, s.mean_cold);
  }
}

void print_fig14(std::FILE* out, const run_results& r) {
  if (r.fig14.empty()) return;
  fmt::print(out,
             "\ncold-segment dispatch (HYPIC Fig. 14 shape): {} cold segments x {} tokens, LPT "
             "over m workers\n",
             r.fig14_segments, r.fig14_tokens);
  fmt::print(out, "  {:>3} {:>10} {:>10} {:>10} {:>10} {:>12} {:>12}\n", "m", "dispatch",
             "transfer", "combine", "TTFT", "vs full", "vs serial");
  for (const auto& b : r.fig14) {
    fmt::print(out, "  {:>3} {:>8.0f}ms {:>8.0f}ms {:>8.0f}ms {:>8.0f}ms {:>11.2f}x {:>11.2f}x\n",
               b.workers, b.dispatch, b.transfer, b.combine, b.total, b.speedup_vs_full(),
               b.speedup_vs_serial());
  }
  fmt::print(out,
             "  full recompute {:.0f} ms; HYPIC measured 2.0x / 3.6x / 6.1x at m = 2 / 4 / 8\n",
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
    // Column names are the file format and stay as they are: resolve_every holds replan_every.
    std::string csv =
        "trace,strategy,budget,mean_checkpoints,max_checkpoints,depth_tokens,recomputed_tokens,"
        "savings,reduction,checkpoint_bytes,kv_bytes,"
        "cache_bytes,cache_entries,granularity,resolve_every,gamma,model\n";
    std::string dom =
        "trace,dp_strategy,budget,baseline,dp_reduction,baseline_reduction,baseline_checkpoints,"
        "holds,status\n";
    for (const auto& s : r.sparse) {
      for (const auto& row : s.rows) {
        csv += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", s.trace_name,
                           to_string(row.kind), hybridcache::uses_budget(row.kind) ? row.budget : 0,
                           csv_num(row.mean_checkpoints), row.max_checkpoints,
                           csv_num(row.depth_tokens), csv_num(row.recomputed_tokens),
                           csv_num(row.savings), csv_num(row.reduction),
                           csv_num(row.checkpoint_bytes), csv_num(row.kv_bytes),
                           csv_num(row.cache_bytes), s.options.cache_entries, s.options.granularity,
                           s.options.replan_every, s.options.gamma, s.options.model.name);
      }
      for (auto kind : {placement_strategy::dp, placement_strategy::dp_frontier}) {
        for (const auto& c : hybridcache::check_dominance(s, kind)) {
          dom += fmt::format("{},{},{},{},{},{},{},{},{}\n", s.trace_name, to_string(kind),
                             c.budget, to_string(c.baseline), csv_num(c.dp_reduction),
                             csv_num(c.baseline_reduction), csv_num(c.baseline_checkpoints),
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
        ns += fmt::format("{},{},{},{},{},{},{}\n", s.trace_name, ns_label(n.ns), n.lookups, n.hits,
                          n.misses, csv_num(n.hit_tokens), csv_num(n.miss_tokens));
      }
      for (const auto& t : s.ttft) {
        tt += fmt::format("{},{},{},{},{},{},{}\n", s.trace_name, t.method, t.workers,
                          csv_num(t.mean), csv_num(t.p50), csv_num(t.p90), csv_num(t.mean_cold));
      }
    }
    put("segment_namespaces.csv", ns);
    put("segment_ttft.csv", tt);
  }
  if (!r.fig14.empty()) {
    std::string f =
        "workers,dispatch_ms,transfer_ms,combine_ms,ttft_ms,full_ms,serial_ms,speedup_vs_full,"
        "speedup_vs_serial\n";
    for (const auto& b : r.fig14) {
      f += fmt::format("{},{},{},{},{},{},{},{},{}\n", b.workers, csv_num(b.dispatch),
                       csv_num(b.transfer), csv_num(b.combine), csv_num(b.total), csv_num(b.full),
                       csv_num(b.serial), csv_num(b.speedup_vs_full()),
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
    t["resolves"] = s.replans;  // file keys keep their names
    t["dp_fallbacks"] = s.dp_fallbacks;
    t["options"] = {{"cache_entries", s.options.cache_entries},
                    {"granularity", s.options.granularity},
                    {"smoothing", s.options.smoothing},
                    {"oracle", s.options.oracle},
                    {"law", hybridcache::to_string(s.options.law)},
                    {"safeguard", s.options.safeguard},
                    {"resolve_every", s.options.replan_every},
                    {"gamma", s.options.gamma},
                    {"frontier_tolerance", s.options.frontier_tolerance},
                    {"model", s.options.model.name},
                    {"checkpoint_bytes", s.options.model.checkpoint_bytes()},
                    {"kv_bytes_per_token", s.options.model.kv_bytes_per_token()}};
    t["rows"] = json::array();
    for (const auto& row : s.rows) {
      t["rows"].push_back(
          {{"strategy", to_string(row.kind)},
           {"budget", hybridcache::uses_budget(row.kind) ? json(row.budget) : json(nullptr)},
           {"mean_checkpoints", num(row.mean_checkpoints)},
           {"max_checkpoints", row.max_checkpoints},
           {"depth_tokens", num(row.depth_tokens)},
           {"recomputed_tokens", num(row.recomputed_tokens)},
           {"savings", num(row.savings)},
           {"reduction", reduction_json(row.reduction)},
           {"checkpoint_bytes", num(row.checkpoint_bytes)},
           {"kv_bytes", num(row.kv_bytes)},
           {"cache_bytes", num(row.cache_bytes)}});
    }
    t["dominance"] = json::array();
    for (auto kind : {placement_strategy::dp, placement_strategy::dp_frontier}) {
      for (const auto& c : hybridcache::check_dominance(s, kind)) {
        t["dominance"].push_back({{"dp", to_string(kind)},
                                  {"budget", c.budget},
                                  {"baseline", to_string(c.baseline)},
                                  {"dp_reduction", reduction_json(c.dp_reduction)},
                                  {"baseline_reduction", reduction_json(c.baseline_reduction)},
                                  {"holds", c.holds()},
                                  {"status", to_string(c.status)}});
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
      t["namespaces"].push_back({{"namespace", ns_label(n.ns)},
                                 {"lookups", n.lookups},
                                 {"hits", n.hits},
                                 {"misses", n.misses},
                                 {"hit_tokens", n.hit_tokens},
                                 {"miss_tokens", n.miss_tokens}});
    }
    t["ttft_ms"] = json::array();
    for (const auto& x : s.ttft) {
      t["ttft_ms"].push_back({{"method", x.method},
                              {"workers", x.workers},
                              {"mean", num(x.mean)},
                              {"p50", num(x.p50)},
                              {"p90", num(x.p90)},
                              {"mean_cold", num(x.mean_cold)}});
    }
    j["segment_reuse"].push_back(t);
  }
  j["cold_dispatch"] = {
      {"segments", r.fig14_segments}, {"tokens", r.fig14_tokens}, {"rows", json::array()}};
  for (const auto& b : r.fig14) {
    j["cold_dispatch"]["rows"].push_back({{"workers", b.workers},
                                          {"dispatch_ms", b.dispatch},
                                          {"transfer_ms", b.transfer},
                                          {"combine_ms", b.combine},
                                          {"ttft_ms", b.total},
                                          {"full_ms", b.full},
                                          {"speedup_vs_full", b.speedup_vs_full()},
                                          {"speedup_vs_serial", b.speedup_vs_serial()}});
  }
  const auto& c = r.segment_options.cost;
  const auto& k = r.segment_options.compose;
  j["prefill_cost_model"] = {
      {"per_token_ms", c.per_token},         {"per_token_sq_ms", c.per_token_sq},
      {"overhead_ms", c.overhead},           {"compose_per_segment_ms", k.compose_per_segment},
      {"combine_fixed_ms", k.combine_fixed}, {"transfer_fixed_ms", k.transfer_fixed},
      {"seam", r.segment_options.seam}};
  put("simulate.json", j.dump(2) + "\n");
  return written;
}
}  // namespace hybridcache_cli::sim_out
