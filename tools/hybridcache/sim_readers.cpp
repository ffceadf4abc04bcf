// SPDX-License-Identifier: Apache-2.0
#include "hybridcache/sim_readers.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <hybridcache/error.hpp>
#include <hybridcache/sim/tokenize.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>

namespace hybridcache_cli::sim_io {

namespace {

using json = nlohmann::json;
using hybridcache::sim::token_id;

[[noreturn]] void fail(const fs::path& path, std::size_t line, std::string_view why) {
  std::string where = path.string();
  if (line > 0) where += ":" + std::to_string(line);
  throw hybridcache::invalid_argument("trace file", where, why);
}

// Calls f(line_number, text) for every non-blank line.
template <class F>
void for_each_line(const fs::path& path, F&& f) {
  const std::string text = read_file(path);
  std::size_t line = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    ++line;
    std::string_view s(text.data() + pos, end - pos);
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (s.find_first_not_of(" \t") != std::string_view::npos) f(line, s);
    pos = end + 1;
  }
}

json parse_line(const fs::path& path, std::size_t line, std::string_view s) {
  try {
    return json::parse(s);
  } catch (const json::parse_error& e) {
    fail(path, line, std::string("malformed JSON: ") + e.what());
  }
}

std::vector<token_id> token_array(const fs::path& path, std::size_t line, const json& a, std::string_view what) {
  if (!a.is_array()) fail(path, line, std::string(what) + " must be an array of token ids");
  std::vector<token_id> out;
  out.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const json& v = a[i];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 ||
        v.get<std::uint64_t>() > std::numeric_limits<token_id>::max()) {
      fail(path, line, std::string(what) + "[" + std::to_string(i) + "] = " + v.dump() +
                           ": token ids must be integers in [0, 2^32)");
    }
    out.push_back(static_cast<token_id>(v.get<std::uint64_t>()));
  }
  return out;
}

std::string string_field(const fs::path& path, std::size_t line, const json& row, const char* key) {
  auto it = row.find(key);
  if (it == row.end() || !it->is_string()) fail(path, line, std::string("missing string field \"") + key + "\"");
  return it->get<std::string>();
}

}  // namespace

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw hybridcache::invalid_argument("path", path.string(), "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw hybridcache::invalid_argument("path", path.string(), "read error");
  return ss.str();
}

hybridcache::sim::trace read_token_jsonl(const fs::path& path) {
  hybridcache::sim::trace t(path.filename().string());
  std::vector<hybridcache::sim::request> reqs;
  for_each_line(path, [&](std::size_t line, std::string_view s) {
    const json row = parse_line(path, line, s);
    hybridcache::sim::request q;
    q.arrival = static_cast<double>(line);
    if (row.is_array()) {
      q.pieces.push_back(t.add_piece(token_array(path, line, row, "tokens")));
    } else if (row.is_object()) {
      const bool has_tokens = row.contains("tokens"), has_segments = row.contains("segments");
      if (has_tokens == has_segments) fail(path, line, "give exactly one of \"tokens\" and \"segments\"");
      if (has_tokens) {
        q.pieces.push_back(t.add_piece(token_array(path, line, row["tokens"], "tokens")));
      } else {
        const json& segs = row["segments"];
        if (!segs.is_array() || segs.empty()) fail(path, line, "\"segments\" must be a non-empty array of arrays");
        for (std::size_t i = 0; i < segs.size(); ++i) {
          q.pieces.push_back(t.add_piece(token_array(path, line, segs[i], "segments[" + std::to_string(i) + "]")));
        }
      }
      if (auto it = row.find("namespace"); it != row.end()) {
        if (!it->is_string()) fail(path, line, "\"namespace\" must be a string");
        q.ns = it->get<std::string>();
      }
      if (auto it = row.find("arrival"); it != row.end()) {
        if (!it->is_number() || !std::isfinite(it->get<double>())) fail(path, line, "\"arrival\" must be a finite number");
        q.arrival = it->get<double>();
      }
      if (auto it = row.find("query_last"); it != row.end()) {
        if (!it->is_boolean()) fail(path, line, "\"query_last\" must be true or false");
        q.ends_with_query = it->get<bool>();
      }
      for (auto it = row.begin(); it != row.end(); ++it) {
        const std::string& k = it.key();
        if (k != "tokens" && k != "segments" && k != "namespace" && k != "arrival" && k != "query_last") {
          fail(path, line, "unknown field \"" + k + "\"");
        }
      }
    } else {
      fail(path, line, "expected an array of token ids or an object");
    }
    reqs.push_back(std::move(q));
  });
  if (reqs.empty()) fail(path, 0, "no requests in the file");
  for (auto& q : reqs) t.add_request(std::move(q));
  return t;
}

hybridcache::sim::trace read_text_lines(const fs::path& path, tokenizer_kind tok) {
  hybridcache::sim::trace t(path.filename().string());
  hybridcache::sim::word_tokenizer words;
  const hybridcache::sim::byte_tokenizer bytes;
  std::vector<token_id> buf;
  std::size_t n = 0;
  for_each_line(path, [&](std::size_t line, std::string_view s) {
    buf.clear();
    if (tok == tokenizer_kind::words) words.encode(s, buf);
    else bytes.encode(s, buf);
    hybridcache::sim::request q;
    q.pieces.push_back(t.add_piece(buf));
    q.arrival = static_cast<double>(line);
    t.add_request(std::move(q));
    ++n;
  });
  if (n == 0) fail(path, 0, "no requests in the file");
  return t;
}

std::vector<hybridcache::sim::text_document> read_leval(const fs::path& path) {
  std::vector<hybridcache::sim::text_document> docs;
  for_each_line(path, [&](std::size_t line, std::string_view s) {
    const json row = parse_line(path, line, s);
    if (!row.is_object()) fail(path, line, "expected an object {input, instructions}");
    hybridcache::sim::text_document d;
    d.text = string_field(path, line, row, "input");
    auto it = row.find("instructions");
    if (it == row.end() || !it->is_array()) fail(path, line, "missing array field \"instructions\"");
    for (const auto& q : *it) {
      if (!q.is_string()) fail(path, line, "\"instructions\" must hold strings");
      d.questions.push_back(q.get<std::string>());
    }
    docs.push_back(std::move(d));
  });
  if (docs.empty()) fail(path, 0, "no documents in the file");
  return docs;
}

std::vector<std::string> read_system_prompts(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw hybridcache::invalid_argument("path", dir.string(), "not a directory");
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".md" && e.path().filename() != "README.md") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(read_file(f));
  if (out.empty()) throw hybridcache::invalid_argument("path", dir.string(), "no *.md system prompts found");
  return out;
}

std::vector<std::string> read_sharegpt_queries(const fs::path& path) {
  json doc;
  try {
    doc = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    fail(path, 0, std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_array()) fail(path, 0, "expected an array of conversations");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const json& c = doc[i];
    auto it = c.find("conversations");
    if (it == c.end() || !it->is_array()) fail(path, 0, "entry " + std::to_string(i) + " has no \"conversations\" array");
    for (const auto& turn : *it) {
      if (turn.value("from", "") == "human" && turn.contains("value") && turn["value"].is_string()) {
        out.push_back(turn["value"].get<std::string>());
        break;
      }
    }
  }
  if (out.empty()) fail(path, 0, "no human turns found");
  return out;
}

std::vector<hybridcache::sim::block_hash_record> read_block_hash_jsonl(const fs::path& path) {
  std::vector<hybridcache::sim::block_hash_record> out;
  for_each_line(path, [&](std::size_t line, std::string_view s) {
    const json row = parse_line(path, line, s);
    if (!row.is_object()) fail(path, line, "expected an object {timestamp, input_length, hash_ids}");
    hybridcache::sim::block_hash_record r;
    auto ts = row.find("timestamp");
    if (ts == row.end() || !ts->is_number() || !std::isfinite(ts->get<double>())) fail(path, line, "missing numeric \"timestamp\"");
    r.timestamp_ms = ts->get<double>();
    if (auto il = row.find("input_length"); il != row.end()) {
      if (!il->is_number_integer() || il->get<std::int64_t>() < 0) fail(path, line, "\"input_length\" must be a non-negative integer");
      r.input_length = il->get<std::size_t>();
    }
    auto ids = row.find("hash_ids");
    if (ids == row.end() || !ids->is_array() || ids->empty()) fail(path, line, "missing non-empty \"hash_ids\" array");
    for (const auto& h : *ids) {
      if (!h.is_number_integer() || h.get<std::int64_t>() < 0) fail(path, line, "hash ids must be non-negative integers");
      r.hash_ids.push_back(h.get<std::uint64_t>());
    }
    out.push_back(std::move(r));
  });
  if (out.empty()) fail(path, 0, "no records in the file");
  return out;
}

std::vector<hybridcache::sim::text_rag_prompt> read_musique(const fs::path& path) {
  json doc;
  try {
    doc = json::parse(read_file(path));
  } catch (const json::parse_error& e) {
    fail(path, 0, std::string("malformed JSON: ") + e.what());
  }
  if (!doc.is_array()) fail(path, 0, "expected an array of questions");
  std::vector<hybridcache::sim::text_rag_prompt> out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const json& row = doc[i];
    if (!row.is_object() || !row.contains("ctxs") || !row["ctxs"].is_array()) {
      fail(path, 0, "entry " + std::to_string(i) + " has no \"ctxs\" array");
    }
    hybridcache::sim::text_rag_prompt p;
    for (const auto& c : row["ctxs"]) {
      std::string title = c.value("title", "");
      std::string text = c.value("text", "");
      p.passages.push_back(title.empty() ? text : title + "\n" + text);
    }
    p.question = row.value("question", "");
    out.push_back(std::move(p));
  }
  if (out.empty()) fail(path, 0, "no questions in the file");
  return out;
}

std::vector<hybridcache::sim::text_rag_prompt> read_multi_news(const fs::path& path) {
  std::vector<hybridcache::sim::text_rag_prompt> out;
  for_each_line(path, [&](std::size_t line, std::string_view s) {
    const json row = parse_line(path, line, s);
    if (!row.is_object()) fail(path, line, "expected an object with \"context\"");
    const std::string ctx = string_field(path, line, row, "context");
    hybridcache::sim::text_rag_prompt p;
    // Split on lines "Passage i:".
    std::size_t pos = 0;
    std::string current;
    bool open = false;
    while (pos <= ctx.size()) {
      std::size_t end = ctx.find('\n', pos);
      if (end == std::string::npos) end = ctx.size();
      std::string_view l(ctx.data() + pos, end - pos);
      if (l.rfind("Passage ", 0) == 0 && !l.empty() && l.back() == ':') {
        if (open) p.passages.push_back(current);
        current.clear();
        open = true;
      } else if (open) {
        current.append(l).push_back('\n');
      }
      pos = end + 1;
    }
    if (open) p.passages.push_back(current);
    if (p.passages.empty()) fail(path, line, "no \"Passage i:\" sections in \"context\"");
    p.question = "Now, write a one-page summary of all the news.";
    out.push_back(std::move(p));
  });
  if (out.empty()) fail(path, 0, "no rows in the file");
  return out;
}

}  // namespace hybridcache_cli::sim_io
