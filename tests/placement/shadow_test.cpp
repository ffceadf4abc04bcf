// SPDX-License-Identifier: Apache-2.0
// The chain cache's shadow systems (placement/shadow.hpp) alone, against independent references:
// the reuse and the coverage against a direct scan of every checkpoint of every share, the
// follow-the-leader rule on a hand-worked sequence of charges and re-plans, and the hand-over
// against a token-level brute force over every subset of the candidates
// (tests/support/joint_reference.hpp).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <hybridcache/error.hpp>
#include <hybridcache/placement/shadow.hpp>
#include <random>
#include <set>
#include <span>
#include <vector>

#include "support/joint_reference.hpp"

namespace hc = hybridcache;

namespace {

struct share {
  std::size_t entry_id;
  std::size_t depth;
};

// Strictly increasing random positions on the grid of b in b..max.
std::vector<std::uint32_t> random_grid(std::mt19937& rng, std::size_t b, std::size_t max,
                                       unsigned one_in) {
  std::vector<std::uint32_t> out;
  for (std::size_t p = b; p <= max; p += b)
    if (rng() % one_in == 0) out.push_back(static_cast<std::uint32_t>(p));
  return out;
}

}  // namespace

TEST_CASE("shadow: shared_reuse is the deepest checkpoint within any share (direct scan)") {
  // Hand-worked: entry 0 holds {64, 192}, shares 150 → 64; entry 1 holds {128, 256}, shares 300 →
  // 256; entry 2 holds {320}, shares 319 → nothing. ℓ = 256.
  const std::vector<std::vector<std::uint32_t>> cps{{64, 192}, {128, 256}, {320}};
  const std::vector<share> shares{{0, 150}, {1, 300}, {2, 319}};
  const auto of = [&](const share& s) -> const std::vector<std::uint32_t>& {
    return cps[s.entry_id];
  };
  CHECK(hc::shared_reuse(shares, of) == 256);
  CHECK(hc::shared_reuse(std::vector<share>{{0, 191}, {2, 320}}, of) == 320);
  CHECK(hc::shared_reuse(std::vector<share>{{0, 63}}, of) == 0);
  CHECK(hc::shared_reuse(std::vector<share>{}, of) == 0);

  std::mt19937 rng(7);
  std::size_t checked = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t b = 1 + rng() % 8, n = 1 + rng() % 6;
    std::vector<std::vector<std::uint32_t>> cp(n);
    std::vector<share> sh;
    for (std::size_t f = 0; f < n; ++f) {
      cp[f] = random_grid(rng, b, 40 * b, 3);
      sh.push_back({f, rng() % (42 * b)});
    }
    std::size_t ref = 0;
    for (const auto& s : sh)
      for (const auto c : cp[s.entry_id])
        if (c <= s.depth) ref = std::max<std::size_t>(ref, c);
    CHECK(hc::shared_reuse(sh, [&](const share& s) { return std::span(cp[s.entry_id]); }) == ref);
    ++checked;
  }
  CHECK(checked == 400);
}

TEST_CASE("shadow: covered_blocks is the set of covered block indices (direct scan)") {
  // B = 64: entry 0 {64, 192, 640} shares 200 → blocks 1, 3; entry 1 {192, 320} shares 63 (less
  // than a block) → nothing; entry 2 {128, 576} shares 700, capped at block 5 → 2 (576 → 9 > 5).
  const std::vector<std::vector<std::uint32_t>> cps{{64, 192, 640}, {192, 320}, {128, 576}};
  const auto of = [&](const share& s) { return std::span(cps[s.entry_id]); };
  std::vector<std::size_t> out{99};
  hc::covered_blocks(std::vector<share>{{0, 200}, {1, 63}, {2, 700}}, of, 64, 5, out);
  CHECK(out == std::vector<std::size_t>{1, 2, 3});
  CHECK_THROWS_AS(hc::covered_blocks(std::vector<share>{}, of, 0, 5, out), hc::invalid_argument);

  std::mt19937 rng(11);
  for (int trial = 0; trial < 400; ++trial) {
    const std::size_t b = 1 + rng() % 8, n = 1 + rng() % 6, cap = rng() % 50;
    std::vector<std::vector<std::uint32_t>> cp(n);
    std::vector<share> sh;
    for (std::size_t f = 0; f < n; ++f) {
      cp[f] = random_grid(rng, b, 40 * b, 3);
      sh.push_back({f, rng() % (42 * b)});
    }
    std::set<std::size_t> ref;
    for (const auto& s : sh)
      for (const auto c : cp[s.entry_id])
        if (c <= s.depth && c / b >= 1 && c / b <= cap) ref.insert(c / b);
    hc::covered_blocks(
        sh, [&](const share& s) { return std::span(cp[s.entry_id]); }, b, cap, out);
    CHECK(out == std::vector<std::size_t>(ref.begin(), ref.end()));
  }
}

TEST_CASE("shadow: follow the leader switches only on a lead of the margin (hand-worked)") {
  // μ = 0.2, γ = 1 (cumulative): switch A → B when L_B < 0.8 L_A, back when L_A < 0.8 L_B.
  hc::shadow_leader lead({.margin = 0.2, .gamma = 1.0});
  CHECK(lead.leader() == hc::shadow_system::per_entry);
  CHECK(lead.decide() == hc::shadow_system::per_entry);  // 0 < 0.8·0 is false: no switch on ties
  lead.charge(100, 81);                                  // L_A 100, L_B 81: 81 < 80? no
  CHECK(lead.decide() == hc::shadow_system::per_entry);
  lead.charge(0, 0);  // a miss changes nothing at γ = 1
  CHECK(lead.score(hc::shadow_system::per_entry) == 100.0);
  CHECK(lead.score(hc::shadow_system::joint) == 81.0);
  lead.charge(25, 18);  // L_A 125, L_B 99: 99 < 100 → joint
  CHECK(lead.decide() == hc::shadow_system::joint);
  lead.charge(0, 30);  // L_A 125, L_B 129: A leads by 3 %, less than μ → stay joint
  CHECK(lead.decide() == hc::shadow_system::joint);
  CHECK(lead.leader() == hc::shadow_system::joint);
  lead.charge(0, 27.25);  // L_B 156.25: 125 < 0.8 · 156.25 = 125? no (strict)
  CHECK(lead.decide() == hc::shadow_system::joint);
  lead.charge(0, 1);  // L_B 157.25: 125 < 125.8 → back to per-entry
  CHECK(lead.decide() == hc::shadow_system::per_entry);
  // Charging without a re-plan never switches.
  lead.charge(0, 1000);
  lead.charge(1000, 0);
  CHECK(lead.leader() == hc::shadow_system::per_entry);
  CHECK(hc::to_string(hc::shadow_system::joint) == "joint");
  CHECK(hc::to_string(hc::shadow_system::per_entry) == "per_entry");

  // γ < 1: L = Σ_s γ^{n−s} r_s (closed form), and the decision follows it.
  hc::shadow_leader decayed({.margin = 0.0, .gamma = 0.5});
  const std::vector<double> ra{8, 0, 0, 0}, rb{0, 2, 2, 2};
  for (std::size_t i = 0; i < ra.size(); ++i) decayed.charge(ra[i], rb[i]);
  CHECK(decayed.score(hc::shadow_system::per_entry) == doctest::Approx(8 * 0.125));
  CHECK(decayed.score(hc::shadow_system::joint) == doctest::Approx(2 * (0.25 + 0.5 + 1.0)));
  CHECK(decayed.decide() == hc::shadow_system::per_entry);  // 3.5 > 1: A stays

  CHECK_THROWS_AS(hc::shadow_leader({.margin = 1.0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::shadow_leader({.margin = -0.1}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::shadow_leader({.gamma = 0.0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::shadow_leader({.gamma = 1.5}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::shadow_leader({.margin = std::nan("")}), hc::invalid_argument);
}

TEST_CASE("shadow: hand-over of the two-sharers case (hand-worked)") {
  // B = 64, M = 1, e's law: mass 1 at block 10 (depth 640), 2 at block 20 (1280). e holds 1280;
  // f, evicted, holds 640 and shares 640 tokens with e.
  hc::entry_block_law law{.length = 1290, .granularity = 64, .mass = std::vector<double>(20, 0.0)};
  law.mass[9] = 1.0;
  law.mass[19] = 2.0;
  law.total = 3.0;
  hc::handover_selector sel(64);
  const std::vector<std::uint32_t> mine{1280}, theirs{640};
  std::vector<std::uint32_t> next{7};
  int law_calls = 0, cover_calls = 0;
  const auto law_of = [&]() -> const hc::entry_block_law* {
    ++law_calls;
    return &law;
  };
  // First sharer: another retained entry covers 1280 (block 20), so {640} costs 0 and {1280}
  // costs 1 · (10 − 0) blocks: e takes 640 over.
  auto r = sel.offer<std::uint32_t>(
      mine, theirs, 640, 1, law_of,
      [&](std::vector<std::size_t>& u) {
        ++cover_calls;
        u = {20};
      },
      next);
  CHECK(r.replaced);
  CHECK(r.taken == 1);
  CHECK(next == std::vector<std::uint32_t>{640});
  CHECK(law_calls == 1);
  CHECK(cover_calls == 1);
  // Second sharer: the first now covers 640 (block 10): the offered state changes nothing.
  r = sel.offer<std::uint32_t>(
      mine, theirs, 640, 1, law_of, [&](std::vector<std::size_t>& u) { u = {10}; }, next);
  CHECK_FALSE(r.replaced);
  // No coverage at all: {1280} costs 10 blocks of mass 1, {640} 10 of mass 2: e keeps its own.
  r = sel.offer<std::uint32_t>(
      mine, theirs, 640, 1, law_of, [&](std::vector<std::size_t>& u) { u.clear(); }, next);
  CHECK(r.replaced);
  CHECK(r.taken == 0);
  CHECK(next == mine);
  // Room for both (M = 2): both kept, and neither the law nor the coverage is asked for.
  law_calls = cover_calls = 0;
  r = sel.offer<std::uint32_t>(
      mine, theirs, 640, 2, law_of, [&](std::vector<std::size_t>&) { ++cover_calls; }, next);
  CHECK(r.replaced);
  CHECK(r.taken == 1);
  CHECK(next == std::vector<std::uint32_t>{640, 1280});
  CHECK(law_calls == 0);
  CHECK(cover_calls == 0);
  // The budget binds but there is no law yet: e keeps its own, the coverage is not asked for.
  r = sel.offer<std::uint32_t>(
      mine, theirs, 640, 1, [] { return static_cast<const hc::entry_block_law*>(nullptr); },
      [&](std::vector<std::size_t>&) { ++cover_calls; }, next);
  CHECK_FALSE(r.replaced);
  CHECK(cover_calls == 0);
  // Nothing offered: f's 640 lies beyond a 639-token share, and f's state e already holds.
  CHECK_FALSE(sel.offer<std::uint32_t>(
                     mine, theirs, 639, 2, law_of, [](std::vector<std::size_t>&) {}, next)
                  .replaced);
  CHECK_FALSE(sel.offer<std::uint32_t>(
                     mine, mine, 1290, 2, law_of, [](std::vector<std::size_t>&) {}, next)
                  .replaced);
  CHECK_THROWS_AS(hc::handover_selector(0), hc::invalid_argument);
}

TEST_CASE(
    "shadow: hand-over keeps the exact best of its own and the offered states (brute force)") {
  std::mt19937 rng(29);
  std::size_t selections = 0, taken_total = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t b = 1 + rng() % 4, n = 3 + rng() % 8, len = n * b + rng() % b;
    std::vector<double> w(len, 0.0);
    for (auto& x : w) x = rng() % 3 == 0 ? 0.0 : static_cast<double>(rng() % 50);
    w[rng() % len] += 1.0;
    const hc::depth_prefix_sums sums(w);
    const auto law = sums.block_law(hc::depth_anchor::head, len, b);
    REQUIRE(law.has_value());
    const std::size_t m = 1 + rng() % 4;
    auto mine = random_grid(rng, b, n * b, 3);
    while (mine.size() > m)
      mine.erase(mine.begin() + static_cast<std::ptrdiff_t>(rng() % mine.size()));
    const auto theirs = random_grid(rng, b, n * b + 3 * b, 2);  // f may be longer than e
    const std::size_t shared = rng() % (len + 1);
    std::vector<std::size_t> covered;  // block indices other entries serve, some beyond e
    for (std::size_t k = 1; k <= n + 2; ++k)
      if (rng() % 4 == 0) covered.push_back(k);
    // The candidates the reference may choose from: e's own and every state of f on the share.
    std::set<std::size_t> cand(mine.begin(), mine.end());
    for (const auto c : theirs)
      if (c >= b && c <= shared) cand.insert(c);
    std::vector<std::size_t> covered_tokens;
    for (std::size_t k : covered) covered_tokens.push_back(k * b);
    const std::vector<std::size_t> cands(cand.begin(), cand.end());
    const double best = joint_ref::brute_force_subset(w, m, cands, covered_tokens);

    hc::handover_selector sel(b);
    std::vector<std::uint32_t> next;
    const auto r = sel.offer<std::uint32_t>(
        mine, theirs, shared, m, [&] { return &*law; },
        [&](std::vector<std::size_t>& u) { u = covered; }, next);
    const std::vector<std::uint32_t>& kept = r.replaced ? next : mine;
    std::vector<std::size_t> kept_tokens(kept.begin(), kept.end());
    CHECK(kept.size() <= m);
    CHECK(std::is_sorted(kept.begin(), kept.end()));
    std::size_t taken = 0;
    for (const auto p : kept) {
      CHECK(cand.count(p) == 1);
      taken += std::binary_search(mine.begin(), mine.end(), p) ? 0 : 1;
    }
    CHECK(r.taken == taken);
    const double got = joint_ref::expected_recompute(w, kept_tokens, covered_tokens);
    CHECK(got == doctest::Approx(best).epsilon(1e-12).scale(1.0));
    ++selections;
    taken_total += taken;
  }
  CHECK(selections == 300);
  CHECK(taken_total > 0);  // the trials do take states over
}
