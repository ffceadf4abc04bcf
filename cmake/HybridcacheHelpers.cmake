# SPDX-License-Identifier: Apache-2.0
# Project-internal helpers: warnings, test and benchmark registration. Never exported.

include_guard(GLOBAL)

add_library(hybridcache_warnings INTERFACE)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(hybridcache_warnings INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow>)
  if(HYBRIDCACHE_WARNINGS_AS_ERRORS)
    target_compile_options(hybridcache_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endif()

# hybridcache_add_test(<component> SOURCES a_test.cpp ... [LIBS lib ...] [LABELS l ...])
# Builds `test_<component>` from the sources plus the shared doctest main and registers every
# TEST_CASE with ctest (doctest_discover_tests). Honours HYBRIDCACHE_TEST_ONLY.
function(hybridcache_add_test component)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  if(HYBRIDCACHE_TEST_ONLY AND NOT component IN_LIST HYBRIDCACHE_TEST_ONLY)
    return()
  endif()
  set(target test_${component})
  set(ARG_LABELS_JOINED "")
  foreach(l IN LISTS ARG_LABELS)
    string(APPEND ARG_LABELS_JOINED "\\;${l}")
  endforeach()
  add_executable(${target} ${ARG_SOURCES} $<TARGET_OBJECTS:hybridcache_test_main>)
  target_link_libraries(${target} PRIVATE hybridcache::eigen hybridcache_test_support
                                          hybridcache_warnings ${ARG_LIBS})
  target_compile_definitions(${target} PRIVATE HYBRIDCACHE_ASSERTIONS=1)
  doctest_discover_tests(${target}
    TEST_PREFIX "${component}/"
    PROPERTIES LABELS "${component}${ARG_LABELS_JOINED}")
endfunction()

# hybridcache_add_benchmark(<name> SOURCES a_bench.cpp ... [LIBS lib ...])
function(hybridcache_add_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  set(target bench_${name})
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE hybridcache::eigen hybridcache_warnings
                                          benchmark::benchmark_main ${ARG_LIBS})
endfunction()
