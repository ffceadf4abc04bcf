// SPDX-License-Identifier: Apache-2.0
// Example 10: a conversation of three turns through llama.cpp with the tree state policy
// deciding where to snapshot the recurrent state; each turn resumes from the previous one.
//   example_10_llama_cpp model.gguf
#include <cstdio>
#include <exception>
#include <vector>

#include "hybridcache/engines/llama_cpp.hpp"

int main(int argc, char** argv) try {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s model.gguf\n", argv[0]);
    return 2;
  }
  hybridcache::llama_cpp_model model(argv[1]);
  // 16-token blocks, an 8 MiB pool for whole-sequence snapshots (KV + recurrent state).
  hybridcache::state_policy policy(
      {.block_size = 16, .state_bytes = 128 << 10, .capacity_bytes = 8 << 20});
  hybridcache::llama_cpp_engine engine(model, policy, {.chunk_tokens = 64});

  std::vector<hybridcache::token_id> prompt;
  const hybridcache::namespace_key ns{};
  for (int turn = 0; turn < 3; ++turn) {
    for (int i = 0; i < 50; ++i)  // the previous answer and a new user message
      prompt.push_back(static_cast<hybridcache::token_id>((turn * 131 + i * 17) % 1000));
    const auto r = engine.prefill(ns, prompt);
    std::printf("turn %d: %zu prompt tokens, resumed at %zu, evaluated %zu, %zu snapshots kept\n",
                turn, r.prompt_tokens, r.resume_tokens, r.evaluated_tokens, engine.stored_states());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
