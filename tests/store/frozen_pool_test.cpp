// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/store/frozen_pool.hpp>

#include <string>

namespace st = hybridcache::store;

TEST_CASE("frozen blocks survive LRU pressure, ordinary blocks do not") {
  st::lru_pool<int, std::string> pool(100);
  st::frozen_pool<int, std::string> frozen(pool, 1.0);  // threshold 100%: never shrink here
  CHECK(frozen.insert(1, "kb-1", 30) == st::insert_status::inserted);
  pool.insert(2, "chat", 30);
  pool.insert(3, "chat", 30);
  pool.insert(4, "chat", 30);  // needs room: evicts 2 (LRU ordinary), never the frozen 1
  CHECK(pool.contains(1));
  CHECK_FALSE(pool.contains(2));
  CHECK(frozen.is_frozen(1));
  CHECK(frozen.frozen_bytes() == 30);
}

TEST_CASE("resize deletes the least-referenced frozen blocks above the utilisation threshold") {
  int released = 0;
  st::lru_pool<int, int> pool(100, 0, [&](const int&, int&, st::release_reason w) {
    if (w == st::release_reason::erased) ++released;
  });
  st::frozen_pool<int, int> frozen(pool);  // default threshold 0.9
  CHECK(frozen.threshold() == doctest::Approx(0.9));
  frozen.insert(1, 1, 30);
  frozen.insert(2, 2, 30);
  frozen.insert(3, 3, 20);  // 80% used
  for (int i = 0; i < 3; ++i) (void)frozen.hit(1);
  (void)frozen.hit(3);
  CHECK(frozen.references(1) == 3);
  CHECK(frozen.references(2) == 0);
  // Utilisation 95% > 90%: block 2 (0 references) goes.
  frozen.insert(4, 4, 15);
  CHECK(frozen.size() == 3);
  CHECK_FALSE(frozen.is_frozen(2));
  CHECK_FALSE(pool.contains(2));
  CHECK(released == 1);
  CHECK(pool.utilisation() <= 0.9);
  // Ties at 0 references: the earliest frozen goes first (4 was frozen after 3, but 3 has 1).
  CHECK(frozen.is_frozen(3));
  CHECK(frozen.is_frozen(4));
}

TEST_CASE("unfreeze makes a block evictable, remove deletes it") {
  st::lru_pool<int, int> pool(100);
  st::frozen_pool<int, int> frozen(pool, 1.0);
  frozen.insert(1, 1, 50);
  frozen.insert(2, 2, 50);
  CHECK(pool.insert(3, 3, 10).status == st::insert_status::no_space);
  CHECK(frozen.unfreeze(1));
  CHECK(pool.insert(3, 3, 10).status == st::insert_status::inserted);
  CHECK_FALSE(pool.contains(1));
  CHECK(frozen.remove(2));
  CHECK_FALSE(pool.contains(2));
  CHECK_FALSE(frozen.remove(2));
  CHECK(frozen.freeze(3));
  CHECK_FALSE(frozen.freeze(99));
}

TEST_CASE("frozen_pool rejects a threshold outside 0 < t <= 1") {
  st::lru_pool<int, int> pool(10);
  CHECK_THROWS_AS((st::frozen_pool<int, int>(pool, 0.0)), hybridcache::invalid_argument);
  CHECK_THROWS_AS((st::frozen_pool<int, int>(pool, 1.5)), hybridcache::invalid_argument);
}
