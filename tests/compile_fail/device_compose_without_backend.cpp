// expect: Include <hybridcache/cuda/state/compose.cuh>
// Device summaries handed to the host state algebra without <hybridcache/cuda/state/compose.cuh>:
// the host header's device fallback must stop the build with a message naming that header, never
// loop over device memory on the CPU. Must NOT compile.
#include <hybridcache/state.hpp>

namespace hc = hybridcache;

int main() {
  hc::strided_view<const double, 2, hc::device_space> log_decay(nullptr, {2, 1});
  hc::strided_view<float, 3, hc::device_space> s(nullptr, {2, 4, 8});
  hc::apply_elementwise(log_decay, s, s, s);
}
