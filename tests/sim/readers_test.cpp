// SPDX-License-Identifier: Apache-2.0
// The CLI's file readers (tools/hybridcache/sim_readers.cpp): valid input, and malformed input
// rejected with the file and line, before any trace is returned.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "hybridcache/sim_readers.hpp"

namespace fs = std::filesystem;
namespace io = hybridcache_cli::sim_io;

namespace {
fs::path write_tmp(const std::string& name, const std::string& content) {
  const fs::path p = fs::temp_directory_path() / ("hc_sim_readers_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p, std::ios::binary) << content;
  return p;
}
}  // namespace

TEST_CASE("token JSONL: arrays and objects") {
  const auto p = write_tmp("ok.jsonl",
                           "[1, 2, 3]\n"
                           "\n"
                           "{\"tokens\": [1, 2], \"namespace\": \"t1\", \"arrival\": 0.5}\n"
                           "{\"segments\": [[7], [8, 9]], \"query_last\": true}\n");
  const auto t = io::read_token_jsonl(p);
  REQUIRE(t.size() == 3);
  CHECK(t.length(t.requests()[0]) == 3);
  CHECK(t.requests()[1].ns == std::optional<std::string>("t1"));
  CHECK(t.requests()[1].arrival == 0.5);
  CHECK(t.requests()[2].pieces.size() == 2);
  CHECK(t.requests()[2].ends_with_query);
  fs::remove(p);
}

TEST_CASE("token JSONL: malformed lines name the file and line") {
  const std::pair<const char*, const char*> cases[] = {
      {"[1, 2]\n[3, oops]\n", ":2"},
      {"[1]\n[2]\n[-4]\n", ":3"},
      {"{\"tokens\": [1], \"segments\": [[2]]}\n", ":1"},
      {"[1]\n{\"tokens\": [1], \"colour\": 3}\n", ":2"},
      {"[1]\n[4294967296]\n", ":2"},
      {"\"text\"\n", ":1"},
      {"{\"tokens\": [1], \"arrival\": \"soon\"}\n", ":1"},
      {"\n\n", "no requests"},
  };
  for (const auto& [content, where] : cases) {
    const auto p = write_tmp("bad.jsonl", content);
    CHECK_THROWS_WITH_AS(io::read_token_jsonl(p), doctest::Contains(where), hybridcache::invalid_argument);
    fs::remove(p);
  }
  CHECK_THROWS_AS(io::read_token_jsonl("/nonexistent/file.jsonl"), hybridcache::invalid_argument);
}

TEST_CASE("text, L-Eval, block-hash and multi_news readers") {
  auto p = write_tmp("t.txt", "hello world\n\nhello there\n");
  auto t = io::read_text_lines(p, io::tokenizer_kind::words);
  CHECK(t.size() == 2);
  CHECK(t.piece(t.requests()[1].pieces[0])[0] == t.piece(t.requests()[0].pieces[0])[0]);
  t = io::read_text_lines(p, io::tokenizer_kind::bytes);
  CHECK(t.length(t.requests()[0]) == 11);
  fs::remove(p);

  p = write_tmp("l.jsonl", "{\"input\": \"doc\", \"instructions\": [\"q1\", \"q2\"]}\n{\"input\": 3}\n");
  CHECK_THROWS_WITH_AS(io::read_leval(p), doctest::Contains(":2"), hybridcache::invalid_argument);
  fs::remove(p);

  p = write_tmp("m.jsonl", "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [0, 1]}\n{\"timestamp\": 1, \"hash_ids\": []}\n");
  CHECK_THROWS_WITH_AS(io::read_block_hash_jsonl(p), doctest::Contains(":2"), hybridcache::invalid_argument);
  fs::remove(p);

  p = write_tmp("n.jsonl", "{\"context\": \"Passage 1:\\nfirst text\\nPassage 2:\\nsecond\\n\"}\n");
  const auto rows = io::read_multi_news(p);
  REQUIRE(rows.size() == 1);
  REQUIRE(rows[0].passages.size() == 2);
  CHECK(rows[0].passages[0] == "first text\n");
  fs::remove(p);
}

#ifdef HYBRIDCACHE_TEST_DATA_DIR
TEST_CASE("real data readers (skipped when ../shared/data is absent)") {
  const fs::path data = std::getenv("HYBRIDCACHE_DATA_DIR") ? fs::path(std::getenv("HYBRIDCACHE_DATA_DIR"))
                                                            : fs::path(HYBRIDCACHE_TEST_DATA_DIR);
  if (!fs::exists(data / "leval" / "quality.jsonl")) {
    MESSAGE("no data at " << data << ": skipped");
    return;
  }
  const auto docs = io::read_leval(data / "leval" / "quality.jsonl");
  CHECK(docs.size() == 15);
  std::size_t q = 0;
  for (const auto& d : docs) q += d.questions.size();
  CHECK(q == 202);
  CHECK(io::read_musique(data / "segments" / "musique_s.json").size() == 150);
  CHECK(io::read_block_hash_jsonl(data / "mooncake" / "conversation_trace.jsonl").size() == 12031);
  CHECK(io::read_sharegpt_queries(data / "sharegpt" / "ShareGPT_V3_filtered_500.json").size() == 500);
  CHECK(io::read_system_prompts(data / "system_prompts").size() > 100);
}
#endif
