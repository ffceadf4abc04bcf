// SPDX-License-Identifier: Apache-2.0
// The CLI's file readers (tools/hybridcache/sim_readers.cpp): valid input, and malformed input
// rejected with the file and line, before any trace is returned.
#include <doctest/doctest.h>

#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "hybridcache/sim_readers.hpp"

namespace fs = std::filesystem;
namespace io = hybridcache_cli::sim_io;

namespace {
fs::path write_tmp(const std::string& name, const std::string& content) {
  const fs::path p =
      fs::temp_directory_path() / ("hc_sim_readers_" + std::to_string(::getpid()) + "_" + name);
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
    CHECK_THROWS_WITH_AS(io::read_token_jsonl(p), doctest::Contains(where),
                         hybridcache::invalid_argument);
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

  p = write_tmp("l.jsonl",
                "{\"input\": \"doc\", \"instructions\": [\"q1\", \"q2\"]}\n{\"input\": 3}\n");
  CHECK_THROWS_WITH_AS(io::read_leval(p), doctest::Contains(":2"), hybridcache::invalid_argument);
  fs::remove(p);

  p = write_tmp("m.jsonl",
                "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [0, 1]}\n{\"timestamp\": "
                "1, \"hash_ids\": []}\n");
  CHECK_THROWS_WITH_AS(io::read_block_hash_jsonl(p), doctest::Contains(":2"),
                       hybridcache::invalid_argument);
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
  const fs::path data = std::getenv("HYBRIDCACHE_DATA_DIR")
                            ? fs::path(std::getenv("HYBRIDCACHE_DATA_DIR"))
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
  CHECK(io::read_sharegpt_queries(data / "sharegpt" / "ShareGPT_V3_filtered_500.json").size() ==
        500);
  CHECK(io::read_system_prompts(data / "system_prompts").size() > 100);
}
#endif

// ---- hostile input (issues #11 item 5, #13 item 5) -------------------------------------------

namespace {
// Every reader error: typed, names `where`:`line`, bounded, and printable ASCII only.
void check_error_bounded(const std::string& what, const std::string& where) {
  INFO(what.substr(0, 400));
  CHECK(what.find(where) != std::string::npos);
  CHECK(what.size() <= 600);  // the fixed text + a path + at most max_echo bytes of escaped input
  CHECK(std::all_of(what.begin(), what.end(), [](char c) { return c >= 0x20 && c < 0x7f; }));
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const hybridcache::invalid_argument& e) {
    return e.what();
  }
  FAIL("no hybridcache::invalid_argument thrown");
  return {};
}
}  // namespace

TEST_CASE("escape: printable, bounded, names the full size") {
  CHECK(io::escape("abc") == "abc");
  CHECK(io::escape(std::string_view("a\0b\n\\\xff", 6)) == "a\\x00b\\n\\\\\\xff");
  const std::string big(10000, '\x01');
  const std::string e = io::escape(big);
  CHECK(e.size() <= io::max_echo + 32);
  CHECK(e.find("(10000 bytes)") != std::string::npos);
  CHECK(io::escape(std::string(io::max_echo, 'x')) == std::string(io::max_echo, 'x'));
}

TEST_CASE("deeply nested JSON is rejected by the parser, not by the stack") {
  const std::string deep(1'000'000, '[');
  const std::string what =
      error_of([&] { (void)io::parse_token_jsonl("[1]\n" + deep + "\n", "deep.jsonl", "deep"); });
  check_error_bounded(what, "deep.jsonl:2");
  CHECK(what.find("nested deeper than 64") != std::string::npos);
  // Every whole-file JSON reader too (the depth limit sits in the shared parse).
  check_error_bounded(error_of([&] { (void)io::parse_musique(deep, "m.json"); }), "m.json");
  check_error_bounded(error_of([&] { (void)io::parse_sharegpt_queries(deep, "s.json"); }),
                      "s.json");
  // 64 levels are the limit: 63 nested arrays inside a valid "segments" still parse as far as
  // depth.
  std::string ok63 = std::string(63, '[') + std::string(63, ']');
  CHECK_THROWS_WITH(io::parse_token_jsonl(ok63, "x", "x"), doctest::Contains("token ids"));
}

TEST_CASE("numbers: 1e400 maps to file:line, ids are unsigned 64-bit") {
  check_error_bounded(
      error_of([] { (void)io::parse_token_jsonl("[1]\n[1e400]\n", "big.jsonl", "b"); }),
      "big.jsonl:2");
  check_error_bounded(error_of([] {
                        (void)io::parse_block_hash_jsonl(
                            "{\"timestamp\": 1e400, \"hash_ids\": [1]}\n", "t.jsonl");
                      }),
                      "t.jsonl:1");
  // Hash ids >= 2^63 (Mooncake's) are valid; 2^64 and negative ids are not.
  const auto recs = io::parse_block_hash_jsonl(
      "{\"timestamp\": 0, \"hash_ids\": [18446744073709551615, 9223372036854775808, 0]}\n",
      "ok.jsonl");
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].hash_ids[0] == 18446744073709551615ULL);
  CHECK(recs[0].hash_ids[1] == 9223372036854775808ULL);
  for (const char* bad : {"18446744073709551616", "-1", "1.5", "\"7\""}) {
    const std::string row = std::string("{\"timestamp\": 0, \"hash_ids\": [") + bad + "]}\n";
    check_error_bounded(error_of([&] { (void)io::parse_block_hash_jsonl(row, "h.jsonl"); }),
                        "h.jsonl:1");
  }
  // Token ids: [0, 2^32).
  CHECK(io::parse_token_jsonl("[4294967295]\n", "x", "x").piece(0)[0] == 4294967295u);
  check_error_bounded(
      error_of([] { (void)io::parse_token_jsonl("[4294967296]\n", "t.jsonl", "t"); }), "t.jsonl:1");
}

TEST_CASE("block-hash field errors name file:line (input_length, timestamps)") {
  // 600 tokens need 2 blocks of 512; 1024 fit exactly 2; 1025 need 3.
  CHECK(io::parse_block_hash_jsonl(
            "{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [1, 2]}\n", "x")
            .size() == 1);
  CHECK(io::parse_block_hash_jsonl(
            "{\"timestamp\": 0, \"input_length\": 1024, \"hash_ids\": [1, 2]}\n", "x")
            .size() == 1);
  const char* bad[] = {
      "{\"timestamp\": 0, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": 1025, "
      "\"hash_ids\": [1, 2]}\n",
      "{\"timestamp\": 0, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": 512, "
      "\"hash_ids\": [1, 2]}\n",
      "{\"timestamp\": 0, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": -3, "
      "\"hash_ids\": [1]}\n",
      "{\"timestamp\": 0, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": \"many\", "
      "\"hash_ids\": [1]}\n",
      "{\"timestamp\": 5, \"hash_ids\": [1]}\n{\"timestamp\": 4, \"hash_ids\": [1]}\n",
      "{\"timestamp\": 0, \"hash_ids\": [1]}\n{\"timestamp\": 1, \"input_length\": "
      "18446744073709551615, \"hash_ids\": [1]}\n",
  };
  for (const char* text : bad)
    check_error_bounded(error_of([&] { (void)io::parse_block_hash_jsonl(text, "mc.jsonl"); }),
                        "mc.jsonl:2");
}

TEST_CASE("error messages echo a bounded, escaped excerpt and never the parsed value") {
  // A truncated 100 KB document: the message stays short.
  std::string doc = "{\"input\": \"" + std::string(100'000, 'w') + "\n";
  check_error_bounded(error_of([&] { (void)io::parse_leval(doc, "doc.jsonl"); }), "doc.jsonl:1");
  // Raw binary in the input never reaches the message.
  std::string bin = "[1, 2, \xff\xfe\x01\x02\x1b[31m]\n";
  check_error_bounded(error_of([&] { (void)io::parse_token_jsonl(bin, "bin.jsonl", "b"); }),
                      "bin.jsonl:1");
  // A huge nested value in the wrong place is described by type, not re-serialised.
  std::string nested = "{\"tokens\": [[\"" + std::string(50'000, '7') + "\"]]}\n";
  const std::string what = error_of([&] { (void)io::parse_token_jsonl(nested, "n.jsonl", "n"); });
  check_error_bounded(what, "n.jsonl:1");
  CHECK(what.find("a JSON array") != std::string::npos);
  // A binary file name is escaped too.
  check_error_bounded(
      error_of([] { (void)io::parse_token_jsonl("oops\n", "f\x01\xff.jsonl", "f"); }),
      "f\\x01\\xff.jsonl:1");
}

TEST_CASE("embedded NUL: an error in JSON readers, kept as a byte by the text reader") {
  const std::string text("[1, 2]\0[3]\n", 11);
  const std::string what = error_of([&] { (void)io::parse_token_jsonl(text, "z.jsonl", "z"); });
  check_error_bounded(what, "z.jsonl:1");
  CHECK(what.find("NUL") != std::string::npos);
  check_error_bounded(
      error_of(
          [&] { (void)io::parse_leval(std::string("{\"input\": \"a\"}\0x\n", 17), "l.jsonl"); }),
      "l.jsonl:1");
  check_error_bounded(
      error_of([&] { (void)io::parse_musique(std::string("[]\0[]", 5), "m.json"); }), "m.json:1");
  // Text: every byte of "ab\0cd" is a token (5), nothing after the NUL is dropped.
  const auto t =
      io::parse_text_lines(std::string("ab\0cd\n", 6), "t.txt", "t", io::tokenizer_kind::bytes);
  REQUIRE(t.size() == 1);
  CHECK(t.length(t.requests()[0]) == 5);
  CHECK(t.piece(0)[4] == static_cast<unsigned char>('d'));
}

TEST_CASE(
    "type errors inside whole-file readers map to the file, never escape as nlohmann exceptions") {
  const char* musique[] = {
      "[{\"ctxs\": [{\"title\": 3, \"text\": \"x\"}], \"question\": \"q\"}]",
      "[{\"ctxs\": [7]}]",
      "[{\"ctxs\": [], \"question\": []}]",
      "[5]",
      "{\"ctxs\": []}",
      "[{\"ctxs\": [{\"text\": \"a\"}]}, {\"ctxs\": [{\"text\": \"b\"}],",
  };
  for (const char* text : musique)
    check_error_bounded(error_of([&] { (void)io::parse_musique(text, "mu.json"); }), "mu.json");
  const char* sharegpt[] = {
      "[{\"conversations\": [{\"from\": 1, \"value\": \"x\"}]}]",  // no human turn
      "[{\"conversations\": [3]}]",
      "[{\"conversations\": 3}]",
      "[1]",
  };
  for (const char* text : sharegpt)
    check_error_bounded(error_of([&] { (void)io::parse_sharegpt_queries(text, "sg.json"); }),
                        "sg.json");
  // A malformed whole file names the line of the error.
  check_error_bounded(
      error_of([] { (void)io::parse_musique("[\n{\"ctxs\": []},\n{oops}\n]", "ml.json"); }),
      "ml.json:3");
  // Valid rows still parse.
  const auto p = io::parse_musique(
      "[{\"ctxs\": [{\"title\": \"T\", \"text\": \"body\"}], \"question\": \"q?\"}]", "ok.json");
  REQUIRE(p.size() == 1);
  CHECK(p[0].passages[0] == "T\nbody");
  CHECK(p[0].question == "q?");
  const auto q = io::parse_sharegpt_queries(
      "[{\"conversations\": [{\"from\": \"gpt\", \"value\": \"a\"}, {\"from\": \"human\", "
      "\"value\": \"hi\"}]}]",
      "ok.json");
  REQUIRE(q.size() == 1);
  CHECK(q[0] == "hi");
}

TEST_CASE("field-level errors of every JSONL reader name file:line") {
  const std::pair<const char*, const char*> token_rows[] = {
      {"[1]\n{\"tokens\": [1], \"arrival\": 1e301}\n", "t.jsonl:2"},
      {"[1]\n{\"tokens\": [1], \"namespace\": 5}\n", "t.jsonl:2"},
      {"[1]\n{\"segments\": []}\n", "t.jsonl:2"},
      {"[1]\n{\"tokens\": [1], \"query_last\": 1}\n", "t.jsonl:2"},
      {"[1]\n[1]\n[true]\n", "t.jsonl:3"},
  };
  for (const auto& [text, where] : token_rows) {
    check_error_bounded(error_of([&] { (void)io::parse_token_jsonl(text, "t.jsonl", "t"); }),
                        where);
  }
  check_error_bounded(error_of([] {
                        (void)io::parse_leval("{\"input\": \"d\", \"instructions\": [\"q\", 3]}\n",
                                              "l.jsonl");
                      }),
                      "l.jsonl:1");
  check_error_bounded(error_of([] {
                        (void)io::parse_multi_news(
                            "{\"context\": \"Passage 1:\\nx\"}\n{\"context\": 2}\n", "n.jsonl");
                      }),
                      "n.jsonl:2");
}

TEST_CASE("a directory given as a file says so") {
  const fs::path dir =
      fs::temp_directory_path() / ("hc_sim_readers_dir_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  CHECK_THROWS_WITH_AS(io::read_token_jsonl(dir), doctest::Contains("is a directory"),
                       hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(io::read_leval(dir), doctest::Contains("is a directory"),
                       hybridcache::invalid_argument);
  CHECK_THROWS_WITH_AS(io::read_system_prompts(dir / "missing"),
                       doctest::Contains("not a directory"), hybridcache::invalid_argument);
  fs::remove_all(dir);
}
