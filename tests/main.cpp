// SPDX-License-Identifier: Apache-2.0
// The shared doctest main for every test binary.
//
// ctest runs each TEST_CASE as its own entry, selected by name (`--test-case=NAME`, registered by
// doctest_discover_tests). doctest passes a run whose filter selects nothing, so an entry whose
// name no longer selects its case would pass without running a line: a name with a ';' (ctest
// splits it into two entries, each selecting nothing: 18 cases ran under no preset until
// 2026-11), or a case renamed after the build was configured. Here such a run fails.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string_view>

namespace {

// Test cases that passed the filters in this process's run (set at the run's end).
unsigned g_selected = 0;
bool g_ran = false;

struct selection_listener final : doctest::IReporter {
  explicit selection_listener(const doctest::ContextOptions& /*unused*/) {}
  void report_query(const doctest::QueryData& /*unused*/) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& s) override {
    g_selected = s.numTestCasesPassingFilters;
    g_ran = true;
  }
  void test_case_start(const doctest::TestCaseData& /*unused*/) override {}
  void test_case_reenter(const doctest::TestCaseData& /*unused*/) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& /*unused*/) override {}
  void test_case_exception(const doctest::TestCaseException& /*unused*/) override {}
  void subcase_start(const doctest::SubcaseSignature& /*unused*/) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& /*unused*/) override {}
  void log_message(const doctest::MessageData& /*unused*/) override {}
  void test_case_skipped(const doctest::TestCaseData& /*unused*/) override {}
};

}  // namespace

DOCTEST_REGISTER_LISTENER("hybridcache_selection", 1, selection_listener);

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int rc = context.run();
  if (context.shouldExit() || rc != 0) return rc;
  bool filtered = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a(argv[i]);
    filtered = filtered || a.substr(0, 12) == "--test-case=" || a.substr(0, 4) == "-tc=";
  }
  if (filtered && g_ran && g_selected == 0) {
    std::fputs(
        "hybridcache tests: the --test-case filter selects no test case (a name with ';', which "
        "ctest splits, or a case renamed since the build was configured)\n",
        stderr);
    return 1;
  }
  return rc;
}
