// SPDX-License-Identifier: Apache-2.0
// libFuzzer target (clang++ -fsanitize=fuzzer,address,undefined; built and run by
// scripts/test.d/fuzz.sh). The first input byte picks a harness:
//   even: an lru_pool operation sequence against the reference model (tests/support/
//         store_reference.hpp) — pins never evicted, refcounts never negative, used + free =
//         capacity, each value released and destroyed exactly once;
//   odd:  the remaining bytes as a namespace encoding — decode either throws
//         hybridcache::invalid_argument or returns a key whose encoding is exactly the input
//         (so no two inputs decode to one namespace), and its text form parses back to it; then
//         a segment_index with the constant-output hash must keep namespaces apart.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <hybridcache/segment.hpp>

#include "support/store_reference.hpp"

namespace {
[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "store_fuzz: %s\n", msg.c_str());
  std::abort();
}

void fuzz_namespace(std::span<const std::uint8_t> data) {
  namespace hc = hybridcache;
  const std::string_view bytes(reinterpret_cast<const char*>(data.data()), data.size());
  hc::namespace_key k;
  try {
    k = hc::namespace_key::decode(bytes);
  } catch (const hybridcache::invalid_argument&) {
    return;
  }
  if (k.bytes() != bytes) die("decode accepted a non-canonical encoding");
  if (!(hc::namespace_key::parse(k.to_string()) == k)) die("text form does not round-trip");
  hc::segment_index<int, hc::constant_hash> idx;
  const std::vector<hybridcache::token_id> t{1, 2, 3};
  idx.insert(k, t, 1);
  idx.insert(hc::namespace_key::shared(), t, 2);
  const auto got = idx.find(k, t);
  if (!got || *got != 1) die("lost an entry");
  if (!k.is_shared() && idx.find(hc::namespace_key::shared(), t) != 2)
    die("namespaces not isolated");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::span<const std::uint8_t> rest(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    hc_test::run_store_ops(rest, [](const std::string& msg) { die(msg); });
  } else {
    fuzz_namespace(rest);
  }
  return 0;
}
