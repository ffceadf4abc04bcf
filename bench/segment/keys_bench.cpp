// SPDX-License-Identifier: Apache-2.0
// Chained block keys h_i = H(h_{i-1}, block_i) for 16/64/256-token blocks, beside the same
// bytes through raw XXH3-128 (no chaining, no framing: the floor) and through SHA-256 and
// HMAC-SHA-256 (OpenSSL), all in this binary. Counters: ns_per_block, GB/s of token bytes.
// Target (issue 4): keyed chain <= 25 ns per 16-token block and >= 25x faster than SHA-256.
#include <benchmark/benchmark.h>

#include <openssl/evp.h>

#include <hybridcache/segment/hash.hpp>
#include <hybridcache/segment/keys.hpp>
#include <hybridcache/segment/sha256_hash.hpp>

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
constexpr std::size_t total_tokens = 1 << 16;  // 64 Ki tokens = 256 KiB per iteration

const std::vector<token_id>& tokens() {
  static const std::vector<token_id> t = [] {
    std::vector<token_id> v(total_tokens);
    std::mt19937 rng(1);
    for (auto& x : v) x = rng() % 151936;
    return v;
  }();
  return t;
}

void set_counters(benchmark::State& state, std::size_t block) {
  const double blocks = static_cast<double>(total_tokens / block);
  state.counters["ns_per_block"] = benchmark::Counter(
      blocks * static_cast<double>(state.iterations()) * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(total_tokens * sizeof(token_id)));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(total_tokens / block));
}

void BM_chain_xxh3(benchmark::State& state) {
  const auto block = static_cast<std::size_t>(state.range(0));
  const hc::xxh3_hash h;
  const auto ns = hc::namespace_key{}.with_tenant("org_1");
  std::vector<hc::digest> out(total_tokens / block);
  for (auto _ : state) {
    hc::block_keys_into(h, ns, tokens(), block, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, block);
}

void BM_raw_xxh3_128(benchmark::State& state) {
  const auto block = static_cast<std::size_t>(state.range(0));
  const auto& t = tokens();
  std::vector<XXH128_hash_t> out(total_tokens / block);
  for (auto _ : state) {
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = XXH3_128bits(t.data() + i * block, block * sizeof(token_id));
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, block);
}

// SHA-256 of each block through OpenSSL's one-shot EVP_Digest (what a caller typically writes).
void BM_raw_sha256_oneshot(benchmark::State& state) {
  const auto block = static_cast<std::size_t>(state.range(0));
  const auto& t = tokens();
  std::vector<unsigned char> out(32 * (total_tokens / block));
  const EVP_MD* md = EVP_sha256();
  for (auto _ : state) {
    for (std::size_t i = 0; i < total_tokens / block; ++i) {
      unsigned int len = 0;
      EVP_Digest(t.data() + i * block, block * sizeof(token_id), out.data() + 32 * i, &len, md,
                 nullptr);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, block);
}

// SHA-256 of each block with a pre-fetched digest and a reused context: the fastest OpenSSL 3
// path (SHA-NI where the CPU has it) and the strongest baseline.
void BM_raw_sha256_reused_ctx(benchmark::State& state) {
  const auto block = static_cast<std::size_t>(state.range(0));
  const auto& t = tokens();
  std::vector<unsigned char> out(32 * (total_tokens / block));
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  for (auto _ : state) {
    for (std::size_t i = 0; i < total_tokens / block; ++i) {
      unsigned int len = 0;
      EVP_DigestInit_ex2(ctx, md, nullptr);
      EVP_DigestUpdate(ctx, t.data() + i * block, block * sizeof(token_id));
      EVP_DigestFinal_ex(ctx, out.data() + 32 * i, &len);
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  EVP_MD_CTX_free(ctx);
  EVP_MD_free(md);
  set_counters(state, block);
}

void BM_chain_hmac_sha256(benchmark::State& state) {
  const auto block = static_cast<std::size_t>(state.range(0));
  const std::vector<std::byte> secret(32, std::byte{7});
  const hc::sha256_hash h(secret);
  const auto ns = hc::namespace_key{}.with_tenant("org_1");
  std::vector<hc::digest> out(total_tokens / block);
  for (auto _ : state) {
    hc::block_keys_into(h, ns, tokens(), block, out);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, block);
}

void BM_segment_key_xxh3(benchmark::State& state) {
  const auto n = static_cast<std::size_t>(state.range(0));
  const hc::xxh3_hash h;
  const auto ns = hc::namespace_key{}.with_tenant("org_1").with_knowledge_base("docs");
  const std::span<const token_id> seg(tokens().data(), n);
  for (auto _ : state) benchmark::DoNotOptimize(hc::segment_key(h, ns, seg));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * n * sizeof(token_id)));
}
}  // namespace

BENCHMARK(BM_chain_xxh3)->Arg(16)->Arg(64)->Arg(256);
BENCHMARK(BM_raw_xxh3_128)->Arg(16)->Arg(64)->Arg(256);
BENCHMARK(BM_raw_sha256_oneshot)->Arg(16)->Arg(64)->Arg(256);
BENCHMARK(BM_raw_sha256_reused_ctx)->Arg(16)->Arg(64)->Arg(256);
BENCHMARK(BM_chain_hmac_sha256)->Arg(16)->Arg(64)->Arg(256);
BENCHMARK(BM_segment_key_xxh3)->Arg(16)->Arg(512)->Arg(2048);
