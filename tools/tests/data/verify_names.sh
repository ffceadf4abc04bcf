#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# CLI tests of the file names of `hybridcache vectors` / `verify` (issue #25 item 4;
# tools/tests/verify_names.cmake).
# usage: verify_names.sh HYBRIDCACHE GOLDEN CASE — GOLDEN holds a/ (vectors) and cand_ok/ (the
# library's own candidate) from the fixture hc_golden; the case builds its directory from them
# under GOLDEN/names_CASE, runs verify, prints its output, then "verify_exit=N".
hc=$1
golden=$2
case_name=$3
dir=$golden/names_$case_name
rm -rf "$dir" || exit 1

# rename DIR SED: renames every .npy file below DIR by the sed script SED on its base name.
rename() {
  find "$1" -name '*.npy' | while read -r f; do
    b=$(basename "$f" | sed "$2")
    [ "$b" = "$(basename "$f")" ] || mv "$f" "$(dirname "$f")/$b"
  done
}

case $case_name in
  # --candidate pointed at a copy of the vectors folder, RoPE case only (its input and its output
  # are both "keys").
  vectors_copy_rope)
    cp -r "$golden/a" "$dir"
    "$hc" verify --vectors "$golden/a" --candidate "$dir" --filter rope/realign/half_split/full/unscaled/bf16 ;;
  # ... every case.
  vectors_copy)
    cp -r "$golden/a" "$dir"
    "$hc" verify --vectors "$golden/a" --candidate "$dir" ;;
  # The library's candidate without one case: skipped (exit 0), or an error with --require-all.
  missing_case)
    cp -r "$golden/cand_ok" "$dir" && rm -r "$dir/rope/realign/interleaved/full/unscaled/fp32"
    "$hc" verify --vectors "$golden/a" --candidate "$dir" --quiet ;;
  missing_case_require_all)
    cp -r "$golden/cand_ok" "$dir" && rm -r "$dir/rope/realign/interleaved/full/unscaled/fp32"
    "$hc" verify --vectors "$golden/a" --candidate "$dir" --quiet --require-all ;;
  correct_candidate)
    "$hc" verify --vectors "$golden/a" --candidate "$golden/cand_ok" --quiet --require-all ;;
  # An engine still writing 0.1's names <case>/<key>.npy.
  old_candidate_names)
    cp -r "$golden/cand_ok" "$dir" && rename "$dir" 's/^out_//'
    "$hc" verify --vectors "$golden/a" --candidate "$dir" --quiet ;;
  # A vectors folder in 0.1's layout (format_version 2: inputs <input>.npy, references
  # expected_<key>.npy), made from a/ by renaming, against the library's candidate.
  format2_vectors)
    cp -r "$golden/a" "$dir" && rename "$dir" 's/^in_//; s/^ref_/expected_/' &&
      sed -i 's|/in_|/|g; s|/ref_|/expected_|g; s|"format_version": 3|"format_version": 2|' "$dir/manifest.json"
    "$hc" verify --vectors "$dir" --candidate "$golden/cand_ok" --quiet --require-all ;;
  # A copy of that 0.1 vectors folder as the candidate (against the 0.2 vectors).
  format2_copy)
    cp -r "$golden/a" "$dir" && rename "$dir" 's/^in_//; s/^ref_/expected_/' &&
      sed -i 's|/in_|/|g; s|/ref_|/expected_|g; s|"format_version": 3|"format_version": 2|' "$dir/manifest.json"
    "$hc" verify --vectors "$golden/a" --candidate "$dir" --filter rope/realign/interleaved/full/unscaled/fp32 ;;
  *) echo "unknown case $case_name"; exit 1 ;;
esac
echo "verify_exit=$?"
