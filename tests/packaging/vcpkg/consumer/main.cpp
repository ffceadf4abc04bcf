// SPDX-License-Identifier: Apache-2.0
// Uses the installed headers and the Eigen the package depends on, through
// hybridcache::eigen. HC_UMBRELLA=0 includes only the storage headers (a quicker compile for
// the second variant).
#if !defined(HC_UMBRELLA) || HC_UMBRELLA
#include <hybridcache/hybridcache.hpp>
#else
#include <hybridcache/storage.hpp>
#include <hybridcache/version.hpp>
#endif

#include <Eigen/Core>

#include <cstdio>
#include <cstring>

#ifndef HC_EXPECTED_VERSION
#define HC_EXPECTED_VERSION "unknown"
#endif

int main() {
  hybridcache::buffer<double> b(3);
  b[2] = 2.5;
  Eigen::Vector3d v(1.0, 2.0, b[2]);
  std::printf("hybridcache %s: |v|^2 = %g\n", hybridcache::version_string, v.squaredNorm());
  const bool version_ok = std::strcmp(HC_EXPECTED_VERSION, "unknown") == 0 ||
                          std::strcmp(hybridcache::version_string, HC_EXPECTED_VERSION) == 0;
  return (version_ok && v.squaredNorm() == 11.25) ? 0 : 1;
}
