// SPDX-License-Identifier: Apache-2.0
// A consumer of the library that only knows its public CMake target.
#include <hybridcache/hybridcache.hpp>

#include <cstdio>

int main() {
  hybridcache::buffer<double> b(4);
  b[0] = 1.0;
  auto v = b.view();
  std::printf("hybridcache %s: %zu elements, first %g\n", hybridcache::version_string, v.size(),
              v(0));
  return (HYBRIDCACHE_VERSION >= 100 && v(0) == 1.0) ? 0 : 1;
}
