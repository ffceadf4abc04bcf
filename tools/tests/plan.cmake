# SPDX-License-Identifier: Apache-2.0
# CLI tests of `hybridcache plan`, `baselines` and `demo`. Expected values are worked out by hand
# in data/plan_weights.txt (mass 0.1, 0.2, 0.7 at depths 2, 4, 5).
set(_hc_w "${CMAKE_CURRENT_LIST_DIR}/data/plan_weights.txt")
add_test(NAME cli/plan/text COMMAND hybridcache_cli plan --weights ${_hc_w} --budget 2)
set_tests_properties(cli/plan/text PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "checkpoints \\(2\\): 4 5\nexpected recompute: 0\\.2 tokens")
foreach(_hc_m auto cht lagrangian)
  add_test(NAME cli/plan/json_${_hc_m}
           COMMAND hybridcache_cli plan --weights ${_hc_w} --budget 1 --method ${_hc_m} --json)
  # One checkpoint: at 5 costs 0.1·2 + 0.2·4 = 1.0, at 4 costs 0.1·2 + 0.7·1 = 0.9, at 2 costs
  # 0.2·2 + 0.7·3 = 2.5: the best is 4 with E[r] = 0.9.
  set_tests_properties(cli/plan/json_${_hc_m} PROPERTIES LABELS "cli;placement"
    PASS_REGULAR_EXPRESSION "\"checkpoints\": \\[\n *4\n *\\],\n *\"expected_recompute\": 0\\.(9|8999)")
endforeach()
add_test(NAME cli/plan/budget_beyond_n COMMAND hybridcache_cli plan --weights ${_hc_w} --budget 99)
set_tests_properties(cli/plan/budget_beyond_n PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "checkpoints \\(3\\): 2 4 5\nexpected recompute: 0 tokens")
add_test(NAME cli/plan/granularity COMMAND hybridcache_cli plan --weights ${_hc_w} --budget 1 --granularity 2)
set_tests_properties(cli/plan/granularity PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "checkpoints \\(1\\): 4\n")
add_test(NAME cli/plan/bad_weights
         COMMAND hybridcache_cli plan --weights "${CMAKE_CURRENT_LIST_DIR}/data/bad_weights.txt" --budget 2)
set_tests_properties(cli/plan/bad_weights PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "invalid argument 'weights\\[2\\]' = \"nope\"")
add_test(NAME cli/plan/bad_granularity COMMAND hybridcache_cli plan --weights ${_hc_w} --budget 1 --granularity 9)
set_tests_properties(cli/plan/bad_granularity PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "invalid argument 'granularity' = 9")
add_test(NAME cli/plan/missing_budget COMMAND hybridcache_cli plan --weights ${_hc_w})
set_tests_properties(cli/plan/missing_budget PROPERTIES LABELS "cli;placement" WILL_FAIL TRUE)
add_test(NAME cli/plan/bad_method COMMAND hybridcache_cli plan --weights ${_hc_w} --budget 1 --method fast)
set_tests_properties(cli/plan/bad_method PROPERTIES LABELS "cli;placement" WILL_FAIL TRUE)
add_test(NAME cli/baselines COMMAND hybridcache_cli baselines --weights ${_hc_w} --budget 2)
set_tests_properties(cli/baselines PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "none +0 +4\\.5 .*dense +5 +0 .*dp\\(2\\) +2 +0\\.2 ")
add_test(NAME cli/demo COMMAND hybridcache_cli demo --n 1024 --granularity 16 --max-budget 8)
set_tests_properties(cli/demo PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "document-qa.*system-prompts.*multimodal.*DP checkpoints to match")
# All-subnormal weights normalise like their normal multiples (issue #11: they printed -nan).
set(_hc_ws "${CMAKE_CURRENT_LIST_DIR}/data/subnormal_weights.txt")
add_test(NAME cli/plan/subnormal COMMAND hybridcache_cli plan --weights ${_hc_ws} --budget 2)
set_tests_properties(cli/plan/subnormal PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "checkpoints \\(2\\): 4 5\nexpected recompute: 0\\.2 tokens"
  FAIL_REGULAR_EXPRESSION "nan")
add_test(NAME cli/baselines/subnormal COMMAND hybridcache_cli baselines --weights ${_hc_ws} --budget 2)
set_tests_properties(cli/baselines/subnormal PROPERTIES LABELS "cli;placement"
  PASS_REGULAR_EXPRESSION "none +0 +4\\.5 .*dense +5 +0 .*dp\\(2\\) +2 +0\\.2 "
  FAIL_REGULAR_EXPRESSION "nan")
