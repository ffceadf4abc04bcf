# SPDX-License-Identifier: Apache-2.0
# scripts/dev/tree_hindsight.py (issue #24's diagnostic of what a switching rule over the row's
# candidates could reach, docs/design/tree_safeguard.md §21) on a hand-worked tree.csv, and its
# error for a run without the library candidates. The hand-worked file has two library
# candidates (a run from before the third, hybridcache_lru), so the tests name them.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  set(_hc_th "${PROJECT_SOURCE_DIR}/scripts/dev/tree_hindsight.py")
  # By hand (tools/tests/data/tree_hindsight_tiny.csv; engine rows vllm_align and marconi):
  # - T, unlimited: best engine 500 (marconi) > 0.1 % of 10000; row 300 / 500 = 0.6; the least
  #   candidate is hybridcache_exact, 200 / 500 = 0.4.
  # - U, unlimited: best engine 1 token, not above 0.1 % of 1000: not counted.
  # - joint, ū − resumed with ū from the unlimited rows: T row 1000 / 1000 (marconi) = 1, least
  #   candidate 500 (hybridcache_exact) / 1000 = 0.5; U row 100 / 100 = 1, least candidate
  #   hybridcache_pool_memory 0, counted as 1 token: 1 / 100 = 0.01. Means: 1.000 and
  #   √(0.5 · 0.01) = 0.071.
  # One regex (a list of several would pass on any one of them).
  set(_hc_th_row "\\| tree_hindsight_tiny \\| 1: 0.600 / 0.400 \\| 2: 1.000 / 0.071 \\| ")
  string(APPEND _hc_th_row "T 1.00 / 0.50; U 1.00 / 0.01 \\|")
  add_test(NAME cli/scripts/tree_hindsight_table
    COMMAND "${Python3_EXECUTABLE}" "${_hc_th}" --engines vllm_align,marconi
            --candidates hybridcache_exact,hybridcache_pool_memory
            --modes unlimited,joint "${CMAKE_CURRENT_LIST_DIR}/data/tree_hindsight_tiny.csv")
  set_tests_properties(cli/scripts/tree_hindsight_table PROPERTIES
    LABELS "cli;sim"
    PASS_REGULAR_EXPRESSION "${_hc_th_row}")
  # A KV mode the run has no cell of (here separate) is shown as a dash, not as a mean of nothing.
  add_test(NAME cli/scripts/tree_hindsight_empty_mode
    COMMAND "${Python3_EXECUTABLE}" "${_hc_th}" --engines vllm_align,marconi
            --candidates hybridcache_exact,hybridcache_pool_memory
            --modes separate,joint "${CMAKE_CURRENT_LIST_DIR}/data/tree_hindsight_tiny.csv")
  set_tests_properties(cli/scripts/tree_hindsight_empty_mode PROPERTIES
    LABELS "cli;sim"
    PASS_REGULAR_EXPRESSION "\\| tree_hindsight_tiny \\| 0: - \\| 2: 1.000 / 0.071 \\| "
    FAIL_REGULAR_EXPRESSION "nan")
  # A run whose cells lack a library candidate: a clear error, not a partial table.
  add_test(NAME cli/scripts/tree_hindsight_missing_candidate
    COMMAND "${Python3_EXECUTABLE}" "${_hc_th}" --engines vllm_align,marconi
            --candidates hybridcache_exact,hybridcache_absent
            "${CMAKE_CURRENT_LIST_DIR}/data/tree_hindsight_tiny.csv")
  set_tests_properties(cli/scripts/tree_hindsight_missing_candidate PROPERTIES
    LABELS "cli;sim"
    PASS_REGULAR_EXPRESSION "cell .* lacks hybridcache_absent")
endif()
