// SPDX-License-Identifier: Apache-2.0
// Sparse-Q scoring GFLOP/s beside the same binary's plain Eigen GEMM rate on the same shapes.
// FLOPs counted: 2·d per visible (query, key) pair per head — the QKᵀ work; the softmax and
// column sums are the overhead the ratio to the GEMM measures.
// Shape: T = 8192 prompt tokens, d = 128, 8 query heads over 8 (MHA) kv heads; |I_nr| = 512
// queries either all at the tail (a question after reused passages) or spread in 4 segments.
#include <benchmark/benchmark.h>

#include <Eigen/Core>
#include <cstdint>
#include <hybridcache/select.hpp>
#include <random>
#include <vector>

namespace hc = hybridcache;

namespace {
constexpr std::size_t k_t = 8192, k_d = 128, k_heads = 8, k_nq = 512;

struct problem {
  std::vector<float> q, k;
  std::vector<std::int64_t> pos;
  double flops = 0;  // per call
};

problem make(bool spread) {
  problem p;
  std::mt19937 rng(1);
  std::normal_distribution<float> n(0.0f, 1.0f);
  p.q.resize(k_nq * k_heads * k_d);
  p.k.resize(k_t * k_heads * k_d);
  for (auto& x : p.q) x = n(rng);
  for (auto& x : p.k) x = n(rng);
  for (std::size_t i = 0; i < k_nq; ++i) {
    // tail: positions T−512 … T−1; spread: 4 segments of 128 at 1/4, 2/4, 3/4 and the end.
    const std::size_t seg = i / 128, off = i % 128;
    p.pos.push_back(static_cast<std::int64_t>(spread ? (seg + 1) * (k_t / 4) - 128 + off
                                                      : k_t - k_nq + i));
  }
  for (auto x : p.pos) p.flops += 2.0 * k_d * static_cast<double>(x + 1) * k_heads;
  return p;
}

void scores(benchmark::State& state) {
  const auto p = make(state.range(0) != 0);
  std::vector<double> out(k_t);
  for (auto _ : state) {
    hc::sparse_q_scores(hc::strided_view<const float, 3>(p.q.data(), {k_nq, k_heads, k_d}),
                        hc::vector_view<const std::int64_t>(p.pos.data(), {k_nq}),
                        hc::strided_view<const float, 3>(p.k.data(), {k_t, k_heads, k_d}),
                        hc::vector_view<double>(out.data(), {k_t}));
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(p.flops * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}

// The same per-head products Q_h (512×128) · K_hᵀ (128×T) with Eigen, no mask or softmax, and
// the same [T, heads, d] strided key layout; FLOPs = 2·nq·T·d per head.
void baseline_eigen_gemm(benchmark::State& state) {
  const auto p = make(false);
  using row_matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using smap = Eigen::Map<const row_matrix, Eigen::Unaligned, Eigen::OuterStride<>>;
  row_matrix s(k_nq, k_t);
  for (auto _ : state) {
    for (std::size_t h = 0; h < k_heads; ++h) {
      const smap q(p.q.data() + h * k_d, k_nq, k_d, Eigen::OuterStride<>(k_heads * k_d));
      const smap k(p.k.data() + h * k_d, k_t, k_d, Eigen::OuterStride<>(k_heads * k_d));
      s.noalias() = q * k.transpose();
      benchmark::DoNotOptimize(s.data());
    }
  }
  const double flops = 2.0 * k_nq * k_t * k_d * k_heads;
  state.counters["GFLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
}
}  // namespace

BENCHMARK(scores)->Arg(0)->Arg(1)->ArgName("spread")->Unit(benchmark::kMillisecond);
BENCHMARK(baseline_eigen_gemm)->Unit(benchmark::kMillisecond);
