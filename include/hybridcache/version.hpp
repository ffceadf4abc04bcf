#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The library version. This is the single source of truth: CMake parses these macros (and from
/// them the package config version file, the pkg-config files and the vcpkg/Conan checks),
/// Conan's recipe reads them, and pyproject.toml reads `version_string`, which a static_assert
/// below holds equal to the macros. tests/packaging/check_versions.cmake fails when any other
/// file that names the version disagrees. Releases are listed in CHANGELOG.md.

#define HYBRIDCACHE_VERSION_MAJOR 0
#define HYBRIDCACHE_VERSION_MINOR 2
#define HYBRIDCACHE_VERSION_PATCH 0

/// Version as one integer: major * 10000 + minor * 100 + patch (fmt's convention).
#define HYBRIDCACHE_VERSION \
  (HYBRIDCACHE_VERSION_MAJOR * 10000 + HYBRIDCACHE_VERSION_MINOR * 100 + HYBRIDCACHE_VERSION_PATCH)

namespace hybridcache {
/// The version this header was built from, as "major.minor.patch".
inline constexpr const char* version_string = "0.2.0";

// version_string spells exactly "major.minor.patch" of the macros above (decimal, no sign). A
// lambda, not a named helper: this header opens no namespace other than `hybridcache`.
static_assert(
    [] {
      const char* s = version_string;
      const long parts[3] = {HYBRIDCACHE_VERSION_MAJOR, HYBRIDCACHE_VERSION_MINOR,
                             HYBRIDCACHE_VERSION_PATCH};
      for (int i = 0; i < 3; ++i) {
        if (i > 0 && *s++ != '.') {
          return false;
        }
        long value = 0;
        const char* const start = s;
        for (; *s >= '0' && *s <= '9'; ++s) {
          value = value * 10 + (*s - '0');
        }
        if (s == start || value != parts[i]) {
          return false;
        }
      }
      return *s == '\0';
    }(),
    "hybridcache::version_string must spell HYBRIDCACHE_VERSION_MAJOR.MINOR.PATCH");
}  // namespace hybridcache
