# SPDX-License-Identifier: Apache-2.0
# CLI tests of `hybridcache vectors` and `verify`: the vectors regenerate bit-identically, the
# library's own float32 results pass verify, and every injected error (the negative controls of
# issue 15) makes verify exit non-zero.
# The directories start empty: `vectors` overwrites its files but removes none, so files of an
# older layout left in a build tree (0.1's names) would stay beside the new ones.
set(_hc_vd "${CMAKE_CURRENT_BINARY_DIR}/golden")
add_test(NAME cli/vectors/generate
         COMMAND sh -c "rm -rf ${_hc_vd}/a ${_hc_vd}/cand_ok && $<TARGET_FILE:hybridcache_cli> vectors --out ${_hc_vd}/a --candidate-out ${_hc_vd}/cand_ok")
set_tests_properties(cli/vectors/generate PROPERTIES LABELS cli FIXTURES_SETUP hc_golden
  PASS_REGULAR_EXPRESSION "wrote [0-9]+ cases")
add_test(NAME cli/vectors/regenerate
         COMMAND sh -c "rm -rf ${_hc_vd}/b && $<TARGET_FILE:hybridcache_cli> vectors --out ${_hc_vd}/b")
set_tests_properties(cli/vectors/regenerate PROPERTIES LABELS cli FIXTURES_SETUP hc_golden)
add_test(NAME cli/vectors/bit_identical
         COMMAND ${CMAKE_COMMAND} -DA=${_hc_vd}/a -DB=${_hc_vd}/b
                 -P ${CMAKE_CURRENT_LIST_DIR}/scripts/compare_dirs.cmake)
set_tests_properties(cli/vectors/bit_identical PROPERTIES LABELS cli FIXTURES_REQUIRED hc_golden)
add_test(NAME cli/verify/library_passes
         COMMAND hybridcache_cli verify --vectors ${_hc_vd}/a --candidate ${_hc_vd}/cand_ok
                 --require-all --quiet)
set_tests_properties(cli/verify/library_passes PROPERTIES LABELS cli FIXTURES_REQUIRED hc_golden
  PASS_REGULAR_EXPRESSION "arrays checked .*, 0 failed, 0 missing")
add_test(NAME cli/verify/empty_candidate
         COMMAND hybridcache_cli verify --vectors ${_hc_vd}/a --candidate ${_hc_vd}/nothing)
set_tests_properties(cli/verify/empty_candidate PROPERTIES LABELS cli FIXTURES_REQUIRED hc_golden
  WILL_FAIL TRUE)
foreach(_hc_inj transposed_state gate_after_update no_q_scale beta_placement ulp)
  add_test(NAME cli/verify/control_${_hc_inj}
           COMMAND ${CMAKE_COMMAND} -E chdir ${CMAKE_CURRENT_BINARY_DIR} sh -c
                   "$<TARGET_FILE:hybridcache_cli> vectors --out ${_hc_vd}/x_${_hc_inj} --candidate-out ${_hc_vd}/c_${_hc_inj} --inject ${_hc_inj} >/dev/null && $<TARGET_FILE:hybridcache_cli> verify --vectors ${_hc_vd}/a --candidate ${_hc_vd}/c_${_hc_inj} --quiet; echo verify_exit=$?")
  # verify must report failures and exit 1; a crash, a pass or a failed generation does not match.
  set_tests_properties(cli/verify/control_${_hc_inj} PROPERTIES LABELS cli
    FIXTURES_REQUIRED hc_golden
    PASS_REGULAR_EXPRESSION "FAIL state/.*, [1-9][0-9]* failed, 0 missing\nverify_exit=1")
endforeach()
# Negative controls of the sparse-Q and key vectors: a score past its bound, two key tokens of a
# selection swapped, one flipped byte of a chained block key (exact cases name the first
# mismatch), and a NaN plus an +inf output element (the fused fast path must count both).
foreach(_hc_ctl "score_offset;FAIL select/scores/gqa/fp32 scores: .*max err/tol=1"
                "selection_swap;FAIL select/selection/tail key: n=5 exact, 2 differ. first at \\[0\\]"
                "key_byte;FAIL segment/keys/xxh3 blocks: n=576 exact, 1 differ. first at \\[53\\]"
                "non_finite;FAIL state/linear/outputs/T64/bf16 o: .*max err/tol=inf .*, 2 over")
  list(GET _hc_ctl 0 _hc_inj)
  list(GET _hc_ctl 1 _hc_re)
  add_test(NAME cli/verify/control_${_hc_inj}
           COMMAND ${CMAKE_COMMAND} -E chdir ${CMAKE_CURRENT_BINARY_DIR} sh -c
                   "$<TARGET_FILE:hybridcache_cli> vectors --out ${_hc_vd}/x_${_hc_inj} --candidate-out ${_hc_vd}/c_${_hc_inj} --inject ${_hc_inj} >/dev/null && $<TARGET_FILE:hybridcache_cli> verify --vectors ${_hc_vd}/a --candidate ${_hc_vd}/c_${_hc_inj} --quiet; echo verify_exit=$?")
  set_tests_properties(cli/verify/control_${_hc_inj} PROPERTIES LABELS cli
    FIXTURES_REQUIRED hc_golden
    PASS_REGULAR_EXPRESSION "${_hc_re}.*\n.* 1 failed, 0 missing\nverify_exit=1")
endforeach()
