// SPDX-License-Identifier: Apache-2.0
// A cached segment's keys were written at positions 100..103; a new request places the segment
// at 5000..5003. Realign the keys (K' = R(Δ)K, SparseX §3.1) for a Llama-3.1-style layer (base
// 500000, llama3 frequency scaling, head_dim 8 here for brevity), in fp16 storage, both for a
// contiguous copy and through paged block tables (fused copy-align; values copied unchanged).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <hybridcache/rope.hpp>
#include <vector>

namespace hc = hybridcache;

// The key a model would write at `pos` for the unrotated vector k (half-split layout).
static std::vector<float> rope_at(const hc::rope_params& p, const std::vector<float>& k, double pos) {
  std::vector<float> out = k;
  const std::size_t half = p.rotary_dim / 2;
  for (std::size_t i = 0; i < half; ++i) {
    const double a = pos * p.theta(i);
    out[i] = static_cast<float>(k[i] * std::cos(a) - k[i + half] * std::sin(a));
    out[i + half] = static_cast<float>(k[i] * std::sin(a) + k[i + half] * std::cos(a));
  }
  return out;
}

int main() {
  const hc::rope_params p{.head_dim = 8, .rotary_dim = 8, .base = 500000.0,
                          .layout = hc::rope_layout::half_split,
                          .scaling = hc::rope_scaling::llama3()};
  const std::size_t tokens = 4, heads = 1, d = 8;
  const std::vector<float> raw{0.5f, -1.0f, 0.25f, 2.0f, 1.5f, -0.75f, 0.1f, -0.3f};

  // Cached keys at positions 100..103, stored as fp16.
  std::vector<hc::half> cached(tokens * d);
  for (std::size_t t = 0; t < tokens; ++t) {
    const auto k = rope_at(p, raw, 100.0 + static_cast<double>(t));
    for (std::size_t j = 0; j < d; ++j) cached[t * d + j] = hc::half(k[j]);
  }

  // Contiguous: rotate into the request's private slots.
  std::vector<hc::half> slots(tokens * d);
  hc::realign_keys(p, hc::strided_view<const hc::half, 3>(cached.data(), {tokens, heads, d}),
                   hc::strided_view<hc::half, 3>(slots.data(), {tokens, heads, d}), 5000 - 100);
  double worst = 0.0;
  for (std::size_t t = 0; t < tokens; ++t) {
    const auto want = rope_at(p, raw, 5000.0 + static_cast<double>(t));
    for (std::size_t j = 0; j < d; ++j)
      worst = std::max(worst, std::fabs(static_cast<double>(static_cast<float>(slots[t * d + j]) - want[j])));
  }
  std::printf("max |realigned - computed at new position| = %.2e (fp16 storage)\n", worst);

  // Paged: a pool of 4 blocks of 2 tokens; the segment sits in blocks {3, 1} and moves to {0, 2}.
  const std::size_t blocks = 4, bs = 2;
  std::vector<hc::half> k_pool(blocks * bs * d), v_pool(blocks * bs * d);
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < d; ++j) {
      const std::size_t blk = t < 2 ? 3 : 1;
      k_pool[(blk * bs + t % bs) * d + j] = cached[t * d + j];
      v_pool[(blk * bs + t % bs) * d + j] = hc::half(static_cast<float>(t) + 0.5f);
    }
  const std::vector<std::int32_t> old_blocks{3, 1}, new_blocks{0, 2};
  hc::strided_view<hc::half, 4> kv(k_pool.data(), {blocks, bs, heads, d});
  hc::strided_view<hc::half, 4> vv(v_pool.data(), {blocks, bs, heads, d});
  hc::realign_blocks(p, hc::strided_view<const hc::half, 4>(kv), hc::strided_view<const hc::half, 4>(vv),
                     kv, vv, hc::vector_view<const std::int32_t>(old_blocks.data(), {2}),
                     hc::vector_view<const std::int32_t>(new_blocks.data(), {2}), tokens, 4900);
  bool same = true;
  for (std::size_t t = 0; t < tokens; ++t)
    for (std::size_t j = 0; j < d; ++j) {
      const std::size_t blk = t < 2 ? 0 : 2;
      same = same && k_pool[(blk * bs + t % bs) * d + j].bits == slots[t * d + j].bits &&
             static_cast<float>(v_pool[(blk * bs + t % bs) * d + j]) == static_cast<float>(t) + 0.5f;
    }
  std::printf("paged copy-align %s the contiguous result; values copied unchanged\n",
              same ? "matches" : "DIFFERS FROM");
  return worst < 5e-3 && same ? 0 : 1;
}
