// SPDX-License-Identifier: Apache-2.0
// File readers for `hybridcache simulate`: they parse a whole file (JSON via nlohmann-json, which
// stays out of the core headers) and hand the material to the core builders in
// <hybridcache/sim/builders.hpp>. Every reader validates everything before returning, so a bad
// file yields one `hybridcache::invalid_argument` naming the file and line and no partial trace.
//
// Hostile input (issue #11/#13): every error message echoes at most `max_echo` bytes of the
// input, escaped (no raw control or non-ASCII bytes), and never re-serialises a parsed value; JSON
// nesting is limited to `max_depth` by the parser itself (a parser callback), so one line of
// deeply nested brackets cannot exhaust the stack; ids are read as unsigned 64-bit integers;
// every nlohmann exception (a malformed line, a number such as 1e400 that overflows a double, a
// field of the wrong type) becomes `hybridcache::invalid_argument` with the file and line; an
// embedded NUL byte is an error (nlohmann stops reading at it, which would silently drop the rest
// of the line).
//
// Each `read_*` reads a file and calls its `parse_*` twin, which takes the text and a `where`
// (the file name used in messages); the fuzz targets in tests/fuzz/ call the `parse_*` functions.
#pragma once

#include <cstddef>
#include <filesystem>
#include <hybridcache/sim/builders.hpp>
#include <hybridcache/sim/trace.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace hybridcache_cli::sim_io {

namespace fs = std::filesystem;

/// Bytes of input (after escaping) an error message may quote.
inline constexpr std::size_t max_echo = 200;
/// Deepest JSON nesting a reader accepts (the formats need at most 4).
inline constexpr int max_depth = 64;
/// Block size of Mooncake-style block-hash traces (tokens per hash id).
inline constexpr std::size_t mooncake_block_size = 512;

/// Text tokenizer choice of the text readers (see <hybridcache/sim/tokenize.hpp>).
enum class tokenizer_kind { words, bytes };

/// `s` made printable for an error message: printable ASCII is kept, `\` and \n \r \t are
/// backslash-escaped, every other byte is written \xHH; at most `limit` bytes of output
/// (escapes counted), then "... (N bytes)" giving the input's full size.
std::string escape(std::string_view s, std::size_t limit = max_echo);

/// JSONL of token ids, one request per line (blank lines skipped):
///   [1, 2, 3]                                        a request of three tokens
///   {"tokens": [1, 2, 3], "namespace": "t1", "arrival": 0.5}
///   {"segments": [[1, 2], [3]], "query_last": true}  pieces = segments, last one the query
/// Requests keep file order; a missing arrival is the line number (seconds). The trace is named
/// after the file name.
/// @throws hybridcache::invalid_argument "PATH:LINE: why" on the first malformed line.
hybridcache::trace read_token_jsonl(const fs::path& path);
hybridcache::trace parse_token_jsonl(std::string_view text, std::string_view where,
                                     std::string name);

/// Plain text, one request per non-empty line, tokenised by words or bytes (every byte of the
/// line counts, NUL included).
hybridcache::trace read_text_lines(const fs::path& path, tokenizer_kind tok);
hybridcache::trace parse_text_lines(std::string_view text, std::string_view where, std::string name,
                                    tokenizer_kind tok);

/// L-Eval JSONL rows {input, instructions: [...]} as documents with questions.
std::vector<hybridcache::text_document> read_leval(const fs::path& path);
std::vector<hybridcache::text_document> parse_leval(std::string_view text, std::string_view where);

/// Every *.md file under `dir` except README.md (sorted by path, for determinism), as text.
std::vector<std::string> read_system_prompts(const fs::path& dir);

/// The first human turn of every ShareGPT conversation [{conversations: [{from, value}]}].
std::vector<std::string> read_sharegpt_queries(const fs::path& path);
std::vector<std::string> parse_sharegpt_queries(std::string_view text, std::string_view where);

/// Mooncake-style JSONL {timestamp (ms), input_length, hash_ids: [...]}: hash ids are unsigned
/// 64-bit integers; timestamps must not decrease; `input_length` (optional, tokens) must fit the
/// blocks: (blocks−1)·block_size < input_length ≤ blocks·block_size.
std::vector<hybridcache::block_hash_record> read_block_hash_jsonl(
    const fs::path& path, std::size_t block_size = mooncake_block_size);
std::vector<hybridcache::block_hash_record> parse_block_hash_jsonl(
    std::string_view text, std::string_view where, std::size_t block_size = mooncake_block_size);

/// CacheBlend's musique_s.json [{ctxs: [{title, text}], question}] as RAG prompts.
std::vector<hybridcache::text_rag_prompt> read_musique(const fs::path& path);
std::vector<hybridcache::text_rag_prompt> parse_musique(std::string_view text,
                                                        std::string_view where);

/// LongBench multi_news JSONL {context: "Passage 1:\n…Passage 2:\n…"} split into passages; the
/// question is LongBench's summarisation instruction.
std::vector<hybridcache::text_rag_prompt> read_multi_news(const fs::path& path);
std::vector<hybridcache::text_rag_prompt> parse_multi_news(std::string_view text,
                                                           std::string_view where);

/// Reads a whole file. @throws hybridcache::invalid_argument when it cannot be read or is a
/// directory.
std::string read_file(const fs::path& path);

}  // namespace hybridcache_cli::sim_io
