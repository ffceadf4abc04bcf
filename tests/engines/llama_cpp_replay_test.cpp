// SPDX-License-Identifier: Apache-2.0
// engines/llama_cpp_replay.hpp: the simulator's policies (the library's `hybridcache` row and the
// engines' rows) driving llama.cpp on the causal protocol. Two independent references:
// - the simulator alone (`tree_replayer` with a fresh policy, no engine): per request, the tokens
//   llama_decode evaluated in the prefill must equal P − k·B for the simulator's own k, and the
//   totals its `prefill_tokens` (what `simulate --scenario tree` reports);
// - llama.cpp without any cache: every request's last-token logits equal, bit for bit, a prefill
//   from position 0 cut at the same chunk ends on a second context.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "hybridcache/engines/llama_cpp_replay.hpp"
#include "hybridcache/sim/tree/simulate.hpp"

#include "model_path.hpp"

namespace hc = hybridcache;

namespace {

using hybridcache_test::model_path;

// `hybridcache replay`'s default trace scaled to 51 requests (14 sessions of up to 5 turns under
// two 64-token system prompts, 16-token blocks).
hc::tree_trace small_trace(std::size_t sessions = 14, std::size_t output_min = 16) {
  hc::multi_turn_options o;
  o.sessions = sessions;
  o.block = 16;
  o.system_prompts = 2;
  o.system_tokens = 64;
  o.max_turns = 5;
  o.user_min = 16;
  o.user_max = 48;
  o.output_min = output_min;
  o.output_max = 48;
  o.seed = 1;
  return hc::synthetic_multi_turn(o);
}

constexpr std::size_t chunk = 64, budget = 8;

hc::llama_cpp_replay_options replay_options(const hc::tree_trace& t) {
  std::size_t longest = 0;
  for (const auto& q : t.requests())
    longest = std::max({longest, q.prompt_tokens, q.path.size() * t.block()});
  hc::llama_cpp_replay_options o;
  o.engine = {.chunk_tokens = chunk, .context_tokens = (longest + chunk - 1) / chunk * chunk};
  o.budget = budget;
  o.keep_logits = true;
  return o;
}

// The policy `name` runs on the engine and, separately, on the simulator alone.
void check_policy(const hc::llama_cpp_model& model, const hc::tree_trace& t,
                  const std::string& name, bool outputs, std::size_t& evaluated_total) {
  CAPTURE(name);
  const hc::tree_options so{};
  auto on_engine = hc::make_tree_policy(name, so);
  auto alone = hc::make_tree_policy(name, so);
  const auto ro = replay_options(t);
  hc::llama_cpp_tree_replay run(model, t, *on_engine, ro);
  const auto usable = hc::usable_matches(t);
  hc::tree_replayer sim(t, *alone, budget, usable, ro.cost);
  hc::llama_cpp_context reference(model, ro.engine);

  std::size_t evaluated = 0, resumed = 0, requests = 0, differing = 0;
  hc::llama_cpp_replay_request r;
  while (run.step(&r)) {
    REQUIRE(sim.step());
    const auto& q = t.requests()[r.index];
    CAPTURE(r.index);
    CHECK(r.index == requests);
    CHECK(r.prompt_tokens == q.prompt_tokens);
    CHECK(r.resume_tokens == sim.last_resume() * t.block());
    CHECK(r.evaluated_tokens == q.prompt_tokens - sim.last_resume() * t.block());
    CHECK(r.chunk_ends.back() == q.prompt_tokens);
    CHECK(r.states == sim.pool().size());  // the blobs mirror the pool
    evaluated += r.evaluated_tokens;
    resumed += r.resume_tokens;
    ++requests;
    if (outputs) {
      const auto tokens =
          hc::llama_cpp_trace_tokens(t, r.index, q.prompt_tokens, model.vocab_size());
      reference.clear();
      std::size_t at = 0;
      for (std::size_t e : r.chunk_ends) {
        reference.decode(tokens, at, e, e == q.prompt_tokens);
        at = e;
      }
      const auto want = reference.logits();
      REQUIRE(want.size() == r.logits.size());
      differing += std::memcmp(want.data(), r.logits.data(), want.size() * sizeof(float)) != 0;
    }
  }
  CHECK_FALSE(sim.step());
  CHECK(requests == t.size());
  CHECK(differing == 0);
  // The simulator's own books of the engine run, and of the run without the engine.
  const auto m = run.metrics(), predicted = sim.metrics();
  CHECK(static_cast<double>(evaluated) == predicted.prefill_tokens);
  CHECK(static_cast<double>(resumed) == predicted.resumed_tokens);
  CHECK(m.prefill_tokens == predicted.prefill_tokens);
  MESSAGE(name << ": " << evaluated << " prefill tokens evaluated, simulator "
               << predicted.prefill_tokens << ", " << run.stored_states() << " blobs ("
               << run.stored_bytes() << " B)");
  evaluated_total = evaluated;
}

}  // namespace

TEST_CASE("simulator policies on llama.cpp: evaluated tokens = the simulator's, outputs exact") {
  const hc::llama_cpp_model model(model_path("qwen35-tiny.gguf"));
  const auto t = small_trace();
  REQUIRE(t.size() >= 45);
  REQUIRE(t.size() <= 60);
  const std::size_t no_cache = t.prompt_tokens();
  std::size_t lib = 0, engine = 0;
  // The library's row and three engine rows with every output checked; the rest on tokens.
  check_policy(model, t, "hybridcache", true, lib);
  CHECK(lib < no_cache);
  for (const char* name : {"vllm_align", "sglang_extra_buffer", "llamacpp"}) {
    check_policy(model, t, name, true, engine);
    CHECK(engine < no_cache);
  }
  for (const char* name : {"vllm_all", "sglang_no_buffer", "trtllm", "marconi", "oracle"})
    check_policy(model, t, name, false, engine);
}

TEST_CASE("granite-hybrid (Mamba2 + attention): the library's row, outputs exact") {
  const hc::llama_cpp_model model(model_path("granite-hybrid-tiny.gguf"));
  const auto t = small_trace();
  std::size_t lib = 0;
  check_policy(model, t, "hybridcache", true, lib);
  CHECK(lib < t.prompt_tokens());
}

TEST_CASE("requests that end inside their prompt's last block: the end state is scheduled") {
  // Answers of 1-48 tokens: some requests complete no block past the prompt (n = pb) while P is
  // off the grid, so the state at n·B that `finish` may store lies inside the prefill.
  const hc::llama_cpp_model model(model_path("qwen35-tiny.gguf"));
  const auto t = small_trace(8, 1);
  std::size_t inside = 0;
  for (const auto& q : t.requests())
    inside += q.path.size() == q.prompt_blocks(t.block()) && q.prompt_tokens % t.block() != 0;
  REQUIRE(inside > 0);
  std::size_t evaluated = 0;
  for (const char* name : {"hybridcache", "sglang_extra_buffer", "vllm_all"})
    check_policy(model, t, name, true, evaluated);
}

TEST_CASE("llama_cpp_tree_replay: bad options and bad requests are typed errors") {
  const hc::llama_cpp_model model(model_path("qwen35-tiny.gguf"));
  const auto t = small_trace();
  const auto good = replay_options(t);
  auto p = hc::make_tree_policy("vllm_align", hc::tree_options{});
  SUBCASE("a chunk grid off the block grid") {
    auto o = good;
    o.engine.chunk_tokens = 24;
    CHECK_THROWS_AS(hc::llama_cpp_tree_replay(model, t, *p, o), hc::invalid_argument);
  }
  SUBCASE("a KV budget (whole-sequence blobs carry their own KV)") {
    auto o = good;
    o.cost.kv = {hc::kv_mode::joint, 1e6};
    CHECK_THROWS_AS(hc::llama_cpp_tree_replay(model, t, *p, o), hc::invalid_argument);
  }
  SUBCASE("a context shorter than the longest request") {
    auto o = good;
    o.engine.context_tokens = chunk;
    CHECK_THROWS_AS(hc::llama_cpp_tree_replay(model, t, *p, o), hc::invalid_argument);
  }
  SUBCASE("trace tokens: a bad index or vocabulary") {
    CHECK_THROWS_AS((void)hc::llama_cpp_trace_tokens(t, t.size(), 4, 1024), hc::invalid_argument);
    CHECK_THROWS_AS((void)hc::llama_cpp_trace_tokens(t, 0, 4, 2), hc::invalid_argument);
  }
  SUBCASE("a token id outside the vocabulary reaches the context") {
    hc::llama_cpp_context c(model, good.engine);
    const std::vector<hc::token_id> bad{1, 2, static_cast<hc::token_id>(model.vocab_size())};
    CHECK_THROWS_AS(c.decode(bad, 0, 3, true), hc::invalid_argument);
    CHECK_THROWS_AS(c.decode(bad, 0, 0, true), hc::invalid_argument);
    CHECK(c.evaluated() == 0);
  }
}
