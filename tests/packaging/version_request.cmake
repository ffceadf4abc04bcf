# SPDX-License-Identifier: Apache-2.0
# Asks a package version file (write_basic_package_version_file's, or the one Conan's CMakeDeps
# generates) what find_package(<pkg> REQUEST) would ask it, without a project: prints
# "compatible" or "refused" and fails when that is not EXPECT.
#   cmake -DFILE=<...ConfigVersion.cmake> -DREQUEST=<x.y[.z]> -DEXPECT=compatible|refused
#         -P version_request.cmake
cmake_minimum_required(VERSION 3.23)
foreach(var FILE REQUEST EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "version_request.cmake: -D${var}=... is required")
  endif()
endforeach()
# The variables find_package() sets before it includes a version file.
set(PACKAGE_FIND_VERSION "${REQUEST}")
string(REPLACE "." ";" parts "${REQUEST}")
list(LENGTH parts PACKAGE_FIND_VERSION_COUNT)
set(i 0)
foreach(name MAJOR MINOR PATCH TWEAK)
  set(PACKAGE_FIND_VERSION_${name} 0)
  if(i LESS PACKAGE_FIND_VERSION_COUNT)
    list(GET parts ${i} PACKAGE_FIND_VERSION_${name})
  endif()
  math(EXPR i "${i} + 1")
endforeach()
set(PACKAGE_FIND_VERSION_RANGE FALSE)
set(CMAKE_SIZEOF_VOID_P 8)
include("${FILE}")
if(PACKAGE_VERSION_COMPATIBLE AND NOT PACKAGE_VERSION_UNSUITABLE)
  set(got compatible)
else()
  set(got refused)
endif()
if(NOT got STREQUAL EXPECT)
  message(FATAL_ERROR "${FILE} (version ${PACKAGE_VERSION}): the request ${REQUEST} is ${got}, "
                      "expected ${EXPECT}")
endif()
message(STATUS "${PACKAGE_VERSION}: request ${REQUEST} ${got}")
