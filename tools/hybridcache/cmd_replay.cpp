// SPDX-License-Identifier: Apache-2.0
// `hybridcache replay`: a tree trace (sim/tree/trace.hpp, the synthetic multi-turn builder)
// through a real model in llama.cpp, with the prefix cache run by the library's tree policy
// (engines/llama_cpp.hpp) or without any cache. Built only with the optional component
// hybridcache::llama_cpp (tools/CMakeLists.txt defines HYBRIDCACHE_CLI_HAS_LLAMA_CPP).
#ifdef HYBRIDCACHE_CLI_HAS_LLAMA_CPP

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <hybridcache/engines/llama_cpp.hpp>
#include <hybridcache/numeric.hpp>
#include <hybridcache/sim/tree/trace.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hybridcache/command.hpp"

namespace {

namespace hc = hybridcache;

constexpr const char* usage = R"(usage: hybridcache replay --model FILE.gguf [options]
Replays the synthetic multi-turn tree trace through llama.cpp: every request's prompt is
prefilled (no decode), resuming from the snapshot the policy chose.
  --policy library|none   the tree state policy, or no cache (default library)
  --capacity-mib N        snapshot budget (whole-sequence blobs: KV + state), default 4
  --chunk N               prefill chunk grid, a multiple of --block (default 64)
  --block N               tokens per node (default 16)
  --sessions N --system-prompts N --system-tokens N --max-turns N
  --user-min N --user-max N --output-min N --output-max N --seed N   the trace
  --threads N             llama.cpp CPU threads (default 1)
  --csv FILE --json FILE  per-request rows / the summary
  --dump-prompts FILE     every request's token ids, one JSON object per line
                          ({"request", "root", "tokens"}): the input of the llama-server anchor
                          (tools/llama_server/anchor.py)
Token ids: block b of a request is its trie node's tokens, splitmix64(node, i) folded into the
model's vocabulary, so requests that share a node share its tokens.)";

std::vector<hc::token_id> prompt_of(const hc::tree_request& q, std::size_t index, std::size_t B,
                                    std::size_t vocab) {
  std::vector<hc::token_id> p(q.prompt_tokens);
  for (std::size_t t = 0; t < p.size(); ++t) {
    const std::size_t b = t / B;
    const std::uint64_t key = b < q.path.size()
                                  ? (std::uint64_t{q.path[b]} << 20) ^ (t % B)
                                  : (std::uint64_t{1} << 63) ^ (std::uint64_t{index} << 24) ^ t;
    p[t] = static_cast<hc::token_id>(hc::splitmix64_mix(key) % (vocab - 2));
  }
  return p;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

int run(std::span<const std::string_view> argv) {
  const hybridcache_cli::args a(argv);
  const auto model_path = a.get("model");
  if (!model_path) throw hybridcache_cli::usage_error{"--model is required"};
  const std::string policy = a.get_or("policy", "library");
  if (policy != "library" && policy != "none")
    throw hybridcache_cli::usage_error{"--policy must be library or none"};
  hc::multi_turn_options o;
  o.block = a.get_size("block").value_or(16);
  o.sessions = a.get_size("sessions").value_or(12);
  o.system_prompts = a.get_size("system-prompts").value_or(2);
  o.system_tokens = a.get_size("system-tokens").value_or(64);
  o.max_turns = a.get_size("max-turns").value_or(5);
  o.user_min = a.get_size("user-min").value_or(16);
  o.user_max = a.get_size("user-max").value_or(48);
  o.output_min = a.get_size("output-min").value_or(16);
  o.output_max = a.get_size("output-max").value_or(48);
  o.seed = a.get_size("seed").value_or(1);
  const std::size_t capacity = a.get_size("capacity-mib").value_or(4) << 20;
  const std::size_t chunk = a.get_size("chunk").value_or(64);
  const int threads = static_cast<int>(a.get_size("threads").value_or(1));
  const auto csv_path = a.get("csv");
  const auto json_path = a.get("json");
  const auto dump_path = a.get("dump-prompts");
  a.reject_unknown();

  const hc::tree_trace trace = hc::synthetic_multi_turn(o);
  std::size_t longest = 0;
  for (const auto& q : trace.requests()) longest = std::max(longest, q.prompt_tokens);
  const std::size_t context = std::max(chunk, (longest + chunk - 1) / chunk * chunk);

  hc::llama_cpp_model model(*model_path);
  hc::state_policy pol({.block_size = o.block,
                        .state_bytes = 128 << 10,
                        .capacity_bytes = capacity == 0 ? 1 : capacity});
  hc::llama_cpp_engine eng(model, pol,
                           {.chunk_tokens = chunk, .context_tokens = context, .threads = threads});

  std::FILE* csv = nullptr;
  if (csv_path) {
    csv = std::fopen(csv_path->c_str(), "w");
    if (csv == nullptr) throw hc::error("hybridcache replay: cannot write " + *csv_path);
    std::fputs("request,prompt_tokens,resume_tokens,evaluated_tokens,ttft_ms,decision_ms\n", csv);
  }
  std::ofstream dump;
  if (dump_path) {
    dump.open(*dump_path);
    if (!dump) throw hc::error("hybridcache replay: cannot write " + *dump_path);
  }
  std::vector<double> ttft;
  std::size_t prompt_sum = 0, evaluated = 0;
  double prefill_s = 0.0, decision_s = 0.0;
  const auto& reqs = trace.requests();
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto prompt = prompt_of(reqs[i], i, o.block, model.vocab_size());
    if (dump_path)
      dump << nlohmann::json{{"request", i}, {"root", reqs[i].root}, {"tokens", prompt}}.dump()
           << "\n";
    std::size_t resume = 0;
    double t_ms = 0.0, d_ms = 0.0;
    if (policy == "none") {
      const auto t0 = std::chrono::steady_clock::now();
      (void)eng.prefill_uncached(prompt);
      t_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    } else {
      const auto ns = hc::namespace_key{}.with_tenant("ns" + std::to_string(reqs[i].root));
      const auto r = eng.prefill(ns, prompt);
      resume = r.resume_tokens;
      t_ms = 1e3 * (r.restore_seconds + r.prefill_seconds + r.decision_seconds);
      d_ms = 1e3 * r.decision_seconds;
    }
    prompt_sum += prompt.size();
    evaluated += prompt.size() - resume;
    prefill_s += t_ms / 1e3;
    decision_s += d_ms / 1e3;
    ttft.push_back(t_ms);
    if (csv)
      std::fprintf(csv, "%zu,%zu,%zu,%zu,%.4f,%.4f\n", i, prompt.size(), resume,
                   prompt.size() - resume, t_ms, d_ms);
  }
  if (csv) std::fclose(csv);
  if (dump_path) {
    dump.close();
    if (!dump) throw hc::error("hybridcache replay: cannot write " + *dump_path);
  }

  nlohmann::json j = {{"model", *model_path},
                      {"policy", policy},
                      {"requests", reqs.size()},
                      {"block", o.block},
                      {"chunk", chunk},
                      {"capacity_bytes", capacity},
                      {"prompt_tokens", prompt_sum},
                      {"evaluated_tokens", evaluated},
                      {"prefill_seconds", prefill_s},
                      {"ttft_p50_ms", quantile(ttft, 0.5)},
                      {"ttft_p99_ms", quantile(ttft, 0.99)},
                      {"states_stored", eng.stored_states()},
                      {"state_bytes", eng.stored_bytes()},
                      {"decision_seconds", decision_s}};
  fmt::print(
      "replay {} requests ({} prompt tokens), policy {}: {} tokens evaluated by "
      "llama_decode, prefill {:.3f} s, TTFT p50 {:.2f} ms p99 {:.2f} ms, {} states "
      "stored ({} bytes), decisions {:.4f} s\n",
      reqs.size(), prompt_sum, policy, evaluated, prefill_s, quantile(ttft, 0.5),
      quantile(ttft, 0.99), eng.stored_states(), eng.stored_bytes(), decision_s);
  if (json_path) {
    std::ofstream out(*json_path);
    if (!out) throw hc::error("hybridcache replay: cannot write " + *json_path);
    out << j.dump(2) << "\n";
  }
  return 0;
}

const hybridcache_cli::registrar reg{
    {"replay", "replay a tree trace through llama.cpp under a cache policy", usage, run}};

}  // namespace

#endif  // HYBRIDCACHE_CLI_HAS_LLAMA_CPP
