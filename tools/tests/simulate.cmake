# SPDX-License-Identifier: Apache-2.0
# `hybridcache simulate`: the main job end to end (small sizes), output files, the gnuplot-absent
# path, malformed input (an error naming file:line and no output written), real data when present.
set(_hc_sim_dir "${CMAKE_CURRENT_BINARY_DIR}/simulate")
file(MAKE_DIRECTORY "${_hc_sim_dir}")
file(WRITE "${_hc_sim_dir}/bad.jsonl" "[1, 2, 3]\n[4, five]\n")

add_test(NAME cli/simulate/default
  COMMAND sh -c "rm -rf default && mkdir default && cd default && \"$1\" simulate --requests 300 --length 512 --quiet && test -s sparse_prefix.csv && test -s dominance.csv && test -s simulate.json && test -s fig14.csv && test -s segment_ttft.csv && test -s segment_namespaces.csv" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_sim_dir}")
set_tests_properties(cli/simulate/default PROPERTIES
  PASS_REGULAR_EXPRESSION "dp >= every fixed baseline.*cold-segment dispatch.*data: .*sparse_prefix.csv"
  LABELS "cli;sim")

add_test(NAME cli/simulate/no_gnuplot
  COMMAND sh -c "HYBRIDCACHE_GNUPLOT=/nonexistent/gnuplot \"$1\" simulate --trace docqa --segments none --fig14 0 --requests 200 --length 256 --out nognuplot --quiet && test -s nognuplot/sparse_prefix.csv && test -s nognuplot/reduction_png.gp && test ! -e nognuplot/reduction.png" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_sim_dir}")
set_tests_properties(cli/simulate/no_gnuplot PROPERTIES PASS_REGULAR_EXPRESSION "gnuplot not found" LABELS "cli;sim")

add_test(NAME cli/simulate/malformed_trace
  COMMAND sh -c "rm -rf malformed; if \"$1\" simulate --trace jsonl:bad.jsonl --segments none --out malformed --quiet; then exit 1; fi; test ! -e malformed/sparse_prefix.csv && test ! -e malformed/simulate.json" sh $<TARGET_FILE:hybridcache_cli>
  WORKING_DIRECTORY "${_hc_sim_dir}")
set_tests_properties(cli/simulate/malformed_trace PROPERTIES
  PASS_REGULAR_EXPRESSION "bad.jsonl:2" FAIL_REGULAR_EXPRESSION "data: " LABELS "cli;sim")

add_test(NAME cli/simulate/unknown_option COMMAND hybridcache_cli simulate --budget 4)
set_tests_properties(cli/simulate/unknown_option PROPERTIES WILL_FAIL TRUE LABELS "cli;sim")
add_test(NAME cli/simulate/bad_strategy COMMAND hybridcache_cli simulate --strategies dp,frobnicate)
set_tests_properties(cli/simulate/bad_strategy PROPERTIES WILL_FAIL TRUE LABELS "cli;sim")

# Real data (never committed): only registered when ../shared/data is present.
set(_hc_sim_data "${PROJECT_SOURCE_DIR}/../shared/data")
if(EXISTS "${_hc_sim_data}/leval/quality.jsonl" AND EXISTS "${_hc_sim_data}/segments/musique_s.json")
  add_test(NAME cli/simulate/real_data_small
    COMMAND hybridcache_cli simulate --data "${_hc_sim_data}" --trace quality,mooncake --segments musique
            --requests 300 --fig14 0 --no-plot --quiet --out "${_hc_sim_dir}/real")
  set_tests_properties(cli/simulate/real_data_small PROPERTIES
    PASS_REGULAR_EXPRESSION "trace leval-quality.*trace mooncake.*trace musique" LABELS "cli;sim")
endif()

add_test(NAME cli/simulate/tail_law
  COMMAND hybridcache_cli simulate --trace docqa --segments none --fig14 0 --requests 200 --length 256
          --law tail --smoothing 0.001 --no-plot --quiet --out "${_hc_sim_dir}/tail")
set_tests_properties(cli/simulate/tail_law PROPERTIES PASS_REGULAR_EXPRESSION "smoothing 0.001, tail law" LABELS "cli;sim")
add_test(NAME cli/simulate/bad_law COMMAND hybridcache_cli simulate --law sideways)
set_tests_properties(cli/simulate/bad_law PROPERTIES WILL_FAIL TRUE LABELS "cli;sim")
add_test(NAME cli/simulate/default_law
         COMMAND hybridcache_cli simulate --trace docqa --requests 200 --length 512 --segments none --fig14 0
          --budgets 1,4 --no-plot --quiet --out "${_hc_sim_dir}/law_default")
set_tests_properties(cli/simulate/default_law PROPERTIES PASS_REGULAR_EXPRESSION "conditioned law \\+ safeguard" LABELS "cli;sim")
add_test(NAME cli/simulate/pooled_law
         COMMAND hybridcache_cli simulate --trace docqa --requests 200 --length 512 --segments none --fig14 0
          --budgets 1,4 --law pooled --no-plot --quiet --out "${_hc_sim_dir}/law_pooled")
set_tests_properties(cli/simulate/pooled_law PROPERTIES PASS_REGULAR_EXPRESSION "gamma = 0.99, pooled law, model" LABELS "cli;sim")
add_test(NAME cli/simulate/bad_safeguard COMMAND hybridcache_cli simulate --safeguard maybe)
set_tests_properties(cli/simulate/bad_safeguard PROPERTIES WILL_FAIL TRUE LABELS "cli;sim")
