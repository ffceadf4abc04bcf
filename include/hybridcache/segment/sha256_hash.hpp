#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `sha256_hash`: HMAC-SHA-256 keyed by a deployment secret, truncated to 128 bits —
/// the hash policy for keys that leave the process (a cross-node index, a shared storage tier).
/// Unlike `xxh3_hash` (per-process random secret), every node configured with the same secret
/// computes the same key for the same (namespace, tokens), and nobody without the secret can
/// compute or forge one. The message layout is the one of keys.hpp, so the digest is
/// trunc128(HMAC-SHA-256(secret, head ‖ body)) — first 16 bytes of the MAC, `lo` little-endian
/// from bytes 0..7, `hi` from bytes 8..15.
///
/// Needs OpenSSL 3 (libcrypto): link `hybridcache::openssl` (or OpenSSL::Crypto). Not part of
/// the umbrella headers for that reason.

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Per-thread keyed HMAC contexts of `sha256_hash`, so a call re-initialises a context
/// it already owns (`EVP_MAC_init` with no key keeps the key) instead of duplicating the template
/// (a few allocations; about 2x the cost of a short message's MAC). Entries are found by the
/// policy's unique id, never by address, so a destroyed policy's context can only be evicted,
/// never reused for another key. Four entries, round-robin eviction; freed at thread exit.
class sha256_thread_contexts {
 public:
  sha256_thread_contexts() = default;
  sha256_thread_contexts(const sha256_thread_contexts&) = delete;
  sha256_thread_contexts& operator=(const sha256_thread_contexts&) = delete;
  ~sha256_thread_contexts() {
    for (auto& e : entries_)
      if (e.ctx != nullptr) EVP_MAC_CTX_free(e.ctx);
  }
  /// A context keyed like `keyed_template`, owned by this thread (nullptr if OpenSSL fails).
  EVP_MAC_CTX* get(std::uint64_t id, EVP_MAC_CTX* keyed_template) {
    for (auto& e : entries_)
      if (e.ctx != nullptr && e.id == id) return e.ctx;
    entry& e = entries_[next_++ % entries_.size()];
    if (e.ctx != nullptr) EVP_MAC_CTX_free(e.ctx);
    e.ctx = EVP_MAC_CTX_dup(keyed_template);
    e.id = id;
    return e.ctx;
  }
  static sha256_thread_contexts& local() {
    thread_local sha256_thread_contexts contexts;
    return contexts;
  }

 private:
  struct entry {
    std::uint64_t id = 0;
    EVP_MAC_CTX* ctx = nullptr;
  };
  std::array<entry, 4> entries_{};
  std::size_t next_ = 0;
};

}  // namespace detail

/// HMAC-SHA-256 hash policy (file comment). Copies share one keyed OpenSSL context template and
/// an id; each thread computes on its own re-initialised duplicate of the template
/// (`detail::sha256_thread_contexts`), so concurrent calls are safe.
class sha256_hash {
 public:
  /// Minimum accepted secret length in bytes (128 bits of key material).
  static constexpr std::size_t min_secret_bytes = 16;

  /// @throws invalid_argument if the secret is shorter than `min_secret_bytes`.
  /// @throws error if OpenSSL cannot provide HMAC-SHA-256.
  explicit sha256_hash(std::span<const std::byte> deployment_secret) {
    if (deployment_secret.size() < min_secret_bytes)
      hybridcache::detail::throw_invalid("deployment_secret.size()", deployment_secret.size(),
                                         "HMAC key must be at least 16 bytes");
    std::unique_ptr<EVP_MAC, decltype(&EVP_MAC_free)> mac(EVP_MAC_fetch(nullptr, "HMAC", nullptr),
                                                          &EVP_MAC_free);
    if (!mac) throw error("hybridcache: OpenSSL has no HMAC implementation");
    EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac.get());
    if (ctx == nullptr) throw error("hybridcache: EVP_MAC_CTX_new failed");
    template_.reset(ctx, &EVP_MAC_CTX_free);
    char digest_name[] = "SHA256";
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
        OSSL_PARAM_construct_end()};
    if (EVP_MAC_init(ctx, reinterpret_cast<const unsigned char*>(deployment_secret.data()),
                     deployment_secret.size(), params) != 1)
      throw error("hybridcache: HMAC-SHA-256 initialisation failed");
    static std::atomic<std::uint64_t> next_id{1};
    id_ = next_id.fetch_add(1, std::memory_order_relaxed);
  }

  /// trunc128(HMAC-SHA-256(secret, head ‖ body)).
  [[nodiscard]] digest operator()(std::span<const std::byte> head,
                                  std::span<const std::byte> body) const {
    EVP_MAC_CTX* ctx =
        hybridcache::detail::sha256_thread_contexts::local().get(id_, template_.get());
    if (ctx == nullptr) throw error("hybridcache: EVP_MAC_CTX_dup failed");
    unsigned char out[32];
    std::size_t out_len = 0;
    if (EVP_MAC_init(ctx, nullptr, 0, nullptr) != 1 ||  // restart with the same key
        EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(head.data()), head.size()) !=
            1 ||
        EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(body.data()), body.size()) !=
            1 ||
        EVP_MAC_final(ctx, out, &out_len, sizeof out) != 1 || out_len != 32)
      throw error("hybridcache: HMAC-SHA-256 computation failed");
    digest d;
    for (int i = 0; i < 8; ++i) {
      d.lo |= static_cast<std::uint64_t>(out[i]) << (8 * i);
      d.hi |= static_cast<std::uint64_t>(out[8 + i]) << (8 * i);
    }
    return d;
  }

 private:
  std::shared_ptr<EVP_MAC_CTX> template_;
  std::uint64_t id_ = 0;
};

static_assert(hash_policy<sha256_hash>);

HYBRIDCACHE_NAMESPACE_END
