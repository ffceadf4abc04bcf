add_test(NAME cli/version COMMAND hybridcache_cli version)
set_tests_properties(cli/version PROPERTIES PASS_REGULAR_EXPRESSION "hybridcache [0-9]+\\.[0-9]+\\.[0-9]+" LABELS cli)
add_test(NAME cli/unknown_command COMMAND hybridcache_cli frobnicate)
set_tests_properties(cli/unknown_command PROPERTIES WILL_FAIL TRUE LABELS cli)
