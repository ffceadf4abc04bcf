// expect: src and dst live in different memory spaces
// With the CUDA backend included, a host source and a device destination must not compile (no
// implicit copies, no host fallback). Must NOT compile.
#include <hybridcache/cuda/rope/realign.cuh>
#include <vector>

namespace hc = hybridcache;

int main() {
  std::vector<float> host(128);
  hc::strided_view<const float, 3> src(host.data(), {1, 1, 128});
  hc::strided_view<float, 3, hc::device_space> dst(nullptr, {1, 1, 128});
  hc::realign_keys(hc::rope_params{}, src, dst, 5, cudaStream_t{});
}
