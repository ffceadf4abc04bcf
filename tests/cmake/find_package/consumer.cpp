// SPDX-License-Identifier: Apache-2.0
// A consumer of the library that only knows its public CMake target. With HC_EXPECTED_VERSION
// (the version of the build that installed the package) the headers must be that version.
#include <hybridcache/hybridcache.hpp>

#include <cstdio>
#include <cstring>

int main() {
  hybridcache::buffer<double> b(4);
  b[0] = 1.0;
  auto v = b.view();
  std::printf("hybridcache %s: %zu elements, first %g\n", hybridcache::version_string, v.size(),
              v(0));
#ifdef HC_EXPECTED_VERSION
  if (std::strcmp(hybridcache::version_string, HC_EXPECTED_VERSION) != 0) {
    std::printf("expected hybridcache %s\n", HC_EXPECTED_VERSION);
    return 1;
  }
#endif
  return (HYBRIDCACHE_VERSION >= 100 && v(0) == 1.0) ? 0 : 1;
}
