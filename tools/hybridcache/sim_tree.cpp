// SPDX-License-Identifier: Apache-2.0
#include "hybridcache/sim_tree.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <hybridcache/error.hpp>
#include <hybridcache/sim/builders.hpp>
#include <hybridcache/sim/tokenize.hpp>
#include <hybridcache/sim/tree.hpp>
#include <hybridcache/sim/tree/families.hpp>
#include <iterator>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "hybridcache/sim_output.hpp"
#include "hybridcache/sim_plot.hpp"
#include "hybridcache/sim_readers.hpp"

namespace hybridcache_cli::sim_tree {

namespace hc = hybridcache;

const char* const usage =
    R"(tree scenario (recurrent states in a prefix tree; docs/tree_simulation.md):
  --tree LIST         tree traces, comma-separated (default multi-turn; none = skip):
                        multi-turn                          embedded synthetic sessions
                        mooncake                            DATA/mooncake hash_ids (512-token blocks)
                        system-prompts                      DATA/system_prompts + ShareGPT queries
                        quality | leval:NAME                L-Eval documents with their questions
                        agent-loop | rag | code-edit | doc-qa-skewed | prompt-library |
                        doc-qa-repeat
                                                            synthetic tuning families (issue #24;
                                                            --seed, --tree-sessions; not results
                                                            of record: docs/tree_simulation.md)
                        tree-search                         synthetic evaluation family (beam
                                                            search over reasoning steps; never
                                                            tuned on)
  --scenario LIST     which scenarios run: sparse,segments,tree (default all three)
  --tree-budgets LIST state budgets M in states (default 4,16,64,256)
  --tree-policies LIST subset of vllm_align vllm_align_dense vllm_all sglang_no_buffer
                      sglang_extra_buffer sglang_extra_buffer_lazy sglang_extra_buffer_cap
                      marconi marconi_insample llamacpp llamacpp_cache_ram trtllm
                      oracle oracle_exact
                      (+ hybridcache when the library's tree policy is built in; default all)
                      (ablations, only when named: hybridcache_exact
                      hybridcache_pool_memory hybridcache_one_memory hybridcache_shadows
                      hybridcache_base hybridcache_prev hybridcache_noprior
                      hybridcache_norepeat hybridcache_noage hybridcache_noprefill
                      hybridcache_nofill hybridcache_nobranch hybridcache_admitall
                      hybridcache_lru_kv hybridcache_nokvcharge hybridcache_prefill_both
                      hybridcache_noclasses hybridcache_base_first hybridcache_nomessages
                      hybridcache_lru hybridcache_nolru hybridcache_noprefill_base)
  --tree-list-policies print every name --tree-policies takes with its kind (library,
                      engine: a faithful engine row and a candidate of the library's row,
                      hindsight, reference: offline, ablation), one per line, and exit
  --tree-block B      tokens per tree node (default 64; mooncake is always 512)
  --tree-sessions N   synthetic multi-turn sessions (default 400); the families' sessions
                      (bursts for doc-qa-skewed and doc-qa-repeat, conversations for
                      prompt-library, searches for tree-search; default: each family's own)
  --tree-chunk C      SGLang chunked-prefill size in tokens (default 8192)
  --tree-path-cap N   states per path of sglang_extra_buffer_cap (default 4)
  --kv-budget BYTES   attention KV memory (suffix K, M, G, KiB, MiB, GiB allowed): the KV pool
                      (separate) or the KV share of the joint pool (+ M states' bytes); LRU
                      leaf eviction drops the states below (default: unlimited KV)
  --kv-mode LIST      KV accounting per sweep, comma-separated, of unlimited (the state-only
                      sweep), separate (SGLang: own KV pool), joint (vLLM hybrid allocator: one
                      pool for KV and states); default unlimited, or unlimited,joint with
                      --kv-budget; separate and joint need --kv-budget
  --tree-requests     also write tree_requests.csv: one line per request, row, budget and KV
                      mode (usable, resumed and recomputed tokens, states and KV blocks held
                      after it, the candidate the library's row followed); its sums are
                      tree.csv's
  --tree-victims      also write tree_victims.csv: one line per state that a library row's
                      own ranking gave up (row, budget, KV mode, candidate, request, why: admit,
                      shed or capacity; the state's node and depth, the state above it, and the
                      figures it was ranked by: gap, ΔE[r] per request, value, age); engine
                      rows log nothing (docs/tree_simulation.md, "Why a state went")
)";

namespace {

std::vector<std::string> split(const std::string& s) {
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

std::vector<std::size_t> sizes(const std::string& opt, const std::string& s) {
  std::vector<std::size_t> out;
  for (const auto& item : split(s)) {
    std::size_t pos = 0;
    unsigned long long v = 0;
    try {
      if (!item.empty() && item[0] == '-') throw std::invalid_argument("negative");
      v = std::stoull(item, &pos);
    } catch (...) {
      pos = 0;
    }
    if (pos != item.size() || item.empty())
      throw usage_error{"option --" + opt + " expects non-negative integers, got '" + item + "'"};
    out.push_back(static_cast<std::size_t>(v));
  }
  if (out.empty()) throw usage_error{"option --" + opt + " needs at least one value"};
  return out;
}

double byte_size(const std::string& opt, const std::string& s) {
  std::size_t pos = 0;
  double v = -1.0;
  try {
    v = std::stod(s, &pos);
  } catch (...) {
    pos = 0;
  }
  const std::string suffix = s.substr(pos);
  double scale = 0.0;
  if (suffix.empty()) scale = 1.0;
  if (suffix == "K") scale = 1e3;
  if (suffix == "M") scale = 1e6;
  if (suffix == "G") scale = 1e9;
  if (suffix == "KiB") scale = 1024.0;
  if (suffix == "MiB") scale = 1024.0 * 1024.0;
  if (suffix == "GiB") scale = 1024.0 * 1024.0 * 1024.0;
  if (pos == 0 || scale == 0.0 || !(v >= 0.0) || !std::isfinite(v))
    throw usage_error{"option --" + opt + " expects a byte count (e.g. 4e9, 8GiB), got '" + s +
                      "'"};
  return v * scale;
}

fs::path need(const fs::path& p) {
  if (!fs::exists(p)) {
    throw hybridcache::invalid_argument(
        "data path", p.string(),
        "not found (pass --data DIR or set HYBRIDCACHE_DATA_DIR; see docs/simulate.md)");
  }
  return p;
}

hc::tree_trace build(const std::string& kind, const options& o, const workload& w) {
  namespace io = hybridcache_cli::sim_io;
  const std::size_t block = o.block.value_or(64);
  const hc::arrival_options real{
      .requests = w.requests.value_or(10000), .rate = 1.0, .zipf = w.zipf, .seed = w.seed};
  auto text = [&](auto&& f) {
    if (w.bytes_tokenizer) return hc::from_trace(f(hc::byte_tokenizer{}), block);
    return hc::from_trace(f(hc::word_tokenizer{}), block);
  };
  if (kind == "multi-turn") {
    hc::multi_turn_options m;
    m.sessions = o.sessions.value_or(400);
    m.block = block;
    m.seed = w.seed;
    return hc::synthetic_multi_turn(m);
  }
  if (kind == "mooncake") {
    const auto recs =
        io::read_block_hash_jsonl(need(w.data / "mooncake" / "conversation_trace.jsonl"));
    hc::tree_trace_builder b("mooncake", 512);
    const std::size_t n = std::min(recs.size(), w.requests.value_or(recs.size()));
    for (std::size_t i = 0; i < n; ++i) {
      const auto& r = recs[i];
      const std::size_t len = r.input_length == 0 ? r.hash_ids.size() * 512 : r.input_length;
      b.add_block_ids(r.hash_ids, len, std::nullopt, r.timestamp_ms / 1000.0);
    }
    return b.take();
  }
  if (kind == "system-prompts") {
    const auto prompts = io::read_system_prompts(need(w.data / "system_prompts"));
    const auto queries =
        io::read_sharegpt_queries(need(w.data / "sharegpt" / "ShareGPT_V3_filtered_1000.json"));
    return text([&](auto tok) {
      return hc::build_system_prompts("system-prompts", prompts, queries, real, tok);
    });
  }
  if (kind == "quality" || kind.rfind("leval:", 0) == 0) {
    const std::string name = kind == "quality" ? "quality" : kind.substr(6);
    const auto docs = io::read_leval(need(w.data / "leval" / (name + ".jsonl")));
    return text([&](auto tok) { return hc::build_document_qa("leval-" + name, docs, real, tok); });
  }
  if (std::find(std::begin(hc::tree_family_names), std::end(hc::tree_family_names), kind) !=
      std::end(hc::tree_family_names))
    return hc::tree_family(kind, block, {.sessions = o.sessions.value_or(0), .seed = w.seed});
  throw usage_error{"unknown tree trace '" + kind + "'"};
}

/// "unlimited" or "joint 4 GiB" (the KV accounting of a sweep).
std::string kv_label(const hc::tree_result& r) {
  if (r.kv == hc::kv_mode::unlimited) return "unlimited";
  return fmt::format("{} {:.3g} GiB", hc::to_string(r.kv), r.kv_bytes / (1024.0 * 1024.0 * 1024.0));
}

void print_table(std::FILE* out, const hc::tree_result& r) {
  fmt::print(out,
             "\ntree scenario — trace {}: {} requests, {} nodes of {} tokens, {:.2f} M prompt "
             "tokens; one state = {:.1f} MiB; KV {}\n",
             r.trace, r.requests, r.nodes, r.block, r.prompt_tokens / 1e6,
             r.state_bytes / (1024.0 * 1024.0), kv_label(r));
  fmt::print(out, "  {:<26} {:>5} {:>9} {:>10} {:>7} {:>7} {:>9} {:>8} {:>7} {:>8} {:>6}\n",
             "policy", "M", "mem GiB", "recomp Mt", "%usable", "hit", "PFLOP", "TTFT ms", "states",
             "us/req", "chunk+");
  std::map<std::size_t, std::vector<const hc::tree_metrics*>> by_budget;
  for (const auto& m : r.rows) by_budget[m.budget].push_back(&m);
  for (const auto& [budget, rows] : by_budget) {
    for (const auto* m : rows) {
      const std::string name = std::isnan(m->parameter)
                                   ? m->policy
                                   : fmt::format("{} (a={:g})", m->policy, m->parameter);
      fmt::print(out,
                 "  {:<26} {:>5} {:>9.2f} {:>10.3f} {:>6.1f}% {:>6.1f}% {:>9.2f} {:>8.1f} {:>7.1f} "
                 "{:>8.2f} {:>6.2f}\n",
                 name, m->budget, m->state_memory / (1024.0 * 1024.0 * 1024.0),
                 m->recomputed_tokens / 1e6,
                 m->usable_tokens > 0 ? 100.0 * m->recomputed_tokens / m->usable_tokens : 0.0,
                 100.0 * m->hit_rate, m->prefill_flops / 1e15, m->ttft_ms, m->states_mean,
                 m->decision_ns / 1e3, m->chunk_boundaries_per_request());
    }
    const hc::tree_metrics* best = nullptr;  // best engine policy
    const hc::tree_metrics* lib = nullptr;
    const hc::tree_metrics* oracle = nullptr;  // better of the two offline references
    for (const auto* m : rows) {
      if (m->policy.rfind("oracle", 0) == 0 || m->policy == "static_optimum") {
        if (!oracle || m->recomputed_tokens < oracle->recomputed_tokens) oracle = m;
      } else if (m->policy == "hybridcache") {
        lib = m;
      } else if (m->policy.rfind("hybridcache_", 0) == 0) {  // an ablation: not an engine
      } else if (m->policy == "marconi_insample") {          // alpha tuned in-sample: hindsight
      } else if (!best || m->recomputed_tokens < best->recomputed_tokens) {
        best = m;
      }
    }
    if (best) {
      fmt::print(out, "  M = {}: best engine policy {} recomputes {:.3f} Mt", budget, best->policy,
                 best->recomputed_tokens / 1e6);
      if (lib) fmt::print(out, ", hybridcache {:.3f} Mt", lib->recomputed_tokens / 1e6);
      if (lib && !lib->leader.empty())
        fmt::print(out, " (following {}, {:g} switches, hand-over {:.3f} Mt)", lib->leader,
                   lib->switches, lib->handover_tokens / 1e6);
      if (oracle)
        fmt::print(out, ", offline reference ({}) {:.3f} Mt", oracle->policy,
                   oracle->recomputed_tokens / 1e6);
      fmt::print(out, "\n");
    }
  }
}

std::string file_id(const std::string& name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') ? c : '_';
  return s;
}

}  // namespace

void list_policies(std::FILE* out) {
  const auto kind = [](std::string_view name) -> std::string_view {
    if (name == "hybridcache") return "library";
    if (std::find(hc::faithful_tree_policy_names.begin(), hc::faithful_tree_policy_names.end(),
                  name) != hc::faithful_tree_policy_names.end())
      return "engine";
    if (name == "marconi_insample") return "hindsight";
    if (name == "oracle" || name == "oracle_exact") return "reference";
    throw std::logic_error("hybridcache: tree policy '" + std::string(name) + "' has no kind");
  };
  for (const auto name : hc::tree_policy_names) fmt::print(out, "{}\t{}\n", name, kind(name));
  for (const auto name : hc::tree_policy_variants) fmt::print(out, "{}\tablation\n", name);
}

options parse(const hybridcache_cli::args& a) {
  options o;
  if (auto t = a.get("tree")) {
    o.traces.clear();
    for (const auto& k : split(*t)) {
      if (k != "none") o.traces.push_back(k);
    }
  }
  if (auto b = a.get("tree-budgets")) o.sweep.budgets = sizes("tree-budgets", *b);
  if (auto p = a.get("tree-policies")) {
    o.sweep.policies = split(*p);
    for (const auto& name : o.sweep.policies) {
      if (std::find(std::begin(hc::tree_policy_names), std::end(hc::tree_policy_names), name) ==
              std::end(hc::tree_policy_names) &&
          std::find(std::begin(hc::tree_policy_variants), std::end(hc::tree_policy_variants),
                    name) == std::end(hc::tree_policy_variants))
        throw usage_error{"unknown tree policy '" + name + "'"};
    }
    if (o.sweep.policies.empty())
      throw usage_error{"option --tree-policies needs at least one policy"};
  }
  o.block = a.get_size("tree-block");
  if (o.block && *o.block == 0) throw usage_error{"option --tree-block must be > 0"};
  o.sessions = a.get_size("tree-sessions");
  if (o.sessions && *o.sessions == 0) throw usage_error{"option --tree-sessions must be > 0"};
  if (auto c = a.get_size("tree-chunk")) {
    if (*c == 0) throw usage_error{"option --tree-chunk must be > 0"};
    o.sweep.sglang_chunk = *c;
  }
  if (auto c = a.get_size("tree-path-cap")) {
    if (*c == 0) throw usage_error{"option --tree-path-cap must be > 0"};
    o.sweep.sglang_path_cap = *c;
  }
  o.sweep.request_log = a.has("tree-requests");
  (void)a.get("tree-requests");
  o.sweep.victim_log = a.has("tree-victims");
  (void)a.get("tree-victims");
  const auto kv = a.get("kv-budget");
  if (kv) {
    o.kv_bytes = byte_size("kv-budget", *kv);
    o.kv_modes = {hc::kv_mode::unlimited, hc::kv_mode::joint};
  }
  if (auto m = a.get("kv-mode")) {
    o.kv_modes.clear();
    for (const auto& k : split(*m)) {
      if (k == "unlimited") {
        o.kv_modes.push_back(hc::kv_mode::unlimited);
      } else if (k == "separate" || k == "joint") {
        if (!kv) throw usage_error{"option --kv-mode " + k + " needs --kv-budget"};
        o.kv_modes.push_back(k == "joint" ? hc::kv_mode::joint : hc::kv_mode::separate);
      } else {
        throw usage_error{"unknown KV mode '" + k + "' (unlimited, separate, joint)"};
      }
    }
    if (o.kv_modes.empty()) throw usage_error{"option --kv-mode needs at least one mode"};
  }
  return o;
}

std::vector<hc::tree_result> run(const options& o, const workload& w, bool progress) {
  // Build every trace first: a missing file fails before any replay.
  std::vector<hc::tree_trace> traces;
  for (const auto& k : o.traces) traces.push_back(build(k, o, w));
  hc::tree_options so = o.sweep;
  so.cost.model = w.model;
  std::vector<hc::tree_result> out;
  for (const auto& t : traces) {
    for (const auto mode : o.kv_modes) {
      so.cost.kv = {mode, mode == hc::kv_mode::unlimited ? 0.0 : o.kv_bytes};
      // Appended piece by piece: on `" " + std::string(...)` GCC 12's release build warned
      // -Wrestrict here (a false positive from its inlined std::string::replace).
      std::string label = "tree " + t.name();
      if (mode != hc::kv_mode::unlimited) label.append(" ").append(hc::to_string(mode));
      auto prog = [&](std::size_t done, std::size_t total) {
        if (!progress) return;
        std::fprintf(stderr, "\r  %-24s %3zu%% (%zu/%zu runs)", label.c_str(),
                     total ? 100 * done / total : 100, done, total);
        if (done == total) std::fprintf(stderr, "\r%*s\r", 72, "");
        std::fflush(stderr);
      };
      out.push_back(hc::simulate_tree(t, so, prog));
      print_table(stdout, out.back());
      std::fflush(stdout);
    }
  }
  return out;
}

std::vector<fs::path> write(const fs::path& dir, const std::vector<hc::tree_result>& res, bool plot,
                            std::string& note, bool victims) {
  std::vector<fs::path> files;
  if (res.empty()) return files;
  std::string csv =
      "trace,policy,budget_states,state_memory_bytes,requests,prompt_tokens,usable_tokens,resumed_"
      "tokens,recomputed_tokens,"
      "prefill_tokens,hit_rate,prefill_flops,ttft_ms_mean,states_mean,states_peak,decision_ns_per_"
      "request,decision_ns_per_block,"
      "parameter,block_tokens,chunk_boundaries_per_request,kv_mode,kv_budget_bytes,kv_evicted_"
      "blocks,states_dropped,kv_blocks_mean,leader,switches,handover_tokens,replan_ns_per_block\n";
  for (const auto& r : res) {
    for (const auto& m : r.rows) {
      csv += fmt::format(
          "{},{},{},{:.10g},{},{:.10g},{:.10g},{:.10g},{:.10g},{:.10g},{:.10g},{:.10g},{:.10g},{:."
          "10g},{},{:.6g},{:.6g},{},{},{:.6g},{},{:.10g},{:.10g},{:.10g},{:.6g},{},{},{},{:.6g}\n",
          r.trace, m.policy, m.budget, m.state_memory, m.requests, m.prompt_tokens, m.usable_tokens,
          m.resumed_tokens, m.recomputed_tokens, m.prefill_tokens, m.hit_rate, m.prefill_flops,
          m.ttft_ms, m.states_mean, m.states_peak, m.decision_ns, m.decision_ns_per_block,
          std::isnan(m.parameter) ? std::string() : fmt::format("{:g}", m.parameter), r.block,
          m.chunk_boundaries_per_request(), hc::to_string(m.kv), m.kv_budget_bytes,
          m.kv_evicted_blocks, m.states_dropped, m.kv_blocks_mean, m.leader,
          std::isnan(m.switches) ? std::string() : fmt::format("{:g}", m.switches),
          std::isnan(m.handover_tokens) ? std::string() : fmt::format("{:g}", m.handover_tokens),
          m.replan_ns_per_block);
    }
  }
  hybridcache_cli::sim_out::write_atomic(dir / "tree.csv", csv);
  files.push_back(dir / "tree.csv");
  if (std::any_of(res.begin(), res.end(), [](const hc::tree_result& r) {
        return std::any_of(r.rows.begin(), r.rows.end(),
                           [](const hc::tree_metrics& m) { return !m.per_request.empty(); });
      })) {
    std::string log =
        "trace,kv_mode,budget_states,policy,request,prompt_tokens,usable_tokens,resumed_tokens,"
        "recomputed_tokens,states,kv_blocks,leader\n";
    for (const auto& r : res) {
      for (const auto& m : r.rows) {
        for (const auto& q : m.per_request) {
          const bool named = q.leader < m.candidates.size();
          fmt::format_to(std::back_inserter(log), "{},{},{},{},{},{},{},{},{},{},{},{}\n", r.trace,
                         hc::to_string(m.kv), m.budget, m.policy, q.request, q.prompt_tokens,
                         q.usable_tokens, q.resumed_tokens, q.usable_tokens - q.resumed_tokens,
                         q.states, q.kv_blocks,
                         named ? std::string_view(m.candidates[q.leader]) : std::string_view());
        }
      }
    }
    hybridcache_cli::sim_out::write_atomic(dir / "tree_requests.csv", log);
    files.push_back(dir / "tree_requests.csv");
  }
  if (victims) {
    std::string log =
        "trace,kv_mode,budget_states,policy,candidate,request,cause,node,depth_tokens,up_node,"
        "gap_tokens,expected_tokens,value,bytes,age,states_below,planned,prior\n";
    for (const auto& r : res) {
      for (const auto& m : r.rows) {
        for (const auto& e : m.victims) {
          const bool named = e.candidate < m.candidates.size();
          const bool root = e.up == hc::tree_trace::no_parent;
          fmt::format_to(
              std::back_inserter(log),
              "{},{},{},{},{},{},{},{},{},{},{},{:.10g},{:.10g},{},{},{},{:d},{:d}\n", r.trace,
              hc::to_string(m.kv), m.budget, m.policy,
              named ? std::string_view(m.candidates[e.candidate]) : std::string_view(m.policy),
              e.request, hc::to_string(e.why), e.node, e.depth_tokens,
              root ? std::string() : std::to_string(e.up), e.gap_tokens, e.expected_tokens, e.value,
              e.bytes, e.age, e.states_below, e.planned, e.prior);
        }
      }
    }
    hybridcache_cli::sim_out::write_atomic(dir / "tree_victims.csv", log);
    files.push_back(dir / "tree_victims.csv");
  }

  std::vector<std::pair<fs::path, fs::path>> scripts;  // (plot, script)
  const fs::path abs = fs::absolute(dir);
  for (const auto& r : res) {
    const std::string id =
        "tree_" + file_id(r.trace) +
        (r.kv == hc::kv_mode::unlimited ? std::string() : "_" + std::string(hc::to_string(r.kv)));
    std::vector<std::string> policies;
    std::string dat;
    for (const auto& m : r.rows) {
      if (policies.empty() || policies.back() != m.policy) {
        if (!policies.empty()) dat += "\n\n";
        policies.push_back(m.policy);
        dat += "# " + m.policy +
               ": state memory GiB, recomputed Mtokens, hit rate, prefilled Mtokens\n";
      }
      dat +=
          fmt::format("{:.6g} {:.6g} {:.6g} {:.6g}\n", m.state_memory / (1024.0 * 1024.0 * 1024.0),
                      m.recomputed_tokens / 1e6, m.hit_rate, m.prefill_tokens / 1e6);
    }
    hybridcache_cli::sim_out::write_atomic(dir / (id + ".dat"), dat);
    files.push_back(dir / (id + ".dat"));
    for (bool png : {true, false}) {
      std::string gp = sim_out::gp_terminal(png, 800, 480);
      gp += fmt::format("set output {}\n", sim_out::gp_quote(abs / (id + (png ? ".png" : ".svg"))));
      // Under a KV budget evicted KV is prefilled again too: plot every prefilled token.
      const bool kv = r.kv != hc::kv_mode::unlimited;
      gp += fmt::format(
          "set title \"{}: tokens {} vs state memory (B = {} tokens, {} requests, KV "
          "{})\"\nset "
          "grid\nset logscale x 2\n"
          "set key outside right\nset xlabel \"state memory (GiB)\"\nset ylabel \"tokens "
          "{} (millions)\"\nset yrange [0:*]\n",
          r.trace, kv ? "prefilled" : "recomputed", r.block, r.requests, kv_label(r),
          kv ? "prefilled" : "recomputed");
      gp += "plot ";
      for (std::size_t i = 0; i < policies.size(); ++i) {
        gp += fmt::format(
            "{}{} index {} using 1:{} with linespoints lw {} title '{}'", i ? ", \\\n     " : "",
            sim_out::gp_quote(abs / (id + ".dat")), i, kv ? 4 : 2,
            policies[i].rfind("oracle", 0) == 0 || policies[i] == "static_optimum" ? 3 : 2,
            policies[i]);
      }
      gp += "\n";
      const fs::path script = dir / (id + (png ? "_png.gp" : "_svg.gp"));
      hybridcache_cli::sim_out::write_atomic(script, gp);
      scripts.emplace_back(dir / (id + (png ? ".png" : ".svg")), script);
    }
  }
  if (!plot) return files;
  const auto plots = sim_out::run_gnuplot(scripts, "the tree data and .gp scripts", note);
  files.insert(files.end(), plots.begin(), plots.end());
  return files;
}

}  // namespace hybridcache_cli::sim_tree
