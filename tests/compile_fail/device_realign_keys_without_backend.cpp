// expect: Include <hybridcache/cuda/rope/realign.cuh>
// Device keys handed to realign_keys without <hybridcache/cuda/rope/realign.cuh>: the host header's
// device fallback must stop the build, never rotate device memory on the CPU. Must NOT compile.
#include <hybridcache/rope.hpp>

namespace hc = hybridcache;

int main() {
  hc::strided_view<hc::half, 3, hc::device_space> keys(nullptr, {1, 1, 128});
  hc::realign_keys(hc::rope_params{}, keys, keys, 7);
}
