// SPDX-License-Identifier: Apache-2.0
// Model-based random operation sequences: lru_pool against the independent reference model in
// tests/support/store_reference.hpp (the same interpreter the libFuzzer target runs).
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/store_reference.hpp"

TEST_CASE("lru_pool agrees with the reference model on random operation sequences") {
  std::mt19937_64 rng(20261122);
  int failures = 0;
  for (int run = 0; run < 400; ++run) {
    std::vector<std::uint8_t> ops(2 + 3 * (20 + rng() % 200));
    for (auto& b : ops) b = static_cast<std::uint8_t>(rng());
    const bool ok = hc_test::run_store_ops(ops, [&](const std::string& msg) {
      ++failures;
      FAIL_CHECK("run " << run << ": " << msg);
    });
    if (!ok) break;
  }
  CHECK(failures == 0);
}

TEST_CASE("the reference interpreter is not vacuous: it sees evictions, erasures and pins") {
  // A fixed sequence: C = 16 + 4 = 20, R = 0. Insert k0 (8 bytes), drop its pin, insert k1 (8),
  // drop, insert k2 (8) -> k0 evicted; find k1 (pinned), erase k1 (detached, pinned), drop.
  const std::vector<std::uint8_t> ops = {4,  0,             //
                                         0,  0, 8,  3, 0, 0,  // insert k0, drop
                                         0,  1, 8,  3, 0, 0,  // insert k1, drop
                                         0,  2, 8,  3, 0, 0,  // insert k2 (evicts k0), drop
                                         2,  1, 0,  5, 1, 0,  // find k1, erase k1 (pinned)
                                         3,  0, 0};           // drop -> k1 released
  std::string error;
  CHECK(hc_test::run_store_ops(ops, [&](const std::string& m) { error = m; }));
  CHECK(error.empty());
  hc_test::lru_reference model(20, 0);
  int id = 0;
  model.insert(0, 0, 8, false, id);
  model.unpin(0);
  model.insert(1, 1, 8, false, id);
  model.unpin(1);
  model.insert(2, 2, 8, false, id);
  REQUIRE(model.released.size() == 1);
  CHECK(model.released[0].key == 0);
}
