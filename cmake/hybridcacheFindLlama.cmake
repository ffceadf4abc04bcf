# SPDX-License-Identifier: Apache-2.0
# Finds llama.cpp's CMake package (target `llama`, with ggml), for the optional component
# hybridcache::llama_cpp (engines/llama_cpp.hpp). scripts/install-llama-cpp.sh installs it in
# /opt/llama.cpp, which is searched after CMAKE_PREFIX_PATH and the system prefixes, so a plain
# `cmake -S . -B build` finds it; LLAMA_CPP_PREFIX (environment) names another prefix.
# CMAKE_DISABLE_FIND_PACKAGE_llama turns the search off. Used by the build and by the installed
# hybridcacheConfig.cmake (component `llama_cpp`).
include_guard(GLOBAL)
if(NOT TARGET llama AND NOT CMAKE_DISABLE_FIND_PACKAGE_llama)
  find_package(llama CONFIG QUIET PATHS "$ENV{LLAMA_CPP_PREFIX}" /opt/llama.cpp)
endif()
