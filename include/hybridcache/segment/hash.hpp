#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Hash policies for segment keys. A policy is a keyed function from a two-part message
/// (`head`, `body`) to a 128-bit `digest`; the message layout — domain tag, namespace, chain
/// predecessor, token count, token ids — is fixed by keys.hpp and is the same for every policy
/// (docs/design/key_format.md). The two parts exist only so the token ids can be hashed in place
/// without a copy; a policy must return the same digest as for `head ++ body`.
///
/// Policies provided:
/// - `xxh3_hash` (default): XXH3-128 keyed with a per-instance random 192-byte secret
///   (`XXH3_128bits_withSecret`). Fast, and an outsider who does not know the secret cannot
///   predict keys — the defence against forged collisions and flooding of predictable hashes
///   (vLLM CVE-2025-25183). Keys are meaningful only inside one process, one policy instance.
/// - `constant_hash`: every message maps to one digest. For tests: every lookup must still be
///   right, because structures verify namespace and tokens before reporting a hit.
/// - `sha256_hash` (segment/sha256_hash.hpp, links OpenSSL): HMAC-SHA-256 keyed by a deployment
///   secret, truncated to 128 bits, for keys that leave the process (a cross-node index).
///
/// xxHash is used header-only (`XXH_INLINE_ALL`), so it adds no link dependency.

#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/digest.hpp"

// GCC 12 with AVX-512 (-march=native) reports -Wmaybe-uninitialized inside its own intrinsics
// once XXH3's streaming code is inlined; the warning is spurious and would break -Werror users.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#define HYBRIDCACHE_DETAIL_XXH_DIAG_PUSHED
#endif
#include "hybridcache/keyed_hash.hpp"  // xxHash, header-only (XXH_INLINE_ALL)

HYBRIDCACHE_NAMESPACE_BEGIN

/// A keyed 128-bit hash over a two-part message. Must be callable concurrently on a const
/// object (indexes share one policy across threads).
template <class H>
concept hash_policy = std::copy_constructible<H> &&
    requires(const H& h, std::span<const std::byte> head, std::span<const std::byte> body) {
      { h(head, body) } -> std::same_as<digest>;
    };

/// XXH3-128 keyed by a secret. Default-constructed instances draw a fresh random secret from
/// `std::random_device`, so two instances give unrelated keys.
class xxh3_hash {
 public:
  /// Secret length in bytes (XXH3's default secret size; the minimum is 136).
  static constexpr std::size_t secret_size = 192;
  /// Messages up to this many bytes are hashed one-shot from a stack copy; longer ones stream.
  static constexpr std::size_t one_shot_bytes = 1024;

  /// A fresh random secret (per instance).
  xxh3_hash() {
    std::random_device rd;
    for (std::size_t i = 0; i < secret_size; i += 4) {
      const std::uint32_t w = rd();
      std::memcpy(secret_.data() + i, &w, 4);
    }
  }

  /// A caller-provided secret (e.g. to reproduce keys in a test). It should be random bytes.
  /// @throws invalid_argument if `secret.size() != secret_size`.
  explicit xxh3_hash(std::span<const std::byte> secret) {
    if (secret.size() != secret_size)
      hybridcache::detail::throw_invalid("secret.size()", secret.size(), "XXH3 secret must be 192 bytes");
    std::memcpy(secret_.data(), secret.data(), secret_size);
  }

  [[nodiscard]] digest operator()(std::span<const std::byte> head,
                                  std::span<const std::byte> body) const noexcept {
    const std::size_t n = head.size() + body.size();
    XXH128_hash_t h;
    if (body.empty() || head.empty()) {  // already contiguous: no copy
      const auto& whole = body.empty() ? head : body;
      h = XXH3_128bits_withSecret(whole.data(), whole.size(), secret_.data(), secret_size);
    } else if (n <= one_shot_bytes) {
      alignas(16) std::byte buf[one_shot_bytes];
      if (!head.empty()) std::memcpy(buf, head.data(), head.size());
      if (!body.empty()) std::memcpy(buf + head.size(), body.data(), body.size());
      h = XXH3_128bits_withSecret(buf, n, secret_.data(), secret_size);
    } else {
      XXH3_state_t state;
      XXH3_INITSTATE(&state);
      XXH3_128bits_reset_withSecret(&state, secret_.data(), secret_size);
      XXH3_128bits_update(&state, head.data(), head.size());
      XXH3_128bits_update(&state, body.data(), body.size());
      h = XXH3_128bits_digest(&state);
    }
    return digest{h.low64, h.high64};
  }

 private:
  std::array<std::byte, secret_size> secret_{};
};

/// Every message hashes to `value`. Test-only: it turns every structure keyed by digests into a
/// single collision chain, which is how tests show that hits are verified.
struct constant_hash {
  digest value{0x0123456789abcdefull, 0xfedcba9876543210ull};
  [[nodiscard]] digest operator()(std::span<const std::byte>,
                                  std::span<const std::byte>) const noexcept {
    return value;
  }
};

static_assert(hash_policy<xxh3_hash>);
static_assert(hash_policy<constant_hash>);

HYBRIDCACHE_NAMESPACE_END

#ifdef HYBRIDCACHE_DETAIL_XXH_DIAG_PUSHED
#pragma GCC diagnostic pop
#undef HYBRIDCACHE_DETAIL_XXH_DIAG_PUSHED
#endif
