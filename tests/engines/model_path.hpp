// SPDX-License-Identifier: Apache-2.0
// The tiny GGUF test models that the fixture engines/models writes (tools/gguf/make_models.py).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace hybridcache_test {

/// The path of model `name` in HYBRIDCACHE_TEST_MODEL_DIR; skips the test (ctest
/// SKIP_RETURN_CODE 77) when it is absent.
inline std::string model_path(const char* name) {
  const auto p = std::filesystem::path(HYBRIDCACHE_TEST_MODEL_DIR) / name;
  if (!std::filesystem::exists(p)) {
    std::printf("skipped: %s is absent (tools/gguf/make_models.py writes it)\n", p.c_str());
    std::fflush(stdout);
    std::_Exit(77);
  }
  return p.string();
}

}  // namespace hybridcache_test
