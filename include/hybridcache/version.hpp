#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The library version. This is the single source of truth: CMake parses these macros.

#define HYBRIDCACHE_VERSION_MAJOR 0
#define HYBRIDCACHE_VERSION_MINOR 1
#define HYBRIDCACHE_VERSION_PATCH 0

/// Version as one integer: major * 10000 + minor * 100 + patch (fmt's convention).
#define HYBRIDCACHE_VERSION \
  (HYBRIDCACHE_VERSION_MAJOR * 10000 + HYBRIDCACHE_VERSION_MINOR * 100 + HYBRIDCACHE_VERSION_PATCH)

namespace hybridcache {
/// The version this header was built from, as "major.minor.patch".
inline constexpr const char* version_string = "0.1.0";
}  // namespace hybridcache
