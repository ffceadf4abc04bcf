// SPDX-License-Identifier: Apache-2.0
// `hybridcache simulate`: the main job. Builds traces (embedded synthetic ones by default, or
// real data), replays them through the sparse-prefix and segment-reuse simulations of
// <hybridcache/sim.hpp>, prints tables and writes CSV, JSON and gnuplot plots.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <hybridcache/error.hpp>
#include <hybridcache/sim.hpp>
#include <hybridcache/sim/multi_node.hpp>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "hybridcache/command.hpp"
#include "hybridcache/sim_output.hpp"
#include "hybridcache/sim_plot.hpp"
#include "hybridcache/sim_readers.hpp"
#include "hybridcache/sim_tree.hpp"

namespace {

namespace fs = std::filesystem;
namespace hc = hybridcache;
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
                        leval:PATH                          an L-Eval JSONL file (PATH has a / or .)
                        system-prompts[:DIR]                *.md prompts under DIR (default
                                                            DATA/system_prompts) + --queries
                        mooncake[:PATH]                     Mooncake block-hash JSONL (default
                                                            DATA/mooncake/conversation_trace.jsonl)
                        jsonl:PATH | text:PATH              token-id JSONL / one request per line
                        none
                      a trace read from PATH is labelled by the file name: FORMAT-STEM
                      (leval-quality, mooncake-STEM, system-prompts-DIR); jsonl/text: NAME.EXT
  --segments KIND     segment-reuse trace: rag (synthetic, default) | musique[:PATH] |
                      multi_news[:PATH] | jsonl:PATH | none
  --queries PATH      ShareGPT JSON of user queries for system-prompts (default
                      DATA/sharegpt/ShareGPT_V3_filtered_1000.json)
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
  --replan-every R    histogram snapshot / DP re-plan period in requests (default 10; the old
                      spelling --resolve-every is still accepted)
  --gamma G           EW histogram decay (default 0.99)
  --smoothing E       DP on (1-E)*histogram + E*uniform (default 0: the paper's plug-in DP)
  --law pooled|tail|conditioned   depth law the DP estimates: conditioned (default: head- and
                      tail-anchored histograms + a uniform prior, weights set online), tail (the
                      distance from the matched entry's end) or pooled (the paper's setting,
                      without the safeguard)
  --safeguard on|off  score the DP and the fixed candidates on held-out hits at every re-plan
                      and keep the best (default on; off with --law pooled)
  --joint on|off      also replay, in shadow, the DP placing each entry given the depths the
                      retained entries sharing its prefix already cover, and follow whichever
                      of the two recomputed less (default on; off with --law pooled)
  --handover on|off   when an entry is evicted, entries sharing its prefix may take over its
                      DP checkpoints on that prefix (same states), keeping the best M of
                      theirs and the offered ones (default on; off with --law pooled)
  --oracle            DP on the trace's own depth law (known in advance) instead of the online
                      EW histogram: separates estimation error from the method
  --strategies LIST   subset of the strategies above (default all)
  --model NAME        state-size preset: qwen3.5-0.8b (default) | qwen3-next-80b-a3b
segment reuse:
  --workers LIST      prefill worker counts (default 1,2,4,8)
  --seam W            seam window per boundary side (default 8)
  --fig14 N,TOKENS    cold-dispatch sweep shape (default 11,2400; 0 to skip)
  --nodes N           also replay the segment trace on N prefill nodes (1..64) with local pools,
                      without and with a shared segment index; writes multi_node.csv
  --node-pool TOKENS  each node's pool capacity for --nodes (default 65536)
output:
  --out DIR           output directory (default: the working directory)
  --no-plot           do not run gnuplot
  --quiet             no progress indicator
)";

// Comma-separated items of option --opt; an empty item ("1,,2", "a,") is an error.
std::vector<std::string> split_list(const std::string& opt, const std::string& s) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    if (end == pos) throw usage_error{"option --" + opt + " has an empty item in '" + s + "'"};
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// One interval phrase for every integer option, used by both the single and the list forms.
std::string at_least(std::size_t min) { return "an integer >= " + std::to_string(min); }

// `text` as an unsigned integer >= min (digits only: no sign, space or suffix).
std::size_t parse_size(const std::string& opt, const std::string& text, std::size_t min) {
  std::size_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || ptr != text.data() + text.size() || v < min) {
    throw usage_error{"option --" + opt + " expects " + at_least(min) + ", got '" + text + "'"};
  }
  return v;
}

std::vector<std::size_t> size_list(const std::string& opt, const std::string& s, std::size_t min) {
  std::vector<std::size_t> out;
  for (const auto& item : split_list(opt, s)) out.push_back(parse_size(opt, item, min));
  return out;
}

std::optional<std::size_t> size_option(const hybridcache_cli::args& a, const std::string& opt,
                                       std::size_t min) {
  const auto v = a.get(opt);
  if (!v) return std::nullopt;
  return parse_size(opt, *v, min);
}

// A real option in an interval: `lo`/`hi` bounds, open or closed, phrased the way the library's
// own checks phrase them ("in (0, 1)", "in [0, 1]", ">= 0").
struct interval {
  double lo, hi;
  bool lo_open, hi_open;
  [[nodiscard]] bool contains(double x) const {
    return (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi);
  }
  [[nodiscard]] std::string text() const {
    const auto num = [](double v) { return fmt::format("{}", v); };
    if (hi == std::numeric_limits<double>::infinity())
      return std::string(lo_open ? "> " : ">= ") + num(lo);
    return fmt::format("in {}{}, {}{}", lo_open ? '(' : '[', num(lo), num(hi), hi_open ? ')' : ']');
  }
};

std::optional<double> real_option(const hybridcache_cli::args& a, const std::string& opt,
                                  interval in) {
  const auto v = a.get(opt);
  if (!v) return std::nullopt;
  double x = 0;
  const auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
  if (v->empty() || ec != std::errc{} || ptr != v->data() + v->size() || !std::isfinite(x) ||
      !in.contains(x)) {
    throw usage_error{"option --" + opt + " expects a finite number " + in.text() + ", got '" + *v +
                      "'"};
  }
  return x;
}

// Every --option named in the usage text: the command line may use no other (checked before
// parsing, so an unknown option is reported as unknown even where it would take a value).
void reject_unknown_options(std::span<const std::string_view> argv) {
  // The tree scenario's options are in its own usage text (sim_tree.cpp).
  const std::string text = std::string(usage) + hybridcache_cli::sim_tree::usage;
  for (const auto arg : argv) {
    if (arg.size() <= 2 || arg.substr(0, 2) != "--") continue;
    const std::string_view name =
        arg.substr(2, arg.find('=') == std::string_view::npos ? arg.npos : arg.find('=') - 2);
    bool known = false;
    for (std::size_t p = text.find("--"); p != std::string_view::npos && !known;
         p = text.find("--", p + 2)) {
      std::size_t e = p + 2;
      while (e < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '-'))
        ++e;
      known = text.substr(p + 2, e - p - 2) == name;
    }
    if (!known) throw usage_error{"unknown option --" + std::string(name)};
  }
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
  std::optional<fs::path> queries;  // --queries: ShareGPT file for system-prompts
  std::optional<std::size_t> requests;
  std::size_t length = 4096;
  std::uint64_t seed = 1;
  double zipf = 1.0;
  hybridcache_cli::sim_io::tokenizer_kind tok = hybridcache_cli::sim_io::tokenizer_kind::words;
};

fs::path need(const fs::path& p) {
  if (!fs::exists(p)) {
    throw hybridcache::invalid_argument("data path", hybridcache_cli::sim_io::escape(p.string()),
                                        "not found (pass FORMAT:PATH, --data DIR or set "
                                        "HYBRIDCACHE_DATA_DIR; see docs/simulate.md)");
  }
  return p;
}

template <class F>
hc::trace with_tokenizer(const workload_options& w, F&& f) {
  if (w.tok == hybridcache_cli::sim_io::tokenizer_kind::bytes) return f(hc::byte_tokenizer{});
  return f(hc::word_tokenizer{});
}

// The FILE of "FORMAT:FILE", or nullopt for a bare "FORMAT"; "FORMAT:" is an error.
std::optional<fs::path> path_arg(const std::string& kind, std::string_view format) {
  if (kind == format) return std::nullopt;
  const std::string rest = kind.substr(format.size() + 1);
  if (rest.empty()) throw usage_error{"trace '" + kind + "' needs a path after ':'"};
  return fs::path(rest);
}

bool has_format(const std::string& kind, std::string_view format) {
  return kind == format ||
         (kind.size() > format.size() && kind.compare(0, format.size(), format) == 0 &&
          kind[format.size()] == ':');
}

// "FORMAT-STEM": a trace read from a path is labelled by its file name.
std::string label(std::string_view format, const fs::path& p) {
  const fs::path name = p.has_filename() ? p.filename() : p.parent_path().filename();
  return std::string(format) + "-" + fs::path(name).stem().string();
}

// Runs `build` (a core builder over material read from `file`) and names the file in what it
// rejects: the builders know records and documents, not where they came from. Reader errors
// already name file:line and pass through.
template <class F>
auto from_file(const fs::path& file, F&& build) {
  try {
    return build();
  } catch (const hybridcache::invalid_argument& e) {
    if (e.argument() == "trace file" || e.argument() == "path" || e.argument() == "data path")
      throw;
    throw hybridcache::invalid_argument("trace file",
                                        hybridcache_cli::sim_io::escape(file.string()),
                                        hybridcache_cli::sim_io::escape(e.what()));
  }
}

// Builds a sparse-prefix trace and returns it with its default K.
std::pair<hc::trace, std::size_t> build_sparse(const std::string& kind, const workload_options& w) {
  namespace io = hybridcache_cli::sim_io;
  const hc::synthetic_options syn{
      .requests = w.requests.value_or(4000), .length = w.length, .seed = w.seed, .zipf = w.zipf};
  const hc::arrival_options real{
      .requests = w.requests.value_or(10000), .rate = 1.0, .zipf = w.zipf, .seed = w.seed};
  if (kind == "docqa") return {hc::synthetic_document_qa(syn), 35};
  if (kind == "sysprompt") return {hc::synthetic_system_prompt(syn), 50};
  if (kind == "multimodal") return {hc::synthetic_multimodal(syn), 100};
  if (kind == "quality" || has_format(kind, "leval")) {
    // leval:NAME is NAME.jsonl under DATA/leval; an argument with a '/' or '.' is a path.
    const std::string arg =
        kind == "quality" ? "quality" : path_arg(kind, "leval").value_or("").string();
    if (arg.empty()) throw usage_error{"trace 'leval' needs :NAME or :PATH"};
    const bool is_path = arg.find_first_of("/.") != std::string::npos;
    const fs::path file = is_path ? fs::path(arg) : w.data / "leval" / (arg + ".jsonl");
    const auto docs = io::read_leval(need(file));
    const std::string name = is_path ? label("leval", file) : "leval-" + arg;
    auto t = from_file(file, [&] {
      return with_tokenizer(w,
                            [&](auto tok) { return hc::build_document_qa(name, docs, real, tok); });
    });
    return {std::move(t), 35};
  }
  if (has_format(kind, "system-prompts")) {
    const auto dir = path_arg(kind, "system-prompts");
    const auto prompts = io::read_system_prompts(need(dir.value_or(w.data / "system_prompts")));
    const auto queries = io::read_sharegpt_queries(
        need(w.queries.value_or(w.data / "sharegpt" / "ShareGPT_V3_filtered_1000.json")));
    const std::string name = dir ? label("system-prompts", *dir) : "system-prompts";
    return {with_tokenizer(w,
                           [&](auto tok) {
                             return hc::build_system_prompts(name, prompts, queries, real, tok);
                           }),
            50};
  }
  if (has_format(kind, "mooncake")) {
    const auto file = path_arg(kind, "mooncake");
    auto recs = io::read_block_hash_jsonl(
        need(file.value_or(w.data / "mooncake" / "conversation_trace.jsonl")),
        io::mooncake_block_size);
    if (w.requests && *w.requests < recs.size()) recs.resize(*w.requests);
    return {hc::build_block_hash_trace(file ? label("mooncake", *file) : "mooncake", recs,
                                       io::mooncake_block_size),
            100};
  }
  if (kind.rfind("jsonl:", 0) == 0)
    return {io::read_token_jsonl(need(*path_arg(kind, "jsonl"))), 100};
  if (kind.rfind("text:", 0) == 0)
    return {io::read_text_lines(need(*path_arg(kind, "text")), w.tok), 100};
  throw usage_error{"unknown trace '" + kind + "'"};
}

hc::trace build_segments(const std::string& kind, const workload_options& w) {
  namespace io = hybridcache_cli::sim_io;
  // Every prompt once (reuse comes from passages shared across prompts), unless --requests asks
  // for Zipf-popular repeats.
  const hc::arrival_options real{.requests = w.requests.value_or(2000),
                                 .rate = 2.0,
                                 .zipf = w.zipf,
                                 .seed = w.seed,
                                 .each_once = !w.requests.has_value()};
  constexpr std::string_view instruction =
      "You are a helpful assistant. Answer the question using only the passages below.";
  if (kind == "rag") {
    hc::synthetic_rag_options o;
    o.requests = w.requests.value_or(2000);
    o.seed = w.seed;
    return hc::synthetic_rag(o);
  }
  if (has_format(kind, "musique")) {
    const auto file = path_arg(kind, "musique");
    const auto prompts =
        io::read_musique(need(file.value_or(w.data / "segments" / "musique_s.json")));
    const std::string name = file ? label("musique", *file) : "musique";
    return with_tokenizer(
        w, [&](auto tok) { return hc::build_rag(name, instruction, prompts, real, tok); });
  }
  if (has_format(kind, "multi_news")) {
    const auto file = path_arg(kind, "multi_news");
    const auto prompts =
        io::read_multi_news(need(file.value_or(w.data / "segments" / "multi_news.jsonl")));
    const std::string name = file ? label("multi_news", *file) : "multi_news";
    return with_tokenizer(w, [&](auto tok) {
      return hc::build_rag(
          name, "You are given several news passages. Write a one-page summary of all news.",
          prompts, real, tok);
    });
  }
  if (kind.rfind("jsonl:", 0) == 0) return io::read_token_jsonl(need(*path_arg(kind, "jsonl")));
  throw usage_error{"unknown segment trace '" + kind + "'"};
}

int run(std::span<const std::string_view> argv) {
  reject_unknown_options(argv);
  const hybridcache_cli::args a(
      argv, {"no-plot", "quiet", "oracle", "tree-list-policies", "tree-requests", "tree-victims"});
  if (!a.positional().empty()) throw usage_error{"unexpected argument '" + a.positional().front() + "'"};
  if (a.has("tree-list-policies")) {  // a listing, not a run: no other option may come with it
    if (argv.size() != 1) throw usage_error{"option --tree-list-policies takes no other option"};
    hybridcache_cli::sim_tree::list_policies(stdout);
    return 0;
  }
  workload_options w;
  w.data = a.get("data") ? fs::path(*a.get("data")) : default_data_dir();
  if (auto q = a.get("queries")) w.queries = fs::path(*q);
  w.requests = size_option(a, "requests", 1);
  w.length = size_option(a, "length", 64).value_or(4096);
  w.seed = size_option(a, "seed", 0).value_or(1);
  w.zipf = real_option(a, "zipf", {0.0, 1e6, false, true}).value_or(1.0);
  const std::string tok = a.get_or("tokenizer", "words");
  if (tok == "bytes") w.tok = hybridcache_cli::sim_io::tokenizer_kind::bytes;
  else if (tok != "words")
    throw usage_error{"option --tokenizer expects words or bytes, got '" + tok + "'"};

  hc::sparse_prefix_options so;
  if (auto b = a.get("budgets")) so.budgets = size_list("budgets", *b, 1);
  so.granularity = size_option(a, "granularity", 1).value_or(64);
  const auto replan_every = size_option(a, "replan-every", 1);
  const auto resolve_every = size_option(a, "resolve-every", 1);  // the old spelling
  so.replan_every = replan_every ? *replan_every : resolve_every.value_or(10);
  so.gamma = real_option(a, "gamma", {0.0, 1.0, true, true}).value_or(0.99);
  so.smoothing = real_option(a, "smoothing", {0.0, 1.0, false, false}).value_or(0.0);
  so.oracle = a.has("oracle");
  if (auto law = a.get("law")) {
    const auto kind = hybridcache::parse_law_kind(*law);
    if (!kind) throw usage_error{"option --law expects pooled, tail or conditioned, got '" + *law + "'"};
    so.law = *kind;
    so.safeguard = *kind != hybridcache::law_kind::pooled;  // pooled: the paper's setting
    so.joint_placement = *kind != hybridcache::law_kind::pooled;
    so.handover = *kind != hybridcache::law_kind::pooled;
  }
  if (auto g = a.get("safeguard")) {
    if (*g != "on" && *g != "off") throw usage_error{"option --safeguard expects on or off, got '" + *g + "'"};
    so.safeguard = *g == "on";
  }
  if (auto j = a.get("joint")) {
    if (*j != "on" && *j != "off") throw usage_error{"option --joint expects on or off, got '" + *j + "'"};
    so.joint_placement = *j == "on";
  }
  if (auto h = a.get("handover")) {
    if (*h != "on" && *h != "off") throw usage_error{"option --handover expects on or off, got '" + *h + "'"};
    so.handover = *h == "on";
  }
  (void)a.get("oracle");
  if (auto s = a.get("strategies")) {
    so.strategies.clear();
    for (const auto& name : split_list("strategies", *s)) {
      auto k = hc::parse_strategy(name);
      if (!k) throw usage_error{"unknown strategy '" + name + "'"};
      so.strategies.push_back(*k);
    }
  }
  if (auto m = a.get("model")) {
    auto shape = hc::find_model(*m);
    if (!shape) throw usage_error{"unknown model '" + *m + "' (qwen3.5-0.8b, qwen3-next-80b-a3b)"};
    so.model = *shape;
  }
  const auto k_override = size_option(a, "cache-entries", 1);

  hybridcache_cli::sim_out::run_results res;
  if (auto wk = a.get("workers")) res.segment_options.workers = size_list("workers", *wk, 1);
  res.segment_options.seam = size_option(a, "seam", 0).value_or(8);
  if (auto f = a.get("fig14")) {
    if (*f == "0") {
      res.fig14_segments = 0;
    } else {
      const auto v = size_list("fig14", *f, 1);
      if (v.size() != 2)
        throw usage_error{"option --fig14 expects SEGMENTS,TOKENS (integers >= 1) or 0, got '" +
                          *f + "'"};
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
  auto traces = split_list("trace", a.get_or("trace", "docqa,sysprompt,multimodal"));
  std::string seg_kind = a.get_or("segments", "rag");
  auto tree = hybridcache_cli::sim_tree::parse(a);
  if (auto sc = a.get("scenario")) {  // the tree scenario's selector (docs/tree_simulation.md)
    const auto on = split_list("scenario", *sc);
    auto has = [&](const char* s) { return std::find(on.begin(), on.end(), s) != on.end(); };
    for (const auto& s : on) {
      if (s != "sparse" && s != "segments" && s != "tree") throw usage_error{"unknown scenario '" + s + "'"};
    }
    if (!has("sparse")) traces.clear();
    if (!has("segments")) seg_kind = "none", res.fig14_segments = 0;
    if (!has("tree")) tree.traces.clear();
  }
  const auto nodes = a.get_size("nodes");
  const std::size_t node_pool = a.get_size("node-pool").value_or(65536);
  a.reject_unknown();
  if (nodes && seg_kind == "none") throw usage_error{"option --nodes needs a segment trace"};
  std::vector<hc::multi_node_result> multi;

  std::error_code ec;
  fs::create_directories(out, ec);
  if (!fs::is_directory(out)) throw hybridcache::invalid_argument("--out", out.string(), "cannot create the directory");

  // Build and run every workload before writing anything: a failure leaves no partial output.
  for (const auto& kind : traces) {
    if (kind == "none") continue;
    auto [t, default_k] = build_sparse(kind, w);
    hc::sparse_prefix_options o = so;
    // A last-K cache never holds more entries than there are requests, so K beyond the trace's
    // length changes nothing but the memory and time spent on empty slots: cap it.
    o.cache_entries = std::max<std::size_t>(1, std::min(k_override.value_or(default_k), t.size()));
    prog.label = t.name();
    res.sparse.push_back(hc::simulate_sparse_prefix(t, o, std::ref(prog)));
    hybridcache_cli::sim_out::print_sparse_table(stdout, res.sparse.back());
    hybridcache_cli::sim_out::print_dominance(stdout, res.sparse.back());
    std::fflush(stdout);
  }
  if (seg_kind != "none") {
    const auto t = build_segments(seg_kind, w);
    prog.label = t.name();
    res.segments.push_back(hc::simulate_segment_reuse(t, res.segment_options, std::ref(prog)));
    hybridcache_cli::sim_out::print_segment_table(stdout, res.segments.back());
    if (nodes) {  // multi-node scenario (sim/multi_node.hpp)
      hc::multi_node_options mo;
      mo.nodes = *nodes;
      mo.pool_tokens = node_pool;
      mo.reuse = res.segment_options;
      for (bool shared : {false, true}) multi.push_back(hc::simulate_multi_node(t, mo, shared));
      fmt::print("\nmulti-node segment reuse: {} ({} nodes, {} tokens per pool, round-robin)\n",
                 t.name(), mo.nodes, mo.pool_tokens);
      fmt::print("{:<14} {:>9} {:>11} {:>12} {:>9} {:>10} {:>10} {:>10}\n", "index", "hit rate",
                 "local hits", "remote hits", "misses", "TTFT mean", "TTFT p90", "full mean");
      for (const auto& m : multi) {
        const bool shared = m.shared_index;
        fmt::print("{:<14} {:>9.4f} {:>11} {:>12} {:>9} {:>10.2f} {:>10.2f} {:>10.2f}\n",
                   shared ? "shared" : "local only", m.hit_rate(), m.local_hits, m.remote_hits,
                   m.misses, m.ttft_mean, m.ttft_p90, m.full_mean);
      }
    }
  }
  if (res.fig14_segments > 0) {
    res.fig14 = hc::cold_dispatch(res.fig14_segments, res.fig14_tokens, res.segment_options);
    hybridcache_cli::sim_out::print_fig14(stdout, res);
  }
  const hybridcache_cli::sim_tree::workload tw{w.data, w.requests, w.seed, w.zipf,
                                               w.tok == hybridcache_cli::sim_io::tokenizer_kind::bytes, so.model};
  const auto tree_res = hybridcache_cli::sim_tree::run(tree, tw, prog.enabled);
  auto files = hybridcache_cli::sim_out::write_data(out, res);
  if (!multi.empty()) {
    const fs::path csv = out / "multi_node.csv";
    std::FILE* f = std::fopen(csv.string().c_str(), "w");
    if (f == nullptr) throw hybridcache::invalid_argument("--out", csv.string(), "cannot write");
    fmt::print(f,
               "trace,nodes,pool_tokens,shared_index,requests,segments,local_hits,remote_hits,"
               "misses,hit_rate,transferred_tokens,ttft_mean_ms,ttft_p50_ms,ttft_p90_ms,"
               "full_mean_ms\n");
    for (const auto& m : multi)
      fmt::print(f, "{},{},{},{},{},{},{},{},{},{:.6f},{},{:.6f},{:.6f},{:.6f},{:.6f}\n",
                 m.trace_name, m.nodes, node_pool, m.shared_index ? 1 : 0, m.requests,
                 m.segments, m.local_hits, m.remote_hits, m.misses, m.hit_rate(),
                 m.transferred_tokens, m.ttft_mean, m.ttft_p50, m.ttft_p90, m.full_mean);
    std::fclose(f);
    files.push_back(csv);
  }
  std::string note;
  std::vector<fs::path> plots;
  if (plot) plots = hybridcache_cli::sim_out::write_plots(out, res, note);
  for (auto& f :
       hybridcache_cli::sim_tree::write(out, tree_res, plot, note, tree.sweep.victim_log)) {
    (f.extension() == ".png" || f.extension() == ".svg" ? plots : files).push_back(std::move(f));
  }
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

const std::string full_usage = std::string(usage) + hybridcache_cli::sim_tree::usage;
const hybridcache_cli::registrar reg{{"simulate",
                                      "replay traces: checkpoint strategies vs budget, segment reuse and TTFT (the main job)",
                                      full_usage, run}};

}  // namespace
