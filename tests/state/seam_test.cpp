// SPDX-License-Identifier: Apache-2.0
// Seam plans, conv warm-up and the splice (state/seam.hpp) against the independent double
// reference: cached interiors plus recomputed seams equal the full recurrence.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "common.hpp"

TEST_CASE("plan_seams lays out interiors, joint seam recomputes and conv context") {
  hc::seam_options o;
  o.width = 4;
  o.conv_kernel = 4;  // h = max(4, 3) = 4
  const auto p = hc::plan_seams(std::vector<std::size_t>{20, 30, 5, 40, 12}, o);
  using K = hc::splice_step::kind;
  struct expect_step {
    K what;
    std::size_t b, e, seg;
  };
  const expect_step want[] = {{K::cached, 0, 20, 0},  {K::recompute, 20, 24, 1},
                              {K::cached, 24, 46, 1}, {K::recompute, 46, 59, 1},
                              {K::cached, 59, 91, 3}, {K::recompute, 91, 107, 3}};
  REQUIRE(p.steps.size() == 6);
  for (std::size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(p.steps[i].what == want[i].what);
    CHECK(p.steps[i].tokens == hc::token_range{want[i].b, want[i].e});
    CHECK(p.steps[i].segment == want[i].seg);
  }
  CHECK(p.steps[2].local_begin == 4);
  CHECK(p.steps[1].conv_context == hc::token_range{17, 20});
  CHECK(p.interiors[2].empty());  // 5 tokens: too short, recomputed whole
  CHECK(p.interiors[4].empty());  // the query
  CHECK(p.total_tokens == 107);
  CHECK(p.cached_tokens == 20 + 22 + 32);
  CHECK(p.recomputed_tokens == 107 - 74);
  CHECK(p.cached_steps() == 3);
  CHECK(p.segment_begin == std::vector<std::size_t>{0, 20, 50, 55, 95, 107});
  CHECK_THROWS_AS(hc::plan_seams(std::vector<std::size_t>{3, 0}), hybridcache::invalid_argument);

  // Properties over random layouts: contiguous cover, alternating kinds, interior bounds.
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 200; ++trial) {
    std::uniform_int_distribution<std::size_t> len(1, 60), cnt(1, 7), w(0, 10), k(0, 6);
    std::vector<std::size_t> lens(cnt(rng));
    for (auto& x : lens) x = len(rng);
    hc::seam_options so{w(rng), k(rng), trial % 3 != 0, trial % 5 != 0};
    const auto q = hc::plan_seams(lens, so);
    std::size_t pos = 0, cached = 0;
    for (std::size_t i = 0; i < q.steps.size(); ++i) {
      CHECK(q.steps[i].tokens.begin == pos);
      CHECK_FALSE(q.steps[i].tokens.empty());
      if (i > 0 && q.steps[i].what == K::recompute) CHECK(q.steps[i - 1].what == K::cached);
      if (q.steps[i].what == K::cached) {
        const auto& in = q.interiors[q.steps[i].segment];
        CHECK(q.steps[i].tokens.size() == in.size());
        CHECK(q.steps[i].local_begin == in.begin);
        cached += in.size();
      }
      pos = q.steps[i].tokens.end;
    }
    CHECK(pos == std::accumulate(lens.begin(), lens.end(), std::size_t{0}));
    CHECK(cached == q.cached_tokens);
    const std::size_t head = std::max(so.width, so.conv_kernel > 1 ? so.conv_kernel - 1 : 0);
    for (std::size_t i = 0; i < lens.size(); ++i) {
      const auto role = hc::role_of(i, lens.size());
      const auto& in = q.interiors[i];
      if (in.empty()) continue;
      if (role == hc::segment_role::leading && so.anchor_first) {
        CHECK(in == hc::token_range{0, lens[i]});
      } else {
        CHECK(in.begin == head);
        CHECK(in.end + so.width == lens[i]);
      }
    }
  }
}

TEST_CASE_TEMPLATE("splice of cached interiors and recomputed seams equals the full recurrence",
                   Real, float, double) {
  std::mt19937_64 rng(29);
  const std::vector<std::size_t> lens{40, 100, 12, 75, 30};
  const std::size_t total = 257, dk = 6, dv = 5;
  hc::seam_options o;
  o.conv_kernel = 4;
  const auto plan = hc::plan_seams(lens, o);
  for (const variant& var : all_variants) {
    auto in = own<Real>(hc_ref::random_tokens(rng, total, dk, dv, var.delta, var.gate));
    std::vector<hc::segment_summary<Real>> cached;
    for (const auto& st : plan.steps)
      if (st.what == hc::splice_step::kind::cached)
        cached.push_back(hc::summarize(in.view().slice(st.tokens.begin, st.tokens.end), in.rule));
    const auto p = hc_ref::random_state(rng, dk, dv);
    const auto pr = to_real<Real>(p);
    const auto got = hc::splice(plan, cached, in.view(), in.rule, std::span<const Real>(pr));
    const std::string vname(var.name);
    CAPTURE(vname);
    CHECK(hc_ref::rel_err(got, hc_ref::run(in.ref, p).S.a) < tol<Real>());
    // Wrong inputs are refused.
    CHECK_THROWS_AS(hc::splice(plan, std::span<const hc::segment_summary<Real>>(cached).first(2),
                               in.view(), in.rule, std::span<const Real>(pr)),
                    hybridcache::invalid_argument);
    CHECK_THROWS_AS(
        hc::splice(plan, cached, in.view().slice(0, 200), in.rule, std::span<const Real>(pr)),
        hybridcache::invalid_argument);
    std::swap(cached[0], cached[1]);
    CHECK_THROWS_AS(hc::splice(plan, cached, in.view(), in.rule, std::span<const Real>(pr)),
                    hybridcache::invalid_argument);
  }
}

TEST_CASE("splice with RoPE: interiors cached at segment-local positions, moved by eq. 7") {
  std::mt19937_64 rng(31);
  const std::vector<std::size_t> lens{24, 60, 50, 20};
  const std::size_t total = 154, dk = 8, dv = 3;
  const auto plan = hc::plan_seams(lens);
  hybridcache::rope_params rp;
  rp.head_dim = dk;
  rp.rotary_dim = 6;  // partial
  rp.layout = hybridcache::rope_layout::interleaved;
  rp.base = 500000.0;
  for (const variant& var : {all_variants[0], all_variants[1]}) {
    const auto raw = hc_ref::random_tokens(rng, total, dk, dv, false, var.gate);
    auto global = raw;  // keys at request positions
    for (std::size_t i = 0; i < total; ++i)
      hc_ref::rope_key(&global.k[i * dk], 6, false, 500000.0, 1.0, static_cast<long long>(i));
    auto req = own<double>(global);
    std::vector<hc::segment_summary<double>> cached;
    std::vector<owned_inputs<double>> local_owned;
    for (const auto& st : plan.steps) {
      if (st.what != hc::splice_step::kind::cached) continue;
      // At cache time the segment was alone: keys rotated at its local positions.
      const std::size_t seg_begin = plan.segment_begin[st.segment];
      auto local = raw;
      for (std::size_t i = st.tokens.begin; i < st.tokens.end; ++i)
        hc_ref::rope_key(&local.k[i * dk], 6, false, 500000.0, 1.0,
                         static_cast<long long>(i - seg_begin));
      local_owned.push_back(own<double>(local));
      cached.push_back(
          hc::summarize(local_owned.back().view().slice(st.tokens.begin, st.tokens.end),
                        hc::transition_rule::additive));
    }
    const std::vector<double> zero(dk * dv, 0.0);
    hc::splice_options so;
    so.rope = rp;
    const auto got = hc::splice(plan, cached, req.view(), hc::transition_rule::additive,
                                std::span<const double>(zero), so);
    const std::string vname(var.name);
    CAPTURE(vname);
    CHECK(hc_ref::rel_err(got, hc_ref::run(req.ref).S.a) < 1e-10);
    // Without the re-rotation the middle segments land at the wrong positions.
    const auto wrong = hc::splice(plan, cached, req.view(), hc::transition_rule::additive,
                                  std::span<const double>(zero));
    CHECK(hc_ref::rel_err(wrong, hc_ref::run(req.ref).S.a) > 1e-3);
  }
}
