// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <hybridcache/dispatch.hpp>
#include <limits>
#include <random>
#include <vector>

#include "support/dispatch_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("all-miss dispatch under a linear model is token-count LPT (HYPIC eq. 9)") {
  std::mt19937_64 rng(2);
  std::uniform_int_distribution<std::size_t> len(16, 4096);
  for (int trial = 0; trial < 50; ++trial) {
    const std::size_t m = static_cast<std::size_t>(1 + trial % 6);
    std::vector<hc::segment_job> jobs(static_cast<std::size_t>(trial % 25));
    std::vector<double> tokens;
    for (auto& j : jobs) {
      j.tokens = len(rng);
      tokens.push_back(static_cast<double>(j.tokens));
    }
    const std::vector<double> speeds(m, 1.0);
    const auto d = hc::dispatch_segments(jobs, speeds, hc::prefill_cost_model{});
    CHECK(d.plan.worker_of == hcref::naive_lpt(tokens, m));
    for (bool h : d.hit) CHECK_FALSE(h);
    for (std::size_t i = 0; i < jobs.size(); ++i) CHECK(d.compute[i] == tokens[i]);
  }
}

TEST_CASE("quadratic cost and speeds change the greedy exactly as the per-worker costs say") {
  // Reference: the same greedy on explicit per-worker processing times p(i, w).
  std::mt19937_64 rng(4);
  std::uniform_int_distribution<std::size_t> len(1, 2000);
  std::uniform_int_distribution<int> coin(0, 3);
  const hc::prefill_cost_model model{.per_token = 1.0, .per_token_sq = 1e-3, .overhead = 50.0,
                                     .transfer_per_token = 0.05, .transfer_overhead = 2.0};
  for (int trial = 0; trial < 100; ++trial) {
    const std::size_t m = static_cast<std::size_t>(2 + trial % 4);
    std::vector<double> speeds(m);
    for (std::size_t w = 0; w < m; ++w) speeds[w] = 1.0 + 0.5 * static_cast<double>(w % 3);
    std::vector<hc::segment_job> jobs(static_cast<std::size_t>(1 + trial % 16));
    for (auto& j : jobs) {
      j.tokens = len(rng);
      j.cached_on = coin(rng) == 0 ? static_cast<std::size_t>(coin(rng)) % m : hc::no_worker;
    }
    const auto d = hc::dispatch_segments(jobs, speeds, model);
    // Independent greedy.
    const std::size_t n = jobs.size();
    std::vector<bool> done(n, false);
    std::vector<double> load(m, 0.0);
    for (std::size_t step = 0; step < n; ++step) {
      std::size_t pick = n;
      for (std::size_t i = 0; i < n; ++i) {
        const double l = static_cast<double>(jobs[i].tokens);
        const double ci = 50.0 + l + 1e-3 * l * l;
        if (!done[i] && (pick == n || ci > 50.0 + static_cast<double>(jobs[pick].tokens) +
                                               1e-3 * static_cast<double>(jobs[pick].tokens) *
                                                   static_cast<double>(jobs[pick].tokens)))
          pick = i;
      }
      done[pick] = true;
      const double l = static_cast<double>(jobs[pick].tokens);
      std::size_t best = 0;
      double bf = std::numeric_limits<double>::infinity();
      for (std::size_t w = 0; w < m; ++w) {
        const double p = jobs[pick].cached_on == w ? 2.0 + 0.05 * l
                                                   : (50.0 + l + 1e-3 * l * l) / speeds[w];
        if (load[w] + p < bf) {
          bf = load[w] + p;
          best = w;
        }
      }
      load[best] = bf;
      CHECK(d.plan.worker_of[pick] == best);
      CHECK(d.hit[pick] == (jobs[pick].cached_on == best));
    }
    CHECK(d.plan.makespan == doctest::Approx(*std::max_element(load.begin(), load.end())));
  }
}

TEST_CASE("a hit stays on its holder unless recomputing elsewhere finishes first") {
  const hc::prefill_cost_model model{.per_token = 1.0, .transfer_per_token = 0.1};
  const std::vector<double> speeds{1.0, 1.0};
  // Segment 1 (100 tokens) is cached on worker 1: it costs 10 there instead of 100.
  std::vector<hc::segment_job> jobs{{1000, hc::no_worker}, {100, 1}};
  auto d = hc::dispatch_segments(jobs, speeds, model);
  CHECK(d.plan.worker_of == std::vector<std::size_t>{0, 1});
  CHECK(d.hit == std::vector<bool>{false, true});
  CHECK(d.compute[1] == 0.0);
  CHECK(d.transfer[1] == doctest::Approx(10.0));
  CHECK(d.plan.load[1] == doctest::Approx(10.0));
  // Holder 0 is busy with 1000: a transfer from it would finish at 1010, a recompute on the idle
  // worker 1 at 100, so the segment is recomputed.
  jobs[1].cached_on = 0;
  d = hc::dispatch_segments(jobs, speeds, model);
  CHECK(d.plan.worker_of[1] == 1);
  CHECK_FALSE(d.hit[1]);
  CHECK(d.compute[1] == 100.0);
}

TEST_CASE("dispatch_segments rejects bad workers and models") {
  const std::vector<hc::segment_job> jobs{{10, 5}};
  const std::vector<double> speeds{1.0, 1.0};
  CHECK_THROWS_AS(hc::dispatch_segments(jobs, speeds, {}), hc::invalid_argument);
  const std::vector<hc::segment_job> fine{{10, hc::no_worker}};
  const std::vector<double> no_speeds;
  CHECK_THROWS_AS(hc::dispatch_segments(fine, no_speeds, {}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::dispatch_segments(fine, speeds, {.per_token = -1.0}), hc::invalid_argument);
}
