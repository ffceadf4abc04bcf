// SPDX-License-Identifier: Apache-2.0
// Must NOT compile under -Werror=deprecated-declarations (ctest compat/v0_1_warns): one use of a
// 0.1 spelling of each kind the compat header deprecates — a type, an alias template, a
// forwarded function and a constant — each an error naming the flat name to use instead.
#include <iterator>

#include <hybridcache/compat/v0_1.hpp>

int compat_v0_1_warns() {
  hybridcache::state::family f = hybridcache::transition_family::dense;  // a type
  hybridcache::state::matrix<double> m(1, 1);                            // an alias template
  m(0, 0) = 1.0;
  const auto r = hybridcache::state::role_of(0, 3);            // a function
  const auto n = std::size(hybridcache::sim::all_strategies);  // a constant
  return static_cast<int>(f) + static_cast<int>(m(0, 0)) + static_cast<int>(r) +
         static_cast<int>(n);
}
