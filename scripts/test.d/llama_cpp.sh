#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The real engine (DESIGN §9): builds and installs llama.cpp and llama-server from the source
# vendored in the PyPI sdist of llama-cpp-python (LLAMA_CPP_SERVER=1 scripts/install-llama-cpp.sh;
# skipped when the same version is installed; the server adds ~5 min on 2 shared cores once),
# writes tiny random-weight GGUF models with the PyPI packages gguf + numpy in a venv
# (build/gguf-venv; tools/gguf/make_models.py), then builds the adapter's tests
# (engines/llama_cpp.hpp) and of every simulator policy on the same engine
# (engines/llama_cpp_replay.hpp) and the CLI in build/llama (Debug, -Werror) and runs them
# (ctest -L llama_cpp): the llama-server anchor's short run (tools/llama_server/anchor.py, on
# 127.0.0.1) and the CLI's replay tests (cli/replay_*: `replay` against `simulate`, the fidelity
# check, --dump-prompts) included. The main build runs before llama.cpp is installed, so these run
# here only, and the asan-ubsan preset never sees them: build/llama is therefore built under
# AddressSanitizer + UndefinedBehaviorSanitizer with that preset's flags (assert() kept on: Debug
# without its -g, so -g1 holds). Only our binaries are instrumented; the llama.cpp libraries, the
# Python tests and llama-server are not (ASan's interceptors still see llama.cpp's mallocs; LSan
# finds no leak there, so nothing is suppressed).
# Without PyPI it is skipped, loudly, like scripts/test.d/python.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
start=$(date +%s)
python=${PYTHON:-python3}
prefix=${LLAMA_CPP_PREFIX:-/opt/llama.cpp}

LLAMA_CPP_SERVER=1 scripts/install-llama-cpp.sh
if [[ ! -f "$prefix/include/llama.h" ]]; then
  echo "llama_cpp.sh: llama.cpp is not installed in $prefix; the real-engine tests were NOT run" >&2
  exit 0
fi
echo "llama_cpp.sh: llama.cpp ready after $(( $(date +%s) - start ))s"

venv="$PWD/build/gguf-venv"
if [[ ! -x "$venv/bin/python" ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "gguf==0.19.0" "numpy>=1.22"
then
  echo "llama_cpp.sh: gguf/numpy could not be installed from PyPI; the real-engine tests were" \
       "NOT run" >&2
  exit 0
fi

# The asan-ubsan preset's flags and test environment (CMakePresets.json).
sanitize="-fsanitize=address,undefined"
cmake -S . -B build/llama -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG= \
  "-DCMAKE_CXX_FLAGS=-O1 -g1 $sanitize -fno-sanitize-recover=all -fno-omit-frame-pointer" \
  "-DCMAKE_EXE_LINKER_FLAGS=$sanitize" \
  -DHYBRIDCACHE_WARNINGS_AS_ERRORS=ON -DHYBRIDCACHE_TEST_ONLY=engines \
  -DHYBRIDCACHE_TEST_HEADERS=OFF -DHYBRIDCACHE_TEST_CONSUMPTION=OFF \
  -DHYBRIDCACHE_BUILD_EXAMPLES=OFF -DHYBRIDCACHE_BUILD_TOOLS=ON \
  "-DHYBRIDCACHE_GGUF_PYTHON=$venv/bin/python" "-DCMAKE_PREFIX_PATH=$prefix" >/dev/null
cmake --build build/llama --target test_engines test_engines_replay hybridcache_cli -j"$(nproc)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/llama -L llama_cpp --output-on-failure
echo "llama_cpp.sh: done in $(( $(date +%s) - start ))s"
