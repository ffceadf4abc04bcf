// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for every trace reader of `hybridcache simulate` (tools/hybridcache/
// sim_readers.cpp; built with it and run by scripts/test.d/fuzz.sh). The first input byte picks
// the reader, the rest is the file's text:
//   0 token-id JSONL   1 text lines (words)   2 text lines (bytes)   3 L-Eval JSONL
//   4 ShareGPT JSON    5 Mooncake block-hash JSONL   6 MuSiQue JSON   7 multi_news JSONL
// (the system-prompt reader only lists a directory and reads each *.md as opaque text).
// Whatever a reader accepts is then handed to its core builder (<hybridcache/sim/builders.hpp>)
// with a few requests, as `hybridcache simulate` would.
//
// Properties (the target aborts when one fails): a reader either returns or throws
// `hybridcache::error` — no other exception, no crash, no sanitizer report, no stack overflow —
// and every message is printable ASCII and bounded (the input echoed at most
// sim_io::max_echo bytes, issue #11 item 5).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <hybridcache/error.hpp>
#include <hybridcache/sim/builders.hpp>
#include <string>
#include <string_view>

#include "hybridcache/sim_readers.hpp"

namespace {

namespace io = hybridcache_cli::sim_io;
namespace hc = hybridcache;

[[noreturn]] void die(const char* what, std::string_view msg) {
  std::fprintf(stderr, "readers_fuzz: %s: %.*s\n", what,
               static_cast<int>(msg.size() > 2000 ? 2000 : msg.size()), msg.data());
  std::abort();
}

// The fixed text of the longest message plus a 200-byte echo and a 1-line path: well under 1 KiB.
constexpr std::size_t max_message = 1024;

void check_message(std::string_view msg) {
  if (msg.size() > max_message) die("message too long", msg);
  for (const char c : msg) {
    if (c < 0x20 || c > 0x7e) die("non-printable byte in message", msg);
  }
}

void run(unsigned selector, std::string_view text) {
  constexpr std::string_view where = "fuzz.input";
  const hc::arrival_options few{.requests = 8, .rate = 1.0, .zipf = 1.0, .seed = 1};
  switch (selector % 8) {
    case 0:
      (void)io::parse_token_jsonl(text, where, "fuzz");
      break;
    case 1:
      (void)io::parse_text_lines(text, where, "fuzz", io::tokenizer_kind::words);
      break;
    case 2:
      (void)io::parse_text_lines(text, where, "fuzz", io::tokenizer_kind::bytes);
      break;
    case 3: {
      const auto docs = io::parse_leval(text, where);
      (void)hc::build_document_qa("fuzz", docs, few);
      break;
    }
    case 4: {
      const auto queries = io::parse_sharegpt_queries(text, where);
      const std::string prompts[] = {"a system prompt"};
      (void)hc::build_system_prompts("fuzz", prompts, queries, few);
      break;
    }
    case 5: {
      // A small block size keeps the expansion cheap while exercising the same checks.
      const auto recs = io::parse_block_hash_jsonl(text, where, 4);
      (void)hc::build_block_hash_trace("fuzz", recs, 4);
      break;
    }
    case 6: {
      const auto prompts = io::parse_musique(text, where);
      (void)hc::build_rag("fuzz", "instruction", prompts, few);
      break;
    }
    default: {
      const auto prompts = io::parse_multi_news(text, where);
      (void)hc::build_rag("fuzz", "instruction", prompts, few);
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    run(data[0], text);
  } catch (const hybridcache::error& e) {
    check_message(e.what());
  } catch (const std::exception& e) {
    die("untyped exception", e.what());
  }
  return 0;
}
