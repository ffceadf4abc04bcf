// SPDX-License-Identifier: Apache-2.0
// File readers for `hybridcache simulate`: they parse a whole file (JSON via nlohmann-json, which
// stays out of the core headers) and hand the material to the core builders in
// <hybridcache/sim/builders.hpp>. Every reader validates everything before returning, so a bad
// file yields one `hybridcache::invalid_argument` naming the file and line and no partial trace.
#pragma once

#include <cstddef>
#include <filesystem>
#include <hybridcache/sim/builders.hpp>
#include <hybridcache/sim/trace.hpp>
#include <string>
#include <vector>

namespace hybridcache_cli::sim_io {

namespace fs = std::filesystem;

/// Text tokenizer choice of the text readers (see <hybridcache/sim/tokenize.hpp>).
enum class tokenizer_kind { words, bytes };

/// JSONL of token ids, one request per line (blank lines skipped):
///   [1, 2, 3]                                        a request of three tokens
///   {"tokens": [1, 2, 3], "namespace": "t1", "arrival": 0.5}
///   {"segments": [[1, 2], [3]], "query_last": true}  pieces = segments, last one the query
/// Requests keep file order; a missing arrival is the line number (seconds).
/// @throws hybridcache::invalid_argument "PATH:LINE: why" on the first malformed line.
hybridcache::sim::trace read_token_jsonl(const fs::path& path);

/// Plain text, one request per non-empty line, tokenised by words or bytes.
hybridcache::sim::trace read_text_lines(const fs::path& path, tokenizer_kind tok);

/// L-Eval JSONL rows {input, instructions: [...]} as documents with questions.
std::vector<hybridcache::sim::text_document> read_leval(const fs::path& path);

/// Every *.md file under `dir` (sorted by path, for determinism), as text.
std::vector<std::string> read_system_prompts(const fs::path& dir);

/// The first human turn of every ShareGPT conversation [{conversations: [{from, value}]}].
std::vector<std::string> read_sharegpt_queries(const fs::path& path);

/// Mooncake-style JSONL {timestamp (ms), input_length, hash_ids: [...]}.
std::vector<hybridcache::sim::block_hash_record> read_block_hash_jsonl(const fs::path& path);

/// CacheBlend's musique_s.json [{ctxs: [{title, text}], question}] as RAG prompts.
std::vector<hybridcache::sim::text_rag_prompt> read_musique(const fs::path& path);

/// LongBench multi_news JSONL {context: "Passage 1:\n…Passage 2:\n…"} split into passages; the
/// question is LongBench's summarisation instruction.
std::vector<hybridcache::sim::text_rag_prompt> read_multi_news(const fs::path& path);

/// Reads a whole file. @throws hybridcache::invalid_argument when it cannot be read.
std::string read_file(const fs::path& path);

}  // namespace hybridcache_cli::sim_io
