#pragma once
// SPDX-License-Identifier: Apache-2.0
// A hand-built tree trace for the simulator's tests (tree_engines_test, tree_joint_lru_test).

#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <hybridcache/sim/tree.hpp>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace hybridcache_test {

/// A hand-built trace: blocks are named by strings, a node is a prefix of names.
struct hand_trace {
  explicit hand_trace(std::size_t block) : t("hand", block) { root = t.root_of(std::nullopt); }

  /// The node of the prefix `names` (created on first use).
  std::uint32_t node(const std::vector<std::string>& names) {
    std::uint32_t parent = root;
    std::vector<std::string> prefix;
    for (const auto& n : names) {
      prefix.push_back(n);
      auto it = nodes.find(prefix);
      if (it == nodes.end()) it = nodes.emplace(prefix, t.new_node(parent, 0)).first;
      parent = it->second;
    }
    return parent;
  }
  /// A request whose full blocks are `names` (⌊(P + O)/B⌋ of them), with the positions where
  /// its user messages start (`tree_request::user_starts`; none by default).
  void add(const std::vector<std::string>& names, std::size_t prompt, std::size_t output = 0,
           std::vector<std::size_t> user_starts = {}) {
    hybridcache::tree_request r;
    r.root = root;
    r.prompt_tokens = prompt;
    r.output_tokens = output;
    r.user_starts = std::move(user_starts);
    std::vector<std::string> prefix;
    for (const auto& n : names) {
      prefix.push_back(n);
      r.path.push_back(node(prefix));
    }
    REQUIRE(r.path.size() == (prompt + output) / t.block());
    t.add_request(std::move(r));
  }
  /// The node of the prefix `names` (must exist).
  [[nodiscard]] std::uint32_t at(const std::vector<std::string>& names) const {
    return nodes.at(names);
  }

  hybridcache::tree_trace t;
  std::uint32_t root = 0;
  std::map<std::vector<std::string>, std::uint32_t> nodes;
};

}  // namespace hybridcache_test
