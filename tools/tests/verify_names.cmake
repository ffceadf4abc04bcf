# SPDX-License-Identifier: Apache-2.0
# File names of `hybridcache vectors` / `verify` (issue #25 item 4): inputs, references, bound
# weights and candidate outputs can never be confused. Uses the fixture hc_golden of
# vectors.cmake (golden/a: the vectors, golden/cand_ok: the library's own candidate); each case
# builds its directory in tools/tests/data/verify_names.sh and prints "verify_exit=N" after
# verify's output. The regexes avoid ';' (a CMake list separator), matching it with '.'. No test
# may print a FAIL line: nothing here compares an input with a reference.
set(_hc_vd "${CMAKE_CURRENT_BINARY_DIR}/golden")
function(_hc_verify_names name regex)
  add_test(NAME cli/verify_names/${name}
           COMMAND sh ${CMAKE_CURRENT_LIST_DIR}/data/verify_names.sh
                   $<TARGET_FILE:hybridcache_cli> ${_hc_vd} ${name})
  set_tests_properties(cli/verify_names/${name} PROPERTIES LABELS cli
    FIXTURES_REQUIRED hc_golden PASS_REGULAR_EXPRESSION "${regex}"
    FAIL_REGULAR_EXPRESSION "terminate|Segmentation|Aborted|FAIL [a-z]")
endfunction()

# Every case's file names, enumerated from the manifest and the directories: prefixed in_, ref_,
# bound_ (vectors) and out_ (candidate), nothing else written, the name sets disjoint.
add_test(NAME cli/verify_names/disjoint
         COMMAND ${CMAKE_COMMAND} -DV=${_hc_vd}/a -DC=${_hc_vd}/cand_ok
                 -P ${CMAKE_CURRENT_LIST_DIR}/scripts/vector_names.cmake)
set_tests_properties(cli/verify_names/disjoint PROPERTIES LABELS cli FIXTURES_REQUIRED hc_golden
  PASS_REGULAR_EXPRESSION "[0-9]+ cases: [0-9]+ vectors files .*names disjoint")

# --candidate pointed at a copy of the vectors folder: the RoPE case (whose input and output are
# both keys) names the missing output and the inputs found instead, exit 1 (0.1 compared the
# input keys with the realigned reference and reported FAIL, max err/tol 7.6e5).
_hc_verify_names(vectors_copy_rope
  "0 arrays checked .*error: no candidate output for case rope/realign/half_split/full/unscaled/bf16 \\(expected [^)]*names_vectors_copy_rope/rope/realign/half_split/full/unscaled/bf16/out_keys.npy\\). the directory holds the inputs of case rope/realign/half_split/full/unscaled/bf16 \\([^)]*/in_keys.npy\\): did you point --candidate at the vectors folder\\? \\(1 case\\(s\\) hold vectors files and no output\\)\nverify_exit=1")
# The whole copy: the same message for the first case, and the count of all of them.
_hc_verify_names(vectors_copy
  "error: no candidate output for case state/linear/outputs/T64/bf16 \\(expected [^)]*/out_[a-z_]+.npy\\). the directory holds the inputs of case state/linear/outputs/T64/bf16 .*did you point --candidate at the vectors folder\\? \\(123 case\\(s\\) hold vectors files and no output\\)\nverify_exit=1")
# A correct candidate passes (as cli/verify/library_passes) and one missing case is named, with
# the file verify looked for: skipped without --require-all (exit 0), an error with it (exit 1).
_hc_verify_names(missing_case
  ", 0 failed, 1 missing\n1 expected arrays have no candidate output and were skipped .--require-all fails on them.. first: no candidate output for case rope/realign/interleaved/full/unscaled/fp32 \\(expected [^)]*names_missing_case/rope/realign/interleaved/full/unscaled/fp32/out_keys.npy\\)\nverify_exit=0")
_hc_verify_names(missing_case_require_all
  "MISSING rope/realign/interleaved/full/unscaled/fp32 keys: no candidate output for case rope/realign/interleaved/full/unscaled/fp32 \\(expected [^)]*names_missing_case_require_all/rope/realign/interleaved/full/unscaled/fp32/out_keys.npy\\)\n[0-9]+ arrays checked .*, 0 failed, 1 missing\nverify_exit=1")
_hc_verify_names(correct_candidate
  "^error model: [^\n]*\n[0-9]+ arrays checked .*, 0 failed, 0 missing\nverify_exit=0")
# An engine still writing 0.1's names (<case>/<key>.npy): an error naming the file found, never a
# silent skip.
_hc_verify_names(old_candidate_names
  "error: no candidate output for case state/linear/outputs/T64/bf16 \\(expected [^)]*/out_[a-z_]+.npy\\). found [^ ]*names_old_candidate_names/state/linear/outputs/T64/bf16/[a-z_]+.npy, hybridcache 0.1's name for it: since 0.2 a candidate output is named <case>/out_<key>.npy\n.*error: [0-9][0-9]+ case\\(s\\) hold outputs under hybridcache 0.1's names.*\nverify_exit=1")
# A vectors folder in 0.1's layout (format_version 2: plain input names, expected_<key>.npy
# references), made from golden/a by renaming: still read, with a deprecation note, and the
# library's candidate passes against it.
_hc_verify_names(format2_vectors
  "^note: [^ ]*names_format2_vectors/manifest.json has format_version 2 \\(hybridcache 0.1's file names, deprecated\\).*\n[0-9]+ arrays checked .*, 0 failed, 0 missing\nverify_exit=0")
# ... and a copy of it as the candidate: the hint, from its expected_/bound_ files and manifest.
_hc_verify_names(format2_copy
  "0 arrays checked .*error: no candidate output for case rope/realign/interleaved/full/unscaled/fp32 \\(expected [^)]*/out_keys.npy\\). the directory holds the vectors files of case rope/realign/interleaved/full/unscaled/fp32 \\([^)]*/bound_keys.npy\\): did you point --candidate at the vectors folder\\?.*\nverify_exit=1")
