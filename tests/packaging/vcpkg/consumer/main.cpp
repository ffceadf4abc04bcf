// SPDX-License-Identifier: Apache-2.0
// Uses the installed headers and the Eigen the package depends on, through hybridcache::hybridcache.
#include <hybridcache/hybridcache.hpp>

#include <Eigen/Core>

#include <cstdio>
#include <cstring>

int main() {
  hybridcache::buffer<double> b(3);
  b[2] = 2.5;
  Eigen::Vector3d v(1.0, 2.0, b[2]);
  std::printf("hybridcache %s from the vcpkg layout: |v|^2 = %g\n", hybridcache::version_string,
              v.squaredNorm());
  const bool version_ok = std::strcmp(hybridcache::version_string, HC_EXPECTED_VERSION) == 0;
  return (version_ok && v.squaredNorm() == 11.25) ? 0 : 1;
}
