// SPDX-License-Identifier: Apache-2.0
// leader_safeguard (include/hybridcache/tree/safeguard.hpp) against an independent
// re-statement of its rule that recomputes every score from the stored loss history (no running
// sums), a hand-worked sequence, and Theorem 1 of docs/design/tree_safeguard.md on random losses.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <hybridcache/error.hpp>
#include <hybridcache/tree/safeguard.hpp>
#include <limits>
#include <random>
#include <vector>

namespace hc = hybridcache;

namespace {

/// The rule from its definition: at request t, L_c(t) = Σ_{s ≤ t} ℓ_c(s), the mean usable ū(t)
/// over the requests so far with usable > 0 (0 while there is none), the hand-over H noted before
/// request t and the switches S so far, all recomputed from the history; δ = max(ū, H/S) (H/S
/// only once S ≥ 1); the best is the smallest L (ties: the current leader, then the lowest
/// index); switch when the current leader trails it by more than δ.
struct reference {
  std::vector<std::vector<double>> history;
  std::vector<double> usable, handovers;
  std::size_t leader = 0, switches = 0;
  double followed = 0.0, max_delta = 0.0;
  std::size_t observe(const std::vector<double>& l, double u) {
    history.push_back(l);
    usable.push_back(u);
    const std::size_t C = l.size();
    std::vector<double> L(C, 0.0);
    for (const auto& h : history)
      for (std::size_t c = 0; c < C; ++c) L[c] += h[c];
    double mean = 0.0;
    std::size_t warm = 0;
    for (double x : usable) {
      if (x > 0.0) {
        mean += x;
        ++warm;
      }
    }
    if (warm > 0) mean /= static_cast<double>(warm);
    double H = 0.0;
    for (double x : handovers) H += x;
    const double delta = switches == 0 ? mean : std::max(mean, H / static_cast<double>(switches));
    max_delta = std::max(max_delta, delta);
    double lo = L[leader];
    std::size_t best = leader;
    for (std::size_t c = 0; c < C; ++c) {
      if (L[c] < lo) {
        lo = L[c];
        best = c;
      }
    }
    if (best != leader && L[leader] - L[best] > delta) {
      leader = best;
      ++switches;
    }
    followed += l[leader];
    return leader;
  }
};

}  // namespace

TEST_CASE("leader_safeguard: a hand-worked sequence switches only past one request's worth") {
  hc::leader_safeguard g(3);
  // δ = mean usable = 10 throughout.
  CHECK(g.observe(std::vector<double>{5, 0, 0}, 10) == 0);  // L = 5,0,0: lead 5 <= 10, stay
  CHECK(g.observe(std::vector<double>{5, 0, 1}, 10) == 0);  // L = 10,0,1: lead 10, not > 10
  CHECK(g.observe(std::vector<double>{1, 0, 0}, 10) == 1);  // L = 11,0,1: lead 11 > 10 -> c = 1
  CHECK(g.switches() == 1);
  CHECK(g.leader_loss() == doctest::Approx(5 + 5 + 0));
  CHECK(g.observe(std::vector<double>{0, 9, 0}, 10) == 1);  // L = 11,9,1: 1's lead 8, stay
  CHECK(g.observe(std::vector<double>{0, 3, 0}, 10) == 2);  // L = 11,12,1: 11 > 10 -> c = 2
  CHECK(g.switches() == 2);
  CHECK(g.best_score() == doctest::Approx(1.0));
  CHECK(g.led()[0] == 2);
  CHECK(g.led()[1] == 2);
  CHECK(g.led()[2] == 1);
  CHECK(g.margin() == doctest::Approx(10.0));
}

TEST_CASE("leader_safeguard: equals the rule recomputed from the history, and Theorem 1 holds") {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const std::size_t C = 1 + rng() % 6, T = 1 + rng() % 300;
    std::uniform_real_distribution<double> u(0.0, 1.0);
    // Candidates of different quality with phases, so leaders change.
    std::vector<double> bias(C);
    for (auto& b : bias) b = u(rng);
    hc::leader_safeguard g(C);
    reference ref;
    double max_loss = 0.0;
    std::vector<double> L(C, 0.0);
    for (std::size_t t = 0; t < T; ++t) {
      if (rng() % 50 == 0)
        for (auto& b : bias) b = u(rng);
      // A third of the requests are cold (nothing cached could serve them: every loss is 0).
      const double usable = rng() % 3 == 0 ? 0.0 : std::floor(100.0 * u(rng));
      std::vector<double> l(C);
      for (std::size_t c = 0; c < C; ++c) {
        l[c] = std::floor(usable * std::min(1.0, bias[c] + 0.3 * u(rng)));
        L[c] += l[c];
        max_loss = std::max(max_loss, l[c]);
      }
      REQUIRE(g.observe(l, usable) == ref.observe(l, usable));
      if (rng() % 3 == 0) {  // the pool's hand-over on this request, noted after it
        const double h = std::floor(50.0 * u(rng));
        g.note_handover(h);
        ref.handovers.push_back(h);
      }
    }
    CHECK(g.switches() == ref.switches);
    CHECK(g.leader_loss() == doctest::Approx(ref.followed));
    double best = std::numeric_limits<double>::infinity();
    for (double x : L) best = std::min(best, x);
    CHECK(g.best_score() == doctest::Approx(best));
    // Theorem 1: followed <= min_c L_c + S (δ* + ℓ_max) + δ*, with δ* (the reference's, hand-overs
    // included) and ℓ_max computed here.
    const double bound =
        best + static_cast<double>(ref.switches) * (ref.max_delta + max_loss) + ref.max_delta;
    CHECK(ref.followed <= bound + 1e-9);
    CHECK(g.regret_bound() == doctest::Approx(bound - best));
  }
}

TEST_CASE("leader_safeguard: cold requests do not shrink one request's worth") {
  hc::leader_safeguard g(2);
  // Four cold requests (usable 0, no loss anywhere): no decision yet, so δ = 0.
  for (int i = 0; i < 4; ++i) CHECK(g.observe(std::vector<double>{0, 0}, 0) == 0);
  CHECK(g.margin() == 0.0);
  CHECK(g.decisions() == 0);
  CHECK(g.requests() == 4);
  // One warm request of 40 usable tokens: δ = 40 (the mean over all five requests would be 8).
  CHECK(g.observe(std::vector<double>{30, 0}, 40) == 0);  // lead 30 <= 40: stay
  CHECK(g.margin() == doctest::Approx(40.0));
  CHECK(g.observe(std::vector<double>{0, 0}, 0) == 0);  // cold: δ stays 40
  CHECK(g.margin() == doctest::Approx(40.0));
  CHECK(g.decisions() == 1);
  CHECK(g.observe(std::vector<double>{12, 0}, 20) == 1);  // δ = (40 + 20) / 2 = 30; lead 42
  CHECK(g.switches() == 1);
  CHECK(g.margin() == doctest::Approx(30.0));
}

TEST_CASE("leader_safeguard: the margin rises to the measured price of a switch") {
  hc::leader_safeguard g(2);
  CHECK(g.observe(std::vector<double>{12, 0}, 10) == 1);  // lead 12 > δ = 10: switch
  g.note_handover(30.0);                                   // that switch cost 30 tokens
  CHECK(g.margin() == doctest::Approx(30.0));              // max(10, 30 / 1)
  CHECK(g.observe(std::vector<double>{0, 25}, 10) == 1);   // L = 12, 25: lead 13 <= 30, stay
  CHECK(g.observe(std::vector<double>{0, 20}, 10) == 0);   // L = 12, 45: lead 33 > 30, switch
  CHECK(g.switches() == 2);
  CHECK(g.margin() == doctest::Approx(15.0));  // max(10, 30 / 2)
  CHECK(g.handover() == doctest::Approx(30.0));
  CHECK_THROWS_AS(g.note_handover(-1.0), hc::invalid_argument);
  CHECK_THROWS_AS(g.note_handover(std::nan("")), hc::invalid_argument);
}

TEST_CASE("leader_safeguard: bad input is refused and changes nothing") {
  CHECK_THROWS_AS(hc::leader_safeguard(0), hc::invalid_argument);
  CHECK_THROWS_AS(hc::leader_safeguard(2, 2), hc::invalid_argument);
  hc::leader_safeguard g(2);
  CHECK_THROWS_AS(g.observe(std::vector<double>{1.0}, 1.0), hc::invalid_argument);
  CHECK_THROWS_AS(g.observe(std::vector<double>{1.0, -1.0}, 1.0), hc::invalid_argument);
  CHECK_THROWS_AS(g.observe(std::vector<double>{1.0, std::nan("")}, 1.0), hc::invalid_argument);
  CHECK_THROWS_AS(
      g.observe(std::vector<double>{1.0, std::numeric_limits<double>::infinity()}, 1.0),
      hc::invalid_argument);
  CHECK_THROWS_AS(g.observe(std::vector<double>{1.0, 1.0}, -1.0), hc::invalid_argument);
  CHECK(g.requests() == 0);
  CHECK(g.scores()[0] == 0.0);
  CHECK(g.scores()[1] == 0.0);
  CHECK(g.margin() == 0.0);
}
