#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Owning and non-owning keys that carry their digest, a domain byte *and* their content, for hash
/// maps that must verify a hit: `verified_key` (owns namespace encoding and token ids) and
/// `key_view` (borrows them, for lookups without copying). `verified_key_hash` hashes the digest
/// only; `verified_key_equal` compares digest, namespace bytes and token ids. Both are transparent,
/// so `std::unordered_map<verified_key, V, verified_key_hash, verified_key_equal>` — and
/// `lru_pool` — accept a `key_view` in `find`/`erase`.
///
/// The digest is whatever the owner computed (a segment key or a chained block key); equality
/// never trusts it alone, so a colliding digest cannot produce a false hit.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A borrowed (digest, namespace, tokens) triple. The referenced data must outlive the view.
struct key_view {
  digest hash;
  std::uint8_t domain = 0;  ///< key family (e.g. `segment_kind` 'P'/'A', 'B' for block chains)
  std::string_view ns;  ///< the namespace's canonical encoding (`namespace_key::bytes()`)
  std::span<const token_id> tokens;
};

/// An owned (digest, namespace, tokens) triple.
class verified_key {
 public:
  verified_key(const digest& d, std::uint8_t domain, const namespace_key& ns,
               std::span<const token_id> tokens)
      : hash_(d), domain_(domain), ns_(ns.shared_bytes()), tokens_(tokens.begin(), tokens.end()) {}

  [[nodiscard]] const digest& hash() const noexcept { return hash_; }
  [[nodiscard]] std::uint8_t domain() const noexcept { return domain_; }
  [[nodiscard]] std::string_view ns() const noexcept { return *ns_; }
  [[nodiscard]] std::span<const token_id> tokens() const noexcept { return tokens_; }
  [[nodiscard]] key_view view() const noexcept { return {hash_, domain_, *ns_, tokens_}; }
  operator key_view() const noexcept { return view(); }  // NOLINT: implicit on purpose

 private:
  digest hash_;
  std::uint8_t domain_;
  std::shared_ptr<const std::string> ns_;
  std::vector<token_id> tokens_;
};

/// Transparent hash over the digest.
struct verified_key_hash {
  using is_transparent = void;
  [[nodiscard]] std::size_t operator()(const key_view& k) const noexcept {
    return digest_hasher{}(k.hash);
  }
  [[nodiscard]] std::size_t operator()(const verified_key& k) const noexcept {
    return digest_hasher{}(k.hash());
  }
};

/// Transparent equality: digest, domain, namespace bytes, token ids.
struct verified_key_equal {
  using is_transparent = void;
  [[nodiscard]] static bool same(const key_view& a, const key_view& b) noexcept {
    return a.hash == b.hash && a.domain == b.domain && a.tokens.size() == b.tokens.size() && a.ns == b.ns &&
           std::equal(a.tokens.begin(), a.tokens.end(), b.tokens.begin());
  }
  [[nodiscard]] bool operator()(const key_view& a, const key_view& b) const noexcept {
    return same(a, b);
  }
  [[nodiscard]] bool operator()(const verified_key& a, const verified_key& b) const noexcept {
    return same(a.view(), b.view());
  }
  [[nodiscard]] bool operator()(const verified_key& a, const key_view& b) const noexcept {
    return same(a.view(), b);
  }
  [[nodiscard]] bool operator()(const key_view& a, const verified_key& b) const noexcept {
    return same(a, b.view());
  }
};

HYBRIDCACHE_NAMESPACE_END
