#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer target tests/fuzz/store_fuzz.cpp with clang++ (fuzzer + ASan + UBSan)
# and runs it for HC_FUZZ_SECONDS (default 45) seconds. Exits non-zero on a crash, a leak, a
# sanitizer report or a disagreement with the reference model (the target aborts).
set -euo pipefail
cd "$(dirname "$0")/../.."

cxx=${HC_FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found (scripts/install-deps.sh installs clang)" >&2
  exit 1
fi
out=build/fuzz
mkdir -p "$out/corpus"
echo "fuzz: building $out/store_fuzz with $cxx"
"$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -DHYBRIDCACHE_ASSERTIONS=1 -Iinclude -Itests \
  tests/fuzz/store_fuzz.cpp -o "$out/store_fuzz"

# Seeds: a pool sequence and a namespace encoding.
printf '\x00\x04\x00\x00\x00\x08\x03\x00\x00\x00\x01\x08\x03\x00\x00\x00\x02\x08' > "$out/corpus/seed_pool"
printf '\x01HCNS\x01\x01\x03\x00\x00\x00org\x00' > "$out/corpus/seed_ns"

seconds=${HC_FUZZ_SECONDS:-45}
echo "fuzz: running for ${seconds}s"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
"$out/store_fuzz" -max_total_time="$seconds" -max_len=2048 -rss_limit_mb=2048 \
  -print_final_stats=1 "$out/corpus"
echo "fuzz: no crash in ${seconds}s"
