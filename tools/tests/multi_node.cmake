# SPDX-License-Identifier: Apache-2.0
# `hybridcache simulate --nodes N`: the multi-node scenario (sim/multi_node.hpp) end to end.
set(_hc_mn_dir "${CMAKE_CURRENT_BINARY_DIR}/multi_node")
file(MAKE_DIRECTORY "${_hc_mn_dir}")
add_test(NAME cli/simulate/multi_node
  COMMAND sh -c "rm -rf out && \"$1\" simulate --trace none --fig14 0 --requests 300 --nodes 3 --node-pool 20000 --no-plot --quiet --out out && test $(wc -l < out/multi_node.csv) -eq 3 && grep -q '^synthetic-rag,3,20000,1,300,' out/multi_node.csv" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_mn_dir}")
set_tests_properties(cli/simulate/multi_node PROPERTIES
  PASS_REGULAR_EXPRESSION "multi-node segment reuse: synthetic-rag \\(3 nodes.*local only.*shared.*multi_node.csv"
  LABELS "cli;sim")
add_test(NAME cli/simulate/multi_node_needs_segments
  COMMAND hybridcache_cli simulate --trace none --segments none --nodes 2)
set_tests_properties(cli/simulate/multi_node_needs_segments PROPERTIES WILL_FAIL TRUE LABELS "cli;sim")
add_test(NAME cli/simulate/multi_node_bad_count
  COMMAND hybridcache_cli simulate --trace none --fig14 0 --requests 50 --nodes 65 --no-plot --quiet
          --out "${_hc_mn_dir}/bad")
set_tests_properties(cli/simulate/multi_node_bad_count PROPERTIES WILL_FAIL TRUE LABELS "cli;sim")
