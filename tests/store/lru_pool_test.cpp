// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/store/lru_pool.hpp>

#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace hc = hybridcache;

namespace {
struct event {
  int key;
  std::string value;
  hc::release_reason why;
};
}  // namespace

TEST_CASE("lru_pool evicts least recently used unpinned entries and reports each once") {
  std::vector<event> events;
  hc::lru_pool<int, std::string> pool(100, 0,
                                      [&](const int& k, std::string& v, hc::release_reason w) {
                                        events.push_back({k, v, w});
                                      });
  CHECK(pool.insert(1, "one", 40).status == hc::insert_status::inserted);
  CHECK(pool.insert(2, "two", 40).status == hc::insert_status::inserted);
  { auto h = pool.find(1); REQUIRE(h); CHECK(*h == "one"); }  // 1 is now more recent than 2
  CHECK(pool.insert(3, "three", 40).status == hc::insert_status::inserted);
  REQUIRE(events.size() == 1);
  CHECK(events[0].key == 2);
  CHECK(events[0].why == hc::release_reason::evicted);
  CHECK(pool.used() == 80);
  CHECK(pool.used() + pool.free() == pool.capacity());
  CHECK(pool.contains(1));
  CHECK_FALSE(pool.contains(2));
  CHECK(pool.stats().evictions == 1);
}

TEST_CASE("a pinned entry is never evicted, no_space leaves the pool unchanged") {
  hc::lru_pool<int, int> pool(100);
  auto a = pool.insert(1, 10, 60).pin;  // held
  REQUIRE(a);
  auto r = pool.insert(2, 20, 50);
  CHECK(r.status == hc::insert_status::no_space);
  CHECK_FALSE(r.pin);
  CHECK(pool.contains(1));
  CHECK(pool.used() == 60);
  a.reset();
  CHECK(pool.insert(2, 20, 50).status == hc::insert_status::inserted);
  CHECK_FALSE(pool.contains(1));
}

TEST_CASE("insert of an existing key pins the existing entry and drops the new value") {
  hc::lru_pool<int, std::string> pool(100);
  { auto r = pool.insert(1, "first", 10); }
  auto r = pool.insert(1, "second", 10);
  CHECK(r.status == hc::insert_status::exists);
  CHECK(*r.pin == "first");
  CHECK(pool.pins(1) == 1);
  CHECK(pool.used() == 10);
}

TEST_CASE("a handle keeps an erased entry alive, release happens when the last pin drops") {
  int released = 0;
  auto block = std::make_shared<std::vector<float>>(1024, 1.0f);
  std::weak_ptr<std::vector<float>> watch = block;
  hc::lru_pool<int, std::shared_ptr<std::vector<float>>> pool(
      4096, 0, [&](const int&, std::shared_ptr<std::vector<float>>&, hc::release_reason w) {
        CHECK(w == hc::release_reason::erased);
        ++released;
      });
  auto h = pool.insert(7, std::move(block), 4096).pin;
  auto h2 = h;  // copy = second pin
  CHECK(pool.pins(7) == 2);
  CHECK(pool.erase(7));
  CHECK_FALSE(pool.contains(7));
  CHECK_FALSE(h.attached());
  CHECK(pool.used() == 4096);  // still live
  CHECK((*h)->at(10) == 1.0f);
  h.reset();
  CHECK(released == 0);
  CHECK_FALSE(watch.expired());
  h2.reset();
  CHECK(released == 1);
  CHECK(pool.used() == 0);
  CHECK(watch.expired());
}

TEST_CASE("a handle may outlive its pool") {
  hc::lru_pool<int, std::string>::handle h;
  int released = 0;
  {
    hc::lru_pool<int, std::string> pool(10, 0, [&](const int&, std::string&, hc::release_reason w) {
      CHECK(w == hc::release_reason::cleared);
      ++released;
    });
    h = pool.insert(1, "x", 5).pin;
  }
  CHECK(released == 0);
  CHECK(*h == "x");
  h.reset();
  CHECK(released == 1);
}

TEST_CASE("reserved budget (COMB): ordinary entries never take the reservation") {
  // C = 100, R = 40: ordinary entries share at most 60 bytes.
  hc::lru_pool<int, int> pool(100, 40);
  CHECK(pool.insert(1, 0, 30).status == hc::insert_status::inserted);
  CHECK(pool.insert(2, 0, 30).status == hc::insert_status::inserted);
  // A third ordinary entry evicts an ordinary one even though 40 bytes are free.
  CHECK(pool.insert(3, 0, 30).status == hc::insert_status::inserted);
  CHECK_FALSE(pool.contains(1));
  CHECK(pool.used() == 60);
  // Reserved entries get their 40 bytes without evicting anything.
  CHECK(pool.insert(10, 0, 40, hc::entry_class::reserved).status == hc::insert_status::inserted);
  CHECK(pool.contains(2));
  CHECK(pool.contains(3));
  CHECK(pool.used() == 100);
  // A reserved entry beyond R cannot evict ordinary entries: only reserved ones.
  CHECK(pool.insert(11, 0, 10, hc::entry_class::reserved).status == hc::insert_status::inserted);
  CHECK_FALSE(pool.contains(10));
  CHECK(pool.contains(2));
  CHECK(pool.contains(3));
  CHECK_THROWS_AS(pool.insert(12, 0, 61), hybridcache::invalid_argument);
  CHECK_THROWS_AS(pool.insert(12, 0, 101, hc::entry_class::reserved),
                  hybridcache::invalid_argument);
}

TEST_CASE("reserved entries borrow free shared space and give it back to ordinary entries") {
  hc::lru_pool<int, int> pool(100, 20);
  CHECK(pool.insert(1, 0, 50, hc::entry_class::reserved).status == hc::insert_status::inserted);
  CHECK(pool.stats().used_reserved == 50);  // borrowing 30 beyond R
  CHECK(pool.insert(2, 0, 60).status == hc::insert_status::inserted);  // needs the borrowed 30
  CHECK_FALSE(pool.contains(1));
  CHECK(pool.used() == 60);
}

TEST_CASE("lru_pool rejects a reservation larger than the capacity") {
  CHECK_THROWS_AS((hc::lru_pool<int, int>(10, 11)), hybridcache::invalid_argument);
}

TEST_CASE("shrink_to evicts LRU entries down to a target") {
  hc::lru_pool<int, int> pool(100);
  for (int k = 0; k < 5; ++k) pool.insert(k, k, 20);
  auto keep = pool.find(0);
  CHECK(pool.shrink_to(40) == 3);
  CHECK(pool.contains(0));
  CHECK(pool.contains(4));
  CHECK(pool.used() == 40);
}

TEST_CASE("a throwing release callback does not corrupt the pool") {
  hc::lru_pool<int, int> pool(10, 0, [](const int&, int&, hc::release_reason) {
    throw std::runtime_error("engine failure");
  });
  pool.insert(1, 1, 10);
  CHECK(pool.insert(2, 2, 10).status == hc::insert_status::inserted);
  CHECK(pool.used() == 10);
  CHECK(pool.contains(2));
}

TEST_CASE("budget arithmetic cannot wrap: two 2^63-byte inserts in a 2^64-1 pool") {
  constexpr std::size_t huge = std::size_t{1} << 63;
  hc::lru_pool<int, int> pool(std::numeric_limits<std::size_t>::max());
  auto a = pool.insert(1, 1, huge);
  REQUIRE(a.status == hc::insert_status::inserted);
  // 2^63 + 2^63 = 2^64 > capacity: the pinned first entry cannot be evicted, so no space (the
  // sum used to wrap to 0 and admit it, leaving used() == 0).
  auto b = pool.insert(2, 2, huge);
  CHECK(b.status == hc::insert_status::no_space);
  CHECK_FALSE(b.pin);
  CHECK(pool.used() == huge);
  CHECK(pool.free() == std::numeric_limits<std::size_t>::max() - huge);
  // Unpinned, the first entry is evicted to make room: used() is exactly the second entry.
  a.pin.reset();
  auto c = pool.insert(2, 2, huge);
  CHECK(c.status == hc::insert_status::inserted);
  CHECK(pool.used() == huge);
  CHECK_FALSE(pool.contains(1));
  // The same with reserved entries and a reserve of 2^63.
  hc::lru_pool<int, int> res(std::numeric_limits<std::size_t>::max(), huge);
  auto r1 = res.insert(1, 1, huge, hc::entry_class::reserved);
  REQUIRE(r1.status == hc::insert_status::inserted);
  CHECK(res.insert(2, 2, huge, hc::entry_class::reserved).status == hc::insert_status::no_space);
  CHECK(res.used() == huge);
  CHECK(res.stats().used_reserved == huge);
  // An ordinary entry of 2^63 − 1 fits beside it exactly (C − R = 2^63 − 1).
  CHECK(res.insert(3, 3, huge - 1).status == hc::insert_status::inserted);
  CHECK(res.used() == std::numeric_limits<std::size_t>::max());
  CHECK_THROWS_AS(res.insert(4, 4, huge), hybridcache::invalid_argument);  // > C − R
}
