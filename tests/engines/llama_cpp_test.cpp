// SPDX-License-Identifier: Apache-2.0
// engines/llama_cpp.hpp end to end: the tree policy runs llama.cpp's recurrent-state cache on a
// 50-request multi-turn trace through tiny random-weight hybrid models (Gated DeltaNet +
// attention, Mamba2 + attention). The reference is llama.cpp itself without any cache: every
// request's last-token logits must equal, bit for bit, a prefill from position 0 cut at the same
// chunk ends, and stay within a stated tolerance of a one-shot prefill. Bad input: typed errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "hybridcache/engines/llama_cpp.hpp"

#include "model_path.hpp"

namespace hc = hybridcache;

namespace {

using hybridcache_test::model_path;

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Multi-turn sessions under two shared system prompts: turn t+1's prompt extends turn t's
// prompt with its output and a new user message (DESIGN §7's synthetic sessions).
std::vector<std::vector<hc::token_id>> multi_turn_trace(std::size_t vocab, std::size_t requests,
                                                        std::uint64_t seed) {
  std::uint64_t s = seed;
  auto draw = [&](std::size_t n) {
    std::vector<hc::token_id> v(n);
    for (auto& t : v) t = static_cast<hc::token_id>(splitmix(s) % (vocab - 2));
    return v;
  };
  auto between = [&](std::size_t lo, std::size_t hi) { return lo + splitmix(s) % (hi - lo + 1); };
  const std::vector<std::vector<hc::token_id>> system = {draw(40), draw(72)};
  constexpr std::size_t sessions = 8;
  std::vector<std::vector<hc::token_id>> last(sessions);
  std::vector<std::vector<hc::token_id>> out;
  for (std::size_t turn = 0; out.size() < requests; ++turn)
    for (std::size_t k = 0; k < sessions && out.size() < requests; ++k) {
      auto& p = last[k];
      if (turn == 0) {
        p = system[k % 2];
      } else {
        const auto answer = draw(between(12, 30));  // the previous turn's output
        p.insert(p.end(), answer.begin(), answer.end());
      }
      const auto user = draw(between(10, 40));
      p.insert(p.end(), user.begin(), user.end());
      out.push_back(p);
    }
  return out;
}

std::size_t common_prefix(const std::vector<hc::token_id>& a, const std::vector<hc::token_id>& b) {
  std::size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

struct trace_figures {
  std::size_t requests = 0, prompt_tokens = 0, evaluated = 0, resumed = 0, freed = 0;
  double one_shot_max_abs = 0.0, logit_scale = 0.0;
};

// Runs the trace through the cache and checks every request against the uncached references.
trace_figures run_trace(const char* model_name, std::size_t capacity_bytes) {
  hc::llama_cpp_model model(model_path(model_name));
  constexpr std::size_t B = 16;
  hc::state_policy pol(
      {.block_size = B, .state_bytes = 128 << 10, .capacity_bytes = capacity_bytes});
  hc::llama_cpp_engine eng(model, pol, {.chunk_tokens = 64, .context_tokens = 1024});
  hc::state_policy unused({.block_size = B, .state_bytes = 1, .capacity_bytes = 1});
  hc::llama_cpp_engine grid_ref(model, unused, {.chunk_tokens = 64, .context_tokens = 1024});
  hc::llama_cpp_engine one_shot(model, unused, {.chunk_tokens = 1024, .context_tokens = 1024});

  const auto trace = multi_turn_trace(model.vocab_size(), 50, 0x5eed);
  trace_figures f;
  const hc::namespace_key ns{};
  for (std::size_t i = 0; i < trace.size(); ++i) {
    const auto& prompt = trace[i];
    CAPTURE(i);
    const auto r = eng.prefill(ns, prompt);
    // The resume point is a block-grid position inside a prefix some earlier prompt shared
    // (brute force over the trace so far), and never the whole prompt.
    std::size_t lcp = 0;
    for (std::size_t j = 0; j < i; ++j) lcp = std::max(lcp, common_prefix(prompt, trace[j]));
    CHECK(r.resume_tokens % B == 0);
    CHECK(r.resume_tokens <= std::min(lcp, prompt.size() - 1));
    CHECK(r.evaluated_tokens == prompt.size() - r.resume_tokens);
    CHECK(eng.stored_bytes() <= capacity_bytes);
    CHECK(eng.stored_bytes() == pol.used_bytes());
    CHECK(eng.stored_states() == pol.state_count());
    REQUIRE(!r.chunk_ends.empty());
    CHECK(r.chunk_ends.back() == prompt.size());

    const auto same_grid = grid_ref.prefill_uncached(prompt, r.chunk_ends);
    REQUIRE(same_grid.size() == r.logits.size());
    CHECK(std::memcmp(same_grid.data(), r.logits.data(), r.logits.size() * sizeof(float)) == 0);

    const auto whole = one_shot.prefill_uncached(prompt);
    for (std::size_t t = 0; t < whole.size(); ++t) {
      f.one_shot_max_abs =
          std::max(f.one_shot_max_abs, static_cast<double>(std::fabs(whole[t] - r.logits[t])));
      f.logit_scale = std::max(f.logit_scale, static_cast<double>(std::fabs(whole[t])));
    }
    f.requests += 1;
    f.prompt_tokens += prompt.size();
    f.evaluated += r.evaluated_tokens;
    f.resumed += r.resume_tokens > 0;
    f.freed += r.freed;
  }
  MESSAGE(std::string(model_name) << ": " << f.requests << " requests, " << f.prompt_tokens
                                  << " prompt tokens (no cache), " << f.evaluated
                                  << " evaluated with the "
                                  << "policy, " << f.resumed << " resumes, " << f.freed
                                  << " snapshots freed; one-shot max |dlogit| = "
                                  << f.one_shot_max_abs << " (max |logit| " << f.logit_scale
                                  << ")");
  return f;
}

// `r`'s last-token logits against a prefill of `prompt` without cache, cut at `r`'s chunk ends
// (64-token chunks): bit for bit.
void check_same_as_uncached(const hc::llama_cpp_model& model,
                            const std::vector<hc::token_id>& prompt,
                            const hc::llama_cpp_result& r) {
  hc::state_policy unused({.block_size = 16, .state_bytes = 1, .capacity_bytes = 1});
  hc::llama_cpp_engine ref(model, unused, {.chunk_tokens = 64, .context_tokens = 512});
  const auto same = ref.prefill_uncached(prompt, r.chunk_ends);
  REQUIRE(same.size() == r.logits.size());
  CHECK(std::memcmp(same.data(), r.logits.data(), same.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("qwen35 (Gated DeltaNet + attention): cached prefills equal uncached ones bit for bit") {
  const auto f = run_trace("qwen35-tiny.gguf", 1 << 20);
  CHECK(f.requests == 50);
  CHECK(f.resumed > 25);                 // most turns resume from a snapshot
  CHECK(f.evaluated < f.prompt_tokens);  // fewer tokens than without a cache
  CHECK(f.freed > 0);                    // the 1 MiB budget forced evictions
  // Another chunking changes the float summation order only: within 1e-3 of the logit scale.
  CHECK(f.one_shot_max_abs <= 1e-3 * f.logit_scale);
}

TEST_CASE("granite-hybrid (Mamba2 + attention): cached prefills equal uncached ones bit for bit") {
  const auto f = run_trace("granite-hybrid-tiny.gguf", 1 << 20);
  CHECK(f.requests == 50);
  CHECK(f.resumed > 25);
  CHECK(f.evaluated < f.prompt_tokens);
  CHECK(f.one_shot_max_abs <= 1e-3 * f.logit_scale);
}

TEST_CASE("user-message starts: the first request snapshots where its message starts") {
  // A 40-token system prompt, then a user message; B = 16. Given the start 40, the first request
  // snapshots block 2 (token 32, the start floored to the grid), so a second user's request on
  // the same system prompt resumes at 32 with logits equal, bit for bit, to an uncached prefill
  // at the same chunk ends. Without the starts the first request has no learned branch point
  // yet (no divergence seen), so the second resumes from nothing. The free room is not filled
  // (`fill_free` off), so the first request snapshots only its plan and its branch point.
  hc::llama_cpp_model model(model_path("qwen35-tiny.gguf"));
  std::vector<hc::token_id> system(40), first(40), second(40);
  for (std::size_t i = 0; i < 40; ++i) {
    system[i] = static_cast<hc::token_id>(3 + i * 11 % 200);
    first[i] = static_cast<hc::token_id>(5 + i * 7 % 300);
    second[i] = static_cast<hc::token_id>(9 + i * 13 % 250);
  }
  auto a = system, b = system;
  a.insert(a.end(), first.begin(), first.end());
  b.insert(b.end(), second.begin(), second.end());
  const std::vector<std::size_t> starts{40};
  for (const bool known : {true, false}) {
    CAPTURE(known);
    // Without filling the free room, so the first request snapshots only what the plan names.
    hc::policy_options o{.block_size = 16, .state_bytes = 128 << 10, .capacity_bytes = 8 << 20};
    o.fill_free = false;
    hc::state_policy pol(o);
    hc::llama_cpp_engine eng(model, pol, {.chunk_tokens = 64, .context_tokens = 512});
    const auto ra =
        eng.prefill(hc::namespace_key{}, a, known ? starts : std::vector<std::size_t>{});
    const bool at_start =
        std::find(ra.snapshots.begin(), ra.snapshots.end(), 32) != ra.snapshots.end();
    CHECK(at_start == known);
    const auto rb =
        eng.prefill(hc::namespace_key{}, b, known ? starts : std::vector<std::size_t>{});
    CHECK(rb.resume_tokens == (known ? 32u : 0u));
    check_same_as_uncached(model, b, rb);
  }
}

TEST_CASE("a re-asked prompt of whole blocks resumes at its usable end, bit for bit") {
  // P = 64 tokens, B = 16: a re-ask computes at least the last token, so it can resume at most at
  // ⌊63/16⌋·16 = 48. The first request snapshots there (`prefill_end`, with the prefill-end prior
  // on; free room is not filled, so only the plan decides), and the re-ask resumes at 48 with
  // logits equal, bit for bit, to an uncached prefill at the same chunk ends. With the prior off
  // the plan's tail is 64, which the re-ask cannot use: it starts from nothing.
  hc::llama_cpp_model model(model_path("qwen35-tiny.gguf"));
  std::vector<hc::token_id> prompt(64);
  for (std::size_t i = 0; i < prompt.size(); ++i)
    prompt[i] = static_cast<hc::token_id>(7 + i * 17 % 400);
  for (const bool prior : {true, false}) {
    CAPTURE(prior);
    hc::policy_options o{.block_size = 16, .state_bytes = 128 << 10, .capacity_bytes = 8 << 20};
    o.fill_free = false;
    o.prefill_prior = prior;
    hc::state_policy pol(o);
    hc::llama_cpp_engine eng(model, pol, {.chunk_tokens = 64, .context_tokens = 512});
    const auto first = eng.prefill(hc::namespace_key{}, prompt);
    const bool at_48 =
        std::find(first.snapshots.begin(), first.snapshots.end(), 48) != first.snapshots.end();
    CHECK(at_48 == prior);
    const auto again = eng.prefill(hc::namespace_key{}, prompt);
    CHECK(again.resume_tokens == (prior ? 48u : 0u));
    check_same_as_uncached(model, prompt, again);
  }
}

TEST_CASE("bad input: typed errors, and the policy is left consistent") {
  const std::string qwen = model_path("qwen35-tiny.gguf");
  const std::string granite = model_path("granite-hybrid-tiny.gguf");
  const auto dir = std::filesystem::temp_directory_path() / "hybridcache_llama_cpp_test";
  std::filesystem::create_directories(dir);

  SUBCASE("a missing GGUF file") {
    CHECK_THROWS_AS(hc::llama_cpp_model((dir / "absent.gguf").string()), hc::not_found_error);
  }
  SUBCASE("a file that is not GGUF, and a truncated GGUF") {
    const auto text = dir / "not_a_model.gguf";
    std::ofstream(text) << "hello";
    CHECK_THROWS_AS(hc::llama_cpp_model(text.string()), hc::invalid_argument);
    std::ifstream in(qwen, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto cut = dir / "truncated.gguf";
    std::ofstream(cut, std::ios::binary).write(bytes.data(), 4096);
    CHECK_THROWS_AS(hc::llama_cpp_model(cut.string()), hc::invalid_argument);
  }

  hc::llama_cpp_model model(qwen);
  hc::state_policy pol({.block_size = 16, .state_bytes = 128 << 10, .capacity_bytes = 4 << 20});
  hc::llama_cpp_engine eng(model, pol, {.chunk_tokens = 32, .context_tokens = 512});
  std::vector<hc::token_id> prompt(100);
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<hc::token_id>(i * 7);
  const hc::namespace_key ns{};

  SUBCASE("a token id outside the vocabulary, before the policy is touched") {
    auto bad = prompt;
    bad[57] = static_cast<hc::token_id>(model.vocab_size());
    try {
      (void)eng.prefill(ns, bad);
      FAIL("no exception");
    } catch (const hc::invalid_argument& e) {
      CHECK(e.argument() == "prompt[57]");
      CHECK(e.value() == std::to_string(model.vocab_size()));
    }
    CHECK(pol.node_count() == 0);
    CHECK(pol.observations() == 0);
  }

  SUBCASE("a user start not below the prompt's length, before the policy is touched") {
    const std::vector<std::size_t> starts{40, 100};
    try {
      (void)eng.prefill(ns, prompt, starts);
      FAIL("no exception");
    } catch (const hc::invalid_argument& e) {
      CHECK(e.argument() == "user_starts[1]");
      CHECK(e.value() == "100");
    }
    CHECK(pol.node_count() == 0);
    CHECK(pol.observations() == 0);
  }

  SUBCASE("snapshot blobs: wrong size, corrupted, another model, another position") {
    (void)eng.prefill_uncached(prompt);
    auto blob = eng.save_state(prompt.size());
    CHECK_NOTHROW(eng.load_state(blob, prompt.size()));
    const auto logits = eng.prefill_uncached(prompt);
    auto cut = blob;
    cut.pop_back();
    CHECK_THROWS_AS(eng.load_state(cut, prompt.size()), hc::invalid_argument);
    auto padded = blob;
    padded.push_back(0);
    CHECK_THROWS_AS(eng.load_state(padded, prompt.size()), hc::invalid_argument);
    auto flipped = blob;
    flipped[flipped.size() / 2] ^= 0x40;
    CHECK_THROWS_AS(eng.load_state(flipped, prompt.size()), hc::invalid_argument);
    CHECK_THROWS_AS(eng.load_state(blob, prompt.size() - 1), hc::invalid_argument);
    CHECK_THROWS_AS(eng.load_state(std::span(blob).first(10), prompt.size()), hc::invalid_argument);
    hc::llama_cpp_model other(granite);
    hc::state_policy pol2({.block_size = 16, .state_bytes = 1, .capacity_bytes = 1});
    hc::llama_cpp_engine eng2(other, pol2, {.chunk_tokens = 32, .context_tokens = 512});
    try {
      eng2.load_state(blob, prompt.size());
      FAIL("no exception");
    } catch (const hc::invalid_argument& e) {
      CHECK(std::string(e.what()).find("another model") != std::string::npos);
    }
    // The engine still works after the refusals.
    CHECK(eng.prefill_uncached(prompt) == logits);
  }

  SUBCASE("a resume from a snapshot the engine no longer holds") {
    const auto first = eng.prefill(ns, prompt);
    CHECK(first.admitted > 0);
    auto longer = prompt;
    longer.resize(140, 5);
    const auto m = pol.match(ns, std::span(longer).first(longer.size() - 1));
    REQUIRE(m.resume_tokens > 0);
    pol.unpin(m.resume_node);
    CHECK(eng.forget(m.resume_node) == 1);
    CHECK_THROWS_AS((void)eng.prefill(ns, longer), hc::not_found_error);
    CHECK_FALSE(pol.pinned(m.resume_node));  // the pin was released on the error path
  }

  SUBCASE("options") {
    CHECK_THROWS_AS(hc::llama_cpp_engine(model, pol, {.chunk_tokens = 24}), hc::invalid_argument);
    CHECK_THROWS_AS(hc::llama_cpp_engine(model, pol, {.chunk_tokens = 0}), hc::invalid_argument);
    CHECK_THROWS_AS(hc::llama_cpp_engine(model, pol, {.threads = 0}), hc::invalid_argument);
    CHECK_THROWS_AS((void)eng.prefill(ns, std::vector<hc::token_id>{}), hc::invalid_argument);
    const std::vector<std::size_t> uneven = {40, 100};  // a chunk longer than 32
    CHECK_THROWS_AS((void)eng.prefill_uncached(prompt, uneven), hc::invalid_argument);
  }
}
