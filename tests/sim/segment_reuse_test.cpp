// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cmath>
#include <hybridcache/sim/segment_reuse.hpp>
#include <hybridcache/sim/synthetic.hpp>
#include <utility>
#include <vector>

namespace hc = hybridcache;

namespace {
std::vector<std::uint32_t> run_of(std::uint32_t start, std::size_t n) {
  std::vector<std::uint32_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = start + static_cast<std::uint32_t>(i);
  return v;
}
}  // namespace

TEST_CASE("prefill cost model: closed form and the HYPIC Fig. 14 calibration") {
  const auto m = hc::hypic_fig14_prefill();
  // The calibration as stated (HYPIC §6.5, sim/model.hpp): α·n + β·(n·p + n(n+1)/2) with
  // α = 0.072241 ms/token and β = 1.1875e-6 ms/pair, written out independently of the model's form.
  const double alpha = 0.072241, beta = 1.1875e-6;
  const auto pairs_form = [&](double n, double p) {
    return alpha * n + beta * (n * p + n * (n + 1) / 2);
  };
  for (const auto& [n, p] :
       {std::pair{300.0, 1000.0}, {1.0, 0.0}, {2400.0, 0.0}, {16.0, 26000.0}, {7.0, 3.0}}) {
    CHECK(m.cost(static_cast<std::size_t>(n), static_cast<std::size_t>(p)) ==
          doctest::Approx(pairs_form(n, p)));
  }
  CHECK(m.cost(0, 5000) == 0.0);
  CHECK(m.cost(2400, 0) == m.cost(2400));  // the dispatch form cost(L) is the empty-prefix case
  // Calibration points: one 2.4k segment ≈ 176.8 ms, the 26.4k prompt ≈ 2321 ms (HYPIC §6.5).
  CHECK(m.cost(2400) == doctest::Approx(176.8).epsilon(0.005));
  CHECK(m.cost(26400) == doctest::Approx(2321.0).epsilon(0.005));
  // Prefilling after a prefix costs what the full prompt costs minus the prefix alone.
  CHECK(m.cost(500, 700) == doctest::Approx(m.cost(1200) - m.cost(700)));
  // With an overhead, by hand: 10 + 2·3 + 0.5·3·(3 + 2·4) = 32.5.
  const hybridcache::prefill_cost_model h{.per_token = 2.0, .per_token_sq = 0.5, .overhead = 10.0};
  CHECK(h.cost(3, 4) == 32.5);
  CHECK(h.cost(3, 0) == h.cost(3));
  CHECK(hc::hypic_fig14_composition.compose_per_segment == 2.3);
  CHECK(hc::hypic_fig14_composition.combine_fixed == 45.0);
  CHECK(hc::hypic_fig14_composition.transfer_fixed == 34.0);
}

TEST_CASE("cold dispatch: LPT on equal segments gives ceil(n/m) segments per worker") {
  hc::segment_reuse_options o;
  o.workers = {1, 2, 4, 8, 16};
  const auto rows = hc::cold_dispatch(11, 2400, o);
  REQUIRE(rows.size() == 5);
  const double seg = o.cost.cost(2400);
  const std::size_t per_worker[] = {11, 6, 3, 2, 1};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    CHECK(rows[i].dispatch == doctest::Approx(seg * static_cast<double>(per_worker[i])));
    CHECK(rows[i].full == doctest::Approx(o.cost.cost(26400)));
    CHECK(rows[i].total == doctest::Approx(rows[i].dispatch + rows[i].transfer + rows[i].combine));
    if (i > 0) CHECK(rows[i].total < rows[i - 1].total);
  }
  CHECK(rows[0].transfer == 0.0);
  CHECK(rows[1].transfer == o.compose.transfer_fixed);
  // The shape of HYPIC Fig. 14: about 2x / 3.6x at m = 2 / 4 (the paper: 2.0x, 3.6x, 6.1x).
  CHECK(rows[1].speedup_vs_full() == doctest::Approx(2.0).epsilon(0.05));
  CHECK(rows[2].speedup_vs_full() == doctest::Approx(3.6).epsilon(0.05));
}

TEST_CASE("composition TTFT: hits cost nothing to prefill, seams and query are recomputed") {
  hc::segment_reuse_options o;
  const std::vector<std::size_t> len{100, 200, 300};
  const bool all_hit[] = {true, true, true};
  const auto b = hc::composition_ttft(len, all_hit, 20, 4, o);
  CHECK(b.dispatch == 0.0);
  CHECK(b.transfer == 0.0);
  const double seams = o.cost.cost(16, 100 - 8) + o.cost.cost(16, 300 - 8);
  CHECK(b.combine == doctest::Approx(o.compose.combine_fixed + 3 * o.compose.compose_per_segment +
                                     seams + o.cost.cost(20, 600)));
  // One small cold segment: fanning out would only add transfer, so it stays local.
  const bool one_cold[] = {true, false, true};
  const auto c = hc::composition_ttft(len, one_cold, 20, 4, o);
  CHECK(c.workers_used == 1);
  CHECK(c.dispatch == doctest::Approx(o.cost.cost(200)));
  CHECK_THROWS_AS(hc::composition_ttft(len, std::span<const bool>(all_hit, 2), 0, 1, o),
                  hybridcache::invalid_argument);
  // Prefix first (HYPIC's lookup order): with the first segment restored from the prefix cache,
  // its seam and its composition disappear; with all three, only the query is left.
  const auto p1 = hc::composition_ttft(len, all_hit, 20, 4, o, 1);
  CHECK(p1.combine == doctest::Approx(o.compose.combine_fixed + 2 * o.compose.compose_per_segment +
                                      seams + o.cost.cost(20, 600)));
  const auto p2 = hc::composition_ttft(len, all_hit, 20, 4, o, 2);
  CHECK(p2.combine == doctest::Approx(o.compose.combine_fixed + 1 * o.compose.compose_per_segment +
                                      o.cost.cost(16, 300 - 8) + o.cost.cost(20, 600)));
  const auto p3 = hc::composition_ttft(len, one_cold, 20, 4, o, 3);
  CHECK(p3.total == doctest::Approx(o.cost.cost(20, 600)));
  CHECK_THROWS_AS(hc::composition_ttft(len, all_hit, 20, 4, o, 4), hybridcache::invalid_argument);
}

TEST_CASE("segment index: hits and misses per namespace, hand-computed") {
  hc::trace t("seg");
  const auto s1 = t.add_piece(run_of(0, 50));
  const auto s2 = t.add_piece(run_of(100, 60));
  const auto q1 = t.add_piece(run_of(900, 5));
  const auto q2 = t.add_piece(run_of(950, 7));
  // tenant a: [s1 s2 q1], then [s2 s1 q2] (both segments hit at new positions, no prefix hit);
  // tenant b: [s1 s2 q1] (misses: namespaces are isolated); default: [s1 s2 q2].
  t.add_request({.pieces = {s1, s2, q1}, .ns = "a", .ends_with_query = true});
  t.add_request({.pieces = {s2, s1, q2}, .ns = "a", .ends_with_query = true});
  t.add_request({.pieces = {s1, s2, q1}, .ns = "b", .ends_with_query = true});
  t.add_request({.pieces = {s1, s2, q2}, .ends_with_query = true});
  t.add_request({.pieces = {s1, s2, q1}, .ns = "a", .ends_with_query = true});
  const auto r = hc::simulate_segment_reuse(t);
  REQUIRE(r.namespaces.size() == 3);
  // Reported in order: the shared namespace (requests without a tenant), then tenants by name.
  CHECK(r.namespaces[0].ns.is_shared());
  CHECK(r.namespaces[1].ns == hybridcache::namespace_key{}.with_tenant("a"));
  CHECK(r.namespaces[2].ns == hybridcache::namespace_key{}.with_tenant("b"));
  for (const auto& n : r.namespaces) {
    if (n.ns.tenant() == std::optional<std::string>("a")) {
      CHECK(n.lookups == 6);
      CHECK(n.hits == 4);
      CHECK(n.misses == 2);
      CHECK(n.hit_tokens == 4 * 55.0);
    } else {
      CHECK(n.lookups == 2);
      CHECK(n.hits == 0);
    }
  }
  CHECK(r.cold_requests == 3);
  // Prefix cache: only request 5 repeats request 1 exactly (same namespace): p = 50 + 60 + 5.
  CHECK(r.prefix_hit_tokens == 115.0);
  // Full recompute mean = mean of cost(n).
  const auto m = hc::hypic_fig14_prefill();
  const double full = (3 * m.cost(115) + m.cost(117) + m.cost(117)) / 5.0;
  CHECK(r.ttft[0].method == "full");
  CHECK(r.ttft[0].mean == doctest::Approx(full));
  // Request 5 repeats request 1 whole: prefix caching and composition both recompute one token.
  CHECK(r.ttft[1].method == "prefix");
  const double prefix = (3 * m.cost(115) + 2 * m.cost(117) - m.cost(115) + m.cost(1, 114)) / 5.0;
  CHECK(r.ttft[1].mean == doctest::Approx(prefix));
}

TEST_CASE("prefix and segment caches compare tokens, not piece ids or hashes") {
  hc::trace t("exact");
  // Two piece ids holding the same tokens are the same segment; a piece differing only in its
  // first token is not.
  const auto a1 = t.add_piece(run_of(0, 40));
  const auto a2 = t.add_piece(run_of(0, 40));
  auto other = run_of(0, 40);
  other[0] = 7777;
  const auto b = t.add_piece(other);
  const auto q = t.add_piece(run_of(500, 3));
  t.add_request({.pieces = {a1, q}, .ends_with_query = true});
  t.add_request(
      {.pieces = {a2, q}, .ends_with_query = true});  // equal tokens: full prompt hit, p = 43
  t.add_request({.pieces = {b, q}, .ends_with_query = true});  // token 0 differs: p = 0, a miss
  t.add_request({.pieces = {a2, q}, .ns = "x", .ends_with_query = true});  // other namespace: p = 0
  const auto r = hc::simulate_segment_reuse(t);
  CHECK(r.prefix_hit_tokens == 43.0);
  REQUIRE(r.namespaces.size() == 2);
  CHECK(r.namespaces[0].ns.is_shared());
  CHECK(r.namespaces[0].lookups == 3);
  CHECK(r.namespaces[0].hits == 1);    // only request 2's segment
  CHECK(r.namespaces[0].misses == 2);  // requests 1 and 3
  CHECK(r.namespaces[1].hits == 0);
  CHECK(r.cold_requests == 3);
}

TEST_CASE("segment-reuse simulation is deterministic and rejects bad input") {
  hc::synthetic_rag_options o;
  o.requests = 300;
  const auto a = hc::simulate_segment_reuse(hc::synthetic_rag(o));
  const auto b = hc::simulate_segment_reuse(hc::synthetic_rag(o));
  REQUIRE(a.ttft.size() == b.ttft.size());
  for (std::size_t i = 0; i < a.ttft.size(); ++i) CHECK(a.ttft[i].mean == b.ttft[i].mean);
  CHECK(a.namespaces.size() == 2);
  hc::segment_reuse_options bad;
  bad.workers = {2, 0};
  CHECK_THROWS_AS(hc::simulate_segment_reuse(hc::synthetic_rag(o), bad),
                  hybridcache::invalid_argument);
  CHECK_THROWS_AS(hc::simulate_segment_reuse(hc::trace{}), hybridcache::invalid_argument);
}
