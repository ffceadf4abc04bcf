# `hybridcache version` prints exactly this build's version (PROJECT_VERSION, parsed from
# version.hpp), so the CLI cannot report a stale or hand-written number.
string(REPLACE "." "\\." _hc_version_re "${PROJECT_VERSION}")
add_test(NAME cli/version COMMAND hybridcache_cli version)
set_tests_properties(cli/version PROPERTIES
  PASS_REGULAR_EXPRESSION "^hybridcache ${_hc_version_re}\n$" LABELS cli)
add_test(NAME cli/unknown_command COMMAND hybridcache_cli frobnicate)
set_tests_properties(cli/unknown_command PROPERTIES WILL_FAIL TRUE LABELS cli)
