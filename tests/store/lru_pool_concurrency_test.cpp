// SPDX-License-Identifier: Apache-2.0
// 8-thread stress of the pools (run under ThreadSanitizer by the tsan preset): concurrent
// insert / find / erase / pin / unpin with values that check they are alive when read.
#include <doctest/doctest.h>

#include <hybridcache/store/frozen_pool.hpp>
#include <hybridcache/store/lru_pool.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

namespace hc = hybridcache;

namespace {
constexpr std::uint64_t alive_tag = 0xa11fe;
struct block {
  explicit block(std::uint64_t k, std::atomic<long>* live) : key(k), tag(alive_tag), live_(live) {
    live_->fetch_add(1);
  }
  block(const block&) = delete;
  ~block() {
    tag = 0;
    live_->fetch_sub(1);
  }
  std::uint64_t key;
  std::uint64_t tag;
  std::atomic<long>* live_;
};
}  // namespace

TEST_CASE("lru_pool under 8 threads: pins keep blocks alive, accounting stays exact") {
  std::atomic<long> live{0};
  std::atomic<long> released{0};
  {
    using pool_t = hc::lru_pool<std::uint64_t, std::unique_ptr<block>>;
    pool_t pool(64 * 100, 8 * 100,
                [&](const std::uint64_t&, std::unique_ptr<block>& b, hc::release_reason) {
                  CHECK(b->tag == alive_tag);
                  released.fetch_add(1);
                });
    hc::frozen_pool<std::uint64_t, std::unique_ptr<block>> frozen(pool, 0.9);
    std::atomic<long> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 8; ++t) {
      threads.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<std::uint64_t>(t) * 7919 + 1);
        std::vector<pool_t::handle> held;
        for (int i = 0; i < 4000; ++i) {
          const std::uint64_t key = rng() % 256;
          switch (rng() % 8) {
            case 0:
            case 1: {
              auto r = pool.insert(
                  key, std::make_unique<block>(key, &live), 50 + rng() % 100,
                  rng() % 4 == 0 ? hc::entry_class::reserved : hc::entry_class::ordinary);
              if (r.pin && rng() % 2) held.push_back(std::move(r.pin));
              break;
            }
            case 2:
            case 3: {
              if (auto h = pool.find(key)) {
                if (h.value()->tag != alive_tag || h.value()->key != key) bad.fetch_add(1);
                if (rng() % 2) held.push_back(std::move(h));
              }
              break;
            }
            case 4:
              pool.erase(key);
              break;
            case 5:
              if (!held.empty()) held.erase(held.begin() + static_cast<long>(rng() % held.size()));
              break;
            case 6:
              if (key % 16 == 0) frozen.freeze(key);
              else if (key % 16 == 1) frozen.resize();
              else if (auto h = frozen.hit(key); h && h.value()->tag != alive_tag) bad.fetch_add(1);
              break;
            case 7:
              for (auto& h : held)
                if (h.value()->tag != alive_tag) bad.fetch_add(1);
              if (held.size() > 8) held.clear();
              break;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    CHECK(bad.load() == 0);
    const auto s = pool.stats();
    CHECK(s.used <= s.capacity);
    CHECK(s.used - s.used_reserved <= s.capacity - s.reserved);
  }
  CHECK(live.load() == 0);  // every block destroyed (exactly once: the count never goes < 0)
  CHECK(released.load() > 0);
}
