# SPDX-License-Identifier: Apache-2.0
# scripts/dev/kv_order_headroom.py (a KV-order diagnostic, docs/tree_simulation.md): its offline
# order against an exhaustive search on small random traces and LRU on hand-worked ones
# (--self-test), a clean skip when the trace file is absent, and the table on a hand-worked trace.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  set(_hc_kvh "${PROJECT_SOURCE_DIR}/scripts/dev/kv_order_headroom.py")
  add_test(NAME cli/scripts/kv_order_headroom_self_test
    COMMAND "${Python3_EXECUTABLE}" "${_hc_kvh}" --self-test)
  set_tests_properties(cli/scripts/kv_order_headroom_self_test PROPERTIES
    LABELS "cli;sim" PASS_REGULAR_EXPRESSION "self-test passed \\(300 random traces")
  add_test(NAME cli/scripts/kv_order_headroom_no_trace
    COMMAND "${Python3_EXECUTABLE}" "${_hc_kvh}"
            --trace "${CMAKE_CURRENT_BINARY_DIR}/kv_order_headroom/absent.jsonl")
  set_tests_properties(cli/scripts/kv_order_headroom_no_trace PROPERTIES
    LABELS "cli;sim" PASS_REGULAR_EXPRESSION "no trace at .*nothing to do")
  # A hand-worked trace (C = 2): a b a c b a; a hits at the third request in every order. LRU
  # then evicts b for c and a for b: one hit. once_first and lfu evict b for c, then c (used
  # once) for b, so a hits at the end: two. The offline order evicts a for c (b comes back
  # first), so b hits: two.
  add_test(NAME cli/scripts/kv_order_headroom_table
    COMMAND "${Python3_EXECUTABLE}" "${_hc_kvh}"
            --trace "${CMAKE_CURRENT_LIST_DIR}/data/kv_order_tiny.jsonl" --capacity 2)
  set_tests_properties(cli/scripts/kv_order_headroom_table PROPERTIES
    LABELS "cli;sim"
    PASS_REGULAR_EXPRESSION
    "\\| 2 \\| 1 \\(1.00x\\) \\| 2 \\(2.00x\\) \\| 2 \\(2.00x\\) \\| 2 \\(2.00x\\) \\|")
endif()
