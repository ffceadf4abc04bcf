// SPDX-License-Identifier: Apache-2.0
// `hybridcache simulate`: the main job. Builds traces (embedded synthetic ones by default, or
// real data), replays them through the sparse-prefix and segment-reuse simulations of
// <hybridcache/sim.hpp>, prints tables and writes CSV, JSON and gnuplot plots.
#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <hybridcache/error.hpp>
#include <hybridcache/sim.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hybridcache/command.hpp"
#include "hybridcache/sim_output.hpp"
#include "hybridcache/sim_readers.hpp"

namespace {

namespace fs = std::filesystem;
namespace sim = hybridcache::sim;
using hybridcache_cli::usage_error;

constexpr std::string_view usage = R"(usage: hybridcache simulate [options]

Replays request traces through
  * the sparse prefix caching simulation: a last-K entry cache, the overlap depth of every
    request, an EW histogram re-solved every R requests, every checkpoint-placement strategy
    (no_cache kv_only last block sqrt balanced logarithmic dp dp_frontier) at every budget;
  * the segment-reuse simulation: a (namespace, tokens) segment index, estimated TTFT of full
    recompute, prefix caching, naive addition and composition with cold segments dispatched
    over m workers by LPT, and the HYPIC Fig. 14 cold-dispatch sweep;
prints tables and writes sparse_prefix.csv, dominance.csv, segment_*.csv, fig14.csv,
simulate.json and the plots reduction.{png,svg} and ttft_workers.{png,svg} (gnuplot).

With no options it runs the embedded synthetic workloads (no files needed, a few seconds).

workloads:
  --trace LIST        sparse-prefix traces, comma-separated (default docqa,sysprompt,multimodal):
                        docqa | sysprompt | multimodal      embedded synthetic generators
                        quality | leval:NAME                L-Eval NAME.jsonl under DATA/leval
                        system-prompts                      DATA/system_prompts + ShareGPT queries
                        mooncake                            DATA/mooncake/conversation_trace.jsonl
                        jsonl:PATH | text:PATH              token-id JSONL / one request per line
                        none
  --segments KIND     segment-reuse trace: rag (synthetic, default) | musique | multi_news |
                      jsonl:PATH | none
  --data DIR          real data directory (default $HYBRIDCACHE_DATA_DIR, else ../shared/data
                      next to the source tree or the working directory)
  --requests N        requests per trace (default 4000 synthetic, 10000 real; mooncake: all;
                      musique / multi_news: every prompt once, or N Zipf-popular draws)
  --length N          token scale of the synthetic prefixes (default 4096)
  --seed S            trace seed (default 1)
  --zipf S            popularity skew of documents / prompts (default 1.0)
  --tokenizer words|bytes   text tokenizer (default words: whitespace-separated words)
sparse prefix caching:
  --cache-entries K   last-K cache size (default 35 for document QA, 50 for system prompts,
                      100 otherwise; the paper's settings)
  --budgets LIST      checkpoint budgets M (default 1,2,4,8,16,32,64)
  --granularity B     block size of every strategy (default 64)
  --resolve-every R   histogram snapshot / DP re-solve period in requests (default 10)
  --gamma G           EW histogram decay (default 0.99)
  --smoothing E       DP on (1-E)*histogram + E*uniform (default 0: the paper's plug-in DP)
  --law pooled|tail|conditioned   depth law the DP estimates: conditioned (default: head- and
                      tail-anchored histograms + a uniform prior, weights set online), tail (the
                      distance from the matched entry's end) or pooled (the paper's setting,
                      without the safeguard)
  --safeguard on|off  score the DP and the fixed candidates on held-out hits at every re-plan
                      and keep the best (default on; off with --law pooled)
  --oracle            DP on the trace's own depth law (known in advance) instead of the online
                      EW histogram: separates estimation error from the method
  --strategies LIST   subset of the strategies above (default all)
  --model NAME        state-size preset: qwen3.5-0.8b (default) | qwen3-next-80b-a3b
segment reuse:
  --workers LIST      prefill worker counts (default 1,2,4,8)
  --seam W            seam window per boundary side (default 8)
  --fig14 N,TOKENS    cold-dispatch sweep shape (default 11,2400; 0 to skip)
output:
  --out DIR           output directory (default: the working directory)
  --no-plot           do not run gnuplot
  --quiet             no progress indicator
)";

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    if (end > pos) out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

std::vector<std::size_t> size_list(const std::string& opt, const std::string& s) {
  std::vector<std::size_t> out;
  for (const auto& item : split_list(s)) {
    std::size_t pos = 0;
    unsigned long long v = 0;
    try {
      if (!item.empty() && item[0] == '-') throw std::invalid_argument("negative");
      v = std::stoull(item, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != item.size() || item.empty()) throw usage_error{"option --" + opt + " expects non-negative integers, got '" + item + "'"};
    out.push_back(static_cast<std::size_t>(v));
  }
  if (out.empty()) throw usage_error{"option --" + opt + " needs at least one value"};
  return out;
}

fs::path default_data_dir() {
  if (const char* env = std::getenv("HYBRIDCACHE_DATA_DIR"); env && *env) return env;
  // The executable normally lives in <repo>/build/<preset>/bin; the data sits beside the repo.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (fs::path p = exe.parent_path(); !p.empty() && p != p.root_path(); p = p.parent_path()) {
      if (fs::exists(p / "include" / "hybridcache" / "sim.hpp", ec)) return p / ".." / "shared" / "data";
    }
  }
  return fs::path("..") / "shared" / "data";
}

struct progress {
  bool enabled = false;
  std::string label;
  void operator()(std::size_t done, std::size_t total) const {
    if (!enabled) return;
    std::fprintf(stderr, "\r  %-24s %3zu%% (%zu/%zu requests)", label.c_str(), total ? 100 * done / total : 100, done, total);
    if (done == total) std::fprintf(stderr, "\r%*s\r", 72, "");
    std::fflush(stderr);
  }
};

struct workload_options {
  fs::path data;
  std::optional<std::size_t> requests;
  std::size_t length = 4096;
  std::uint64_t seed = 1;
  double zipf = 1.0;
  hybridcache_cli::sim_io::tokenizer_kind tok = hybridcache_cli::sim_io::tokenizer_kind::words;
};

fs::path need(const fs::path& p) {
  if (!fs::exists(p)) {
    throw hybridcache::invalid_argument("data path", p.string(),
                                        "not found (pass --data DIR or set HYBRIDCACHE_DATA_DIR; see docs/simulate.md)");
  }
  return p;
}

template <class F>
sim::trace with_tokenizer(const workload_options& w, F&& f) {
  if (w.tok == hybridcache_cli::sim_io::tokenizer_kind::bytes) return f(sim::byte_tokenizer{});
  return f(sim::word_tokenizer{});
}

// Builds a sparse-prefix trace and returns it with its default K.
std::pair<sim::trace, std::size_t> build_sparse(const std::string& kind, const workload_options& w) {
  namespace io = hybridcache_cli::sim_io;
  const sim::synthetic_options syn{.requests = w.requests.value_or(4000), .length = w.length, .seed = w.seed, .zipf = w.zipf};
  const sim::arrival_options real{.requests = w.requests.value_or(10000), .rate = 1.0, .zipf = w.zipf, .seed = w.seed};
  if (kind == "docqa") return {sim::synthetic_document_qa(syn), 35};
  if (kind == "sysprompt") return {sim::synthetic_system_prompt(syn), 50};
  if (kind == "multimodal") return {sim::synthetic_multimodal(syn), 100};
  if (kind == "quality" || kind.rfind("leval:", 0) == 0) {
    const std::string name = kind == "quality" ? "quality" : kind.substr(6);
    const auto docs = io::read_leval(need(w.data / "leval" / (name + ".jsonl")));
    return {with_tokenizer(w, [&](auto tok) { return sim::build_document_qa("leval-" + name, docs, real, tok); }), 35};
  }
  if (kind == "system-prompts") {
    const auto prompts = io::read_system_prompts(need(w.data / "system_prompts"));
    const auto queries = io::read_sharegpt_queries(need(w.data / "sharegpt" / "ShareGPT_V3_filtered_1000.json"));
    return {with_tokenizer(w, [&](auto tok) { return sim::build_system_prompts("system-prompts", prompts, queries, real, tok); }), 50};
  }
  if (kind == "mooncake") {
    auto recs = io::read_block_hash_jsonl(need(w.data / "mooncake" / "conversation_trace.jsonl"));
    if (w.requests && *w.requests < recs.size()) recs.resize(*w.requests);
    return {sim::build_block_hash_trace("mooncake", recs, 512), 100};
  }
  if (kind.rfind("jsonl:", 0) == 0) return {io::read_token_jsonl(kind.substr(6)), 100};
  if (kind.rfind("text:", 0) == 0) return {io::read_text_lines(kind.substr(5), w.tok), 100};
  throw usage_error{"unknown trace '" + kind + "'"};
}

sim::trace build_segments(const std::string& kind, const workload_options& w) {
  namespace io = hybridcache_cli::sim_io;
  // Every prompt once (reuse comes from passages shared across prompts), unless --requests asks
  // for Zipf-popular repeats.
  const sim::arrival_options real{.requests = w.requests.value_or(2000), .rate = 2.0, .zipf = w.zipf, .seed = w.seed,
                                  .each_once = !w.requests.has_value()};
  constexpr std::string_view instruction =
      "You are a helpful assistant. Answer the question using only the passages below.";
  if (kind == "rag") {
    sim::synthetic_rag_options o;
    o.requests = w.requests.value_or(2000);
    o.seed = w.seed;
    return sim::synthetic_rag(o);
  }
  if (kind == "musique") {
    const auto prompts = io::read_musique(need(w.data / "segments" / "musique_s.json"));
    return with_tokenizer(w, [&](auto tok) { return sim::build_rag("musique", instruction, prompts, real, tok); });
  }
  if (kind == "multi_news") {
    const auto prompts = io::read_multi_news(need(w.data / "segments" / "multi_news.jsonl"));
    return with_tokenizer(w, [&](auto tok) {
      return sim::build_rag("multi_news", "You are given several news passages. Write a one-page summary of all news.",
                            prompts, real, tok);
    });
  }
  if (kind.rfind("jsonl:", 0) == 0) return io::read_token_jsonl(kind.substr(6));
  throw usage_error{"unknown segment trace '" + kind + "'"};
}

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv, {"no-plot", "quiet", "oracle"});
  if (!a.positional().empty()) throw usage_error{"unexpected argument '" + a.positional().front() + "'"};
  workload_options w;
  w.data = a.get("data") ? fs::path(*a.get("data")) : default_data_dir();
  w.requests = a.get_size("requests");
  if (w.requests && *w.requests == 0) throw usage_error{"option --requests must be > 0"};
  w.length = a.get_size("length").value_or(4096);
  w.seed = a.get_size("seed").value_or(1);
  w.zipf = a.get_double("zipf").value_or(1.0);
  const std::string tok = a.get_or("tokenizer", "words");
  if (tok == "bytes") w.tok = hybridcache_cli::sim_io::tokenizer_kind::bytes;
  else if (tok != "words") throw usage_error{"option --tokenizer expects words or bytes"};

  sim::sparse_prefix_options so;
  if (auto b = a.get("budgets")) so.budgets = size_list("budgets", *b);
  so.granularity = a.get_size("granularity").value_or(64);
  so.resolve_every = a.get_size("resolve-every").value_or(10);
  so.gamma = a.get_double("gamma").value_or(0.99);
  so.smoothing = a.get_double("smoothing").value_or(0.0);
  so.oracle = a.has("oracle");
  if (auto law = a.get("law")) {
    const auto kind = hybridcache::parse_law_kind(*law);
    if (!kind) throw usage_error{"option --law expects pooled, tail or conditioned"};
    so.law = *kind;
    so.safeguard = *kind != hybridcache::law_kind::pooled;  // pooled: the paper's setting
  }
  if (auto g = a.get("safeguard")) {
    if (*g != "on" && *g != "off") throw usage_error{"option --safeguard expects on or off"};
    so.safeguard = *g == "on";
  }
  (void)a.get("oracle");
  if (auto s = a.get("strategies")) {
    so.strategies.clear();
    for (const auto& name : split_list(*s)) {
      auto k = sim::parse_strategy(name);
      if (!k) throw usage_error{"unknown strategy '" + name + "'"};
      so.strategies.push_back(*k);
    }
  }
  if (auto m = a.get("model")) {
    auto shape = sim::find_model(*m);
    if (!shape) throw usage_error{"unknown model '" + *m + "' (qwen3.5-0.8b, qwen3-next-80b-a3b)"};
    so.model = *shape;
  }
  const auto k_override = a.get_size("cache-entries");

  hybridcache_cli::sim_out::run_results res;
  if (auto wk = a.get("workers")) res.segment_options.workers = size_list("workers", *wk);
  res.segment_options.seam = a.get_size("seam").value_or(8);
  if (auto f = a.get("fig14")) {
    const auto v = size_list("fig14", *f);
    if (v.size() == 1 && v[0] == 0) res.fig14_segments = 0;
    else if (v.size() != 2) throw usage_error{"option --fig14 expects SEGMENTS,TOKENS or 0"};
    else {
      res.fig14_segments = v[0];
      res.fig14_tokens = v[1];
    }
  }
  const fs::path out = a.get("out") ? fs::path(*a.get("out")) : fs::current_path();
  const bool plot = !a.has("no-plot");
  (void)a.get("no-plot");
  (void)a.get("quiet");
  progress prog;
  prog.enabled = !a.has("quiet") && isatty(2);
  const auto traces = split_list(a.get_or("trace", "docqa,sysprompt,multimodal"));
  const std::string seg_kind = a.get_or("segments", "rag");
  a.reject_unknown();

  std::error_code ec;
  fs::create_directories(out, ec);
  if (!fs::is_directory(out)) throw hybridcache::invalid_argument("--out", out.string(), "cannot create the directory");

  // Build and run every workload before writing anything: a failure leaves no partial output.
  for (const auto& kind : traces) {
    if (kind == "none") continue;
    auto [t, default_k] = build_sparse(kind, w);
    sim::sparse_prefix_options o = so;
    o.cache_entries = k_override.value_or(default_k);
    prog.label = t.name();
    res.sparse.push_back(sim::simulate_sparse_prefix(t, o, std::ref(prog)));
    hybridcache_cli::sim_out::print_sparse_table(stdout, res.sparse.back());
    hybridcache_cli::sim_out::print_dominance(stdout, res.sparse.back());
    std::fflush(stdout);
  }
  if (seg_kind != "none") {
    const auto t = build_segments(seg_kind, w);
    prog.label = t.name();
    res.segments.push_back(sim::simulate_segment_reuse(t, res.segment_options, std::ref(prog)));
    hybridcache_cli::sim_out::print_segment_table(stdout, res.segments.back());
  }
  if (res.fig14_segments > 0) {
    res.fig14 = sim::cold_dispatch(res.fig14_segments, res.fig14_tokens, res.segment_options);
    hybridcache_cli::sim_out::print_fig14(stdout, res);
  }
  const auto files = hybridcache_cli::sim_out::write_data(out, res);
  std::string note;
  std::vector<fs::path> plots;
  if (plot) plots = hybridcache_cli::sim_out::write_plots(out, res, note);
  fmt::print("\ndata:  ");
  for (std::size_t i = 0; i < files.size(); ++i) fmt::print("{}{}", i ? ", " : "", files[i].string());
  fmt::print("\n");
  if (!plots.empty()) {
    fmt::print("plots: ");
    for (std::size_t i = 0; i < plots.size(); ++i) fmt::print("{}{}", i ? ", " : "", plots[i].string());
    fmt::print("\n");
  }
  if (!note.empty()) fmt::print("note:  {}\n", note);
  return 0;
}

const hybridcache_cli::registrar reg{{"simulate",
                                      "replay traces: checkpoint strategies vs budget, segment reuse and TTFT (the main job)",
                                      usage, run}};

}  // namespace
