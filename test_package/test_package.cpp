// SPDX-License-Identifier: Apache-2.0
// Conan test_package: the package's headers and its Eigen dependency are both reachable through
// the hybridcache::eigen target (component `eigen`) that Conan's CMakeDeps generates, and the
// headers are the version Conan packaged (HC_EXPECTED_VERSION, from the reference).
#include <hybridcache/hybridcache.hpp>

#include <Eigen/Core>

#include <cstdio>
#include <cstring>

#ifndef HC_EXPECTED_VERSION
#error "test_package/CMakeLists.txt defines HC_EXPECTED_VERSION"
#endif

int main() {
  hybridcache::buffer<float> b(2);
  b[0] = 3.0F;
  b[1] = 4.0F;
  const Eigen::Vector2f v(b[0], b[1]);
  std::printf("hybridcache %s (Conan package %s): |v| = %g\n", hybridcache::version_string,
              HC_EXPECTED_VERSION, static_cast<double>(v.norm()));
  const bool version_ok = std::strcmp(hybridcache::version_string, HC_EXPECTED_VERSION) == 0;
  return v.norm() == 5.0F && version_ok ? 0 : 1;
}
