// expect: Include <hybridcache/cuda/rope/realign.cuh>
// Device KV pools handed to the paged fused copy-align without the CUDA backend. Must NOT compile.
#include <cstdint>
#include <hybridcache/rope.hpp>

namespace hc = hybridcache;

int main() {
  hc::strided_view<float, 4, hc::device_space> pool(nullptr, {4, 16, 2, 128});
  hc::vector_view<const std::int32_t, hc::device_space> table(nullptr, {2});
  hc::realign_blocks(hc::rope_params{}, pool, pool, pool, pool, table, table, 20, 3);
}
