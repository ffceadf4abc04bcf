#pragma once
// SPDX-License-Identifier: Apache-2.0
// Independent reference of the documented key format (docs/design/key_format.md): builds each
// message byte by byte from the spec and hashes it with xxHash's plain one-shot API.
#include <cstdint>
#include <string>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace hc_test {

inline std::vector<unsigned char> ref_secret() {
  std::vector<unsigned char> s(192);
  std::uint64_t x = 0x243f6a8885a308d3ull;  // fixed, arbitrary
  for (auto& b : s) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    b = static_cast<unsigned char>(x);
  }
  return s;
}

inline void ref_le(std::vector<unsigned char>& m, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) m.push_back(static_cast<unsigned char>(v >> (8 * i)));
}

struct ref_digest {
  std::uint64_t lo, hi;
};

inline ref_digest ref_xxh3(const std::vector<unsigned char>& m) {
  const auto s = ref_secret();
  const XXH128_hash_t h = XXH3_128bits_withSecret(m.data(), m.size(), s.data(), s.size());
  return {h.low64, h.high64};
}

inline ref_digest ref_root(const std::string& ns) {
  std::vector<unsigned char> m = {'H', 'C', 'K', '1', 'R'};
  ref_le(m, ns.size(), 4);
  m.insert(m.end(), ns.begin(), ns.end());
  return ref_xxh3(m);
}

inline ref_digest ref_chain(ref_digest prev, const std::vector<std::uint32_t>& block) {
  std::vector<unsigned char> m = {'H', 'C', 'K', '1', 'B'};
  ref_le(m, prev.lo, 8);
  ref_le(m, prev.hi, 8);
  ref_le(m, block.size(), 4);
  for (auto t : block) ref_le(m, t, 4);
  return ref_xxh3(m);
}

inline ref_digest ref_segment(char kind, const std::string& ns,
                              const std::vector<std::uint32_t>& tokens) {
  std::vector<unsigned char> m = {'H', 'C', 'K', '1', static_cast<unsigned char>(kind)};
  ref_le(m, ns.size(), 4);
  m.insert(m.end(), ns.begin(), ns.end());
  ref_le(m, tokens.size(), 8);
  for (auto t : tokens) ref_le(m, t, 4);
  return ref_xxh3(m);
}

}  // namespace hc_test
