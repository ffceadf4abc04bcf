// SPDX-License-Identifier: Apache-2.0
// `hybridcache replay`: a tree trace (sim/tree/trace.hpp's synthetic multi-turn builder, or a
// tuning family of sim/tree/families.hpp) through a real model in llama.cpp, with the prefix cache
// run by the library's tree policy (engines/llama_cpp.hpp), by any policy of the tree simulator on
// its causal protocol (engines/llama_cpp_replay.hpp: the same real engine for every row), or
// without any cache. Built only with the optional component hybridcache::llama_cpp
// (tools/CMakeLists.txt defines HYBRIDCACHE_CLI_HAS_LLAMA_CPP).
#ifdef HYBRIDCACHE_CLI_HAS_LLAMA_CPP

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <hybridcache/engines/llama_cpp.hpp>
#include <hybridcache/engines/llama_cpp_replay.hpp>
#include <hybridcache/sim/tree/families.hpp>
#include <hybridcache/sim/tree/simulate.hpp>
#include <hybridcache/sim/tree/trace.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "hybridcache/command.hpp"
#include "hybridcache/sim_plot.hpp"

namespace {

namespace hc = hybridcache;

constexpr const char* usage = R"(usage: hybridcache replay --model FILE.gguf [options]
Replays a tree trace (the synthetic multi-turn one, or a tuning family) through llama.cpp:
every request's prompt is prefilled, resuming from the snapshot the policy chose.
  --policy P[,P...]       rows, each on the same model (default library):
                          library   the library's tree policy through its adapter
                                    (engines/llama_cpp.hpp), a byte budget (--capacity-mib),
                                    prefill only; given the trace's user-message starts
                          none      no cache
                          any tree policy of `simulate` (hybridcache, vllm_align, vllm_all,
                                    sglang_no_buffer, sglang_extra_buffer, trtllm, marconi,
                                    llamacpp, oracle, ...; hybridcache_* ablations): the
                                    simulator's own policy on its causal protocol, M states
                                    (--budget-states), whole-sequence blobs, each request's
                                    output decoded teacher-forced so decode-time states exist;
                                    the simulator's prediction is printed beside (predicted)
  --capacity-mib N        library's budget (whole-sequence blobs: KV + state), default 4
  --budget-states M       the simulator rows' budget in states (default 16)
  --chunk N               prefill chunk grid, a multiple of --block (default 64)
  --block N               tokens per node (default 16)
  --trace NAME            multi-turn (default), or a family of `simulate`: agent-loop, rag,
                          code-edit, doc-qa-skewed, prompt-library, doc-qa-repeat, tree-search (the
                          trace of `simulate --scenario tree --tree NAME --tree-sessions N
                          --tree-block B --seed S`; its prompts are the family's, thousands of
                          tokens long)
  --trace-preset replay|simulate   multi-turn only. replay (default): the scale below;
                          simulate: the trace of `simulate --scenario tree --tree multi-turn
                          --tree-sessions N --tree-block B --seed S` (1024-token system prompts)
  --sessions N            sessions of the trace (multi-turn: default 12 with the replay preset;
                          a family: its sessions, bursts or conversations, default 4)
  --system-prompts N --system-tokens N --max-turns N
  --user-min N --user-max N --output-min N --output-max N   the multi-turn trace's shape
  --seed N                the trace's seed (default 1)
  --threads N             llama.cpp CPU threads (default 1)
  --verify N              every N-th request's logits are compared, bit for bit, with a prefill
                          without cache cut at the same chunk ends (0: none; default 0);
                          a mismatch is an error
  --csv FILE --json FILE  per-request rows (all policies) / the summary rows
  --plot DIR              replay.dat, replay_{png,svg}.gp and, with gnuplot, replay.{png,svg}:
                          tokens evaluated per policy beside the simulator's prediction, and
                          the TTFT p50 / p99
  --dump-prompts FILE     every request's token ids, one JSON object per line
                          ({"request", "root", "tokens"}): the input of the llama-server anchor
                          (tools/llama_server/anchor.py)
  --quiet                 no progress bar
Token ids: block b of a request is its trie node's tokens, splitmix64(node, i) folded into the
model's vocabulary, so requests that share a node share its tokens.)";

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string x; std::getline(in, x, ',');)
    if (!x.empty()) out.push_back(x);
  return out;
}

bool known_tree_policy(const std::string& name) {
  const auto in = [&](const auto& names) {
    return std::find(std::begin(names), std::end(names), name) != std::end(names);
  };
  return in(hc::tree_policy_names) || in(hc::tree_policy_variants);
}

// One request of one row.
struct row_request {
  std::size_t prompt = 0, resume = 0, evaluated = 0, decoded = 0;
  double ttft_ms = 0.0, decision_ms = 0.0, llama_ms = 0.0;
};

// The totals of one row.
struct row {
  std::string policy;
  std::size_t prompt = 0, evaluated = 0, decoded = 0, resumed = 0, states = 0, bytes = 0,
              peak_bytes = 0, verified = 0;
  double prefill_s = 0.0, decode_s = 0.0, decision_s = 0.0, wall_s = 0.0;
  double predicted = -1.0;  // the simulator alone (tree rows only)
  std::vector<double> ttft;
};

// Progress on stderr, only on a terminal.
struct progress {
  bool on = false;
  void operator()(const std::string& label, std::size_t done, std::size_t total) const {
    if (!on) return;
    std::fprintf(stderr, "\r  %-28s %3zu%% (%zu/%zu requests)", label.c_str(),
                 total ? 100 * done / total : 100, done, total);
    if (done == total) std::fprintf(stderr, "\r%*s\r", 72, "");
    std::fflush(stderr);
  }
};

// Checks `logits` against a prefill without cache cut at `ends` (bit for bit).
void verify(hc::llama_cpp_context& ref, std::span<const hc::token_id> prompt,
            std::span<const std::size_t> ends, const std::vector<float>& logits,
            const std::string& policy, std::size_t request) {
  ref.clear();
  std::size_t at = 0;
  for (std::size_t e : ends) {
    ref.decode(prompt, at, e, e == prompt.size());
    at = e;
  }
  const auto want = ref.logits();
  if (at != prompt.size() || want.size() != logits.size() ||
      std::memcmp(want.data(), logits.data(), want.size() * sizeof(float)) != 0)
    throw hc::error("hybridcache replay: policy " + policy + ", request " +
                    std::to_string(request) +
                    ": the last token's logits differ from a prefill without cache on the same "
                    "chunk grid");
}

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv, {"quiet"});
  const auto model_path = a.get("model");
  if (!model_path) throw hybridcache_cli::usage_error{"--model is required"};
  const auto policies = split(a.get_or("policy", "library"));
  if (policies.empty()) throw hybridcache_cli::usage_error{"--policy needs at least one policy"};
  for (const auto& p : policies)
    if (p != "library" && p != "none" && !known_tree_policy(p))
      throw hybridcache_cli::usage_error{"unknown policy '" + p +
                                         "' (library, none, or a tree policy of simulate)"};
  const std::string trace_name = a.get_or("trace", "multi-turn");
  const bool family = trace_name != "multi-turn";
  if (family && std::find(std::begin(hc::tree_family_names), std::end(hc::tree_family_names),
                          trace_name) == std::end(hc::tree_family_names))
    throw hybridcache_cli::usage_error{"unknown --trace '" + trace_name +
                                       "' (multi-turn or a family of simulate)"};
  if (family)
    for (const char* only : {"trace-preset", "system-prompts", "system-tokens", "max-turns",
                             "user-min", "user-max", "output-min", "output-max"})
      if (a.get(only))
        throw hybridcache_cli::usage_error{std::string("--") + only +
                                           " shapes the multi-turn trace only"};
  const std::string preset = a.get_or("trace-preset", "replay");
  if (preset != "replay" && preset != "simulate")
    throw hybridcache_cli::usage_error{"--trace-preset must be replay or simulate"};
  hc::multi_turn_options o;  // the simulator's defaults
  if (preset == "replay") {  // scaled to the tiny models
    o.block = 16;
    o.sessions = 12;
    o.system_prompts = 2;
    o.system_tokens = 64;
    o.max_turns = 5;
    o.user_min = 16;
    o.user_max = 48;
    o.output_min = 16;
    o.output_max = 48;
  } else {
    o.block = 64;
    o.sessions = 400;
  }
  o.block = a.get_size("block").value_or(o.block);
  o.sessions = a.get_size("sessions").value_or(o.sessions);
  o.system_prompts = a.get_size("system-prompts").value_or(o.system_prompts);
  o.system_tokens = a.get_size("system-tokens").value_or(o.system_tokens);
  o.max_turns = a.get_size("max-turns").value_or(o.max_turns);
  o.user_min = a.get_size("user-min").value_or(o.user_min);
  o.user_max = a.get_size("user-max").value_or(o.user_max);
  o.output_min = a.get_size("output-min").value_or(o.output_min);
  o.output_max = a.get_size("output-max").value_or(o.output_max);
  o.seed = a.get_size("seed").value_or(1);
  const std::size_t capacity = a.get_size("capacity-mib").value_or(4) << 20;
  const std::size_t budget = a.get_size("budget-states").value_or(16);
  const std::size_t chunk = a.get_size("chunk").value_or(64);
  const int threads = static_cast<int>(a.get_size("threads").value_or(1));
  const std::size_t verify_every = a.get_size("verify").value_or(0);
  const auto csv_path = a.get("csv");
  const auto json_path = a.get("json");
  const auto plot_dir = a.get("plot");
  const auto dump_path = a.get("dump-prompts");
  const progress prog{!a.get("quiet") && isatty(2)};
  a.reject_unknown();

  const hc::tree_trace trace =
      family ? hc::tree_family(trace_name, o.block,
                               {.sessions = a.get_size("sessions").value_or(4), .seed = o.seed})
             : hc::synthetic_multi_turn(o);
  const auto& reqs = trace.requests();
  std::size_t longest = 0;
  for (const auto& q : reqs)
    longest = std::max({longest, q.prompt_tokens, q.path.size() * o.block});
  const std::size_t context = std::max(chunk, (longest + chunk - 1) / chunk * chunk);
  const hc::llama_cpp_options eo{
      .chunk_tokens = chunk, .context_tokens = context, .threads = threads};

  hc::llama_cpp_model model(*model_path);
  std::unique_ptr<hc::llama_cpp_context> ref;
  if (verify_every > 0) ref = std::make_unique<hc::llama_cpp_context>(model, eo);
  const auto prompt_of = [&](std::size_t i) {
    return hc::llama_cpp_trace_tokens(trace, i, reqs[i].prompt_tokens, model.vocab_size());
  };

  if (dump_path) {
    std::ofstream dump(*dump_path);
    if (!dump) throw hc::error("hybridcache replay: cannot write " + *dump_path);
    for (std::size_t i = 0; i < reqs.size(); ++i)
      dump
          << nlohmann::json{{"request", i}, {"root", reqs[i].root}, {"tokens", prompt_of(i)}}.dump()
          << "\n";
    dump.close();
    if (!dump) throw hc::error("hybridcache replay: cannot write " + *dump_path);
  }
  std::FILE* csv = nullptr;
  if (csv_path) {
    csv = std::fopen(csv_path->c_str(), "w");
    if (csv == nullptr) throw hc::error("hybridcache replay: cannot write " + *csv_path);
    std::fputs(
        "policy,request,prompt_tokens,resume_tokens,evaluated_tokens,decode_tokens,ttft_ms,"
        "decision_ms,llama_ms\n",
        csv);
  }

  std::vector<row> rows;
  for (const auto& policy : policies) {
    row w;
    w.policy = policy;
    const auto wall0 = std::chrono::steady_clock::now();
    const auto add = [&](std::size_t i, const row_request& q) {
      w.prompt += q.prompt;
      w.evaluated += q.evaluated;
      w.decoded += q.decoded;
      w.resumed += q.resume;
      w.ttft.push_back(q.ttft_ms);
      if (csv)
        std::fprintf(csv, "%s,%zu,%zu,%zu,%zu,%zu,%.4f,%.4f,%.4f\n", policy.c_str(), i, q.prompt,
                     q.resume, q.evaluated, q.decoded, q.ttft_ms, q.decision_ms, q.llama_ms);
      prog(policy, i + 1, reqs.size());
    };
    const auto check = [&](std::size_t i) { return verify_every > 0 && i % verify_every == 0; };
    if (policy == "none" || policy == "library") {
      hc::state_policy pol({.block_size = o.block,
                            .state_bytes = 128 << 10,
                            .capacity_bytes = capacity == 0 ? 1 : capacity});
      hc::llama_cpp_engine eng(model, pol, eo);
      for (std::size_t i = 0; i < reqs.size(); ++i) {
        const auto prompt = prompt_of(i);
        row_request q;
        q.prompt = prompt.size();
        if (policy == "none") {
          const auto t0 = std::chrono::steady_clock::now();
          const auto logits = eng.prefill_uncached(prompt);
          q.ttft_ms =
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
          q.llama_ms = q.ttft_ms;
        } else {
          // The trace's user-message starts, as an engine knows them from its chat template.
          const auto r =
              eng.prefill(hc::namespace_key{}.with_tenant("ns" + std::to_string(reqs[i].root)),
                          prompt, reqs[i].user_starts);
          q.resume = r.resume_tokens;
          q.ttft_ms = 1e3 * (r.restore_seconds + r.prefill_seconds + r.decision_seconds);
          q.decision_ms = 1e3 * r.decision_seconds;
          q.llama_ms = 1e3 * (r.restore_seconds + r.prefill_seconds);
          if (check(i)) {
            verify(*ref, prompt, r.chunk_ends, r.logits, policy, i);
            ++w.verified;
          }
        }
        q.evaluated = q.prompt - q.resume;
        w.prefill_s += q.llama_ms / 1e3;
        w.decision_s += q.decision_ms / 1e3;
        add(i, q);
      }
      w.states = w.policy == "none" ? 0 : eng.stored_states();
      w.bytes = w.policy == "none" ? 0 : eng.stored_bytes();
      w.peak_bytes = w.bytes;
    } else {
      const hc::tree_options so{};
      auto pol = hc::make_tree_policy(policy, so);
      hc::llama_cpp_tree_replay eng(
          model, trace, *pol, {.engine = eo, .budget = budget, .keep_logits = verify_every > 0});
      hc::llama_cpp_replay_request r;
      while (eng.step(&r)) {
        row_request q;
        q.prompt = r.prompt_tokens;
        q.resume = r.resume_tokens;
        q.evaluated = r.evaluated_tokens;
        q.decoded = r.decode_tokens;
        q.ttft_ms = 1e3 * r.ttft_seconds;
        q.decision_ms = 1e3 * r.decision_seconds;
        q.llama_ms = 1e3 * (r.restore_seconds + r.prefill_seconds + r.decode_seconds);
        w.prefill_s += r.restore_seconds + r.prefill_seconds;
        w.decode_s += r.decode_seconds;
        w.decision_s += r.decision_seconds;
        if (check(r.index)) {
          verify(*ref, prompt_of(r.index), r.chunk_ends, r.logits, policy, r.index);
          ++w.verified;
        }
        add(r.index, q);
      }
      w.states = eng.stored_states();
      w.bytes = eng.stored_bytes();
      w.peak_bytes = eng.peak_bytes();
      // The simulator alone, on a fresh policy: its prediction of the tokens evaluated.
      auto alone = hc::make_tree_policy(policy, so);
      const auto usable = hc::usable_matches(trace);
      w.predicted =
          hc::replay_tree(trace, *alone, budget, usable, hc::tree_cost_model{}).prefill_tokens;
    }
    w.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
    rows.push_back(std::move(w));
  }
  if (csv) std::fclose(csv);

  std::size_t prompt_sum = 0;
  for (const auto& q : reqs) prompt_sum += q.prompt_tokens;
  fmt::print(
      "replay {} ({} requests, {} prompt tokens), block {}, chunk {}; budgets {} states (tree "
      "policies) / {} MiB (library); prompt tokens evaluated by llama_decode per policy:\n",
      trace_name, reqs.size(), prompt_sum, o.block, chunk, budget, capacity >> 20);
  fmt::print("  {:<24} {:>9} {:>9} {:>9} {:>8} {:>8} {:>8} {:>6} {:>10} {:>9} {:>7}\n", "policy",
             "evaluated", "predicted", "decoded", "prefill", "p50 ms", "p99 ms", "states", "bytes",
             "decision", "dec/llama");
  nlohmann::json jrows = nlohmann::json::array();
  for (const auto& w : rows) {
    const double llama_s = w.prefill_s + w.decode_s;
    const double frac = llama_s > 0 ? w.decision_s / llama_s : 0.0;
    fmt::print(
        "  {:<24} {:>9} {:>9} {:>9} {:>7.3f}s {:>8.2f} {:>8.2f} {:>6} {:>10} {:>8.4f}s "
        "{:>6.2f}%\n",
        w.policy, w.evaluated,
        w.predicted < 0 ? std::string("-") : fmt::format("{:.0f}", w.predicted), w.decoded,
        w.prefill_s, quantile(w.ttft, 0.5), quantile(w.ttft, 0.99), w.states, w.bytes, w.decision_s,
        100.0 * frac);
    nlohmann::json j = {{"policy", w.policy},
                        {"prompt_tokens", w.prompt},
                        {"evaluated_tokens", w.evaluated},
                        {"resumed_tokens", w.resumed},
                        {"decode_tokens", w.decoded},
                        {"prefill_seconds", w.prefill_s},
                        {"decode_seconds", w.decode_s},
                        {"ttft_p50_ms", quantile(w.ttft, 0.5)},
                        {"ttft_p99_ms", quantile(w.ttft, 0.99)},
                        {"states_stored", w.states},
                        {"state_bytes", w.bytes},
                        {"state_bytes_peak", w.peak_bytes},
                        {"decision_seconds", w.decision_s},
                        {"decision_fraction", frac},
                        {"verified_requests", w.verified},
                        {"wall_seconds", w.wall_s}};
    if (w.predicted >= 0) j["predicted_tokens"] = w.predicted;
    jrows.push_back(std::move(j));
  }
  for (const auto& w : rows)
    if (w.predicted >= 0 && w.predicted != static_cast<double>(w.evaluated))
      fmt::print("  note: {} evaluated {} tokens, the simulator predicted {:.0f}\n", w.policy,
                 w.evaluated, w.predicted);
  if (json_path) {
    const nlohmann::json j = {{"model", *model_path},
                              {"trace", trace_name},
                              {"trace_preset", family ? "" : preset},
                              {"requests", reqs.size()},
                              {"prompt_tokens", prompt_sum},
                              {"block", o.block},
                              {"chunk", chunk},
                              {"capacity_bytes", capacity},
                              {"budget_states", budget},
                              {"threads", threads},
                              {"rows", jrows}};
    std::ofstream out(*json_path);
    if (!out) throw hc::error("hybridcache replay: cannot write " + *json_path);
    out << j.dump(2) << "\n";
  }
  if (plot_dir) {
    // One bar per policy: tokens evaluated by llama_decode (the simulator's prediction as a
    // point on it), and its TTFT p50 / p99 on a second axis.
    namespace so = hybridcache_cli::sim_out;
    const so::fs::path dir(*plot_dir);
    so::fs::create_directories(dir);
    std::string dat = "# index policy evaluated predicted ttft_p50_ms ttft_p99_ms\n";
    for (std::size_t i = 0; i < rows.size(); ++i)
      dat += fmt::format("{} \"{}\" {} {} {:.4g} {:.4g}\n", i, rows[i].policy, rows[i].evaluated,
                         rows[i].predicted < 0 ? std::string("NaN")
                                               : fmt::format("{:.0f}", rows[i].predicted),
                         quantile(rows[i].ttft, 0.5), quantile(rows[i].ttft, 0.99));
    so::write_atomic(dir / "replay.dat", dat);
    const auto abs = so::fs::absolute(dir);
    std::vector<std::pair<so::fs::path, so::fs::path>> jobs;
    for (bool png : {true, false}) {
      std::string gp = so::gp_terminal(png, 900, 480);
      gp += fmt::format("set output {}\n", so::gp_quote(abs / (png ? "replay.png" : "replay.svg")));
      gp += fmt::format(
          "set title \"llama.cpp replay: {} requests, {} prompt tokens, {} states / {} MiB\"\n"
          "set style fill solid 0.6\nset boxwidth 0.6\nset grid y\nset key outside right\n"
          "set xtics rotate by -40\nset ylabel \"prompt tokens evaluated\"\nset yrange [0:*]\n"
          "set y2label \"TTFT (ms)\"\nset y2tics\nset y2range [0:*]\n",
          reqs.size(), prompt_sum, budget, capacity >> 20);
      const auto d = so::gp_quote(abs / "replay.dat");
      gp += fmt::format(
          "plot {} using 1:3:xtic(2) with boxes title 'evaluated', \\\n"
          "     {} using 1:4 with points pt 7 ps 1.2 title 'simulator predicts', \\\n"
          "     {} using 1:5 axes x1y2 with linespoints title 'TTFT p50', \\\n"
          "     {} using 1:6 axes x1y2 with linespoints title 'TTFT p99'\n",
          d, d, d, d);
      const auto script = dir / (png ? "replay_png.gp" : "replay_svg.gp");
      so::write_atomic(script, gp);
      jobs.emplace_back(dir / (png ? "replay.png" : "replay.svg"), script);
    }
    std::string note;
    const auto plots = so::run_gnuplot(jobs, "replay.dat and the .gp scripts", note);
    if (!note.empty()) fmt::print("  {}\n", note);
    for (const auto& f : plots) fmt::print("  plot: {}\n", f.string());
  }
  return 0;
}

const hybridcache_cli::registrar reg{
    {"replay", "replay a tree trace through llama.cpp under a cache policy", usage, run}};

}  // namespace

#endif  // HYBRIDCACHE_CLI_HAS_LLAMA_CPP
