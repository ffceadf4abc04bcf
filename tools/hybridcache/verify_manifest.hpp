// SPDX-License-Identifier: Apache-2.0
// The manifest reader of `hybridcache verify` (issue #21 item 7): manifest.json is untrusted
// input, so `parse_manifest` checks everything `verify` later reads from it — every field's type
// and range, and every path it names — and turns any problem into one
// `hybridcache::invalid_argument` naming the file (and the line, for a JSON syntax error).
// `confined` then resolves a checked path against its directory, following symbolic links, and
// refuses one that ends up outside. The fuzz target tests/fuzz/manifest_fuzz.cpp calls
// `parse_manifest`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <hybridcache/checked.hpp>
#include <hybridcache/error.hpp>
#include <nlohmann/json.hpp>

#include "hybridcache/vectors_common.hpp"

namespace hybridcache_cli::vectors {

/// Largest manifest.json `verify` reads (the generator's is about 150 KB).
inline constexpr std::size_t max_manifest_bytes = std::size_t{64} << 20;
/// Deepest JSON nesting accepted in a manifest (the format needs 4).
inline constexpr int max_manifest_depth = 64;
/// Longest case name or manifest path, in bytes.
inline constexpr std::size_t max_manifest_path = 1024;
/// Most dimensions of an entry's "shape" (as npy::max_dims).
inline constexpr std::size_t max_manifest_dims = 64;

namespace manifest_detail {

using json = nlohmann::json;

[[noreturn]] inline void fail(std::string_view where, std::size_t line, std::string_view why) {
  std::string at(where);
  if (line > 0) at += ":" + std::to_string(line);
  throw hybridcache::invalid_argument("manifest", hybridcache::detail::excerpt(at, 512), why);
}

// Thrown by the parser callback past max_manifest_depth (caught in parse_manifest).
struct too_deep {};

// nlohmann's reason without its tag and without its echo of the input.
inline std::string reason_of(const json::exception& e) {
  std::string_view w = e.what();
  if (auto p = w.find("] "); p != std::string_view::npos) w.remove_prefix(p + 2);
  if (auto p = w.find("; last read"); p != std::string_view::npos) w = w.substr(0, p);
  return hybridcache::detail::excerpt(w, 160);
}

// 1-based line of 1-based byte offset `byte` in `text`.
inline std::size_t line_of(std::string_view text, std::size_t byte) {
  const std::size_t end = std::min(byte == 0 ? 0 : byte - 1, text.size());
  return 1 + static_cast<std::size_t>(
                 std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n'));
}

inline bool printable(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c <= 0x7e; });
}

// Checks the fields of one manifest; `where` is the file name for messages.
class checker {
 public:
  explicit checker(std::string_view where) : where_(where) {}

  [[noreturn]] void bad(const std::string& field, std::string_view why) const {
    fail(where_, 0, field + " " + std::string(why));
  }

  const json& member(const json& obj, const char* key, const std::string& field) const {
    const auto it = obj.find(key);
    if (it == obj.end()) bad(field, std::string("lacks \"") + key + "\"");
    return *it;
  }

  std::string string_of(const json& v, const std::string& field) const {
    if (!v.is_string()) bad(field, std::string("must be a string, got a JSON ") + v.type_name());
    return v.get<std::string>();
  }

  // A path relative to its directory: printable ASCII, not absolute, no '..' component.
  void relative_path(const std::string& s, const std::string& field) const {
    const std::string shown = field + " = " + hybridcache::detail::excerpt(s, 128);
    if (s.empty() || s.size() > max_manifest_path)
      bad(shown, "must be a path of 1 to " + std::to_string(max_manifest_path) + " bytes");
    if (!printable(s)) bad(shown, "must be printable ASCII");
    if (s.front() == '/')
      bad(shown, "is an absolute path; manifest paths must be relative to their directory");
    if (s.find('\\') != std::string::npos) bad(shown, "must use '/' separators");
    std::size_t b = 0;
    while (b <= s.size()) {
      const std::size_t e = std::min(s.find('/', b), s.size());
      if (s.compare(b, e - b, "..") == 0)
        bad(shown, "has a '..' component; manifest paths must stay inside their directory");
      b = e + 1;
    }
  }

  // An expected-array key: one file-name component.
  void key_name(const std::string& k, const std::string& field) const {
    const std::string shown = field + " key " + hybridcache::detail::excerpt(k, 128);
    if (k.empty() || k.size() > 255) bad(shown, "must have 1 to 255 bytes");
    if (!printable(k) || k.find('/') != std::string::npos || k.find('\\') != std::string::npos ||
        k == "." || k == "..")
      bad(shown, "must be a file name (printable ASCII, no '/', not '.' or '..')");
  }

  // A vectors file (reference, bound weights) is never named like a candidate output, so a
  // candidate `<case>/out_<key>.npy` can never be a vectors file, whatever the manifest says.
  void not_candidate_name(const std::string& s, const std::string& field) const {
    const auto slash = s.rfind('/');
    const std::string_view file =
        std::string_view(s).substr(slash == std::string::npos ? 0 : slash + 1);
    if (file.substr(0, candidate_prefix.size()) == candidate_prefix)
      bad(field + " = " + hybridcache::detail::excerpt(s, 128),
          "is named like a candidate output (" + std::string(candidate_prefix) +
              "*); vectors files must not be (format 3 names references ref_<key>.npy, bound "
              "weights bound_<key>.npy)");
  }

  std::size_t unsigned_of(const json& v, const std::string& field) const {
    if (!v.is_number_unsigned())
      bad(field, std::string("must be a non-negative integer, got a JSON ") + v.type_name());
    return v.get<std::size_t>();
  }

  double finite_nonnegative(const json& v, const std::string& field) const {
    if (!v.is_number()) bad(field, std::string("must be a number, got a JSON ") + v.type_name());
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < 0)
      bad(field, "= " + hybridcache::detail::to_display(x) + " must be finite and >= 0");
    return x;
  }

  void entry(const json& e, const std::string& field) const {
    if (!e.is_object()) bad(field, std::string("must be an object, got a JSON ") + e.type_name());
    const std::string ref = string_of(member(e, "reference", field), field + ".reference");
    relative_path(ref, field + ".reference");
    not_candidate_name(ref, field + ".reference");
    const json& shape = member(e, "shape", field);
    if (!shape.is_array() || shape.size() > max_manifest_dims)
      bad(field + ".shape",
          "must be an array of at most " + std::to_string(max_manifest_dims) + " sizes");
    std::size_t count = 1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      const std::string f = field + ".shape[" + std::to_string(i) + "]";
      const std::size_t d = unsigned_of(shape[i], f);
      try {
        count = hybridcache::checked_mul(count, d, "count", "shape[i]");
      } catch (const hybridcache::invalid_argument&) {
        bad(field + ".shape", "has more than " + std::to_string(SIZE_MAX) + " elements");
      }
    }
    if (const auto c = e.find("compare"); c != e.end()) {
      if (!c->is_string() || c->get<std::string>() != "exact")
        bad(field + ".compare", "must be \"exact\" when present");
      return;
    }
    const std::string weight = string_of(member(e, "bound_weight", field), field + ".bound_weight");
    relative_path(weight, field + ".bound_weight");
    not_candidate_name(weight, field + ".bound_weight");
    (void)finite_nonnegative(member(e, "depth_per_token", field), field + ".depth_per_token");
    (void)finite_nonnegative(member(e, "depth_extra", field), field + ".depth_extra");
    (void)unsigned_of(member(e, "steps", field), field + ".steps");
    const json& ax = member(e, "time_axis", field);
    if (!ax.is_null() && unsigned_of(ax, field + ".time_axis") >= shape.size())
      bad(field + ".time_axis",
          "must be null or an axis of the shape (< " + std::to_string(shape.size()) + ")");
  }

  void manifest(const json& m) const {
    if (!m.is_object()) bad("the manifest", "must be a JSON object");
    const json& v = member(m, "format_version", "the manifest");
    const std::string formats = "it reads " + std::to_string(format_version) +
                                " (hybridcache 0.2's file names) and, deprecated, " +
                                std::to_string(oldest_format_version) + " (0.1's)";
    if (!v.is_number_integer()) bad("format_version", "must be an integer: " + formats);
    const long long fv = v.get<long long>();
    if (fv < oldest_format_version || fv > format_version)
      bad("format_version",
          "= " + std::to_string(fv) +
              " is not a vectors format this hybridcache reads: " + formats +
              (fv > format_version
                   ? " (written by a newer hybridcache?)"
                   : "; regenerate the vectors with `hybridcache vectors --out DIR`"));
    const json& cases = member(m, "cases", "the manifest");
    if (!cases.is_array()) bad("cases", "must be an array");
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const std::string field = "cases[" + std::to_string(i) + "]";
      const json& c = cases[i];
      if (!c.is_object()) bad(field, std::string("must be an object, got a JSON ") + c.type_name());
      relative_path(string_of(member(c, "name", field), field + ".name"), field + ".name");
      const json& ex = member(c, "expected", field);
      if (!ex.is_object()) bad(field + ".expected", "must be an object");
      for (const auto& [k, e] : ex.items()) {
        key_name(k, field + ".expected");
        entry(e, field + ".expected[\"" + k + "\"]");
      }
    }
  }

 private:
  std::string where_;
};

}  // namespace manifest_detail

/// Parses and checks a manifest's text; `where` (the file name) labels the messages. On return
/// every field `verify` reads is present with its type: "format_version" from
/// oldest_format_version to format_version;
/// "cases": [{"name": relative path, "expected": {key: entry}}], key a file name; an entry has a
/// relative "reference", a "shape" of ≤ 64 sizes whose product fits size_t, and either
/// "compare": "exact" or a relative "bound_weight", finite non-negative "depth_per_token" and
/// "depth_extra", an unsigned "steps" and a "time_axis" that is null or an axis of the shape.
/// Paths are printable ASCII, at most 1024 bytes, not absolute, without a '..' component, and
/// no reference or bound-weight file name starts with candidate_prefix ("out_").
/// @throws hybridcache::invalid_argument "manifest 'WHERE[:LINE]': why" on anything else (a JSON
///         syntax error with its line, nesting deeper than 64, an embedded NUL, a bad field).
inline nlohmann::json parse_manifest(std::string_view text, std::string_view where) {
  namespace md = manifest_detail;
  using json = nlohmann::json;
  if (const auto z = text.find('\0'); z != std::string_view::npos)
    md::fail(where, md::line_of(text, z + 1), "embedded NUL byte (is this a text file?)");
  const json::parser_callback_t guard = [](int depth, json::parse_event_t event, json&) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= max_manifest_depth)
      throw md::too_deep{};
    return true;
  };
  json m;
  try {
    m = json::parse(text.begin(), text.end(), guard);
  } catch (const md::too_deep&) {
    md::fail(where, 0, "JSON nested deeper than " + std::to_string(max_manifest_depth) + " levels");
  } catch (const json::parse_error& e) {
    md::fail(where, md::line_of(text, e.byte),
             "malformed JSON (truncated?): " + md::reason_of(e) + "; near " +
                 hybridcache::detail::excerpt(
                     text.substr(std::min(e.byte > 20 ? e.byte - 20 : 0, text.size())), 40));
  } catch (const json::exception& e) {  // a number past double's range (1e400)
    md::fail(where, 0, "invalid JSON: " + md::reason_of(e));
  }
  md::checker(where).manifest(m);
  return m;
}

/// Reads `file` (at most max_manifest_bytes) and parses it with `parse_manifest`.
/// @throws hybridcache::invalid_argument naming the file.
inline nlohmann::json read_manifest(const std::filesystem::path& file) {
  const std::string where = file.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    manifest_detail::fail(where, 0, "is not a regular file");
  const auto size = std::filesystem::file_size(file, ec);
  if (ec) manifest_detail::fail(where, 0, "cannot be read: " + ec.message());
  if (size > max_manifest_bytes)
    manifest_detail::fail(where, 0,
                          "is larger than " + std::to_string(max_manifest_bytes) + " bytes");
  std::ifstream f(file, std::ios::binary);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (!f.read(text.data(), static_cast<std::streamsize>(size)))
    manifest_detail::fail(where, 0, "cannot be read");
  return parse_manifest(text, where);
}

/// `dir` with every symbolic link resolved (the directory need not exist), without a trailing
/// separator. @throws hybridcache::invalid_argument naming `option` if it cannot be resolved.
inline std::filesystem::path resolved_dir(const std::filesystem::path& dir,
                                          std::string_view option) {
  std::error_code ec;
  auto r = std::filesystem::weakly_canonical(std::filesystem::absolute(dir, ec), ec);
  if (ec)
    throw hybridcache::invalid_argument(option, hybridcache::detail::excerpt(dir.string(), 512),
                                        "cannot be resolved: " + ec.message());
  if (r.filename().empty()) r = r.parent_path();
  return r;
}

/// `root / rel` with every symbolic link resolved, if it stays inside `root` (as resolved by
/// `resolved_dir`); `rel` was checked by parse_manifest (relative, no '..').
/// @throws hybridcache::invalid_argument naming `option` and `what` if it resolves outside.
inline std::filesystem::path confined(const std::filesystem::path& root, const std::string& rel,
                                      std::string_view option, const std::string& what) {
  std::error_code ec;
  const auto full = std::filesystem::weakly_canonical(root / rel, ec);
  if (ec)
    throw hybridcache::invalid_argument(option, hybridcache::detail::excerpt(root.string(), 512),
                                        what + " cannot be resolved: " + ec.message());
  const auto [r, f] = std::mismatch(root.begin(), root.end(), full.begin(), full.end());
  if (r != root.end() || f == full.end())
    throw hybridcache::invalid_argument(
        option, hybridcache::detail::excerpt(root.string(), 512),
        what + " = " + hybridcache::detail::excerpt(rel, 128) +
            " resolves outside this directory (through a symbolic link) to " +
            hybridcache::detail::excerpt(full.string(), 256) + "; refusing to read it");
  return full;
}

/// ∏ shape of a checked manifest entry (parse_manifest has bounded it).
inline std::size_t shape_count(const nlohmann::json& e) {
  std::size_t n = 1;
  for (const auto& d : e.at("shape")) n *= d.get<std::size_t>();
  return n;
}

}  // namespace hybridcache_cli::vectors
