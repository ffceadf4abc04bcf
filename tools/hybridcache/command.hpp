// SPDX-License-Identifier: Apache-2.0
// Subcommand registry and a small argument parser for the `hybridcache` CLI. Each
// cmd_<name>.cpp defines one `command` and registers it with a static `registrar`.
#pragma once

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace hybridcache_cli {

struct command {
  std::string_view name;
  std::string_view summary;
  std::string_view usage;  // full help text
  std::function<int(std::span<const std::string_view>)> run;
};

inline std::vector<command>& registry() {
  static std::vector<command> commands;
  return commands;
}

struct registrar {
  explicit registrar(command c) { registry().push_back(std::move(c)); }
};

/// Thrown for bad command lines; main() prints it with the usage and exits 2.
struct usage_error {
  std::string message;
};

/// `--name value` / `--name=value` options and `--flag` switches; anything else is positional.
class args {
 public:
  /// `flags` lists the options that take no value.
  args(std::span<const std::string_view> argv, std::vector<std::string_view> flags = {}) {
    for (std::size_t i = 0; i < argv.size(); ++i) {
      std::string_view a = argv[i];
      if (a.size() > 2 && a.substr(0, 2) == "--") {
        std::string_view body = a.substr(2);
        if (auto eq = body.find('='); eq != std::string_view::npos) {
          options_[std::string(body.substr(0, eq))] = std::string(body.substr(eq + 1));
        } else if (std::find(flags.begin(), flags.end(), body) != flags.end()) {
          options_[std::string(body)] = "";
        } else {
          if (i + 1 >= argv.size()) throw usage_error{"option --" + std::string(body) + " needs a value"};
          options_[std::string(body)] = std::string(argv[++i]);
        }
      } else {
        positional_.emplace_back(a);
      }
    }
  }
  [[nodiscard]] bool has(std::string_view name) const { return options_.count(std::string(name)) != 0; }
  [[nodiscard]] std::optional<std::string> get(std::string_view name) const {
    auto it = options_.find(std::string(name));
    if (it == options_.end()) return std::nullopt;
    used_.push_back(it->first);
    return it->second;
  }
  [[nodiscard]] std::string get_or(std::string_view name, std::string_view fallback) const {
    auto v = get(name);
    return v ? *v : std::string(fallback);
  }
  /// A non-negative integer option.
  [[nodiscard]] std::optional<std::size_t> get_size(std::string_view name) const {
    auto v = get(name);
    if (!v) return std::nullopt;
    std::size_t pos = 0;
    unsigned long long x = 0;
    try {
      if (!v->empty() && (*v)[0] == '-') throw std::invalid_argument("negative");
      x = std::stoull(*v, &pos);
    } catch (...) {
      throw usage_error{"option --" + std::string(name) + " expects a non-negative integer, got '" + *v + "'"};
    }
    if (pos != v->size()) throw usage_error{"option --" + std::string(name) + " expects a non-negative integer, got '" + *v + "'"};
    return static_cast<std::size_t>(x);
  }
  [[nodiscard]] std::optional<double> get_double(std::string_view name) const {
    auto v = get(name);
    if (!v) return std::nullopt;
    std::size_t pos = 0;
    double x = 0;
    try {
      x = std::stod(*v, &pos);
    } catch (...) {
      throw usage_error{"option --" + std::string(name) + " expects a number, got '" + *v + "'"};
    }
    if (pos != v->size()) throw usage_error{"option --" + std::string(name) + " expects a number, got '" + *v + "'"};
    return x;
  }
  [[nodiscard]] const std::vector<std::string>& positional() const { return positional_; }
  /// Throws usage_error naming the first option that no get() asked for (catches typos).
  void reject_unknown() const {
    for (const auto& [k, v] : options_) {
      if (std::find(used_.begin(), used_.end(), k) == used_.end() && !k.empty()) {
        bool asked = false;
        for (const auto& u : used_) asked = asked || u == k;
        if (!asked) throw usage_error{"unknown option --" + k};
      }
    }
  }

 private:
  std::map<std::string, std::string> options_;
  std::vector<std::string> positional_;
  mutable std::vector<std::string> used_;
};

}  // namespace hybridcache_cli
