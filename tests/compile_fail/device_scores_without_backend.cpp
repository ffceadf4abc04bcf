// expect: Include <hybridcache/cuda/select/scores.cuh>
// Device queries/keys handed to sparse_q_scores without <hybridcache/cuda/select/scores.cuh>.
// Must NOT compile.
#include <cstdint>
#include <hybridcache/select.hpp>

namespace hc = hybridcache;

int main() {
  hc::strided_view<const float, 3, hc::device_space> q(nullptr, {2, 4, 64}), k(nullptr, {9, 4, 64});
  const std::int64_t pos[2] = {3, 8};
  hc::vector_view<const std::int64_t> p(pos, {2});
  hc::vector_view<float, hc::device_space> out(nullptr, {9});
  hc::sparse_q_scores(q, p, k, out);
}
