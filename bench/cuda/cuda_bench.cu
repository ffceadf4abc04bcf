// SPDX-License-Identifier: Apache-2.0
// GPU benchmarks of the CUDA backend, timed with cudaEvents on one stream. Each figure is printed
// beside a baseline measured in the same run:
//   realign_keys / realign_blocks  GB/s   vs cudaMemcpyAsync (device→device) of the same bytes
//   apply_dense / compose_dense    TFLOP/s vs cuBLAS {S,D}gemmStridedBatched (when linked)
//   apply_elementwise               GB/s   vs cudaMemcpyAsync of the state bytes
//   sparse_q_scores                 TFLOP/s (2 passes counted once: the useful logits)
//   select_key_tokens               Gitems/s vs cub::DeviceRadixSort alone on the same keys
// Usage: bench_cuda [--smoke] [--reps N]. Without a GPU it prints a skip line and exits 0.
// Times are medians over repetitions of a batch of launches; GB/s count bytes read + written.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <hybridcache/cuda.cuh>
#include <random>
#include <string>
#include <vector>

#if defined(HYBRIDCACHE_BENCH_CUBLAS)
#include <cublas_v2.h>
#endif

namespace hc = hybridcache;

namespace {

bool g_smoke = false;
int g_reps = 7;

#define BENCH_CHECK(expr)                                                                         \
  do {                                                                                            \
    const cudaError_t e_ = (expr);                                                                \
    if (e_ != cudaSuccess) {                                                                      \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

/// Median milliseconds of one call of `f` (batches of `inner` calls between two events).
template <class F>
double median_ms(cudaStream_t s, F&& f) {
  const int inner = g_smoke ? 1 : 10;
  f();  // warm-up (and first-launch costs)
  BENCH_CHECK(cudaStreamSynchronize(s));
  cudaEvent_t a, b;
  BENCH_CHECK(cudaEventCreate(&a));
  BENCH_CHECK(cudaEventCreate(&b));
  std::vector<double> ms;
  for (int r = 0; r < (g_smoke ? 1 : g_reps); ++r) {
    BENCH_CHECK(cudaEventRecord(a, s));
    for (int i = 0; i < inner; ++i) f();
    BENCH_CHECK(cudaEventRecord(b, s));
    BENCH_CHECK(cudaEventSynchronize(b));
    float t = 0;
    BENCH_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(static_cast<double>(t) / inner);
  }
  BENCH_CHECK(cudaEventDestroy(a));
  BENCH_CHECK(cudaEventDestroy(b));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <class T>
hc::cuda::device_buffer<T> random_device(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d;
  std::vector<T> h(n);
  for (auto& x : h) x = T(d(rng));
  hc::cuda::device_buffer<T> b(n);
  hc::cuda::copy_to_device(std::span<const T>(h), b);
  return b;
}

double gbps(double bytes, double ms) { return bytes / (ms * 1e-3) / 1e9; }

template <class T>
void bench_realign(const char* type, cudaStream_t s) {
  const std::size_t tokens = g_smoke ? 64 : 32768, heads = 8, hd = 128;
  const std::size_t n = tokens * heads * hd;
  auto src = random_device<T>(n, 1);
  hc::cuda::device_buffer<T> dst(n);
  for (auto layout : {hc::rope_layout::half_split, hc::rope_layout::interleaved}) {
    const hc::rope_params p{.head_dim = hd, .rotary_dim = hd, .base = 500000.0, .layout = layout};
    const auto sv = hc::cuda::make_view(static_cast<const T*>(src.data()), {tokens, heads, hd});
    const auto dv = hc::cuda::make_view(dst.data(), {tokens, heads, hd});
    const double t = median_ms(s, [&] { BENCH_CHECK(hc::realign_keys(p, sv, dv, 4099, s)); });
    const double m = median_ms(s, [&] {
      BENCH_CHECK(
          cudaMemcpyAsync(dst.data(), src.data(), n * sizeof(T), cudaMemcpyDeviceToDevice, s));
    });
    const double bytes = 2.0 * static_cast<double>(n * sizeof(T));
    std::printf(
        "realign_keys    %-5s %-11s %8zu rows  %8.3f ms %8.1f GB/s | cudaMemcpy %8.1f GB/s "
        "(%.2fx)\n",
        type, layout == hc::rope_layout::half_split ? "half_split" : "interleaved", tokens * heads,
        t, gbps(bytes, t), gbps(bytes, m), m / t);
  }
}

template <class T>
void bench_realign_blocks(const char* type, cudaStream_t s) {
  const std::size_t bs = 16, heads = 8, hd = 128, logical = g_smoke ? 4 : 2048;
  const std::size_t pool = 2 * logical, per_block = bs * heads * hd, n = pool * per_block;
  auto k = random_device<T>(n, 2);
  auto v = random_device<T>(n, 3);
  std::vector<std::int32_t> ot(logical), nt(logical);
  std::mt19937_64 rng(4);
  std::vector<std::int32_t> ids(pool);
  for (std::size_t i = 0; i < pool; ++i) ids[i] = static_cast<std::int32_t>(i);
  std::shuffle(ids.begin(), ids.end(), rng);
  for (std::size_t b = 0; b < logical; ++b) {
    ot[b] = ids[b];
    nt[b] = ids[logical + b];
  }
  hc::cuda::device_buffer<std::int32_t> dot(logical), dnt(logical);
  hc::cuda::copy_to_device(std::span<const std::int32_t>(ot), dot);
  hc::cuda::copy_to_device(std::span<const std::int32_t>(nt), dnt);
  const hc::rope_params p{.head_dim = hd, .rotary_dim = hd, .base = 500000.0};
  const auto kv = hc::cuda::make_view(k.data(), {pool, bs, heads, hd});
  const auto vv = hc::cuda::make_view(v.data(), {pool, bs, heads, hd});
  const auto otv = hc::cuda::make_view(static_cast<const std::int32_t*>(dot.data()), {logical});
  const auto ntv = hc::cuda::make_view(static_cast<const std::int32_t*>(dnt.data()), {logical});
  const double t = median_ms(s, [&] {
    BENCH_CHECK(hc::realign_blocks(p, kv, vv, kv, vv, otv, ntv, logical * bs, 4099, s));
  });
  // Baseline: the same bytes as two contiguous copies (the best a paged copy could do).
  const std::size_t half_bytes = logical * per_block * sizeof(T);
  const double m = median_ms(s, [&] {
    BENCH_CHECK(cudaMemcpyAsync(k.data() + logical * per_block, k.data(), half_bytes,
                                cudaMemcpyDeviceToDevice, s));
    BENCH_CHECK(cudaMemcpyAsync(v.data() + logical * per_block, v.data(), half_bytes,
                                cudaMemcpyDeviceToDevice, s));
  });
  const double bytes = 4.0 * static_cast<double>(half_bytes);
  std::printf(
      "realign_blocks  %-5s %5zu blocks of %zu  %8.3f ms %8.1f GB/s | cudaMemcpy K+V %8.1f GB/s "
      "(%.2fx)\n",
      type, logical, bs, t, gbps(bytes, t), gbps(bytes, m), m / t);
}

#if defined(HYBRIDCACHE_BENCH_CUBLAS)
cublasStatus_t gemm_batched(cublasHandle_t h, std::size_t B, std::size_t dk, std::size_t dv,
                            const float* T, const float* P, float* D) {
  const float one = 1.0f;
  return cublasSgemmStridedBatched(
      h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(dv), static_cast<int>(dk), static_cast<int>(dk),
      &one, P, static_cast<int>(dv), static_cast<long long>(dk * dv), T, static_cast<int>(dk),
      static_cast<long long>(dk * dk), &one, D, static_cast<int>(dv),
      static_cast<long long>(dk * dv), static_cast<int>(B));
}
cublasStatus_t gemm_batched(cublasHandle_t h, std::size_t B, std::size_t dk, std::size_t dv,
                            const double* T, const double* P, double* D) {
  const double one = 1.0;
  return cublasDgemmStridedBatched(
      h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(dv), static_cast<int>(dk), static_cast<int>(dk),
      &one, P, static_cast<int>(dv), static_cast<long long>(dk * dv), T, static_cast<int>(dk),
      static_cast<long long>(dk * dk), &one, D, static_cast<int>(dv),
      static_cast<long long>(dk * dv), static_cast<int>(B));
}
#endif

template <class Real>
void bench_dense(const char* type, cudaStream_t s) {
  for (const std::size_t dk : {std::size_t{64}, std::size_t{128}, std::size_t{256}}) {
    const std::size_t dv = dk, B = g_smoke ? 2 : (dk == 256 ? 128 : 512);
    auto T = random_device<Real>(B * dk * dk, 5);
    auto P = random_device<Real>(B * dk * dv, 6);
    auto A = random_device<Real>(B * dk * dv, 7);
    hc::cuda::device_buffer<Real> D(B * dk * dv);
    const auto tv = hc::cuda::make_view(static_cast<const Real*>(T.data()), {B, dk, dk});
    const auto pv = hc::cuda::make_view(static_cast<const Real*>(P.data()), {B, dk, dv});
    const auto av = hc::cuda::make_view(static_cast<const Real*>(A.data()), {B, dk, dv});
    const auto dv3 = hc::cuda::make_view(D.data(), {B, dk, dv});
    const double t = median_ms(s, [&] { BENCH_CHECK(hc::cuda::apply_dense(tv, pv, av, dv3, s)); });
    const double flops = 2.0 * static_cast<double>(B * dk * dk * dv);
    std::printf("apply_dense     %-6s B=%4zu dk=dv=%3zu  %8.3f ms %8.2f TFLOP/s", type, B, dk, t,
                flops / (t * 1e-3) / 1e12);
#if defined(HYBRIDCACHE_BENCH_CUBLAS)
    cublasHandle_t h;
    if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
      cublasSetStream(h, s);
      const double c =
          median_ms(s, [&] { (void)gemm_batched(h, B, dk, dv, T.data(), P.data(), D.data()); });
      std::printf(" | cuBLAS strided-batched %8.2f TFLOP/s (%.2fx)\n", flops / (c * 1e-3) / 1e12,
                  c / t);
      cublasDestroy(h);
    } else {
      std::printf(" | cuBLAS unavailable\n");
    }
#else
    std::printf(" | (built without cuBLAS: no baseline)\n");
#endif
  }
}

template <class Real>
void bench_elementwise(const char* type, cudaStream_t s) {
  const std::size_t B = g_smoke ? 2 : 1024, dk = 128, dv = 128;
  auto L = random_device<double>(B * dk, 8);
  auto P = random_device<Real>(B * dk * dv, 9);
  auto A = random_device<Real>(B * dk * dv, 10);
  hc::cuda::device_buffer<Real> D(B * dk * dv);
  const auto lv = hc::cuda::make_view(static_cast<const double*>(L.data()), {B, dk});
  const auto pv = hc::cuda::make_view(static_cast<const Real*>(P.data()), {B, dk, dv});
  const auto av = hc::cuda::make_view(static_cast<const Real*>(A.data()), {B, dk, dv});
  const auto dv3 = hc::cuda::make_view(D.data(), {B, dk, dv});
  const double t =
      median_ms(s, [&] { BENCH_CHECK(hc::cuda::apply_elementwise(lv, pv, av, dv3, s)); });
  const std::size_t state_bytes = B * dk * dv * sizeof(Real);
  const double m = median_ms(s, [&] {
    BENCH_CHECK(cudaMemcpyAsync(D.data(), P.data(), state_bytes, cudaMemcpyDeviceToDevice, s));
  });
  std::printf("apply_diagonal  %-6s B=%4zu %zux%zu  %8.3f ms %8.1f GB/s | cudaMemcpy %8.1f GB/s\n",
              type, B, dk, dv, t, gbps(3.0 * static_cast<double>(state_bytes), t),
              gbps(2.0 * static_cast<double>(state_bytes), m));
}

void bench_select(cudaStream_t s) {
  const std::size_t t_len = g_smoke ? 256 : 8192, nq = g_smoke ? 16 : 512, H = 32, Hkv = 8, d = 128;
  auto q = random_device<float>(nq * H * d, 11);
  auto k = random_device<float>(t_len * Hkv * d, 12);
  hc::cuda::device_buffer<float> out(t_len);
  std::vector<std::int64_t> pos(nq);
  for (std::size_t i = 0; i < nq; ++i) pos[i] = static_cast<std::int64_t>(t_len - nq + i);
  hc::cuda::device_buffer<std::int64_t> dpos(nq);
  hc::cuda::copy_to_device(std::span<const std::int64_t>(pos), dpos);
  const std::size_t ws_bytes = hc::cuda::sparse_q_scores_workspace_bytes(nq, t_len);
  hc::cuda::device_buffer<unsigned char> ws(ws_bytes);
  const auto qv = hc::cuda::make_view(static_cast<const float*>(q.data()), {nq, H, d});
  const auto kv = hc::cuda::make_view(static_cast<const float*>(k.data()), {t_len, Hkv, d});
  const auto pv = hc::cuda::make_view(static_cast<const std::int64_t*>(dpos.data()), {nq});
  const auto ov = hc::cuda::make_view(out.data(), {t_len});
  const double t = median_ms(
      s, [&] { BENCH_CHECK(hc::sparse_q_scores(qv, pv, kv, ov, {}, ws.data(), ws_bytes, s)); });
  double visible = 0;
  for (auto p : pos) visible += static_cast<double>(p + 1);
  const double flops = 2.0 * static_cast<double>(H * d) * visible;
  std::printf(
      "sparse_q_scores T=%zu nq=%zu H=%zu/%zu d=%zu  %8.3f ms %8.2f TFLOP/s (useful logits)\n",
      t_len, nq, H, Hkv, d, t, flops / (t * 1e-3) / 1e12);

  // Key-token top-k over a long prompt, against the radix sort it is built on.
  const std::size_t T2 = g_smoke ? 1000 : (1u << 20), kk = 2048;
  auto sc = random_device<float>(T2, 13);
  std::vector<std::uint8_t> mask(T2);
  for (std::size_t j = 0; j < T2; ++j) mask[j] = (j / 256) % 4 != 0;
  hc::cuda::device_buffer<std::uint8_t> dm(T2);
  hc::cuda::copy_to_device(std::span<const std::uint8_t>(mask), dm);
  hc::cuda::device_buffer<std::int32_t> top(kk);
  const auto sv = hc::cuda::make_view(static_cast<const float*>(sc.data()), {T2});
  const auto mv = hc::cuda::make_view(static_cast<const std::uint8_t*>(dm.data()), {T2});
  const auto tv = hc::cuda::make_view(top.data(), {kk});
  std::size_t bytes = 0;
  BENCH_CHECK(hc::cuda::select_key_tokens(sv, mv, tv, nullptr, bytes, s));
  hc::cuda::device_buffer<unsigned char> tws(bytes);
  const double tk = median_ms(
      s, [&] { BENCH_CHECK(hc::cuda::select_key_tokens(sv, mv, tv, tws.data(), bytes, s)); });
  hc::cuda::device_buffer<float> ko(T2);
  hc::cuda::device_buffer<std::uint32_t> vi(T2), vo(T2);
  std::size_t sort_bytes = 0;
  BENCH_CHECK(cub::DeviceRadixSort::SortPairsDescending(nullptr, sort_bytes, sc.data(), ko.data(),
                                                        vi.data(), vo.data(),
                                                        static_cast<std::int64_t>(T2)));
  hc::cuda::device_buffer<unsigned char> sws(sort_bytes);
  const double ts = median_ms(s, [&] {
    BENCH_CHECK(cub::DeviceRadixSort::SortPairsDescending(sws.data(), sort_bytes, sc.data(),
                                                          ko.data(), vi.data(), vo.data(),
                                                          static_cast<std::int64_t>(T2), 0, 32, s));
  });
  std::printf(
      "select_key_tokens T=%zu k=%zu  %8.3f ms %8.2f Gitems/s | cub radix sort alone %8.2f "
      "Gitems/s\n",
      T2, kk, tk, static_cast<double>(T2) / (tk * 1e-3) / 1e9,
      static_cast<double>(T2) / (ts * 1e-3) / 1e9);
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--smoke") == 0)
      g_smoke = true;
    else if (std::strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      g_reps = std::max(1, std::atoi(argv[++i]));
  }
  if (hc::cuda::device_count() == 0) {
    std::printf("HYBRIDCACHE_SKIP: no CUDA device visible; nothing measured\n");
    return 0;
  }
  cudaDeviceProp prop{};
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d, %d SMs)%s\n", prop.name, prop.major, prop.minor,
              prop.multiProcessorCount,
              g_smoke ? "  [smoke run: sizes too small to mean anything]" : "");
  cudaStream_t s;
  BENCH_CHECK(cudaStreamCreate(&s));
  bench_realign<hc::half>("fp16", s);
  bench_realign<hc::bfloat16>("bf16", s);
  bench_realign<float>("fp32", s);
  bench_realign_blocks<hc::half>("fp16", s);
  bench_realign_blocks<float>("fp32", s);
  bench_dense<float>("fp32", s);
  bench_dense<double>("fp64", s);
  bench_elementwise<float>("fp32", s);
  bench_select(s);
  BENCH_CHECK(cudaStreamDestroy(s));
  return 0;
}
