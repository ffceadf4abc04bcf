// SPDX-License-Identifier: Apache-2.0
// 8-thread stress of segment_index (run under ThreadSanitizer by the tsan preset).
#include <doctest/doctest.h>

#include <hybridcache/segment/hash.hpp>
#include <hybridcache/segment/index.hpp>

#include <atomic>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
struct payload {
  std::vector<token_id> tokens;  // the key it was stored under
  int tenant;
};
}  // namespace

TEST_CASE_TEMPLATE("segment_index under 8 threads: every hit is the entry asked for", TestType,
                   hc::xxh3_hash, hc::constant_hash) {
  hc::segment_index<std::shared_ptr<const payload>, TestType> idx;
  const hc::namespace_key nss[2] = {hc::namespace_key{}.with_tenant("0"),
                                    hc::namespace_key{}.with_tenant("1")};
  const int keys = std::is_same_v<TestType, hc::constant_hash> ? 24 : 512;
  std::atomic<long> wrong{0}, hits{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 8; ++th) {
    threads.emplace_back([&, th] {
      std::mt19937 rng(static_cast<unsigned>(th) * 31 + 7);
      for (int i = 0; i < 3000; ++i) {
        const int tenant = static_cast<int>(rng() % 2);
        const std::vector<token_id> t{static_cast<token_id>(rng() % static_cast<unsigned>(keys)), 1, 2};
        switch (rng() % 4) {
          case 0:
            idx.insert(nss[tenant], t, std::make_shared<const payload>(payload{t, tenant}));
            break;
          case 1:
            idx.erase(nss[tenant], t);
            break;
          default:
            if (auto v = idx.find(nss[tenant], t)) {
              hits.fetch_add(1);
              if ((*v)->tokens != t || (*v)->tenant != tenant) wrong.fetch_add(1);
            }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(wrong.load() == 0);
  CHECK(hits.load() > 0);
}
