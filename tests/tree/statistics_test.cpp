// SPDX-License-Identifier: Apache-2.0
// tree_statistics (tree/statistics.hpp) alone: match-end shares against the closed form
// (1−γ)/(1−γ^n) Σ γ^{n−s}[match s ended at v] recomputed naively in long double, over enough
// observations that the common scale is folded back many times; the repeat discount, the
// fresh-end prior, P(hit | age) and γ_eff against hand-worked values; P(hit | age) per age class
// against a naive long-double recomputation.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <hybridcache/tree/eviction.hpp>
#include <hybridcache/tree/statistics.hpp>

namespace hc = hybridcache;

namespace {

/// root ─ a, b, c (one namespace).
struct star {
  hc::tree_index ix;
  hc::tree_index::slot_id root, a, b, c;
  star() {
    const hc::xxh3_hash hash;
    root = ix.root_of(hash, hc::namespace_key{});
    bool created = false;
    a = ix.child(root, hc::digest{1, 0}, created);
    b = ix.child(root, hc::digest{2, 0}, created);
    c = ix.child(root, hc::digest{3, 0}, created);
  }
};

hc::tree_statistics_options plain(double gamma) {
  return {.gamma = gamma,
          .fresh_prior = false,
          .repeat_discount = false,
          .age_value = false,
          .prefill_prior = false,
          .branch_prior = false};
}

}  // namespace

TEST_CASE("tree_statistics: shares are the EW histogram's closed form, finite forever") {
  for (const double gamma : {0.5, 0.9, 1.0}) {
    CAPTURE(gamma);
    star t;
    hc::tree_statistics st(plain(gamma));
    const std::vector<hc::tree_index::slot_id> nodes{t.root, t.a, t.b, t.c};
    std::vector<std::size_t> seq;
    double region_a = 0.0;  // W of a state at a: every observation at a adds to it
    std::mt19937_64 rng(7);
    for (int s = 0; s < 3000; ++s) {  // γ = 0.5: the scale passes 1e150 every ~500 observations
      const std::size_t k = rng() % 4 == 0 ? 0 : 1 + rng() % 3;
      seq.push_back(k);
      st.observe(t.ix, nodes[k], k == 1 ? &region_a : nullptr, [&](double f) { region_a *= f; });
      if (s % 250 != 249) continue;
      long double num[4] = {}, den = 0.0L;
      const std::size_t n = seq.size();
      for (std::size_t i = 0; i < n; ++i) {
        const long double w = std::pow(static_cast<long double>(gamma), n - 1 - i);
        num[seq[i]] += w;
        den += w;
      }
      for (std::size_t j = 0; j < 4; ++j) {
        const double share = st.match_share(t.ix, nodes[j]);
        REQUIRE(std::isfinite(share));
        CHECK(share == doctest::Approx(static_cast<double>(num[j] / den)).epsilon(1e-12));
      }
      CHECK(std::isfinite(st.total()));
      CHECK(region_a == doctest::Approx(t.ix[t.a].weight).epsilon(1e-12));
    }
    CHECK(st.observations() == 3000);
  }
}

TEST_CASE("tree_statistics: repeat discount, hand-worked with gamma = 1") {
  star t;
  auto o = plain(1.0);
  o.repeat_discount = true;
  hc::tree_statistics st(o);
  auto none = [](double) {};
  st.observe(t.ix, t.a, nullptr, none);  // a's first: q = (0 + 1)/(1 + 2) = 1/3
  CHECK(t.ix[t.a].weight == doctest::Approx(1.0 / 3));
  st.observe(t.ix, t.b, nullptr, none);  // b's first: q = (0 + 1)/(2 + 2) = 1/4
  CHECK(t.ix[t.b].weight == doctest::Approx(1.0 / 4));
  // a's second: the first becomes 1/3 · 1/q with q = 1/4 as it stands, then h₂ = 1; plus 1.
  st.observe(t.ix, t.a, nullptr, none);
  CHECK(t.ix[t.a].weight == doctest::Approx(7.0 / 3));
  CHECK(st.repeat_share() == doctest::Approx(0.5));
  st.observe(t.ix, t.root, nullptr, none);  // a root is never discounted
  CHECK(t.ix[t.root].weight == doctest::Approx(1.0));
  const double total = 7.0 / 3 + 1.0 / 4 + 1.0;
  CHECK(st.total() == doctest::Approx(total));
  CHECK(st.match_share(t.ix, t.a) == doctest::Approx((7.0 / 3) / total));
}

TEST_CASE("tree_statistics: the fresh-end prior is set, then replaced by the first match") {
  star t;
  auto o = plain(1.0);
  o.fresh_prior = true;
  hc::tree_statistics st(o);
  double region = 0.0;
  const auto prior = st.note_end(t.ix, t.a);  // p̂ = (0+1)/(1+2)
  REQUIRE(prior.has_value());
  CHECK(*prior == doctest::Approx(1.0 / 3));
  CHECK(t.ix[t.a].weight == doctest::Approx(1.0 / 3));
  CHECK(hc::tree_statistics::has_prior(t.ix, t.a));
  CHECK_FALSE(st.note_end(t.ix, t.a).has_value());  // once only
  CHECK_FALSE(st.note_end(t.ix, t.root).has_value());
  region = *prior;
  st.observe(t.ix, t.a, &region, [](double) {});  // the match replaces π: w = 1, p̂ = 2/3
  CHECK(t.ix[t.a].weight == doctest::Approx(1.0));
  CHECK(region == doctest::Approx(1.0));
  CHECK(st.total() == doctest::Approx(1.0));
  CHECK_FALSE(hc::tree_statistics::has_prior(t.ix, t.a));
  CHECK(st.fresh_share() == doctest::Approx(2.0 / 3));
}

TEST_CASE("tree_statistics: P(hit | age) and the prior's spread, hand-worked") {
  auto o = plain(1.0);
  o.age_value = true;
  hc::tree_statistics st(o);
  st.note_hit_age(0);    // bucket 0
  st.note_hit_age(5);    // bucket 3
  st.note_end_age(5);    // bucket 3
  st.note_end_age(100);  // bucket 7
  // s = 1, P̄ = (2 + 0.5)/(4 + 1) = 0.5; P = (H≥b + 0.5)/(N≥b + 1).
  CHECK(st.hit_given_age(0) == doctest::Approx(2.5 / 5));
  CHECK(st.hit_given_age(4) == doctest::Approx(1.5 / 4));
  CHECK(st.hit_given_age(64) == doctest::Approx(0.5 / 2));
  CHECK(st.hit_given_age(1000) == doctest::Approx(0.5));
  CHECK(hc::tree_statistics::delay_discounted(0.99, 0.5, 300.0, 1.0) == doctest::Approx(0.5 / 3));
  CHECK(hc::tree_statistics::delay_discounted(0.99, 0.5, 50.0, 1.0) == 0.5);
}

TEST_CASE("tree_statistics: age classes, each class's P(hit | age) from scratch, finite forever") {
  // With `age_classes`, class c's table is the law of "P(hit | age)" on class c's events alone:
  // with event k of T weighted γ^{T−k} (every event decays both classes), H_c(b) and N_c(b) the
  // weighted hits and hits + ends of class c at buckets ≥ b, P̄_c = (H_c(0) + 1/2)/(N_c(0) + 1)
  // and P_c(b) = (H_c(b) + P̄_c)/(N_c(b) + 1) (the code's s-scaled form divided by s). Recomputed
  // naively in long double after every event, for both classes and for the all-class table,
  // over enough events at γ = 0.5 that the common scale is folded back many times. Without
  // `age_classes`, either class reads the all-class table. Hand-worked first (γ = 1).
  {
    auto o = plain(1.0);
    o.age_value = true;
    o.age_classes = true;
    hc::tree_statistics st(o);
    st.note_hit_age(0, 0);    // class 0, bucket 0
    st.note_end_age(5, 0);    // class 0, bucket 3
    st.note_end_age(5, 1);    // class 1, bucket 3
    st.note_end_age(100, 1);  // class 1, bucket 7
    // Class 0: P̄ = (1 + 0.5)/(2 + 1) = 0.5; bucket 0: (1 + 0.5)/(2 + 1), bucket 3: 0.5/(1 + 1).
    CHECK(st.hit_given_age_table(0)[0] == doctest::Approx(0.5));
    CHECK(st.hit_given_age_table(0)[3] == doctest::Approx(0.25));
    // Class 1: P̄ = 0.5/(2 + 1) = 1/6; bucket 3: (0 + 1/6)/(2 + 1), bucket 8: (1/6)/1.
    CHECK(st.hit_given_age_table(1)[3] == doctest::Approx(1.0 / 18));
    CHECK(st.hit_given_age_table(1)[8] == doctest::Approx(1.0 / 6));
    // All classes: P̄ = 1.5/5 = 0.3; bucket 3: (0 + 0.3)/(3 + 1).
    CHECK(st.hit_given_age(5) == doctest::Approx(0.3 / 4));
    // A class out of range is a clear error, and nothing is counted.
    CHECK_THROWS_AS(st.note_hit_age(0, 2), hc::invalid_argument);
    CHECK_THROWS_AS(st.note_end_age(0, 7), hc::invalid_argument);
    CHECK_THROWS_AS((void)st.hit_given_age_table(2), hc::invalid_argument);
    CHECK(st.hit_given_age_table(0)[0] == doctest::Approx(0.5));
    CHECK(st.hit_given_age(5) == doctest::Approx(0.3 / 4));
  }
  for (const bool classes : {true, false}) {
    CAPTURE(classes);
    auto o = plain(0.5);
    o.age_value = true;
    o.age_classes = classes;
    hc::tree_statistics st(o);
    std::mt19937_64 rng(classes ? 5 : 6);
    struct event {
      bool hit;
      std::uint32_t age;
      std::size_t cls;
    };
    std::vector<event> events;
    auto from_scratch = [&](int cls, std::size_t b) {  // cls −1: every class
      const long double g = 0.5L;
      long double H[2] = {0, 0}, N[2] = {0, 0};  // [0]: bucket ≥ 0, [1]: bucket ≥ b
      const std::size_t T = events.size();
      for (std::size_t k = 0; k < T; ++k) {
        const auto& e = events[k];
        if (cls >= 0 && static_cast<int>(e.cls) != cls) continue;
        const long double w = std::pow(g, static_cast<long double>(T - 1 - k));
        for (int i = 0; i < 2; ++i) {
          if (i == 1 && hc::tree_statistics::age_bucket(e.age) < b) continue;
          N[i] += w;
          if (e.hit) H[i] += w;
        }
      }
      const long double all = (H[0] + 0.5L) / (N[0] + 1.0L);
      return static_cast<double>((H[1] + all) / (N[1] + 1.0L));
    };
    for (int i = 0; i < 1500; ++i) {
      const event e{rng() % 3 == 0, static_cast<std::uint32_t>(rng() >> (rng() % 64)),
                    static_cast<std::size_t>(rng() % 2)};
      events.push_back(e);
      if (e.hit)
        st.note_hit_age(e.age, e.cls);
      else
        st.note_end_age(e.age, e.cls);
      if (i % 37 != 0 && i < 1490) continue;
      for (std::size_t b = 0; b < hc::tree_statistics::age_buckets; ++b) {
        CAPTURE(b);
        const double all = from_scratch(-1, b);
        CHECK(std::isfinite(st.hit_given_age_table()[b]));
        CHECK(st.hit_given_age_table()[b] == doctest::Approx(all).epsilon(1e-9));
        for (int c = 0; c < 2; ++c) {
          const double want = classes ? from_scratch(c, b) : all;
          CHECK(st.hit_given_age_table(static_cast<std::size_t>(c))[b] ==
                doctest::Approx(want).epsilon(1e-9));
        }
      }
    }
  }
}

TEST_CASE("tree_statistics: the divergence law F_j, hand-worked and finite forever") {
  {
    // γ = 1/2; D = 1, 3, 2, 8 (and a 0, ignored): masses 1/8, 1/4, 1/2, 1 in buckets 1, 2, 2, 4
    // (bucket j holds D ∈ [2^{j−1}, 2^j − 1]); total 15/8.
    auto o = plain(0.5);
    o.branch_prior = true;
    hc::tree_statistics st(o);
    CHECK(st.divergence_within(32) == 0.0);
    for (std::size_t d : {1u, 3u, 2u, 0u, 8u}) st.note_divergence(d);
    CHECK(st.divergence_within(0) == 0.0);
    CHECK(st.divergence_within(1) == doctest::Approx(1.0 / 15));
    CHECK(st.divergence_within(2) == doctest::Approx(7.0 / 15));
    CHECK(st.divergence_within(3) == doctest::Approx(7.0 / 15));
    CHECK(st.divergence_within(4) == doctest::Approx(1.0));
    CHECK(st.divergence_within(32) == doctest::Approx(1.0));
  }
  {
    // γ = 0.9 over 20000 events: the scale is folded back many times; F_j against the EW sum
    // in long double.
    auto o = plain(0.9);
    o.branch_prior = true;
    hc::tree_statistics st(o);
    std::mt19937 rng(3);
    std::vector<long double> bucket(33, 0.0L);
    for (int i = 0; i < 20000; ++i) {
      const std::size_t d = 1 + rng() % 700;
      st.note_divergence(d);
      for (auto& b : bucket) b *= 0.9L;
      bucket[static_cast<std::size_t>(std::bit_width(d))] += 1.0L;
    }
    long double total = 0.0L;
    for (auto b : bucket) total += b;
    long double run = 0.0L;
    for (std::size_t j = 1; j < 33; ++j) {
      run += bucket[j];
      CHECK(std::isfinite(st.divergence_within(j)));
      CHECK(st.divergence_within(j) == doctest::Approx(static_cast<double>(run / total)));
    }
  }
}

TEST_CASE(
    "tree_statistics: the branch prior is set, then given way by the first match through it") {
  star t;
  auto o = plain(1.0);
  o.branch_prior = true;
  hc::tree_statistics st(o);
  const auto prior = st.note_branch(t.ix, t.a);  // p̂_I = (0+1)/(1+2)
  REQUIRE(prior.has_value());
  CHECK(*prior == doctest::Approx(1.0 / 3));
  CHECK(hc::tree_statistics::has_prior(t.ix, t.a));
  CHECK(hc::tree_statistics::has_branch_prior(t.ix, t.a));
  CHECK_FALSE(st.note_branch(t.ix, t.a).has_value());  // once only
  CHECK_FALSE(st.note_branch(t.ix, t.root).has_value());
  double region = *prior;
  st.branch_hit(t.ix, t.a, &region);  // a match passed through a: the prior goes, p̂_I = 2/3
  CHECK(t.ix[t.a].weight == 0.0);
  CHECK(region == 0.0);
  CHECK_FALSE(hc::tree_statistics::has_prior(t.ix, t.a));
  CHECK(st.branch_share() == doctest::Approx(2.0 / 3));
  // A match that ends at a branch point replaces the prior by a real observation.
  const auto p2 = st.note_branch(t.ix, t.b);  // n_I = 2, h_I = 1: 2/4
  REQUIRE(p2.has_value());
  CHECK(*p2 == doctest::Approx(0.5));
  region = *p2;
  st.observe(t.ix, t.b, &region, [](double) {});
  CHECK(t.ix[t.b].weight == doctest::Approx(1.0));
  CHECK(region == doctest::Approx(1.0));
  CHECK(st.branch_share() == doctest::Approx(3.0 / 4));
  // Off: nothing is noted.
  hc::tree_statistics off(plain(1.0));
  CHECK_FALSE(off.note_branch(t.ix, t.c).has_value());
  off.note_divergence(3);
  CHECK(off.divergence_within(32) == 0.0);
}

TEST_CASE(
    "tree_node::holds_prior: every prior sets the fresh flag, every way out clears them all") {
  // `holds_prior` (and the age class of `tree_state_pool::admission_class`) reads the fresh flag
  // alone; this holds only while the prefill-end and branch flags never outlive it. Random
  // sequences of every call that sets or removes a prior, checked against the raw flag bits.
  constexpr std::uint32_t fresh = hc::tree_node::fresh_flag;
  constexpr std::uint32_t priors = fresh | hc::tree_node::prefill_flag | hc::tree_node::branch_flag;
  std::mt19937_64 rng(11);
  std::size_t set = 0, cleared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    star t;
    auto o = plain(trial % 2 == 0 ? 0.9 : 1.0);
    o.fresh_prior = o.prefill_prior = o.branch_prior = true;
    hc::tree_statistics st(o);
    const std::vector<hc::tree_index::slot_id> nodes{t.a, t.b, t.c};
    for (int s = 0; s < 200; ++s) {
      const auto v = nodes[rng() % nodes.size()];
      const bool before = (t.ix[v].flags & priors) != 0;
      double region = 1.0;
      switch (rng() % 6) {
        case 0:
          (void)st.note_end(t.ix, v);
          break;
        case 1:
          (void)st.note_prefill_end(t.ix, v);
          break;
        case 2:
          (void)st.note_branch(t.ix, v);
          break;
        case 3:
          st.observe(t.ix, v, &region, [&](double f) { region *= f; });
          break;
        case 4:
          if (hc::tree_statistics::has_branch_prior(t.ix, v)) st.branch_hit(t.ix, v, &region);
          break;
        default:
          if (t.ix[v].holds_prior()) st.drop_prior(t.ix, v, &region);
          break;
      }
      const bool after = (t.ix[v].flags & priors) != 0;
      set += !before && after;
      cleared += before && !after;
      for (const auto n : nodes) {
        const std::uint32_t f = t.ix[n].flags;
        CHECK(((f & priors) == 0 || (f & fresh) != 0));  // no prefill or branch flag alone
        CHECK(t.ix[n].holds_prior() == ((f & priors) != 0));
        CHECK(hc::tree_state_pool::admission_class(t.ix, n) == ((f & priors) != 0 ? 1 : 0));
      }
    }
  }
  CHECK(set > 100);  // the sequences did set and clear priors
  CHECK(cleared > 100);
}
