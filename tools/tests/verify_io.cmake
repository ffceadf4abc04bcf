# SPDX-License-Identifier: Apache-2.0
# `hybridcache verify` / `vectors` on hostile files and directories (issue #21 items 6, 7, 11):
# .npy headers that lie about their size, manifest paths and symbolic links that leave --vectors
# or --candidate, malformed manifests, and links planted in --out / --candidate-out. Each case
# builds its tiny directories in the test (tools/tests/data/verify_io.sh) and checks the message
# and the exit status ("rc=": 0 pass, 1 bad input or failed check, 2 bad command line). The
# regexes avoid ';' (a CMake list separator: it would split one regex into alternatives).
set(_hc_vio_dir "${CMAKE_CURRENT_BINARY_DIR}/verify_io")
file(MAKE_DIRECTORY "${_hc_vio_dir}")
function(_hc_verify_io name regex)
  add_test(NAME cli/verify_io/${name}
    COMMAND sh "${CMAKE_CURRENT_LIST_DIR}/data/verify_io.sh" $<TARGET_FILE:hybridcache_cli> ${name}
    WORKING_DIRECTORY "${_hc_vio_dir}")
  set_tests_properties(cli/verify_io/${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}"
    FAIL_REGULAR_EXPRESSION "terminate|Segmentation|Aborted|Floating point|json.exception|stoull|bad magic"
    LABELS cli TIMEOUT 120)
endfunction()

# .npy headers (item 6): the wrapped count passed before; the 1 GiB declaration allocated first.
_hc_verify_io(wrapped_shape "'npy file' = \"[^\"]*v/k/a.npy\": has shape \\(9223372036854776320, 2\\) of <f4 whose size overflows.*rc=1")
_hc_verify_io(wrapped_digits_fast "'npy file' = \"[^\"]*k/r.npy\": has shape\\[0\\] = \"18446744073709551617024\", above the largest size.*rc=1")
_hc_verify_io(declared_too_big "'npy file' = \"[^\"]*v/k/a.npy\": needs 1073741824 data bytes .* but has 4096.*rc=1")
# Paths (item 7): confined to --vectors / --candidate, symbolic links resolved.
_hc_verify_io(case_name_escape "'manifest' = \"v/manifest.json\": cases\\[0\\].name = \"../../../outside\" has a '..' component.*rc=1")
_hc_verify_io(absolute_reference "cases\\[0\\].expected\\[\"a\"\\].reference = \"/etc/passwd\" is an absolute path.*rc=1")
_hc_verify_io(dotdot_weight "cases\\[0\\].expected\\[\"o\"\\].bound_weight = \"k/../../w.npy\" has a '..' component.*rc=1")
_hc_verify_io(symlink_reference "'--vectors' = \"[^\"]*\": cases\\[0\\].expected\\[\"a\"\\].reference = \"k/a.npy\" resolves outside this directory \\(through a symbolic link\\).*rc=1")
_hc_verify_io(symlink_candidate "'--candidate' = \"[^\"]*\": the candidate of cases\\[0\\].expected\\[\"a\"\\] \\(k/out_a.npy\\) = \"k/out_a.npy\" resolves outside.*rc=1")
_hc_verify_io(truncated_manifest "'manifest' = \"v/manifest.json:1\": malformed JSON \\(truncated\\?\\).*rc=1")
_hc_verify_io(wrong_type "'manifest' = \"v/manifest.json\": cases\\[0\\].name must be a string, got a JSON number.*rc=1")
_hc_verify_io(short_weights "the bound weights of cases\\[0\\].expected\\[\"o\"\\] has 2 elements but the manifest's shape has 4.*rc=1")
_hc_verify_io(zero_extent "the reference of cases\\[0\\].expected\\[\"o\"\\] has 4 elements but the manifest's shape has 0.*rc=1")
_hc_verify_io(tiny_ok "2 arrays checked .*, 0 failed, 0 missing\nrc=0")
# Manifest formats and file names (issue #25 item 4).
_hc_verify_io(format2_ok "note: v/manifest.json has format_version 2 \\(hybridcache 0.1's file names, deprecated\\).*1 arrays checked .*, 0 failed, 0 missing\nrc=0")
_hc_verify_io(format1 "'manifest' = \"v/manifest.json\": format_version = 1 is not a vectors format this hybridcache reads: it reads 3 \\(hybridcache 0.2's file names\\) and, deprecated, 2 \\(0.1's\\). regenerate the vectors with `hybridcache vectors --out DIR`\nrc=1")
_hc_verify_io(format4 "format_version = 4 is not a vectors format .* \\(written by a newer hybridcache\\?\\)\nrc=1")
_hc_verify_io(reference_named_out "cases\\[0\\].expected\\[\"a\"\\].reference = \"k/out_a.npy\" is named like a candidate output \\(out_\\*\\).*rc=1")
_hc_verify_io(old_name_only "error: no candidate output for case k \\(expected c/k/out_a.npy\\). found c/k/a.npy, hybridcache 0.1's name for it.*error: 1 case\\(s\\) hold outputs under hybridcache 0.1's names.*rc=1")
# --out / --candidate-out (item 11): never written through a planted symbolic link.
_hc_verify_io(out_symlink_file "'--out' = \"out/manifest.json\": is a symbolic link. refusing to write through it.*rc=1\nvictim=precious")
_hc_verify_io(out_symlink_dir "'--out' = \"out/state[^\"]*\": is a symbolic link. refusing to write through it.*rc=1\nvictim_files=0")
_hc_verify_io(candidate_out_symlink "'--candidate-out' = \"cand/select/selection/tail/out_tail.npy\": is a symbolic link. refusing.*rc=1\nvictim=precious")
