# SPDX-License-Identifier: Apache-2.0
# Finds the xxHash headers that <hybridcache/segment/hash.hpp> includes (header-only, through
# XXH_INLINE_ALL: nothing is linked) and provides them as the imported target
# `hybridcache_xxhash` (not exported: the build tree and the installed package config both run
# this file). Used by the root CMakeLists.txt and by hybridcacheConfig.cmake.
#
# Search order:
#   1. xxHash's own CMake package (its cmake_unofficial build, vcpkg and Conan install it) —
#      target xxHash::xxhash;
#   2. pkg-config `libxxhash` (Debian/Ubuntu libxxhash-dev, Fedora xxhash-devel, Homebrew);
#   3. a plain search for xxhash.h (HYBRIDCACHE_XXHASH_INCLUDE_DIR may point at it).
# Sets HYBRIDCACHE_XXHASH_FOUND and, when not found, HYBRIDCACHE_XXHASH_MESSAGE (what to install).

include_guard(DIRECTORY)

macro(hybridcache_find_xxhash)
  set(HYBRIDCACHE_XXHASH_FOUND FALSE)
  set(HYBRIDCACHE_XXHASH_MESSAGE "")
  if(TARGET hybridcache_xxhash)
    set(HYBRIDCACHE_XXHASH_FOUND TRUE)
  else()
    find_package(xxHash 0.8 CONFIG QUIET)
    if(TARGET xxHash::xxhash)
      add_library(hybridcache_xxhash INTERFACE IMPORTED GLOBAL)
      target_link_libraries(hybridcache_xxhash INTERFACE xxHash::xxhash)
      set(HYBRIDCACHE_XXHASH_FOUND TRUE)
    else()
      set(_hc_xxhash_hint "")
      find_package(PkgConfig QUIET)
      if(PKG_CONFIG_FOUND)
        pkg_check_modules(_hc_pc_xxhash QUIET libxxhash>=0.8)
        if(_hc_pc_xxhash_FOUND)
          set(_hc_xxhash_hint ${_hc_pc_xxhash_INCLUDEDIR} ${_hc_pc_xxhash_INCLUDE_DIRS})
        endif()
      endif()
      find_path(HYBRIDCACHE_XXHASH_INCLUDE_DIR xxhash.h HINTS ${_hc_xxhash_hint}
                DOC "Directory holding xxhash.h (xxHash >= 0.8, used header-only)")
      if(HYBRIDCACHE_XXHASH_INCLUDE_DIR)
        add_library(hybridcache_xxhash INTERFACE IMPORTED GLOBAL)
        target_include_directories(hybridcache_xxhash INTERFACE
                                   "${HYBRIDCACHE_XXHASH_INCLUDE_DIR}")
        set(HYBRIDCACHE_XXHASH_FOUND TRUE)
      endif()
      unset(_hc_xxhash_hint)
    endif()
  endif()
  if(NOT HYBRIDCACHE_XXHASH_FOUND)
    string(CONCAT HYBRIDCACHE_XXHASH_MESSAGE
        "hybridcache needs the xxHash headers (xxhash.h, version 0.8 or later; used header-only "
        "by <hybridcache/segment/hash.hpp>, nothing is linked). Install them — Debian/Ubuntu: "
        "apt install libxxhash-dev; Fedora: dnf install xxhash-devel; macOS: brew install "
        "xxhash; vcpkg: xxhash; Conan: xxhash/0.8.2 — or point CMake at them with "
        "-DxxHash_DIR=<dir with xxHashConfig.cmake>, CMAKE_PREFIX_PATH, PKG_CONFIG_PATH, or "
        "-DHYBRIDCACHE_XXHASH_INCLUDE_DIR=<dir with xxhash.h>.")
  endif()
endmacro()
