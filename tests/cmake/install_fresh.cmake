# SPDX-License-Identifier: Apache-2.0
# `cmake --install` of a build tree into an empty prefix (removed first, so no file of an earlier
# install or an earlier version can satisfy a later find_package), then checks that the files
# that carry the version say the build's version.
#   cmake -DBUILD_DIR=<build tree> -DPREFIX=<prefix> -DVERSION=<x.y.z> -P install_fresh.cmake
cmake_minimum_required(VERSION 3.23)
foreach(var BUILD_DIR PREFIX VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_fresh.cmake: -D${var}=... is required")
  endif()
endforeach()
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD_DIR} --prefix ${PREFIX} failed (${rc})")
endif()
file(READ "${PREFIX}/share/hybridcache/hybridcacheConfigVersion.cmake" text)
if(NOT text MATCHES "set\\(PACKAGE_VERSION \"${VERSION}\"\\)")
  message(FATAL_ERROR "hybridcacheConfigVersion.cmake does not say ${VERSION}")
endif()
foreach(pc hybridcache hybridcache-eigen)
  file(STRINGS "${PREFIX}/share/pkgconfig/${pc}.pc" line REGEX "^Version:")
  if(NOT line STREQUAL "Version: ${VERSION}")
    message(FATAL_ERROR "${pc}.pc: '${line}', expected 'Version: ${VERSION}'")
  endif()
endforeach()
file(STRINGS "${PREFIX}/include/hybridcache/version.hpp" line REGEX "version_string = ")
if(NOT line MATCHES "\"${VERSION}\"")
  message(FATAL_ERROR "installed version.hpp: '${line}', expected ${VERSION}")
endif()
message(STATUS "installed hybridcache ${VERSION} into the fresh prefix ${PREFIX}")
