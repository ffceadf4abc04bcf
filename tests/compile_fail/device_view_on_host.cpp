// expect: no CUDA backend for this algorithm is visible
// A device view handed to a host-only algorithm must be a readable compile error, never a
// silent host fallback (STYLE.md §4). This file must NOT compile.
#include <hybridcache/storage.hpp>

namespace hc = hybridcache;

template <hc::host_view V>
double first(V v) {
  return v(0);
}
template <hc::device_view V>
double first(V) {
  hc::detail::require_device_backend<V>();
  return 0;
}

int main() {
  hc::vector_view<double, hc::device_space> d(nullptr, {1});
  return static_cast<int>(first(d));
}
