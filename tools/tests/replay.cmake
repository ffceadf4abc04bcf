# SPDX-License-Identifier: Apache-2.0
# `hybridcache replay` (built with the optional component hybridcache::llama_cpp): a small
# synthetic multi-turn trace through the tiny qwen35 model that tests/engines writes (fixture
# hc_gguf_models), under the library's policy and without a cache.
if(TARGET hybridcache::llama_cpp AND TARGET test_engines AND HYBRIDCACHE_GGUF_PYTHON)
  set(_hc_replay_model "${CMAKE_BINARY_DIR}/models/qwen35-tiny.gguf")
  add_test(NAME cli/replay_library
           COMMAND hybridcache_cli replay --model "${_hc_replay_model}" --sessions 6
                   --json "${CMAKE_CURRENT_BINARY_DIR}/replay_library.json")
  add_test(NAME cli/replay_none
           COMMAND hybridcache_cli replay --model "${_hc_replay_model}" --sessions 6 --policy none)
  set_tests_properties(cli/replay_library cli/replay_none PROPERTIES
    FIXTURES_REQUIRED hc_gguf_models LABELS "cli;llama_cpp"
    PASS_REGULAR_EXPRESSION "tokens evaluated by llama_decode")
  add_test(NAME cli/replay_missing_model
           COMMAND hybridcache_cli replay --model "${CMAKE_CURRENT_BINARY_DIR}/absent.gguf")
  set_tests_properties(cli/replay_missing_model PROPERTIES WILL_FAIL TRUE LABELS "cli;llama_cpp")
endif()

# --dump-prompts, and the simulator's fidelity through both CLIs: replay's evaluated tokens equal
# `simulate --scenario tree`'s prefill_tokens for the same trace, block and budget, on the
# multi-turn trace and on a tuning family (replay_cli_test.py; ~10 s and ~20 s on one core).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(TARGET hybridcache::llama_cpp AND TARGET test_engines AND HYBRIDCACHE_GGUF_PYTHON
   AND Python3_Interpreter_FOUND)
  foreach(_hc_mode dump fidelity family)
    add_test(NAME cli/replay_${_hc_mode}
             COMMAND "${Python3_EXECUTABLE}" "${CMAKE_CURRENT_LIST_DIR}/replay_cli_test.py"
                     ${_hc_mode} $<TARGET_FILE:hybridcache_cli> "${CMAKE_BINARY_DIR}/models"
                     "${CMAKE_CURRENT_BINARY_DIR}/replay_${_hc_mode}")
    set_tests_properties(cli/replay_${_hc_mode} PROPERTIES FIXTURES_REQUIRED hc_gguf_models
                         LABELS "cli;llama_cpp" SKIP_RETURN_CODE 77 TIMEOUT 300)
  endforeach()
endif()
