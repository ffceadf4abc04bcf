// SPDX-License-Identifier: Apache-2.0
// realign_keys / realign_blocks bandwidth beside memcpy of the same bytes in the same binary.
// GB/s counts the bytes of keys (and values, for the paged copy) moved once: what memcpy moves.
// Shape: 4096 tokens × 8 kv heads × head_dim 128 (a Llama-3-8B layer's K for a 4k segment).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstring>
#include <hybridcache/rope.hpp>
#include <random>
#include <vector>

namespace hc = hybridcache;

namespace {
constexpr std::size_t k_tokens = 4096, k_heads = 8, k_dim = 128;

template <class T>
std::vector<T> random_keys(std::size_t n) {
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  std::vector<T> v(n);
  for (auto& x : v) x = T(d(rng));
  return v;
}

void set_bytes(benchmark::State& state, std::size_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * bytes));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(state.iterations() * bytes) / 1e9,
                                              benchmark::Counter::kIsRate);
}

template <class T>
void realign_contiguous(benchmark::State& state) {
  const hc::rope_params p{.head_dim = k_dim, .rotary_dim = k_dim, .base = 500000.0,
                          .layout = state.range(0) ? hc::rope_layout::interleaved
                                                   : hc::rope_layout::half_split,
                          .scaling = hc::rope_scaling::llama3()};
  const std::size_t n = k_tokens * k_heads * k_dim;
  auto src = random_keys<T>(n);
  std::vector<T> dst(n);
  hc::strided_view<const T, 3> s(src.data(), {k_tokens, k_heads, k_dim});
  hc::strided_view<T, 3> d(dst.data(), {k_tokens, k_heads, k_dim});
  std::int64_t delta = 123457;
  for (auto _ : state) {
    hc::realign_keys(p, s, d, delta++);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * sizeof(T));
}

template <class T>
void baseline_memcpy(benchmark::State& state) {
  const std::size_t n = k_tokens * k_heads * k_dim;
  auto src = random_keys<T>(n);
  std::vector<T> dst(n);
  for (auto _ : state) {
    std::memcpy(static_cast<void*>(dst.data()), static_cast<const void*>(src.data()), n * sizeof(T));
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, n * sizeof(T));
}

// Paged fused copy-align: 256 blocks of 16 tokens moved from a cached pool to a request pool,
// keys rotated and values copied; the baseline memcpys the same K and V blocks.
template <class T>
void realign_paged(benchmark::State& state) {
  const hc::rope_params p{.head_dim = k_dim, .rotary_dim = k_dim, .base = 500000.0};
  const std::size_t bs = 16, nb = k_tokens / bs, pool = 2 * nb;
  const std::size_t per_block = bs * k_heads * k_dim;
  auto ks = random_keys<T>(pool * per_block), vs = random_keys<T>(pool * per_block);
  std::vector<T> kd(pool * per_block), vd(pool * per_block);
  std::vector<std::int32_t> old_t(nb), new_t(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    old_t[b] = static_cast<std::int32_t>((b * 7) % pool);
    new_t[b] = static_cast<std::int32_t>((b * 11 + 3) % pool);
  }
  using v4 = hc::strided_view<T, 4>;
  using cv4 = hc::strided_view<const T, 4>;
  const std::array<std::size_t, 4> ext{pool, bs, k_heads, k_dim};
  for (auto _ : state) {
    hc::realign_blocks(p, cv4(ks.data(), ext), cv4(vs.data(), ext), v4(kd.data(), ext),
                       v4(vd.data(), ext), hc::vector_view<const std::int32_t>(old_t.data(), {nb}),
                       hc::vector_view<const std::int32_t>(new_t.data(), {nb}), k_tokens, 4321);
    benchmark::DoNotOptimize(kd.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * nb * per_block * sizeof(T));
}

template <class T>
void baseline_memcpy_paged(benchmark::State& state) {
  const std::size_t bs = 16, nb = k_tokens / bs, pool = 2 * nb;
  const std::size_t per_block = bs * k_heads * k_dim;
  auto ks = random_keys<T>(pool * per_block), vs = random_keys<T>(pool * per_block);
  std::vector<T> kd(pool * per_block), vd(pool * per_block);
  for (auto _ : state) {
    for (std::size_t b = 0; b < nb; ++b) {
      const std::size_t o = ((b * 7) % pool) * per_block, n = ((b * 11 + 3) % pool) * per_block;
      std::memcpy(static_cast<void*>(kd.data() + n), static_cast<const void*>(ks.data() + o), per_block * sizeof(T));
      std::memcpy(static_cast<void*>(vd.data() + n), static_cast<const void*>(vs.data() + o), per_block * sizeof(T));
    }
    benchmark::DoNotOptimize(kd.data());
    benchmark::ClobberMemory();
  }
  set_bytes(state, 2 * nb * per_block * sizeof(T));
}
}  // namespace

BENCHMARK(realign_contiguous<float>)->Arg(0)->Arg(1)->ArgName("interleaved");
BENCHMARK(realign_contiguous<hc::half>)->Arg(0)->Arg(1)->ArgName("interleaved");
BENCHMARK(realign_contiguous<hc::bfloat16>)->Arg(0)->Arg(1)->ArgName("interleaved");
BENCHMARK(baseline_memcpy<float>);
BENCHMARK(baseline_memcpy<hc::half>);
BENCHMARK(realign_paged<float>);
BENCHMARK(realign_paged<hc::half>);
BENCHMARK(realign_paged<hc::bfloat16>);
BENCHMARK(baseline_memcpy_paged<float>);
BENCHMARK(baseline_memcpy_paged<hc::half>);
