// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/segment/index.hpp>
#include <hybridcache/segment/keys.hpp>
#include <hybridcache/segment/sha256_hash.hpp>

#include <string>
#include <vector>

using hybridcache::token_id;
namespace sg = hybridcache::segment;

TEST_CASE("sha256_hash is HMAC-SHA-256 truncated to 128 bits (RFC 4231 test case 1)") {
  // Key = 0x0b * 20, data = "Hi There";
  // HMAC-SHA-256 = b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7.
  const std::vector<std::byte> key(20, std::byte{0x0b});
  const sg::sha256_hash h(key);
  const std::string data = "Hi There";
  const auto bytes = std::as_bytes(std::span<const char>(data));
  CHECK(h(bytes.first(3), bytes.subspan(3)).to_hex() == "b0344c61d8db38535ca8afceaf0bf12b");
  CHECK(h(bytes, {}).to_hex() == "b0344c61d8db38535ca8afceaf0bf12b");
  CHECK(h({}, bytes).to_hex() == "b0344c61d8db38535ca8afceaf0bf12b");
}

TEST_CASE("sha256_hash: same deployment secret -> same keys across instances, others differ") {
  const std::vector<std::byte> s1(32, std::byte{1}), s2(32, std::byte{2});
  const sg::sha256_hash a(s1), b(s1), c(s2);
  const auto ns = sg::namespace_key{}.with_tenant("t");
  const std::vector<token_id> t{1, 2, 3, 4};
  CHECK(sg::segment_key(a, ns, t) == sg::segment_key(b, ns, t));
  CHECK(sg::segment_key(a, ns, t) != sg::segment_key(c, ns, t));
  CHECK(sg::block_keys(a, ns, t, 2) == sg::block_keys(b, ns, t, 2));
  sg::segment_index<int, sg::sha256_hash> idx(a);
  idx.insert(ns, t, 3);
  CHECK(idx.find(ns, t) == std::optional<int>(3));
  CHECK_FALSE(idx.find(sg::namespace_key{}, t));
  CHECK_THROWS_AS(sg::sha256_hash(std::vector<std::byte>(8)), hybridcache::invalid_argument);
}
