# SPDX-License-Identifier: Apache-2.0
# Configures the find_package consumer with a version request the installed package must refuse
# (another minor before 1.0, another major) and passes only if configuring fails because the
# package in PREFIX was considered and rejected for its version.
#   cmake -DSOURCE_DIR=<tests/cmake/find_package> -DBINARY_DIR=<dir> -DPREFIX=<prefix>
#         -DREQUEST=<x.y> -DVERSION=<installed x.y.z> [-DGENERATOR=...] [-DCXX=...]
#         -P expect_rejected.cmake
cmake_minimum_required(VERSION 3.23)
foreach(var SOURCE_DIR BINARY_DIR PREFIX REQUEST VERSION)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "expect_rejected.cmake: -D${var}=... is required")
  endif()
endforeach()
set(args -S "${SOURCE_DIR}" -B "${BINARY_DIR}" "-DCMAKE_PREFIX_PATH=${PREFIX}"
         "-DHC_REQUEST_VERSION=${REQUEST}" -DCMAKE_FIND_PACKAGE_NO_PACKAGE_REGISTRY=ON)
if(GENERATOR)
  list(APPEND args -G "${GENERATOR}")
endif()
if(CXX)
  list(APPEND args "-DCMAKE_CXX_COMPILER=${CXX}")
endif()
file(REMOVE_RECURSE "${BINARY_DIR}")
execute_process(COMMAND "${CMAKE_COMMAND}" ${args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
if(rc EQUAL 0)
  message(FATAL_ERROR "find_package(hybridcache ${REQUEST}) accepted hybridcache ${VERSION}:\n"
                      "${all}")
endif()
string(REPLACE "." "\\." request_re "${REQUEST}")
string(FIND "${all}" "${PREFIX}/share/hybridcache/hybridcacheConfig.cmake, version: ${VERSION}"
       considered)
if(NOT all MATCHES "compatible with requested version \"${request_re}\"" OR considered EQUAL -1)
  message(FATAL_ERROR "configuring failed, but not because hybridcache ${VERSION} in ${PREFIX} "
                      "was refused for the request ${REQUEST}:\n${all}")
endif()
message(STATUS "find_package(hybridcache ${REQUEST}) refused hybridcache ${VERSION} as it should")
