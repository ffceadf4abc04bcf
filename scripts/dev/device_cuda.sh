#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs the `cuda` preset's device work from a build made on another machine: the device tests,
# the example, the benchmark (twice, to show its run-to-run spread) and compute-sanitizer over the
# tests. For a GPU machine that has the CUDA toolkit but none of the project's host dependencies
# (the binaries need only libc, libstdc++, libcudart and libcublas).
#
#   cmake --preset cuda -B build/cuda && cmake --build build/cuda -j2     # where nvcc is
#   scripts/dev/device_cuda.sh build/cuda OUTDIR                          # where the GPU is
#
# The must-not-compile tests of the preset need nvcc and the host headers, so they are left to
# `ctest --preset cuda` on the build machine. Exit status: non-zero when a test, the example or a
# sanitizer run failed; the logs in OUTDIR say which.
set -u
build=${1:-build/cuda}
out=${2:-${OUT:-/tmp/hybridcache_device}}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
tests=$build/tests/cuda/test_cuda
bench=$build/bench/cuda/bench_cuda
example=$build/examples/06_cuda/example_06_cuda
status=0
fail() { echo "FAILED: $*"; status=1; }

{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
    --format=csv
  command -v nvcc >/dev/null && nvcc --version | tail -2
  for b in "$tests" "$bench" "$example"; do
    ldd "$b" | grep -q "not found" && { ldd "$b"; fail "missing library for $b"; }
  done
} 2>&1 | tee "$out/device.txt"

# Device tests: every doctest case; none may skip on a GPU machine.
"$tests" 2>&1 | tee "$out/test_cuda.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "test_cuda"
grep -q HYBRIDCACHE_SKIP "$out/test_cuda.log" && fail "a device test skipped on a GPU machine"

"$example" 2>&1 | tee "$out/example.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "example_06_cuda"

"$bench" --smoke >"$out/bench_smoke.log" 2>&1 || fail "bench_cuda --smoke"
for round in 1 2; do
  "$bench" 2>&1 | tee "$out/bench_$round.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || fail "bench_cuda round $round"
done

# compute-sanitizer: memcheck over every test, racecheck and synccheck over the kernels that
# use shared memory and barriers (realign tiles, score reductions, top-k). Each is time-boxed.
if command -v compute-sanitizer >/dev/null; then
  cs() {
    local tool=$1 filter=$2 log=$out/sanitizer_$1.log
    timeout "${SANITIZER_TIMEOUT:-150}" compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$tests" ${filter:+--test-case="$filter"} >"$log" 2>&1
    local rc=$?
    tail -4 "$log"
    case $rc in
      0) echo "compute-sanitizer $tool: clean" ;;
      124) echo "compute-sanitizer $tool: time-boxed out (not a failure)" ;;
      *) fail "compute-sanitizer $tool (rc $rc)" ;;
    esac
  }
  cs memcheck ""
  cs racecheck "*realign*,*sparse_q*,*select_key*"
  cs synccheck "*realign*,*sparse_q*,*select_key*"
fi 2>&1 | tee "$out/sanitizer.txt"
grep -q "^FAILED" "$out/device.txt" "$out/sanitizer.txt" && status=1
exit $status
