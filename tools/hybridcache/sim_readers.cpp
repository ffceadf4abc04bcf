// SPDX-License-Identifier: Apache-2.0
#include "hybridcache/sim_readers.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <hybridcache/error.hpp>
#include <hybridcache/sim/tokenize.hpp>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string_view>
#include <utility>

namespace hybridcache_cli::sim_io {

namespace {

using json = nlohmann::json;
using hybridcache::token_id;

/// The argument name of every reader error; errors carrying it already name file and line.
constexpr std::string_view argument_name = "trace file";

[[noreturn]] void fail(std::string_view where, std::size_t line, std::string_view why) {
  std::string at = escape(where);
  if (line > 0) at += ":" + std::to_string(line);
  throw hybridcache::invalid_argument(argument_name, at, why);
}

// Thrown by the parser callback when the nesting exceeds max_depth (caught in parse_json).
struct too_deep {};

// What a JSON value is, for messages: numbers as themselves (short), everything else by type
// (never re-serialised: a value may be a megabyte string or a deep array).
std::string describe(const json& v) {
  if (v.is_number_unsigned()) return std::to_string(v.get<std::uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number_float()) {
    std::ostringstream os;
    os.precision(17);
    os << v.get<double>();
    return os.str();
  }
  return std::string("a JSON ") + v.type_name();
}

// (line, column) of 1-based byte offset `byte` in `text`, both 1-based.
std::pair<std::size_t, std::size_t> line_column(std::string_view text, std::size_t byte) {
  const std::size_t end = std::min(byte == 0 ? 0 : byte - 1, text.size());
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < end; ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

// nlohmann's reason without its "[json.exception...] " tag, position, or "last read: '...'"
// echo of the input (the caller quotes a bounded, escaped excerpt instead).
std::string reason_of(const json::exception& e) {
  std::string_view w = e.what();
  if (auto p = w.find("] "); p != std::string_view::npos) w.remove_prefix(p + 2);
  if (auto p = w.find(": "); p != std::string_view::npos && w.substr(0, 11) == "parse error")
    w.remove_prefix(p + 2);
  if (auto p = w.find("; last read"); p != std::string_view::npos) w = w.substr(0, p);
  return escape(w, 120);
}

// `text` around 1-based byte offset `byte`, escaped and bounded.
std::string near(std::string_view text, std::size_t byte) {
  const std::size_t at = std::min(byte == 0 ? 0 : byte - 1, text.size());
  const std::size_t from = at > 20 ? at - 20 : 0;
  return escape(text.substr(from, 40), 4 * 40);  // 40 bytes, each at most 4 once escaped
}

// Parses one JSON value. `line` > 0: `text` is that line of a JSONL file (positions are columns
// of it); `line` == 0: `text` is a whole JSON file (positions become lines).
json parse_json(std::string_view where, std::size_t line, std::string_view text) {
  if (auto z = text.find('\0'); z != std::string_view::npos) {
    const auto [l, c] = line_column(text, z + 1);
    fail(where, line > 0 ? line : l,
         "embedded NUL byte at column " + std::to_string(line > 0 ? z + 1 : c) +
             " (nothing after it would be read; is this a text file?)");
  }
  const json::parser_callback_t guard = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_depth) {
      throw too_deep{};
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), guard);
  } catch (const too_deep&) {
    fail(where, line, "JSON nested deeper than " + std::to_string(max_depth) + " levels");
  } catch (const json::parse_error& e) {
    const auto [l, c] = line_column(text, e.byte);
    fail(where, line > 0 ? line : l,
         "malformed JSON at column " +
             std::to_string(line > 0 ? std::min(e.byte, text.size() + 1) : c) + ": " +
             reason_of(e) + "; near '" + near(text, e.byte) + "'");
  } catch (const json::exception& e) {  // out_of_range: a number that overflows a double (1e400)
    fail(where, line, "invalid JSON: " + reason_of(e));
  }
}

// Runs `f` and maps what escapes it to an error at `where`:`line`: nlohmann type errors and
// library errors that do not already name the file (e.g. a trace's own validation).
template <class F>
void at_line(std::string_view where, std::size_t line, F&& f) {
  try {
    f();
  } catch (const hybridcache::invalid_argument& e) {
    if (e.argument() == argument_name) throw;
    fail(where, line, escape(e.what(), max_echo));
  } catch (const json::exception& e) {
    fail(where, line, "unexpected JSON: " + reason_of(e));
  }
}

// Calls f(line_number, text) for every non-blank line, errors mapped to the line.
template <class F>
void for_each_line(std::string_view text, std::string_view where, F&& f) {
  std::size_t line = 0, pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++line;
    std::string_view s = text.substr(pos, end - pos);
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (s.find_first_not_of(" \t") != std::string_view::npos)
      at_line(where, line, [&] { f(line, s); });
    pos = end + 1;
  }
}

std::vector<token_id> token_array(std::string_view where, std::size_t line, const json& a,
                                  const std::string& what) {
  if (!a.is_array()) fail(where, line, what + " must be an array of token ids, got " + describe(a));
  std::vector<token_id> out;
  out.reserve(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const json& v = a[i];
    if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<token_id>::max()) {
      fail(where, line,
           what + "[" + std::to_string(i) + "] = " + describe(v) +
               ": token ids must be integers in [0, 2^32)");
    }
    out.push_back(static_cast<token_id>(v.get<std::uint64_t>()));
  }
  return out;
}

const json* find(const json& row, const char* key) {
  auto it = row.find(key);
  return it == row.end() ? nullptr : &*it;
}

std::string string_field(std::string_view where, std::size_t line, const json& row,
                         const char* key) {
  const json* v = find(row, key);
  if (v == nullptr) fail(where, line, std::string("missing string field \"") + key + "\"");
  if (!v->is_string())
    fail(where, line, std::string("\"") + key + "\" must be a string, got " + describe(*v));
  return v->get<std::string>();
}

// A string field that may be absent (then `fallback`).
std::string optional_string(std::string_view where, std::size_t line, const json& row,
                            const char* key, std::string fallback = {}) {
  const json* v = find(row, key);
  if (v == nullptr || v->is_null()) return fallback;
  if (!v->is_string())
    fail(where, line, std::string("\"") + key + "\" must be a string, got " + describe(*v));
  return v->get<std::string>();
}

std::string entry(std::size_t i) { return "entry " + std::to_string(i) + ": "; }

}  // namespace

std::string escape(std::string_view s, std::size_t limit) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  std::size_t i = 0;
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    char buf[4] = {'\\', 0, 0, 0};
    std::size_t n = 2;
    switch (c) {
      case '\n':
        buf[1] = 'n';
        break;
      case '\r':
        buf[1] = 'r';
        break;
      case '\t':
        buf[1] = 't';
        break;
      case '\\':
        buf[1] = '\\';
        break;
      default:
        if (c >= 0x20 && c < 0x7f) {
          buf[0] = static_cast<char>(c);
          n = 1;
        } else {
          buf[1] = 'x';
          buf[2] = hex[c >> 4];
          buf[3] = hex[c & 15];
          n = 4;
        }
    }
    if (out.size() + n > limit) break;
    out.append(buf, n);
  }
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string read_file(const fs::path& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    throw hybridcache::invalid_argument("path", escape(path.string()),
                                        "is a directory (expected a file)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw hybridcache::invalid_argument("path", escape(path.string()), "cannot open the file");
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw hybridcache::invalid_argument("path", escape(path.string()), "read error");
  return ss.str();
}

hybridcache::trace parse_token_jsonl(std::string_view text, std::string_view where,
                                     std::string name) {
  hybridcache::trace t(std::move(name));
  std::vector<hybridcache::request> reqs;
  for_each_line(text, where, [&](std::size_t line, std::string_view s) {
    const json row = parse_json(where, line, s);
    hybridcache::request q;
    q.arrival = static_cast<double>(line);
    if (row.is_array()) {
      q.pieces.push_back(t.add_piece(token_array(where, line, row, "tokens")));
    } else if (row.is_object()) {
      for (auto it = row.begin(); it != row.end(); ++it) {
        const std::string& k = it.key();
        if (k != "tokens" && k != "segments" && k != "namespace" && k != "arrival" &&
            k != "query_last") {
          fail(where, line, "unknown field \"" + escape(k, 64) + "\"");
        }
      }
      const json* tokens = find(row, "tokens");
      const json* segs = find(row, "segments");
      if ((tokens != nullptr) == (segs != nullptr))
        fail(where, line, "give exactly one of \"tokens\" and \"segments\"");
      if (tokens != nullptr) {
        q.pieces.push_back(t.add_piece(token_array(where, line, *tokens, "tokens")));
      } else {
        if (!segs->is_array() || segs->empty())
          fail(where, line, "\"segments\" must be a non-empty array of arrays");
        for (std::size_t i = 0; i < segs->size(); ++i) {
          q.pieces.push_back(t.add_piece(
              token_array(where, line, (*segs)[i], "segments[" + std::to_string(i) + "]")));
        }
      }
      if (const json* ns = find(row, "namespace")) {
        if (!ns->is_string())
          fail(where, line, "\"namespace\" must be a string, got " + describe(*ns));
        q.ns = ns->get<std::string>();
      }
      if (const json* ar = find(row, "arrival")) {
        // The trace accepts |arrival| <= 1e300 (see hybridcache::trace::add_request).
        if (!ar->is_number() || !(std::fabs(ar->get<double>()) <= 1e300)) {
          fail(where, line,
               "\"arrival\" = " + describe(*ar) + ": must be a finite number (|arrival| <= 1e300)");
        }
        q.arrival = ar->get<double>();
      }
      if (const json* ql = find(row, "query_last")) {
        if (!ql->is_boolean())
          fail(where, line, "\"query_last\" must be true or false, got " + describe(*ql));
        q.ends_with_query = ql->get<bool>();
      }
    } else {
      fail(where, line, "expected an array of token ids or an object, got " + describe(row));
    }
    reqs.push_back(std::move(q));
  });
  if (reqs.empty()) fail(where, 0, "no requests in the file");
  for (auto& q : reqs) t.add_request(std::move(q));
  return t;
}

hybridcache::trace read_token_jsonl(const fs::path& path) {
  return parse_token_jsonl(read_file(path), path.string(), path.filename().string());
}

hybridcache::trace parse_text_lines(std::string_view text, std::string_view where, std::string name,
                                    tokenizer_kind tok) {
  hybridcache::trace t(std::move(name));
  hybridcache::word_tokenizer words;
  const hybridcache::byte_tokenizer bytes;
  std::vector<token_id> buf;
  std::size_t n = 0;
  for_each_line(text, where, [&](std::size_t line, std::string_view s) {
    buf.clear();
    if (tok == tokenizer_kind::words)
      words.encode(s, buf);
    else
      bytes.encode(s, buf);
    hybridcache::request q;
    q.pieces.push_back(t.add_piece(buf));
    q.arrival = static_cast<double>(line);
    t.add_request(std::move(q));
    ++n;
  });
  if (n == 0) fail(where, 0, "no requests in the file");
  return t;
}

hybridcache::trace read_text_lines(const fs::path& path, tokenizer_kind tok) {
  return parse_text_lines(read_file(path), path.string(), path.filename().string(), tok);
}

std::vector<hybridcache::text_document> parse_leval(std::string_view text, std::string_view where) {
  std::vector<hybridcache::text_document> docs;
  for_each_line(text, where, [&](std::size_t line, std::string_view s) {
    const json row = parse_json(where, line, s);
    if (!row.is_object())
      fail(where, line, "expected an object {input, instructions}, got " + describe(row));
    hybridcache::text_document d;
    d.text = string_field(where, line, row, "input");
    const json* qs = find(row, "instructions");
    if (qs == nullptr || !qs->is_array()) fail(where, line, "missing array field \"instructions\"");
    for (std::size_t i = 0; i < qs->size(); ++i) {
      const json& q = (*qs)[i];
      if (!q.is_string())
        fail(where, line,
             "\"instructions\"[" + std::to_string(i) + "] must be a string, got " + describe(q));
      d.questions.push_back(q.get<std::string>());
    }
    docs.push_back(std::move(d));
  });
  if (docs.empty()) fail(where, 0, "no documents in the file");
  return docs;
}

std::vector<hybridcache::text_document> read_leval(const fs::path& path) {
  return parse_leval(read_file(path), path.string());
}

std::vector<std::string> read_system_prompts(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw hybridcache::invalid_argument("path", escape(dir.string()),
                                        "not a directory (expected a folder of *.md prompts)");
  }
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().extension() == ".md" &&
        e.path().filename() != "README.md") {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(read_file(f));
  if (out.empty())
    throw hybridcache::invalid_argument("path", escape(dir.string()),
                                        "no *.md system prompts found");
  return out;
}

std::vector<std::string> parse_sharegpt_queries(std::string_view text, std::string_view where) {
  const json doc = parse_json(where, 0, text);
  if (!doc.is_array()) fail(where, 0, "expected an array of conversations, got " + describe(doc));
  std::vector<std::string> out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    at_line(where, 0, [&] {
      const json& c = doc[i];
      const json* turns = c.is_object() ? find(c, "conversations") : nullptr;
      if (turns == nullptr || !turns->is_array())
        fail(where, 0, entry(i) + "no \"conversations\" array");
      for (const auto& turn : *turns) {
        if (!turn.is_object())
          fail(where, 0, entry(i) + "a turn must be an object, got " + describe(turn));
        const json* from = find(turn, "from");
        const json* value = find(turn, "value");
        if (from != nullptr && from->is_string() && from->get<std::string>() == "human" &&
            value != nullptr && value->is_string()) {
          out.push_back(value->get<std::string>());
          break;
        }
      }
    });
  }
  if (out.empty()) fail(where, 0, "no human turns found");
  return out;
}

std::vector<std::string> read_sharegpt_queries(const fs::path& path) {
  return parse_sharegpt_queries(read_file(path), path.string());
}

std::vector<hybridcache::block_hash_record> parse_block_hash_jsonl(std::string_view text,
                                                                   std::string_view where,
                                                                   std::size_t block_size) {
  if (block_size == 0) hybridcache::detail::throw_invalid("block_size", block_size, "must be > 0");
  std::vector<hybridcache::block_hash_record> out;
  double last = -std::numeric_limits<double>::infinity();
  for_each_line(text, where, [&](std::size_t line, std::string_view s) {
    const json row = parse_json(where, line, s);
    if (!row.is_object())
      fail(where, line,
           "expected an object {timestamp, input_length, hash_ids}, got " + describe(row));
    hybridcache::block_hash_record r;
    const json* ts = find(row, "timestamp");
    if (ts == nullptr || !ts->is_number() || !std::isfinite(ts->get<double>())) {
      fail(where, line, "missing numeric \"timestamp\"");
    }
    r.timestamp_ms = ts->get<double>();
    if (r.timestamp_ms < last) {
      fail(where, line, "\"timestamp\" = " + describe(*ts) + ": timestamps must not decrease");
    }
    last = r.timestamp_ms;
    const json* ids = find(row, "hash_ids");
    if (ids == nullptr || !ids->is_array() || ids->empty())
      fail(where, line, "missing non-empty \"hash_ids\" array");
    r.hash_ids.reserve(ids->size());
    for (std::size_t i = 0; i < ids->size(); ++i) {
      const json& h = (*ids)[i];
      if (!h.is_number_unsigned()) {
        fail(where, line,
             "\"hash_ids\"[" + std::to_string(i) + "] = " + describe(h) +
                 ": hash ids must be integers in [0, 2^64)");
      }
      r.hash_ids.push_back(h.get<std::uint64_t>());
    }
    if (const json* il = find(row, "input_length")) {
      if (!il->is_number_unsigned()) {
        fail(where, line,
             "\"input_length\" = " + describe(*il) + ": must be a non-negative integer");
      }
      r.input_length = il->get<std::uint64_t>();
    }
    if (r.input_length != 0) {  // 0 = every block full
      // (n−1)·B < input_length ≤ n·B, without forming n·B (it may wrap for absurd n and B).
      const std::size_t n = r.hash_ids.size();
      const std::size_t full = r.input_length / block_size, rest = r.input_length % block_size;
      const std::size_t blocks = full + (rest != 0 ? 1 : 0);
      if (blocks != n) {
        fail(where, line,
             "\"input_length\" = " + std::to_string(r.input_length) + " needs " +
                 std::to_string(blocks) + " blocks of " + std::to_string(block_size) +
                 " tokens, but \"hash_ids\" has " + std::to_string(n));
      }
    }
    out.push_back(std::move(r));
  });
  if (out.empty()) fail(where, 0, "no records in the file");
  return out;
}

std::vector<hybridcache::block_hash_record> read_block_hash_jsonl(const fs::path& path,
                                                                  std::size_t block_size) {
  return parse_block_hash_jsonl(read_file(path), path.string(), block_size);
}

std::vector<hybridcache::text_rag_prompt> parse_musique(std::string_view text,
                                                        std::string_view where) {
  const json doc = parse_json(where, 0, text);
  if (!doc.is_array()) fail(where, 0, "expected an array of questions, got " + describe(doc));
  std::vector<hybridcache::text_rag_prompt> out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    at_line(where, 0, [&] {
      const json& row = doc[i];
      const json* ctxs = row.is_object() ? find(row, "ctxs") : nullptr;
      if (ctxs == nullptr || !ctxs->is_array()) fail(where, 0, entry(i) + "no \"ctxs\" array");
      hybridcache::text_rag_prompt p;
      for (const auto& c : *ctxs) {
        if (!c.is_object())
          fail(where, 0, entry(i) + "a context must be an object, got " + describe(c));
        const std::string title = optional_string(where, 0, c, "title");
        const std::string body = optional_string(where, 0, c, "text");
        p.passages.push_back(title.empty() ? body : title + "\n" + body);
      }
      p.question = optional_string(where, 0, row, "question");
      out.push_back(std::move(p));
    });
  }
  if (out.empty()) fail(where, 0, "no questions in the file");
  return out;
}

std::vector<hybridcache::text_rag_prompt> read_musique(const fs::path& path) {
  return parse_musique(read_file(path), path.string());
}

std::vector<hybridcache::text_rag_prompt> parse_multi_news(std::string_view text,
                                                           std::string_view where) {
  std::vector<hybridcache::text_rag_prompt> out;
  for_each_line(text, where, [&](std::size_t line, std::string_view s) {
    const json row = parse_json(where, line, s);
    if (!row.is_object())
      fail(where, line, "expected an object with \"context\", got " + describe(row));
    const std::string ctx = string_field(where, line, row, "context");
    hybridcache::text_rag_prompt p;
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
    if (p.passages.empty()) fail(where, line, "no \"Passage i:\" sections in \"context\"");
    p.question = "Now, write a one-page summary of all the news.";
    out.push_back(std::move(p));
  });
  if (out.empty()) fail(where, 0, "no rows in the file");
  return out;
}

std::vector<hybridcache::text_rag_prompt> read_multi_news(const fs::path& path) {
  return parse_multi_news(read_file(path), path.string());
}

}  // namespace hybridcache_cli::sim_io
