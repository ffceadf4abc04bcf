// SPDX-License-Identifier: Apache-2.0
// keyed_hash.hpp: tables keyed by input keep short buckets for keys crafted against the
// identity std::hash of libstdc++ (issue #21 item 2). No timing here: the cost of a lookup is the
// length of its bucket chain, so the busiest bucket is what is asserted; the speed comparison is
// bench/keyed_hash_bench.cpp.

#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

#include "hybridcache/keyed_hash.hpp"

namespace hc = hybridcache;

namespace {

template <class Map>
std::size_t busiest_bucket(const Map& m) {
  std::size_t most = 0;
  for (std::size_t b = 0; b < m.bucket_count(); ++b) most = std::max(most, m.bucket_size(b));
  return most;
}

// Inverse of an odd 64-bit multiplier mod 2^64 (Newton: each step doubles the correct bits).
constexpr std::uint64_t inverse_odd(std::uint64_t a) {
  std::uint64_t x = a;  // correct to 3 bits for odd a
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}

// Bound on the busiest bucket for n keys spread at random over m >= n buckets: the expected
// maximum is about ln n / ln ln n (≈ 5 for n = 5·10⁴), and P(some bucket >= 16) <=
// m·C(n, 16)/m¹⁶ <= n/16! ≈ 2·10⁻⁹. Crafted keys under the identity hash put all n in one bucket.
constexpr std::size_t short_bucket = 16;
constexpr std::size_t n_keys = 50000;

}  // namespace

TEST_CASE("keyed_hash: integer keys crafted to share a bucket under std::hash stay spread") {
  // The bucket count a table of n keys settles on (libstdc++'s prime policy) — what an attacker
  // reads off the library's behaviour; every multiple of it lands in bucket 0 under identity.
  std::unordered_map<std::uint64_t, std::uint32_t> identity;
  identity.reserve(n_keys);
  const std::uint64_t buckets = identity.bucket_count();
  hc::keyed_map<std::uint64_t, std::uint32_t> keyed;
  keyed.reserve(n_keys);
  REQUIRE(keyed.bucket_count() == buckets);  // same policy: same table shape
  for (std::uint64_t k = 1; k <= n_keys; ++k) {
    identity.emplace(k * buckets, 0u);
    keyed.emplace(k * buckets, 0u);
  }
  REQUIRE(identity.bucket_count() == buckets);
  CHECK(busiest_bucket(identity) == n_keys);  // the attack, as the loaders saw it before #21
  CHECK(keyed.size() == n_keys);
  CHECK(busiest_bucket(keyed) < short_bucket);
  for (std::uint64_t k = 1; k <= n_keys; k += 997) CHECK(keyed.count(k * buckets) == 1);
  CHECK(keyed.count(buckets + 1) == 0);
}

TEST_CASE("keyed_hash: (parent, block id) keys crafted against the old tree-trace key") {
  // tree_trace_builder::add_block_ids used to address its table by
  // (parent << 32) ^ id·φ under the identity hash; ids chosen as (c·B ^ parent << 32)·φ⁻¹ made
  // every (parent, id) pair of a chain land in bucket 0. The table is now keyed by the exact pair.
  constexpr std::uint64_t phi = 0x9E3779B97F4A7C15ULL;
  static_assert(phi * inverse_odd(phi) == 1);
  std::unordered_map<std::uint64_t, std::uint32_t> old_key;
  old_key.reserve(n_keys);
  const std::uint64_t buckets = old_key.bucket_count();
  hc::keyed_map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t> keyed;
  keyed.reserve(n_keys);
  bool crafted = true;
  for (std::uint32_t parent = 0; parent < n_keys; ++parent) {
    const std::uint64_t target = (parent + 1ull) * buckets;
    const std::uint64_t id =
        (target ^ (static_cast<std::uint64_t>(parent) << 32)) * inverse_odd(phi);
    const std::uint64_t key = (static_cast<std::uint64_t>(parent) << 32) ^ (id * phi);
    crafted = crafted && key == target;
    old_key.emplace(key, parent);
    keyed.emplace(std::pair{parent, id}, parent + 1);
  }
  REQUIRE(crafted);
  CHECK(busiest_bucket(old_key) == n_keys);
  CHECK(busiest_bucket(keyed) < short_bucket);
}

TEST_CASE("keyed_hash: strings, pairs and integers hash as values") {
  const hc::keyed_hash h;
  const std::string a = "tenant-a";
  CHECK(h(a) == h(std::string_view("tenant-a")));
  CHECK(h(std::uint32_t{7}) == h(std::uint64_t{7}));  // integers hash as their 64-bit value
  CHECK(h(std::pair{1u, std::uint64_t{2}}) == h(std::pair{1u, std::uint64_t{2}}));
  CHECK(h(std::pair{1u, std::uint64_t{2}}) != h(std::pair{2u, std::uint64_t{1}}));
  hc::keyed_map<std::string, int> words;
  for (int i = 0; i < static_cast<int>(n_keys); ++i) words.emplace("w" + std::to_string(i), i);
  CHECK(words.size() == n_keys);
  CHECK(busiest_bucket(words) < short_bucket);
  CHECK(words.at("w12345") == 12345);
}
