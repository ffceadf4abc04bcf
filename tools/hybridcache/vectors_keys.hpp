// SPDX-License-Identifier: Apache-2.0
// Segment-key golden vectors (docs/design/key_format.md): namespace encodings, root keys,
// chained block keys and segment keys under a fixed, published test secret, compared byte for
// byte. The references build every message byte by byte from the format spec and hash it with
// the hash library's plain one-shot API (XXH3_128bits_withSecret; OpenSSL's EVP_Q_mac for
// HMAC-SHA-256) — never through segment/keys.hpp, which is the code under test.
//
// The test secrets are public by design (they only pin test vectors; a deployment draws its
// own): byte i of the XXH3 secret (192 bytes) and of the HMAC key (32 bytes) is byte i mod 8,
// little-endian, of output ⌊i/8⌋ of SplitMix64 seeded with 0x48434B3158585833 ("HCK1XXH3") and
// 0x48434B31484D4143 ("HCK1HMAC") respectively.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <hybridcache/segment/keys.hpp>
#include <hybridcache/segment/namespace_key.hpp>
#if defined(HYBRIDCACHE_CLI_HAS_OPENSSL)
#include <openssl/evp.h>
#include <hybridcache/segment/sha256_hash.hpp>
#endif

#ifndef XXH_INLINE_ALL
#define XXH_INLINE_ALL
#endif
#include <xxhash.h>

#include "hybridcache/vectors_common.hpp"

namespace hybridcache_cli::vectors {

/// The published test secret: `n` bytes of SplitMix64 from `seed`, little-endian words.
inline std::vector<unsigned char> test_secret(std::uint64_t seed, std::size_t n) {
  prng g(seed);
  std::vector<unsigned char> s(n);
  std::uint64_t word = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) word = g.next();
    s[i] = static_cast<unsigned char>(word >> (8 * (i % 8)));
  }
  return s;
}
inline constexpr std::uint64_t xxh3_test_seed = 0x48434B3158585833ull;  // "HCK1XXH3"
inline constexpr std::uint64_t hmac_test_seed = 0x48434B31484D4143ull;  // "HCK1HMAC"

/// A namespace as the manifest describes it: field name → value, in encoding order.
struct ns_spec {
  std::vector<std::pair<std::string, std::string>> fields;  // tenant, kb, adapter, model, extra
};

/// The namespaces of the key vectors: the shared one, injectivity edge cases, every field.
inline std::vector<ns_spec> key_namespaces() {
  return {{{}},
          {{{"tenant", "org_1"}}},
          {{{"extra", "org_1"}, {"extra", "2345"}}},
          {{{"extra", "org_12345"}, {"extra", ""}}},
          {{{"tenant", ""}}},
          {{{"tenant", "t"},
            {"kb", "docs"},
            {"adapter", "lora-7"},
            {"model", "qwen3"},
            {"extra", "a"},
            {"extra", "b;c=%"}}}};
}

inline void le_bytes(std::vector<unsigned char>& m, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) m.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

/// "HCNS" ‖ 0x01 ‖ (tag ‖ u32 len ‖ value)* ‖ 0x00, fields in tag order (namespace_key.hpp).
inline std::vector<unsigned char> ref_namespace_bytes(const ns_spec& ns) {
  std::vector<unsigned char> m = {'H', 'C', 'N', 'S', 1};
  const std::pair<const char*, unsigned char> tags[] = {
      {"tenant", 1}, {"kb", 2}, {"adapter", 3}, {"model", 4}, {"extra", 5}};
  for (const auto& [field, tag] : tags)
    for (const auto& [f, value] : ns.fields)
      if (f == field) {
        m.push_back(tag);
        le_bytes(m, value.size(), 4);
        m.insert(m.end(), value.begin(), value.end());
      }
  m.push_back(0);
  return m;
}

inline hybridcache::namespace_key to_namespace_key(const ns_spec& ns) {
  hybridcache::namespace_key k;
  for (const auto& [f, v] : ns.fields) {
    if (f == "tenant") k = k.with_tenant(v);
    if (f == "kb") k = k.with_knowledge_base(v);
    if (f == "adapter") k = k.with_adapter(v);
    if (f == "model") k = k.with_model(v);
    if (f == "extra") k = k.with_extra(v);
  }
  return k;
}

using message_hash = std::array<unsigned char, 16> (*)(const std::vector<unsigned char>&);

inline std::array<unsigned char, 16> ref_xxh3(const std::vector<unsigned char>& m) {
  static const auto secret = test_secret(xxh3_test_seed, 192);
  const XXH128_hash_t h = XXH3_128bits_withSecret(m.data(), m.size(), secret.data(), secret.size());
  std::array<unsigned char, 16> out{};
  for (int i = 0; i < 8; ++i) {
    out[static_cast<std::size_t>(i)] = static_cast<unsigned char>(h.low64 >> (8 * i));
    out[static_cast<std::size_t>(8 + i)] = static_cast<unsigned char>(h.high64 >> (8 * i));
  }
  return out;
}

#if defined(HYBRIDCACHE_CLI_HAS_OPENSSL)
inline std::array<unsigned char, 16> ref_hmac(const std::vector<unsigned char>& m) {
  static const auto key = test_secret(hmac_test_seed, 32);
  unsigned char mac[32];
  std::size_t len = 0;
  if (EVP_Q_mac(nullptr, "HMAC", nullptr, "SHA256", nullptr, key.data(), key.size(), m.data(),
                m.size(), mac, sizeof mac, &len) == nullptr ||
      len != 32)
    throw std::runtime_error("HMAC-SHA-256 (EVP_Q_mac) failed");
  std::array<unsigned char, 16> out{};
  std::copy(mac, mac + 16, out.begin());
  return out;
}
#endif

/// Keys of one hash policy: per namespace the root, the chained keys of the full blocks, and
/// the segment keys ('P' and 'A') of each segment, all as 16 bytes (digest::to_bytes order).
struct key_set {
  std::vector<double> root, blocks, segments;
};

inline key_set ref_keys(message_hash H, const std::vector<ns_spec>& nss,
                        const std::vector<std::uint32_t>& tokens, std::size_t block,
                        const std::vector<std::pair<std::size_t, std::size_t>>& segs) {
  key_set out;
  const auto put = [](std::vector<double>& v, const std::array<unsigned char, 16>& d) {
    for (unsigned char b : d) v.push_back(b);
  };
  for (const auto& ns : nss) {
    const auto nsb = ref_namespace_bytes(ns);
    std::vector<unsigned char> m = {'H', 'C', 'K', '1', 'R'};
    le_bytes(m, nsb.size(), 4);
    m.insert(m.end(), nsb.begin(), nsb.end());
    auto h = H(m);
    put(out.root, h);
    for (std::size_t b = 0; b + block <= tokens.size(); b += block) {
      m = {'H', 'C', 'K', '1', 'B'};
      m.insert(m.end(), h.begin(), h.end());  // h_{i−1} as lo ‖ hi, little-endian
      le_bytes(m, block, 4);
      for (std::size_t j = b; j < b + block; ++j) le_bytes(m, tokens[j], 4);
      h = H(m);
      put(out.blocks, h);
    }
    for (const auto& [b, e] : segs)
      for (unsigned char kind : {'P', 'A'}) {
        m = {'H', 'C', 'K', '1', kind};
        le_bytes(m, nsb.size(), 4);
        m.insert(m.end(), nsb.begin(), nsb.end());
        le_bytes(m, e - b, 8);
        for (std::size_t j = b; j < e; ++j) le_bytes(m, tokens[j], 4);
        put(out.segments, H(m));
      }
  }
  return out;
}

/// The library's keys under policy `hash` (the candidate).
template <class Hash>
key_set library_keys(const Hash& hash, const std::vector<ns_spec>& nss,
                     const std::vector<std::uint32_t>& tokens, std::size_t block,
                     const std::vector<std::pair<std::size_t, std::size_t>>& segs) {
  namespace hc = hybridcache;
  key_set out;
  const auto put = [](std::vector<double>& v, const hc::digest& d) {
    for (std::byte b : d.to_bytes()) v.push_back(static_cast<double>(b));
  };
  const std::span<const std::uint32_t> all(tokens);
  for (const auto& spec : nss) {
    const auto ns = to_namespace_key(spec);
    put(out.root, hc::root_key(hash, ns));
    for (const auto& d : hc::block_keys(hash, ns, all, block)) put(out.blocks, d);
    for (const auto& [b, e] : segs) {
      put(out.segments,
          hc::segment_key(hash, ns, all.subspan(b, e - b), hc::segment_kind::position_independent));
      put(out.segments,
          hc::segment_key(hash, ns, all.subspan(b, e - b), hc::segment_kind::anchored));
    }
  }
  return out;
}

inline void key_cases(writer& wr, prng& rng, const candidate_spec* cand) {
  const auto nss = key_namespaces();
  const std::size_t n_ns = nss.size(), n_tok = 100, block = 16, n_blocks = n_tok / block;
  const std::vector<std::pair<std::size_t, std::size_t>> segs = {{0, 100}, {10, 26}, {50, 50}};
  std::vector<std::uint32_t> tokens(n_tok);
  for (auto& t : tokens) t = static_cast<std::uint32_t>(rng.next() >> 32);  // full 32-bit range

  // Namespace encodings: concatenated bytes plus offsets.
  nlohmann::json ns_json = nlohmann::json::array();
  std::vector<double> ns_bytes, offsets = {0};
  for (const auto& ns : nss) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& [f, v] : ns.fields) j.push_back({f, v});
    ns_json.push_back(j);
    const auto b = ref_namespace_bytes(ns);
    ns_bytes.insert(ns_bytes.end(), b.begin(), b.end());
    offsets.push_back(static_cast<double>(ns_bytes.size()));
  }
  {
    const std::string name = "segment/namespace/encoding";
    nlohmann::json expected = nlohmann::json::object();
    expected["bytes"] = exact_entry(
        wr.reference<std::uint8_t>(name, "bytes", ns_bytes, {ns_bytes.size()}), {ns_bytes.size()});
    expected["offsets"] = exact_entry(
        wr.reference<std::int64_t>(name, "offsets", offsets, {offsets.size()}), {offsets.size()});
    wr.cases.push_back(
        {{"name", name},
         {"kind", "namespace_encoding"},
         {"params", {{"namespaces", ns_json}}},
         {"conventions",
          "each namespace is a list of [field, value] (field: tenant, kb, adapter, model, "
          "extra); encoding = \"HCNS\" 0x01 then, in tag order (tenant 1, kb 2, adapter 3, model "
          "4, "
          "extra 5 in the order given), tag + u32 LE length + value bytes, then 0x00; bytes = the "
          "encodings concatenated, namespace i = bytes[offsets[i], offsets[i+1])"},
         {"inputs", nlohmann::json::object()},
         {"expected", expected}});
    if (cand) {
      std::vector<std::uint8_t> cb;
      std::vector<std::int64_t> co = {0};
      for (const auto& ns : nss) {
        const auto key = to_namespace_key(ns);
        const auto b = key.bytes();
        cb.insert(cb.end(), b.begin(), b.end());
        co.push_back(static_cast<std::int64_t>(cb.size()));
      }
      save_below<std::uint8_t>(cand->dir, candidate_path(cand->dir, name, "bytes"), cb, {cb.size()},
                               "--candidate-out");
      save_below<std::int64_t>(cand->dir, candidate_path(cand->dir, name, "offsets"), co,
                               {co.size()}, "--candidate-out");
    }
  }

  struct policy {
    const char* name;
    const char* algorithm;
    std::uint64_t seed;
    std::size_t secret_bytes;
    message_hash ref;
  };
  std::vector<policy> policies = {
      {"xxh3", "XXH3_128bits_withSecret (xxh3_hash)", xxh3_test_seed, 192, &ref_xxh3}};
#if defined(HYBRIDCACHE_CLI_HAS_OPENSSL)
  policies.push_back(
      {"hmac_sha256", "trunc128(HMAC-SHA-256) (sha256_hash)", hmac_test_seed, 32, &ref_hmac});
#endif
  nlohmann::json seg_json = nlohmann::json::array();
  for (const auto& [b, e] : segs) seg_json.push_back({b, e});
  for (const policy& p : policies) {
    const std::string name = std::string("segment/keys/") + p.name;
    const auto secret = test_secret(p.seed, p.secret_bytes);
    const auto ref = ref_keys(p.ref, nss, tokens, block, segs);
    nlohmann::json inputs = {
        {"secret",
         wr.input<std::uint8_t>(name, "secret", std::vector<double>(secret.begin(), secret.end()),
                                {secret.size()})},
        {"tokens",
         wr.input<std::int64_t>(name, "tokens", std::vector<double>(tokens.begin(), tokens.end()),
                                {n_tok})}};
    nlohmann::json expected = nlohmann::json::object();
    expected["root"] =
        exact_entry(wr.reference<std::uint8_t>(name, "root", ref.root, {n_ns, 16}), {n_ns, 16});
    expected["blocks"] =
        exact_entry(wr.reference<std::uint8_t>(name, "blocks", ref.blocks, {n_ns, n_blocks, 16}),
                    {n_ns, n_blocks, 16});
    expected["segments"] = exact_entry(
        wr.reference<std::uint8_t>(name, "segments", ref.segments, {n_ns, segs.size(), 2, 16}),
        {n_ns, segs.size(), 2, 16});
    wr.cases.push_back(
        {{"name", name},
         {"kind", "segment_keys"},
         {"params",
          {{"hash", p.algorithm},
           {"secret_seed", p.seed},
           {"namespaces", "those of segment/namespace/encoding"},
           {"block_size", block},
           {"segments", seg_json},
           {"segment_kinds", {"P", "A"}}}},
         {"conventions",
          "digest bytes = lo little-endian then hi little-endian (digest::to_bytes); root = "
          "H(\"HCK1\" 'R' u32 len(ns) ns); blocks[i] = H(\"HCK1\" 'B' prev(16) u32 n block "
          "tokens as u32 LE), full blocks only; segments[s][kind] = H(\"HCK1\" kind u32 len(ns) "
          "ns u64 n tokens as u32 LE); secret = the published test secret (see secret_seed)"},
         {"inputs", inputs},
         {"expected", expected}});
    if (cand) {
      const std::span<const std::byte> sb(reinterpret_cast<const std::byte*>(secret.data()),
                                          secret.size());
      key_set got;
      if (std::string(p.name) == "xxh3")
        got = library_keys(hybridcache::xxh3_hash(sb), nss, tokens, block, segs);
#if defined(HYBRIDCACHE_CLI_HAS_OPENSSL)
      else
        got = library_keys(hybridcache::sha256_hash(sb), nss, tokens, block, segs);
#endif
      if (cand->inj == injection::key_byte && std::string(p.name) == "xxh3")
        got.blocks[3 * 16 + 5] =
            static_cast<double>(static_cast<unsigned>(got.blocks[3 * 16 + 5]) ^ 0x01u);
      const auto save = [&](const std::string& key, const std::vector<double>& v,
                            std::vector<std::size_t> shape) {
        const std::vector<std::uint8_t> b(v.begin(), v.end());
        save_below<std::uint8_t>(cand->dir, candidate_path(cand->dir, name, key), b, shape,
                                 "--candidate-out");
      };
      save("root", got.root, {n_ns, 16});
      save("blocks", got.blocks, {n_ns, n_blocks, 16});
      save("segments", got.segments, {n_ns, segs.size(), 2, 16});
    }
  }
}

}  // namespace hybridcache_cli::vectors
