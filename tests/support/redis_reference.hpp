#pragma once
// SPDX-License-Identifier: Apache-2.0

// Independent reference for store/redis_index.hpp's key and record formats: builds every message
// byte by byte from the documented layout and MACs it with OpenSSL's one-shot HMAC() (a different
// API from the EVP_MAC policy the library uses).

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace hc_test::redis_ref {

inline std::string hmac(std::string_view key, std::string_view msg) {
  unsigned char out[32];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), out, &len);
  return std::string(reinterpret_cast<const char*>(out), len);
}

inline void le(std::string& s, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

/// "t" + 16 hex digits of the little-endian uint64 made of the MAC's first 8 bytes, or "s".
inline std::string tenant_tag(std::string_view secret, const std::string* tenant) {
  if (tenant == nullptr) return "s";
  std::string msg = "HCT1";
  le(msg, tenant->size(), 4);
  msg += *tenant;
  const std::string mac = hmac(secret, msg);
  static const char* hex = "0123456789abcdef";
  std::string out = "t";
  for (int b = 7; b >= 0; --b) {
    const auto v = static_cast<unsigned char>(mac[static_cast<std::size_t>(b)]);
    out.push_back(hex[v >> 4]);
    out.push_back(hex[v & 15]);
  }
  return out;
}

/// The Redis key of a position-independent segment.
inline std::string segment_key(std::string_view secret, std::string_view prefix,
                               const std::string* tenant, std::string_view ns_bytes,
                               const std::vector<std::uint32_t>& tokens) {
  std::string msg = "HCK1P";
  le(msg, ns_bytes.size(), 4);
  msg += ns_bytes;
  le(msg, tokens.size(), 8);
  for (auto t : tokens) le(msg, t, 4);
  return std::string(prefix) + tenant_tag(secret, tenant) + ":" + hmac(secret, msg).substr(0, 16);
}

/// The 45-byte record stored under a key whose last 16 bytes are `k`.
inline std::string record(std::string_view secret, std::string_view k, std::uint32_t node,
                          std::uint32_t pool, std::uint64_t offset, std::uint64_t bytes,
                          std::uint32_t tokens) {
  const std::string tag_key = hmac(secret, "HCRV1 record tag key").substr(0, 16);
  std::string body;
  body.push_back(1);
  le(body, node, 4);
  le(body, pool, 4);
  le(body, offset, 8);
  le(body, bytes, 8);
  le(body, tokens, 4);
  const std::string tag = hmac(tag_key, "HCR1" + std::string(k) + body).substr(0, 16);
  return body + tag;
}

}  // namespace hc_test::redis_ref
