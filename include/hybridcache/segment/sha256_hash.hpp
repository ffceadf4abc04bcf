#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `segment::sha256_hash`: HMAC-SHA-256 keyed by a deployment secret, truncated to 128 bits —
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
namespace segment {

/// HMAC-SHA-256 hash policy (file comment). Copies share one keyed OpenSSL context template;
/// each call works on its own duplicate, so concurrent calls are safe.
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
  }

  /// trunc128(HMAC-SHA-256(secret, head ‖ body)).
  [[nodiscard]] digest operator()(std::span<const std::byte> head,
                                  std::span<const std::byte> body) const {
    std::unique_ptr<EVP_MAC_CTX, decltype(&EVP_MAC_CTX_free)> ctx(
        EVP_MAC_CTX_dup(template_.get()), &EVP_MAC_CTX_free);
    if (!ctx) throw error("hybridcache: EVP_MAC_CTX_dup failed");
    unsigned char out[32];
    std::size_t out_len = 0;
    if (EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(head.data()),
                       head.size()) != 1 ||
        EVP_MAC_update(ctx.get(), reinterpret_cast<const unsigned char*>(body.data()),
                       body.size()) != 1 ||
        EVP_MAC_final(ctx.get(), out, &out_len, sizeof out) != 1 || out_len != 32)
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
};

static_assert(hash_policy<sha256_hash>);

}  // namespace segment
HYBRIDCACHE_NAMESPACE_END
