#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The whole test suite, as CI runs it: installs what is missing, then
#   llama.cpp  - scripts/install-llama-engine.sh: llama.cpp, llama-server and the test models'
#                python, so that the two builds below find them and build the real-engine tests
#   dev        - Debug + -Werror: unit tests, CLI tests, examples, header and consumption tests,
#                the real-engine tests (llama.cpp); the benchmarks compile too (timed only in the
#                bench preset)
#   asan-ubsan - the unit tests, the CLI's and the real-engine tests under AddressSanitizer +
#                UndefinedBehaviorSanitizer
#   tsan       - the concurrent store/segment tests under ThreadSanitizer
#   cuda       - when nvcc is present: every .cu test and benchmark compiles (no GPU needed)
#   extra      - any scripts/test.d/*.sh (fuzz smoke runs, Python module, packaging)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh

start=$(date +%s)
stage() { echo; echo "==== $* ($(( $(date +%s) - start ))s)"; }

stage "llama.cpp (the real engine: installed before the builds that test it)"
scripts/install-llama-engine.sh

stage "dev"
cmake --workflow --preset dev

stage "asan-ubsan"
cmake --workflow --preset asan-ubsan

stage "tsan"
cmake --workflow --preset tsan

if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  stage "cuda (compile only without a GPU)"
  cmake --workflow --preset cuda
else
  stage "cuda skipped: nvcc not found"
fi

shopt -s nullglob
for extra in scripts/test.d/*.sh; do
  stage "$extra"
  bash "$extra"
done

stage "done"
