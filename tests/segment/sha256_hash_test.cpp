// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <hybridcache/segment/index.hpp>
#include <hybridcache/segment/keys.hpp>
#include <hybridcache/segment/sha256_hash.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

TEST_CASE("sha256_hash is HMAC-SHA-256 truncated to 128 bits (RFC 4231 test case 1)") {
  // Key = 0x0b * 20, data = "Hi There";
  // HMAC-SHA-256 = b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7.
  const std::vector<std::byte> key(20, std::byte{0x0b});
  const hc::sha256_hash h(key);
  const std::string data = "Hi There";
  const auto bytes = std::as_bytes(std::span<const char>(data));
  CHECK(h(bytes.first(3), bytes.subspan(3)).to_hex() == "b0344c61d8db38535ca8afceaf0bf12b");
  CHECK(h(bytes, {}).to_hex() == "b0344c61d8db38535ca8afceaf0bf12b");
  CHECK(h({}, bytes).to_hex() == "b0344c61d8db38535ca8afceaf0bf12b");
}

TEST_CASE("sha256_hash: same deployment secret -> same keys across instances, others differ") {
  const std::vector<std::byte> s1(32, std::byte{1}), s2(32, std::byte{2});
  const hc::sha256_hash a(s1), b(s1), c(s2);
  const auto ns = hc::namespace_key{}.with_tenant("t");
  const std::vector<token_id> t{1, 2, 3, 4};
  CHECK(hc::segment_key(a, ns, t) == hc::segment_key(b, ns, t));
  CHECK(hc::segment_key(a, ns, t) != hc::segment_key(c, ns, t));
  CHECK(hc::block_keys(a, ns, t, 2) == hc::block_keys(b, ns, t, 2));
  hc::segment_index<int, hc::sha256_hash> idx(a);
  idx.insert(ns, t, 3);
  CHECK(idx.find(ns, t) == std::optional<int>(3));
  CHECK_FALSE(idx.find(hc::namespace_key{}, t));
  CHECK_THROWS_AS(hc::sha256_hash(std::vector<std::byte>(8)), hybridcache::invalid_argument);
}

TEST_CASE("sha256_hash: per-thread reused contexts never mix keys (one-shot HMAC reference)") {
  // More live policies than the per-thread context cache holds (4), called interleaved, and a
  // policy re-created at the same address with another key: every digest must equal OpenSSL's
  // one-shot HMAC() with the right key.
  auto reference = [](const std::vector<std::byte>& key, const std::string& msg) {
    unsigned char out[32];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
    hc::digest d;
    for (int i = 0; i < 8; ++i) {
      d.lo |= static_cast<std::uint64_t>(out[i]) << (8 * i);
      d.hi |= static_cast<std::uint64_t>(out[8 + i]) << (8 * i);
    }
    return d;
  };
  std::vector<std::vector<std::byte>> keys;
  std::vector<hc::sha256_hash> policies;
  for (int k = 0; k < 7; ++k) {
    keys.emplace_back(16 + static_cast<std::size_t>(k), static_cast<std::byte>(k + 1));
    policies.emplace_back(keys.back());
  }
  for (int round = 0; round < 3; ++round) {
    for (std::size_t k = 0; k < keys.size(); ++k) {
      const std::string msg = "message " + std::to_string(round) + "/" + std::to_string(k);
      const auto bytes = std::as_bytes(std::span<const char>(msg));
      CHECK(policies[k](bytes.first(4), bytes.subspan(4)) == reference(keys[k], msg));
    }
  }
  std::optional<hc::sha256_hash> slot;
  for (int k = 0; k < 7; ++k) {
    slot.emplace(keys[static_cast<std::size_t>(k)]);
    const std::string msg = "same address";
    CHECK((*slot)(std::as_bytes(std::span<const char>(msg)), {}) ==
          reference(keys[static_cast<std::size_t>(k)], msg));
  }
  // Threads: each computes with every policy; all agree with the reference.
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::size_t k = static_cast<std::size_t>((i + t) % 7);
        const std::string msg = "thread " + std::to_string(t) + " " + std::to_string(i);
        if (policies[k](std::as_bytes(std::span<const char>(msg)), {}) != reference(keys[k], msg))
          wrong.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  CHECK(wrong.load() == 0);
}
