// SPDX-License-Identifier: Apache-2.0
// Conan test_package: the package's headers and its Eigen dependency are both reachable through
// the hybridcache::eigen target (component `eigen`) that Conan's CMakeDeps generates.
#include <hybridcache/hybridcache.hpp>

#include <Eigen/Core>

#include <cstdio>

int main() {
  hybridcache::buffer<float> b(2);
  b[0] = 3.0F;
  b[1] = 4.0F;
  const Eigen::Vector2f v(b[0], b[1]);
  std::printf("hybridcache %s (Conan package): |v| = %g\n", hybridcache::version_string,
              static_cast<double>(v.norm()));
  return v.norm() == 5.0F && HYBRIDCACHE_VERSION >= 100 ? 0 : 1;
}
