// SPDX-License-Identifier: Apache-2.0
// dispatch/shared_affinity.hpp: shared-index locations -> segment_job::cached_on, against a
// linear scan over the worker list (the reference), then through dispatch_segments.
#include <doctest/doctest.h>

#include <hybridcache/dispatch/shared_affinity.hpp>

#include <algorithm>
#include <optional>
#include <random>
#include <vector>

namespace hc = hybridcache;
using loc = hc::segment_location;

TEST_CASE("jobs_from_locations maps each holder node to its worker (linear-scan reference)") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t m = 1 + rng() % 6, n = rng() % 20;
    std::vector<std::uint32_t> nodes;
    while (nodes.size() < m) {
      const std::uint32_t id = rng() % 12;
      if (std::find(nodes.begin(), nodes.end(), id) == nodes.end()) nodes.push_back(id);
    }
    std::vector<std::size_t> tokens(n);
    std::vector<std::optional<loc>> located(n);
    for (std::size_t i = 0; i < n; ++i) {
      tokens[i] = 1 + rng() % 500;
      if (rng() % 3 != 0)
        located[i] = loc{static_cast<std::uint32_t>(rng() % 12), 0, 0, 0,
                         static_cast<std::uint32_t>(tokens[i])};
    }
    const auto jobs = hc::jobs_from_locations(tokens, located, nodes);
    REQUIRE(jobs.size() == n);
    for (std::size_t i = 0; i < n; ++i) {
      std::size_t expect = hc::no_worker;
      for (std::size_t w = 0; located[i] && w < m; ++w)
        if (nodes[w] == located[i]->node) expect = w;
      CHECK(jobs[i].tokens == tokens[i]);
      CHECK(jobs[i].cached_on == expect);
    }
    // Valid input for dispatch_segments: no throw, hits only where a worker holds the segment.
    const std::vector<double> speeds(m, 1.0);
    const auto d = hc::dispatch_segments(jobs, speeds, hc::prefill_cost_model{});
    for (std::size_t i = 0; i < n; ++i)
      if (d.hit[i]) CHECK(d.plan.worker_of[i] == jobs[i].cached_on);
  }
}

TEST_CASE("a segment held by an idle worker is dispatched there as a hit") {
  // Two workers on nodes 7 and 3; segment 0 (1000 tokens) is cached on node 3, segment 1 on a
  // node outside the dispatch (9), segment 2 nowhere. With a cheap transfer, segment 0 goes to
  // worker 1 (node 3) as a hit; the others are computed.
  const std::vector<std::size_t> tokens{1000, 800, 600};
  const std::vector<std::optional<loc>> located{loc{3, 0, 0, 0, 1000}, loc{9, 0, 0, 0, 800},
                                                std::nullopt};
  const std::vector<std::uint32_t> nodes{7, 3};
  const auto jobs = hc::jobs_from_locations(tokens, located, nodes);
  CHECK(jobs[0].cached_on == 1);
  CHECK(jobs[1].cached_on == hc::no_worker);
  CHECK(jobs[2].cached_on == hc::no_worker);
  const hc::prefill_cost_model model{.per_token = 1.0, .transfer_per_token = 0.01};
  const std::vector<double> speeds{1.0, 1.0};
  const auto d = hc::dispatch_segments(jobs, speeds, model);
  CHECK(d.hit[0]);
  CHECK(d.plan.worker_of[0] == 1);
  CHECK_FALSE(d.hit[1]);
  CHECK_FALSE(d.hit[2]);
}

TEST_CASE("jobs_from_locations rejects inconsistent input, naming the argument") {
  const std::vector<std::size_t> tokens{10, 20};
  const std::vector<std::optional<loc>> one(1);
  const std::vector<std::uint32_t> nodes{1, 2};
  CHECK_THROWS_AS(hc::jobs_from_locations(tokens, one, nodes), hc::invalid_argument);
  const std::vector<std::optional<loc>> two(2);
  const std::vector<std::uint32_t> dup{4, 4};
  try {
    (void)hc::jobs_from_locations(tokens, two, dup);
    FAIL("no throw");
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "worker_nodes[1]");
  }
  const std::vector<std::optional<loc>> wrong{loc{1, 0, 0, 0, 10}, loc{2, 0, 0, 0, 21}};
  try {
    (void)hc::jobs_from_locations(tokens, wrong, nodes);
    FAIL("no throw");
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "located[1].tokens");
  }
  // Empty input is fine.
  CHECK(hc::jobs_from_locations({}, {}, nodes).empty());
}
