# SPDX-License-Identifier: Apache-2.0
# Every file that names hybridcache's version agrees with include/hybridcache/version.hpp, the
# single source of truth (issue #25). What derives from it at build or package time (project(),
# the package config version file, the .pc files, the Conan recipe's set_version(), the Python
# module's __version__) is checked where it is produced: consumption/install,
# packaging/vcpkg_port_*, scripts/test.d/conan.sh, python/tests/test_package.py. This script
# checks the files that must spell the version out:
#   - version.hpp: version_string equals the macros (also a static_assert in the header);
#   - ports/hybridcache/vcpkg.json: version-semver;
#   - conanfile.py: set_version() reads version.hpp; pyproject.toml: the version regex reads
#     version_string from version.hpp;
#   - CHANGELOG.md: the newest release heading;
#   - in README.md, CHANGELOG.md, docs/, examples/, tests/cmake/, tests/packaging/, test_package/,
#     packaging/, ports/ and conanfile.py: every `find_package(hybridcache X`, every `GIT_TAG vX`,
#     every Conan reference `hybridcache/X.Y.Z` and every `set(HC_REQUEST_VERSION X` names this
#     version (X = major.minor or major.minor.patch).
#   cmake -DSOURCE_DIR=<checkout> -P check_versions.cmake
cmake_minimum_required(VERSION 3.23)
if(NOT DEFINED SOURCE_DIR)
  message(FATAL_ERROR "check_versions.cmake: -DSOURCE_DIR=... is required")
endif()
set(errors "")
macro(fail text)
  string(APPEND errors "  ${text}\n")
endmacro()

# --- version.hpp ------------------------------------------------------------------------------
file(READ "${SOURCE_DIR}/include/hybridcache/version.hpp" hpp)
foreach(part MAJOR MINOR PATCH)
  if(NOT hpp MATCHES "#define HYBRIDCACHE_VERSION_${part} ([0-9]+)")
    message(FATAL_ERROR "version.hpp: no HYBRIDCACHE_VERSION_${part}")
  endif()
  set(${part} "${CMAKE_MATCH_1}")
endforeach()
set(version "${MAJOR}.${MINOR}.${PATCH}")
set(major_minor "${MAJOR}.${MINOR}")
if(NOT hpp MATCHES "version_string = \"([^\"]*)\"" OR NOT CMAKE_MATCH_1 STREQUAL version)
  fail("version.hpp: version_string \"${CMAKE_MATCH_1}\" != macros ${version}")
endif()

# --- manifests --------------------------------------------------------------------------------
file(READ "${SOURCE_DIR}/ports/hybridcache/vcpkg.json" json)
string(JSON port_version GET "${json}" version-semver)
if(NOT port_version STREQUAL version)
  fail("ports/hybridcache/vcpkg.json: version-semver ${port_version} != ${version}")
endif()
file(READ "${SOURCE_DIR}/conanfile.py" conanfile)
string(FIND "${conanfile}" "def set_version(self):" at)
if(at GREATER -1)
  string(SUBSTRING "${conanfile}" ${at} 600 set_version_body)
endif()
if(at EQUAL -1 OR NOT set_version_body MATCHES "\"version\\.hpp\"")
  fail("conanfile.py: set_version() must read include/hybridcache/version.hpp")
endif()
file(READ "${SOURCE_DIR}/pyproject.toml" pyproject)
if(NOT pyproject MATCHES "input = \"include/hybridcache/version\\.hpp\""
   OR NOT pyproject MATCHES "regex = 'version_string = ")
  fail("pyproject.toml: the version must be read from version_string in version.hpp")
endif()
if(EXISTS "${SOURCE_DIR}/CHANGELOG.md")
  file(STRINGS "${SOURCE_DIR}/CHANGELOG.md" releases REGEX "^## \\[[0-9]+\\.[0-9]+\\.[0-9]+\\]")
  list(GET releases 0 newest)
  if(NOT newest MATCHES "^## \\[${MAJOR}\\.${MINOR}\\.${PATCH}\\]")
    fail("CHANGELOG.md: the newest release is '${newest}', not ${version}")
  endif()
else()
  fail("CHANGELOG.md is missing")
endif()

# --- every spelled-out version in docs, examples and packaging tests --------------------------
set(globs README.md CHANGELOG.md conanfile.py docs/*.md examples/*.txt examples/*.cpp
          tests/cmake/*.txt tests/cmake/*.cmake tests/packaging/*.txt tests/packaging/*.cmake
          test_package/* packaging/*.py ports/*)
set(files "")
foreach(g IN LISTS globs)
  file(GLOB_RECURSE found "${SOURCE_DIR}/${g}")
  list(APPEND files ${found})
endforeach()
list(REMOVE_DUPLICATES files)
list(FILTER files EXCLUDE REGEX "/tests/packaging/check_versions\\.cmake$")
# GLOB_RECURSE of a bare file name (conanfile.py) also finds copies below the source tree: build
# trees (conan caches, staged installs) and hidden folders are not the project's files.
set(kept "")
foreach(f IN LISTS files)
  file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
  if(NOT rel MATCHES "^(build|out)/" AND NOT rel MATCHES "(^|/)\\.")
    list(APPEND kept "${f}")
  endif()
endforeach()
set(files ${kept})
set(checked 0)
foreach(f IN LISTS files)
  file(RELATIVE_PATH rel "${SOURCE_DIR}" "${f}")
  file(STRINGS "${f}" lines REGEX "find_package\\(hybridcache [0-9]|GIT_TAG v[0-9]|hybridcache/[0-9]+\\.[0-9]|HC_REQUEST_VERSION [0-9]")
  foreach(line IN LISTS lines)
    math(EXPR checked "${checked} + 1")
    set(rest "${line}")
    # Each pattern may occur more than once on a line; walk them all.
    foreach(pattern "find_package\\(hybridcache ([0-9.]+)" "GIT_TAG v([0-9.]+)"
                    "hybridcache/([0-9]+\\.[0-9.]+)" "HC_REQUEST_VERSION ([0-9.]+)")
      string(REGEX MATCHALL "${pattern}" hits "${line}")
      foreach(hit IN LISTS hits)
        string(REGEX REPLACE "${pattern}" "\\1" named "${hit}")
        if(pattern MATCHES "^GIT_TAG|^hybridcache/")
          set(ok_values "${version}")
        else()
          set(ok_values "${major_minor}" "${version}")
        endif()
        if(NOT named IN_LIST ok_values)
          fail("${rel}: '${hit}' (version.hpp says ${version})")
        endif()
      endforeach()
    endforeach()
  endforeach()
endforeach()
if(checked EQUAL 0)
  fail("no spelled-out version found at all: the file patterns above are stale")
endif()

if(errors)
  message(FATAL_ERROR "hybridcache ${version} (version.hpp), but:\n${errors}")
endif()
message(STATUS "hybridcache ${version}: version.hpp, vcpkg.json, conanfile.py, pyproject.toml, "
               "CHANGELOG.md and ${checked} lines naming a version agree")
