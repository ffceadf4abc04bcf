// SPDX-License-Identifier: Apache-2.0
// `hybridcache <command> [options]`: dispatches to the registered subcommands.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <hybridcache/error.hpp>
#include <hybridcache/version.hpp>
#include <string_view>
#include <vector>

#include "hybridcache/command.hpp"

namespace {
void print_help() {
  auto& cmds = hybridcache_cli::registry();
  std::sort(cmds.begin(), cmds.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::printf("hybridcache %s: checkpoint placement, state splicing and cache policies for hybrid LLMs\n\n",
              hybridcache::version_string);
  std::printf("usage: hybridcache <command> [options]   (hybridcache <command> --help for details)\n\ncommands:\n");
  for (const auto& c : cmds) {
    std::printf("  %-12.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                static_cast<int>(c.summary.size()), c.summary.data());
  }
}
}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string_view> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    print_help();
    return args.empty() ? 2 : 0;
  }
  if (args[0] == "--version") {
    std::printf("%s\n", hybridcache::version_string);
    return 0;
  }
  const auto& cmds = hybridcache_cli::registry();
  auto it = std::find_if(cmds.begin(), cmds.end(), [&](const auto& c) { return c.name == args[0]; });
  if (it == cmds.end()) {
    std::fprintf(stderr, "hybridcache: unknown command '%.*s'\n\n", static_cast<int>(args[0].size()),
                 args[0].data());
    print_help();
    return 2;
  }
  std::span<const std::string_view> rest(args.data() + 1, args.size() - 1);
  if (std::find(rest.begin(), rest.end(), std::string_view("--help")) != rest.end()) {
    std::printf("%.*s\n", static_cast<int>(it->usage.size()), it->usage.data());
    return 0;
  }
  try {
    return it->run(rest);
  } catch (const hybridcache_cli::usage_error& e) {
    std::fprintf(stderr, "hybridcache %.*s: %s\n\n%.*s\n", static_cast<int>(it->name.size()),
                 it->name.data(), e.message.c_str(), static_cast<int>(it->usage.size()),
                 it->usage.data());
    return 2;
  } catch (const hybridcache::error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hybridcache: %s\n", e.what());
    return 1;
  }
}
