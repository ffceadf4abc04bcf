// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <hybridcache/version.hpp>

#include "hybridcache/command.hpp"

namespace {
const hybridcache_cli::registrar reg{{
    "version", "print the library version", "usage: hybridcache version",
    [](std::span<const std::string_view>) {
      std::printf("hybridcache %s\n", hybridcache::version_string);
      return 0;
    }}};
}  // namespace
