#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets with clang++ (fuzzer + ASan + UBSan) and runs each briefly:
#   tests/fuzz/store_fuzz.cpp    HC_FUZZ_SECONDS (default 30) seconds
#   tests/fuzz/weights_fuzz.cpp  HC_FUZZ_WEIGHTS_SECONDS (default 10) seconds: the overlap-weights
#                                parser
#   tests/fuzz/readers_fuzz.cpp  HC_FUZZ_READERS_SECONDS (default 25) seconds: every trace reader
#                                of `hybridcache simulate` (tools/hybridcache/sim_readers.cpp, which
#                                needs nlohmann-json's headers)
#   tests/fuzz/npy_fuzz.cpp      HC_FUZZ_NPY_SECONDS (default 10) seconds: the .npy reader
#                                (npy::from_bytes / npy::load, issue #21)
#   tests/fuzz/manifest_fuzz.cpp HC_FUZZ_MANIFEST_SECONDS (default 10) seconds: the manifest
#                                reader of `hybridcache verify` (tools/hybridcache/
#                                verify_manifest.hpp; needs Eigen's and nlohmann-json's headers)
#   tests/fuzz/tree_policy_fuzz.cpp HC_FUZZ_TREE_SECONDS (default 20) seconds: state_policy's
#                                engine calls in any order with stale, foreign and invented
#                                handles, differential (a prompt extended from its match vs from
#                                the root)
# Exits non-zero on a crash, a leak, a sanitizer report, an untyped exception or a disagreement
# with the reference model (the targets abort).
set -euo pipefail
cd "$(dirname "$0")/../.."

cxx=${HC_FUZZ_CXX:-clang++}
if ! command -v "$cxx" >/dev/null 2>&1; then
  echo "fuzz: $cxx not found (scripts/install-deps.sh installs clang)" >&2
  exit 1
fi
out=build/fuzz

# build NAME SOURCE... : compiles a libFuzzer target (fuzzer + ASan + UBSan) to $out/NAME.
build() {
  local name=$1
  shift
  echo "fuzz: building $out/$name with $cxx"
  "$cxx" -std=c++20 -O1 -g -fno-omit-frame-pointer \
    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -DHYBRIDCACHE_ASSERTIONS=1 -Iinclude -Itests -Itools \
    "$@" -o "$out/$name"
}

# run NAME SECONDS MAX_LEN CORPUS [FLAG...] : runs $out/NAME on CORPUS for SECONDS (extra libFuzzer
# flags after the corpus); non-zero on any finding.
run() {
  local name=$1 seconds=$2 max_len=$3 corpus=$4
  shift 4
  echo "fuzz: running $name for ${seconds}s"
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  "$out/$name" -max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 \
    -print_final_stats=1 "$@" "$corpus"
  echo "fuzz: $name: no crash in ${seconds}s"
}

mkdir -p "$out/corpus"
build store_fuzz tests/fuzz/store_fuzz.cpp
# Seeds: a pool sequence and a namespace encoding.
printf '\x00\x04\x00\x00\x00\x08\x03\x00\x00\x00\x01\x08\x03\x00\x00\x00\x02\x08' > "$out/corpus/seed_pool"
printf '\x01HCNS\x01\x01\x03\x00\x00\x00org\x00' > "$out/corpus/seed_ns"
run store_fuzz "${HC_FUZZ_SECONDS:-30}" 2048 "$out/corpus"

# The overlap-weights parser.
build weights_fuzz tests/fuzz/weights_fuzz.cpp
mkdir -p "$out/corpus_weights"
printf '# depth 1..5\n0 0.1 0 0.2\n0.7\n' > "$out/corpus_weights/seed_text"
printf '4.9e-324 1e-320 2.5e-310\n' > "$out/corpus_weights/seed_subnormal"
printf '1e400 +3 nan\x00 7' > "$out/corpus_weights/seed_bad"
run weights_fuzz "${HC_FUZZ_WEIGHTS_SECONDS:-10}" 4096 "$out/corpus_weights"

# The trace readers: the first byte picks the reader (see the target's file comment).
build readers_fuzz tests/fuzz/readers_fuzz.cpp tools/hybridcache/sim_readers.cpp
rc="$out/readers_corpus"
mkdir -p "$rc"
printf '\000[1, 2, 3]\n{"tokens": [4], "namespace": "t", "arrival": 0.5}\n{"segments": [[1], [2]], "query_last": true}\n' > "$rc/seed_tokens"
printf '\001hello world\nhello there\n' > "$rc/seed_text"
printf '\003{"input": "a doc here", "instructions": ["q1", "q2"]}\n' > "$rc/seed_leval"
printf '\004[{"conversations": [{"from": "human", "value": "hi"}]}]' > "$rc/seed_sharegpt"
printf '\005{"timestamp": 0, "input_length": 6, "hash_ids": [1, 18446744073709551615]}\n{"timestamp": 3, "hash_ids": [1]}\n' > "$rc/seed_mooncake"
printf '\006[{"ctxs": [{"title": "A", "text": "x y"}], "question": "q?"}]' > "$rc/seed_musique"
printf '\007{"context": "Passage 1:\\nabc\\nPassage 2:\\ndef\\n"}\n' > "$rc/seed_multi_news"
run readers_fuzz "${HC_FUZZ_READERS_SECONDS:-25}" 4096 "$rc"

# The .npy reader. -malloc_limit_mb=64: an input of at most 4 KiB must never make it allocate
# more (a header that lies about its size used to allocate 1-4 GiB).
build npy_fuzz tests/fuzz/npy_fuzz.cpp
nc="$out/npy_corpus"
mkdir -p "$nc"
npy_seed() { # FILE DESCR SHAPE DATA_BYTES: a version-1.0 file of DATA_BYTES bytes 0x01..
  local h="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  { printf '\223NUMPY\001\000'; printf "\\$(printf %03o "${#h}")"; printf '\000%s' "$h"
    head -c "$4" /dev/zero | tr '\0' '\1'; } > "$nc/$1"
}
npy_seed seed_f4 '<f4' '(2, 3)' 24
npy_seed seed_f8 '<f8' '(3,)' 24
npy_seed seed_u1 '|u1' '(4, 1, 2)' 8
npy_seed seed_f2 '<f2' '()' 2
npy_seed seed_i8 '<i8' '(0,)' 0
npy_seed seed_wrap '<f4' '(9223372036854776320, 2)' 64
run npy_fuzz "${HC_FUZZ_NPY_SECONDS:-10}" 4096 "$nc" -malloc_limit_mb=64

# The manifest reader of `hybridcache verify`.
build manifest_fuzz tests/fuzz/manifest_fuzz.cpp -I/usr/include/eigen3
mc="$out/manifest_corpus"
mkdir -p "$mc"
printf '{"format_version": 3, "cases": [{"name": "state/gla/outputs/T64/fp32", "expected": {"o": {"reference": "state/gla/ref_o.npy", "bound_weight": "state/gla/bound_o.npy", "shape": [1, 4, 2, 3], "depth_per_token": 18, "depth_extra": 17, "steps": 4, "time_axis": 1}}}]}\n' > "$mc/seed_tol"
printf '{"format_version": 2, "cases": [{"name": "select/selection/tail", "expected": {"key": {"reference": "select/selection/tail/expected_key.npy", "compare": "exact", "shape": [5]}}}]}\n' > "$mc/seed_exact"
printf '{"format_version": 2, "cases": [{"name": "../x", "expected": {"a": {"reference": "/etc/passwd", "compare": "exact", "shape": [18446744073709551615, 2]}}}]}\n' > "$mc/seed_hostile"
run manifest_fuzz "${HC_FUZZ_MANIFEST_SECONDS:-10}" 4096 "$mc"

# state_policy's engine-facing calls, differential (see the target's file comment). Seed:
# options byte, then match / extend from the match / decode block / admit / unpin / erase ops.
build tree_policy_fuzz tests/fuzz/tree_policy_fuzz.cpp
tc="$out/tree_policy_corpus"
mkdir -p "$tc"
printf '\011\000\005\021\001\002\000\003\004\000\004\001\001\002\005\001\001\003\006\002\000\002\001\001\005\000\000' > "$tc/seed_ops"
run tree_policy_fuzz "${HC_FUZZ_TREE_SECONDS:-20}" 1024 "$tc"
