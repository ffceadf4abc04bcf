# SPDX-License-Identifier: Apache-2.0
# Defines the imported target hiredis::hiredis if it does not exist yet. hiredis >= 1.0 installs a
# package config that provides it; Debian 12's libhiredis-dev (0.14) ships only a pkg-config file
# and a config without targets, so fall back to find_path/find_library. Used by the build and by
# the installed hybridcacheConfig.cmake (component `redis`).
# CMAKE_DISABLE_FIND_PACKAGE_hiredis (the vcpkg port without its `redis` feature) turns the
# fallback search off too, so the component follows the request, not what is installed.
include_guard(GLOBAL)
if(NOT TARGET hiredis::hiredis)
  find_package(hiredis CONFIG QUIET)
endif()
if(NOT TARGET hiredis::hiredis AND NOT CMAKE_DISABLE_FIND_PACKAGE_hiredis)
  find_path(HYBRIDCACHE_HIREDIS_INCLUDE_DIR hiredis/hiredis.h)
  find_library(HYBRIDCACHE_HIREDIS_LIBRARY NAMES hiredis)
  mark_as_advanced(HYBRIDCACHE_HIREDIS_INCLUDE_DIR HYBRIDCACHE_HIREDIS_LIBRARY)
  if(HYBRIDCACHE_HIREDIS_INCLUDE_DIR AND HYBRIDCACHE_HIREDIS_LIBRARY)
    add_library(hiredis::hiredis UNKNOWN IMPORTED)
    set_target_properties(hiredis::hiredis PROPERTIES
      IMPORTED_LOCATION "${HYBRIDCACHE_HIREDIS_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${HYBRIDCACHE_HIREDIS_INCLUDE_DIR}")
  endif()
endif()
