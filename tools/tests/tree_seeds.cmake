# SPDX-License-Identifier: Apache-2.0
# scripts/tree_seeds.sh (issue #24's targets per seed) on the embedded multi-turn trace only (the
# data directory is absent, so the other traces are skipped), two seeds, 60 sessions (seed 2 loses
# a cell there, so the list of lost cells is checked too); then
# tree_seeds_check.py recomputes its table from the CSVs on its own.
find_package(Python3 COMPONENTS Interpreter QUIET)
find_program(_hc_bash bash)
if(Python3_Interpreter_FOUND AND _hc_bash)
  set(_hc_seeds_dir "${CMAKE_CURRENT_BINARY_DIR}/tree_seeds")
  add_test(NAME cli/scripts/tree_seeds
    COMMAND "${CMAKE_COMMAND}" -E env "HYBRIDCACHE_BIN=$<TARGET_FILE:hybridcache_cli>"
            "DATA=${_hc_seeds_dir}/no-data" SEEDS=1,2 SESSIONS=60
            "${_hc_bash}" "${PROJECT_SOURCE_DIR}/scripts/tree_seeds.sh" "${_hc_seeds_dir}/out")
  set_tests_properties(cli/scripts/tree_seeds PROPERTIES
    FIXTURES_SETUP hc_tree_seeds LABELS "cli;sim"
    PASS_REGULAR_EXPRESSION "\\| seed \\| unlimited \\| separate \\| joint \\|")
  add_test(NAME cli/scripts/tree_seeds_check
    COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/tree_seeds_check.py"
            "${_hc_seeds_dir}/out" 1,2)
  set_tests_properties(cli/scripts/tree_seeds_check PROPERTIES
    FIXTURES_REQUIRED hc_tree_seeds LABELS "cli;sim")
endif()
