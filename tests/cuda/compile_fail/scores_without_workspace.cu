// expect: needs an explicit workspace and stream
// With the CUDA backend included, calling the device sparse_q_scores like the host one (no
// workspace, no stream) is a compile error that says what is missing. Must NOT compile.
#include <cstdint>
#include <hybridcache/cuda/select/scores.cuh>

namespace hc = hybridcache;

int main() {
  hc::strided_view<const float, 3, hc::device_space> q(nullptr, {2, 4, 64}), k(nullptr, {9, 4, 64});
  hc::vector_view<const std::int64_t, hc::device_space> p(nullptr, {2});
  hc::vector_view<float, hc::device_space> out(nullptr, {9});
  hc::sparse_q_scores(q, p, k, out);
}
