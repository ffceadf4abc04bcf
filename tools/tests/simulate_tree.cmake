# SPDX-License-Identifier: Apache-2.0
# `hybridcache simulate --scenario tree` (docs/tree_simulation.md): the causal replay's CSV
# columns, the KV budget sweeps (unlimited, separate, joint), the block grid option, bad input.
set(_hc_tree_dir "${CMAKE_CURRENT_BINARY_DIR}/simulate_tree")
file(MAKE_DIRECTORY "${_hc_tree_dir}")

# Every KV mode in one run: one table per mode, tree.csv with the new columns and a row per mode.
add_test(NAME cli/simulate/tree_kv_modes
  COMMAND sh -c "rm -rf kv && \"$1\" simulate --scenario tree --tree multi-turn --tree-sessions 20 --tree-budgets 2,8 --tree-policies hybridcache,vllm_align,sglang_no_buffer,oracle --kv-budget 64MiB --kv-mode unlimited,separate,joint --no-plot --quiet --out kv && head -1 kv/tree.csv | grep -q 'chunk_boundaries_per_request,kv_mode,kv_budget_bytes,kv_evicted_blocks,states_dropped' && grep -q ',joint,' kv/tree.csv && grep -q ',separate,' kv/tree.csv && grep -q ',unlimited,' kv/tree.csv && test -s kv/tree_multi-turn_joint.dat && test -s kv/tree_multi-turn_separate_png.gp" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_tree_dir}")
set_tests_properties(cli/simulate/tree_kv_modes PROPERTIES
  PASS_REGULAR_EXPRESSION "KV unlimited.*chunk\\+.*KV separate 0.0625 GiB.*KV joint 0.0625 GiB"
  LABELS "cli;sim")

# The mamba block grid of a real engine (528 tokens).
add_test(NAME cli/simulate/tree_block_528
  COMMAND hybridcache_cli simulate --scenario tree --tree multi-turn --tree-sessions 20 --tree-block 528
          --tree-budgets 4 --no-plot --quiet --out "${_hc_tree_dir}/b528")
set_tests_properties(cli/simulate/tree_block_528 PROPERTIES
  PASS_REGULAR_EXPRESSION "nodes of 528 tokens" LABELS "cli;sim")

# Bad input: a usage error naming the option (and nothing run).
foreach(_case IN ITEMS "needs_budget|--kv-mode joint|needs --kv-budget"
                       "bad_mode|--kv-budget 1GiB --kv-mode shared|unknown KV mode 'shared'"
                       "bad_budget|--kv-budget 3GB|option --kv-budget expects a byte count"
                       "negative_budget|--kv-budget -1|option --kv-budget expects a byte count")
  string(REPLACE "|" ";" _parts "${_case}")
  list(GET _parts 0 _name)
  list(GET _parts 1 _args)
  list(GET _parts 2 _msg)
  add_test(NAME cli/simulate/tree_kv_${_name}
    COMMAND sh -c "if \"$1\" simulate --scenario tree ${_args} --quiet --no-plot --out bad 2>&1; then exit 1; fi" sh $<TARGET_FILE:hybridcache_cli>
    WORKING_DIRECTORY "${_hc_tree_dir}")
  set_tests_properties(cli/simulate/tree_kv_${_name} PROPERTIES
    PASS_REGULAR_EXPRESSION "${_msg}" LABELS "cli;sim")
endforeach()

# --tree-list-policies: every name --tree-policies takes, with its kind; the scripts read the
# engine rows from it (scripts/tree_cells.py). Each listed name must also be in the usage text,
# so the help cannot fall behind the list.
add_test(NAME cli/simulate/tree_list_policies
  COMMAND sh -c "\"$1\" simulate --tree-list-policies > list.txt && \"$1\" simulate --help > help.txt && test \"$(grep -c '	engine$' list.txt)\" = 11 && grep -qx 'marconi_insample	hindsight' list.txt && grep -qx 'oracle_exact	reference' list.txt && grep -qx 'hybridcache_base_first	ablation' list.txt && for n in $(cut -f1 list.txt); do grep -qw \"$n\" help.txt || { echo \"not in --help: $n\"; exit 1; }; done && cat list.txt" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_tree_dir}")
set_tests_properties(cli/simulate/tree_list_policies PROPERTIES
  PASS_REGULAR_EXPRESSION "hybridcache	library" LABELS "cli;sim")
add_test(NAME cli/simulate/tree_list_policies_alone
  COMMAND sh -c "if \"$1\" simulate --tree-list-policies --quiet 2>&1; then exit 1; fi" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_tree_dir}")
set_tests_properties(cli/simulate/tree_list_policies_alone PROPERTIES
  PASS_REGULAR_EXPRESSION "takes no other option" LABELS "cli;sim")

# --tree-requests: one line per request, row, budget and KV mode; its sums are tree.csv's, the
# library row's leader column reproduces its switches, and tree.csv is unchanged by the flag
# (tree_requests_check.py).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME cli/simulate/tree_requests
    COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/tree_requests_check.py"
            $<TARGET_FILE:hybridcache_cli> "${_hc_tree_dir}")
  set_tests_properties(cli/simulate/tree_requests PROPERTIES
    PASS_REGULAR_EXPRESSION "48 rows checked against tree.csv" LABELS "cli;sim")
  # --tree-victims: one line per state a library row's own ranking gave up; tree.csv is
  # unchanged by the flag and only the library's rows log (tree_victims_check.py).
  add_test(NAME cli/simulate/tree_victims
    COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/tree_victims_check.py"
            $<TARGET_FILE:hybridcache_cli> "${_hc_tree_dir}")
  set_tests_properties(cli/simulate/tree_victims PROPERTIES
    PASS_REGULAR_EXPRESSION "victims checked against tree.csv" LABELS "cli;sim")
endif()
