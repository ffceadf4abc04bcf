# SPDX-License-Identifier: Apache-2.0
# `hybridcache simulate`: hostile or malformed trace files (issue #11 item 5, #13 items 4-5), trace
# options taking any path, the --cache-entries cap and consistent option checks. Each case makes
# its tiny trace in the test (tools/tests/data/simulate_io.sh) and checks the message, the output
# size ("bytes=") and the exit status ("rc=": 0 ok, 1 bad input, 2 bad command line).
set(_hc_io_dir "${CMAKE_CURRENT_BINARY_DIR}/simulate_io")
file(MAKE_DIRECTORY "${_hc_io_dir}")
function(_hc_simulate_io name regex)
  add_test(NAME cli/simulate_io/${name}
    COMMAND sh "${CMAKE_CURRENT_LIST_DIR}/data/simulate_io.sh" $<TARGET_FILE:hybridcache_cli> ${name}
    WORKING_DIRECTORY "${_hc_io_dir}")
  set_tests_properties(cli/simulate_io/${name} PROPERTIES PASS_REGULAR_EXPRESSION "${regex}"
                       FAIL_REGULAR_EXPRESSION "RAW BYTES|terminate|Segmentation|Aborted|nlohmann"
                       LABELS "cli;sim" TIMEOUT 60)
endfunction()

# One line of 200,000 '[': rejected by the parser's depth limit, not a stack overflow.
_hc_simulate_io(deep_json "deep.jsonl:1: JSON nested deeper than 64 levels.*bytes=[0-9][0-9]?[0-9]?\nrc=1")
_hc_simulate_io(number_overflow "big.jsonl:2: invalid JSON: number overflow.*rc=1")
_hc_simulate_io(embedded_nul "nul.jsonl:1: embedded NUL byte at column 7.*rc=1")
_hc_simulate_io(binary_echo "bin.jsonl:1: malformed JSON.*bytes=[0-9][0-9]?[0-9]?\nrc=1")
# A truncated 120 KB document: one short line naming file:line, not a 100 KB echo.
_hc_simulate_io(truncated_document "doc.jsonl:1: malformed JSON.*bytes=[0-9][0-9]?[0-9]?\nrc=1")
_hc_simulate_io(jsonl_directory "'path' = adir: is a directory \\(expected a file\\).*rc=1")
_hc_simulate_io(mooncake_path "trace mooncake-my_trace.*rc=0")
_hc_simulate_io(mooncake_input_length "mc.jsonl:2: \"input_length\" = 5000 needs 10 blocks of 512 tokens.*rc=1")
_hc_simulate_io(leval_path "trace leval-held_out.*rc=0")
# A builder's rejection names the file it came from.
_hc_simulate_io(leval_no_questions "'trace file' = noq.jsonl: .*no document has a question.*rc=1")
_hc_simulate_io(system_prompts_path "trace system-prompts-prompts.*rc=0")
_hc_simulate_io(musique_path "musique-mini_musique.*rc=0")
_hc_simulate_io(multi_news_path "multi_news-news.*rc=0")
# K = 10^7 on a 500-request trace: capped at 500 entries (the 60 s timeout would catch minutes).
_hc_simulate_io(cache_entries_capped "csv ok\n.*last-K cache K = 500,.*rc=0")
_hc_simulate_io(budgets_empty_item "option --budgets has an empty item in '1,,2'.*rc=2")
_hc_simulate_io(budgets_trailing_comma "option --budgets has an empty item in '1,2,'.*rc=2")
_hc_simulate_io(unknown_flag_last "unknown option --frobnicate.*rc=2")
_hc_simulate_io(unknown_flag_valued "unknown option --frobnicate.*rc=2")
# Interval messages share one phrasing: "expects an integer >= N" / "a finite number in (a, b)".
_hc_simulate_io(gamma_interval "option --gamma expects a finite number in \\(0, 1\\), got '1'.*rc=2")
_hc_simulate_io(requests_interval "option --requests expects an integer >= 1, got '0'.*rc=2")
_hc_simulate_io(workers_interval "option --workers expects an integer >= 1, got '0'.*rc=2")
