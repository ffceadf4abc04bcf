// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <hybridcache/dispatch.hpp>
#include <numeric>
#include <random>
#include <vector>

#include "support/dispatch_reference.hpp"

namespace hc = hybridcache;

TEST_CASE("pipelined arrivals match an event simulation, pipelining never waits longer") {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> t(0.0, 10.0);
  for (int trial = 0; trial < 100; ++trial) {
    const std::size_t m = static_cast<std::size_t>(1 + trial % 4);
    const std::size_t n = static_cast<std::size_t>(trial % 13);
    std::vector<double> a(n), b(n);
    for (std::size_t i = 0; i < n; ++i) {
      a[i] = t(rng);
      b[i] = trial % 2 ? t(rng) : 0.2 * t(rng);
    }
    const auto asg = hc::lpt_assign(a, m);
    for (auto rule : {hc::send_order::longest_first, hc::send_order::johnson}) {
      const auto p = hc::pipeline_schedule(asg.worker_of, m, a, b, rule);
      double wait = 0.0, batched = 0.0;
      for (std::size_t w = 0; w < m; ++w) {
        // The order holds exactly worker w's segments.
        std::vector<std::size_t> mine;
        for (std::size_t i = 0; i < n; ++i)
          if (asg.worker_of[i] == w) mine.push_back(i);
        auto sorted = p.order[w];
        std::sort(sorted.begin(), sorted.end());
        CHECK(sorted == mine);
        const double ready = hcref::flow_shop_finish(a, b, p.order[w]);
        CHECK(p.worker_ready[w] == doctest::Approx(ready));
        wait = std::max(wait, ready);
        double sa = 0.0, sb = 0.0;
        for (std::size_t i : mine) sa += a[i], sb += b[i];
        batched = std::max(batched, sa + sb);
        if (rule == hc::send_order::longest_first) {
          for (std::size_t k = 1; k < p.order[w].size(); ++k)
            CHECK(a[p.order[w][k - 1]] >= a[p.order[w][k]]);
        } else if (mine.size() <= 7) {
          // Johnson's rule is optimal for the two-stage pipeline.
          CHECK(ready == doctest::Approx(hcref::flow_shop_best(a, b, mine)));
        }
      }
      CHECK(p.combine_wait == doctest::Approx(wait));
      CHECK(p.batched_wait == doctest::Approx(batched));
      CHECK(p.combine_wait <= p.batched_wait + 1e-9);
      for (std::size_t i = 0; i < n; ++i) CHECK(p.arrival[i] >= p.compute_done[i] + b[i] - 1e-9);
    }
  }
}

TEST_CASE("HYPIC Fig. 14 shape: 11 equal cold segments, pipelined wait ≈ ceil(n/m) segments") {
  // 11 segments of 2.4k tokens; compute 1 unit per token, transfer 2% of compute.
  const hc::prefill_cost_model model{.per_token = 1.0, .transfer_per_token = 0.02};
  std::vector<hc::segment_job> jobs(11, hc::segment_job{2400, hc::no_worker});
  for (std::size_t m : {1u, 2u, 4u, 8u}) {
    const std::vector<double> speeds(m, 1.0);
    const auto d = hc::dispatch_segments(jobs, speeds, model);
    const auto p = hc::pipeline_schedule(d);
    const double per = 2400.0;
    const double rounds = std::ceil(11.0 / static_cast<double>(m));
    // Compute of the busiest worker plus one trailing transfer.
    CHECK(p.combine_wait == doctest::Approx(rounds * per + 0.02 * per));
    CHECK(p.batched_wait == doctest::Approx(rounds * per * 1.02));
  }
}

TEST_CASE("pipeline_schedule validates its inputs") {
  const std::vector<std::size_t> w{0, 1};
  const std::vector<double> a{1, 2}, b{1, 1}, short_b{1};
  CHECK_THROWS_AS(hc::pipeline_schedule(w, 0, a, b), hc::invalid_argument);
  CHECK_THROWS_AS(hc::pipeline_schedule(w, 1, a, b), hc::invalid_argument);  // worker 1 of 1
  CHECK_THROWS_AS(hc::pipeline_schedule(w, 2, a, short_b), hc::invalid_argument);
  const std::vector<double> neg{1, -2};
  CHECK_THROWS_AS(hc::pipeline_schedule(w, 2, neg, b), hc::invalid_argument);
}
