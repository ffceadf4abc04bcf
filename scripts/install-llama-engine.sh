#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What the real-engine tests need (DESIGN §9), installed before scripts/test.sh's builds:
# llama.cpp and llama-server, built from the source vendored in the PyPI sdist of
# llama-cpp-python (LLAMA_CPP_SERVER=1 scripts/install-llama-cpp.sh; skipped when the same version
# is installed; the server adds ~5 min on 2 shared cores once), and a venv with the PyPI packages
# gguf + numpy (build/gguf-venv) that writes the tiny random-weight GGUF test models
# (tools/gguf/make_models.py, the ctest fixture engines/models).
#
# With both in place, every configure of the project finds llama.cpp (in /opt/llama.cpp:
# cmake/hybridcacheFindLlama.cmake) and the venv (tests/engines/CMakeLists.txt), so the `dev`
# preset builds the adapter's tests (engines/llama_cpp.hpp), those of every simulator policy on
# the same engine (engines/llama_cpp_replay.hpp) and the CLI's `replay` with -Werror and runs them
# (ctest label llama_cpp: the llama-server anchor's short run on 127.0.0.1 and the CLI's
# cli/replay_* included), and the `asan-ubsan` preset builds and runs the same under
# AddressSanitizer + UndefinedBehaviorSanitizer. Only our binaries are instrumented; the llama.cpp
# libraries, the Python tests and llama-server are not (ASan's interceptors still see llama.cpp's
# mallocs; LSan finds no leak there, so nothing is suppressed). (Until 2026-12-03 this ran after
# the other stages and built its own sanitized tree, build/llama, with a second sanitized CLI.)
# Without PyPI nothing is installed and the real-engine tests are not built, which it says loudly,
# like scripts/test.d/python.sh; the status is still 0.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
python=${PYTHON:-python3}
prefix=${LLAMA_CPP_PREFIX:-/opt/llama.cpp}

LLAMA_CPP_SERVER=1 scripts/install-llama-cpp.sh
if [[ ! -f "$prefix/include/llama.h" ]]; then
  echo "install-llama-engine.sh: llama.cpp is not installed in $prefix; the real-engine tests" \
       "will NOT be built or run" >&2
  exit 0
fi
echo "install-llama-engine.sh: llama.cpp ready after $(( $(date +%s) - start ))s"

venv="$PWD/build/gguf-venv"
if [[ ! -x "$venv/bin/python" ]]; then
  rm -rf "$venv"
  "$python" -m venv "$venv"
fi
if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "gguf==0.19.0" "numpy>=1.22"
then
  rm -rf "$venv"  # the builds would take a venv without gguf for the models' python
  echo "install-llama-engine.sh: gguf/numpy could not be installed from PyPI; the real-engine" \
       "tests will be built but NOT run (no test models)" >&2
  exit 0
fi
echo "install-llama-engine.sh: done in $(( $(date +%s) - start ))s"
