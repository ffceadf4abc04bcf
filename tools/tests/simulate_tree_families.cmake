# SPDX-License-Identifier: Apache-2.0
# The synthetic tuning families of issue #24 (include/hybridcache/sim/tree/families.hpp) through
# `hybridcache simulate --scenario tree --tree NAME`: every name runs, --tree-sessions sizes them,
# --seed picks the trace.
set(_hc_fam_dir "${CMAKE_CURRENT_BINARY_DIR}/simulate_tree_families")
file(MAKE_DIRECTORY "${_hc_fam_dir}")

add_test(NAME cli/simulate/tree_families
  COMMAND hybridcache_cli simulate --scenario tree
          --tree agent-loop,rag,code-edit,doc-qa-skewed,prompt-library
          --tree-sessions 4 --tree-budgets 2 --tree-policies hybridcache,vllm_align --no-plot
          --quiet --out "${_hc_fam_dir}/all")
set_tests_properties(cli/simulate/tree_families PROPERTIES
  PASS_REGULAR_EXPRESSION
    "trace agent-loop: .*trace rag: .*trace code-edit: .*trace doc-qa-skewed: .*trace prompt-library: "
  LABELS "cli;sim")

# --seed changes the trace (the request or node counts differ); the same seed reproduces it.
add_test(NAME cli/simulate/tree_families_seed
  COMMAND sh -c "run() { \"$1\" simulate --scenario tree --tree rag --tree-sessions 30 --seed $2 --tree-budgets 2 --tree-policies vllm_align --no-plot --quiet --out s$2 | grep 'trace rag:'; } && a=$(run \"$1\" 1) && b=$(run \"$1\" 1) && c=$(run \"$1\" 2) && test \"$a\" = \"$b\" && test \"$a\" != \"$c\" && echo seeds-ok" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_fam_dir}")
set_tests_properties(cli/simulate/tree_families_seed PROPERTIES
  PASS_REGULAR_EXPRESSION "seeds-ok" LABELS "cli;sim")
