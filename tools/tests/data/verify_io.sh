#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# CLI tests of `hybridcache verify` and `vectors` on hostile files and directories (issue #21
# items 6, 7, 11; tools/tests/verify_io.cmake).
# usage: verify_io.sh HYBRIDCACHE CASE — builds the case's tiny vectors/candidate directories in
# the working directory (.npy files written byte for byte here), runs the command, prints its
# output (at most 4000 bytes), then "rc=N" (its exit status: 0 pass, 1 bad input or failed
# check, 2 bad command line) and what the case checks afterwards.
hc=$1
case_name=$2
post=
dir=case_$case_name
rm -rf "$dir" && mkdir "$dir" && cd "$dir" || exit 1

# npy DESCR SHAPE DATA_BYTES FILE: a version-1.0 .npy file of DATA_BYTES zero bytes, its header
# padded with spaces and ended by '\n' to a multiple of 64 bytes as numpy writes it (so the data
# are aligned for verify's memory-mapped path); shorter than 256 bytes, so the length's high
# byte is 0.
npy() {
  h="{'descr': '$1', 'fortran_order': False, 'shape': $2, }"
  while [ $(( (10 + ${#h} + 1) % 64 )) -ne 0 ]; do h="$h "; done
  h="$h
"
  n=${#h}
  mkdir -p "$(dirname "$4")"
  { printf '\223NUMPY\001\000'; printf "\\$(printf %03o "$n")"; printf '\000'; printf '%s' "$h"
    head -c "$3" /dev/zero; } > "$4"
}
# manifest CASES [FORMAT]: v/manifest.json with the given "cases" array body (format_version 3).
manifest() { mkdir -p v; printf '{"format_version": %s, "cases": [%s]}\n' "${2:-3}" "$1" > v/manifest.json; }
# An exact entry and a tolerance entry (reference + bound weights) of N elements.
exact() { printf '{"reference": "%s", "compare": "exact", "shape": [%s]}' "$1" "$2"; }
tol() {
  printf '{"reference": "%s", "bound_weight": "%s", "shape": [%s], "depth_per_token": 1, "depth_extra": 0, "steps": 1, "time_axis": null}' "$1" "$2" "$3"
}
verify() { out=$("$hc" verify --vectors v --candidate "${1:-c}" 2>&1); rc=$?; }
vectors() { out=$("$hc" vectors "$@" 2>&1); rc=$?; }

case $case_name in
  # A shape whose element count wraps: (2^63 + 512, 2) over 1024 floats = 2^64 + 1024 -> 1024.
  wrapped_shape)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 1024)}}"
    npy '<f4' '(9223372036854776320, 2)' 4096 v/k/a.npy
    npy '<f4' '(9223372036854776320, 2)' 4096 c/k/out_a.npy
    verify ;;
  # A 23-digit dimension that wraps to 1024 (1000 * 2^64 + 1024) on the float64 fast path.
  wrapped_digits_fast)
    manifest "{\"name\": \"k\", \"expected\": {\"o\": $(tol k/r.npy k/w.npy 1024)}}"
    for f in v/k/r.npy v/k/w.npy c/k/out_o.npy; do npy '<f8' '(18446744073709551617024,)' 8192 $f; done
    verify ;;
  # A 4 KB file declaring 2^28 floats.
  declared_too_big)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 1024)}}"
    npy '<f4' '(268435456,)' 4096 v/k/a.npy
    npy '<f4' '(1024,)' 4096 c/k/out_a.npy
    verify ;;
  # A case name climbing out of --candidate to a file that passes.
  case_name_escape)
    manifest "{\"name\": \"../../../outside\", \"expected\": {\"a\": $(exact k/a.npy 4)}}"
    npy '<f8' '(4,)' 32 v/k/a.npy
    npy '<f8' '(4,)' 32 outside/a.npy
    mkdir -p c/d/e
    verify c/d/e ;;
  # A reference path naming a system file.
  absolute_reference)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact /etc/passwd 4)}}"
    npy '<f8' '(4,)' 32 c/k/out_a.npy
    verify ;;
  dotdot_weight)
    manifest "{\"name\": \"k\", \"expected\": {\"o\": $(tol k/r.npy k/../../w.npy 4)}}"
    npy '<f8' '(4,)' 32 v/k/r.npy; npy '<f8' '(4,)' 32 v/w.npy; npy '<f8' '(4,)' 32 c/k/out_o.npy
    verify ;;
  # A reference inside --vectors that is a symbolic link to a file outside.
  symlink_reference)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 4)}}"
    npy '<f8' '(4,)' 32 outside.npy
    mkdir -p v/k && ln -s ../../outside.npy v/k/a.npy
    npy '<f8' '(4,)' 32 c/k/out_a.npy
    verify ;;
  # A candidate case directory that is a symbolic link out of --candidate.
  symlink_candidate)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 4)}}"
    npy '<f8' '(4,)' 32 v/k/a.npy
    npy '<f8' '(4,)' 32 elsewhere/out_a.npy
    mkdir -p c && ln -s ../elsewhere c/k
    verify ;;
  truncated_manifest)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 4)}}"
    head -c 40 v/manifest.json > v/m && mv v/m v/manifest.json
    npy '<f8' '(4,)' 32 c/k/out_a.npy
    verify ;;
  wrong_type)
    manifest '{"name": 7, "expected": {}}'
    mkdir -p c
    verify ;;
  # Bound weights with fewer elements than the reference (read past its end before).
  short_weights)
    manifest "{\"name\": \"k\", \"expected\": {\"o\": $(tol k/r.npy k/w.npy 4)}}"
    npy '<f4' '(4,)' 16 v/k/r.npy; npy '<f4' '(2,)' 8 v/k/w.npy; npy '<f4' '(4,)' 16 c/k/out_o.npy
    verify ;;
  # time_axis on a zero extent (a division by zero in the fast path before).
  zero_extent)
    manifest "{\"name\": \"k\", \"expected\": {\"o\": {\"reference\": \"k/r.npy\", \"bound_weight\": \"k/w.npy\", \"shape\": [4, 0], \"depth_per_token\": 1, \"depth_extra\": 0, \"steps\": 1, \"time_axis\": 1}}}"
    for f in v/k/r.npy v/k/w.npy c/k/out_o.npy; do npy '<f8' '(4,)' 32 $f; done
    verify ;;
  # A valid tiny set still passes (both paths).
  tiny_ok)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy '2, 2'), \"o\": $(tol k/r.npy k/w.npy 8)}}"
    npy '<i8' '(2, 2)' 32 v/k/a.npy; npy '<i8' '(2, 2)' 32 c/k/out_a.npy
    for f in v/k/r.npy v/k/w.npy c/k/out_o.npy; do npy '<f8' '(8,)' 64 $f; done
    verify ;;
  # Manifest formats (issue #25 item 4): 2 (0.1's names) is read with a note, 1 and 4 are not.
  format2_ok)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 4)}}" 2
    npy '<i8' '(4,)' 32 v/k/a.npy; npy '<i8' '(4,)' 32 c/k/out_a.npy
    verify ;;
  format1)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 4)}}" 1
    verify ;;
  format4)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/a.npy 4)}}" 4
    verify ;;
  # A reference named like a candidate output: refused before anything is read.
  reference_named_out)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/out_a.npy 4)}}"
    npy '<i8' '(4,)' 32 v/k/out_a.npy; npy '<i8' '(4,)' 32 c/k/out_a.npy
    verify ;;
  # Only 0.1-named outputs (c/k/a.npy): an error naming the file, not "nothing checked".
  old_name_only)
    manifest "{\"name\": \"k\", \"expected\": {\"a\": $(exact k/ref_a.npy 4)}}"
    npy '<i8' '(4,)' 32 v/k/ref_a.npy; npy '<i8' '(4,)' 32 c/k/a.npy
    verify ;;
  # vectors --out: a planted symbolic link to a file (manifest.json) and to a directory (state).
  out_symlink_file)
    echo precious > victim.txt
    mkdir out && ln -s ../victim.txt out/manifest.json
    vectors --out out
    post="victim=$(cat victim.txt)" ;;
  out_symlink_dir)
    mkdir victim_dir out && ln -s ../victim_dir out/state
    vectors --out out
    post="victim_files=$(find victim_dir -type f | wc -l)" ;;
  candidate_out_symlink)
    echo precious > victim.txt
    mkdir -p cand/select/selection/tail && ln -s ../../../../victim.txt cand/select/selection/tail/out_tail.npy
    vectors --out out --candidate-out cand
    post="victim=$(cat victim.txt)" ;;
  *) echo "unknown case $case_name"; exit 1 ;;
esac
printf '%s\n' "$out" | head -c 4000
echo "rc=$rc"
[ -n "$post" ] && echo "$post"
exit 0
