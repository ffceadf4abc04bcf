// SPDX-License-Identifier: Apache-2.0
// state_policy against an independent model of its books
// (tests/support/tree_policy_reference.hpp): matches against a set of inserted block prefixes,
// EW statistics against eager decay in long double, victims against the brute-force least
// ΔE[r] per byte; plus the pool bound, pins, namespaces, the prefill plan and typed errors.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <hybridcache/tree.hpp>

#include "support/tree_policy_reference.hpp"

namespace hc = hybridcache;
namespace ht = hybridcache_test;
using hc::node_id;
using hc::token_id;

namespace {

hc::namespace_key ns_of(int i) {
  return i == 0 ? hc::namespace_key{} : hc::namespace_key{}.with_tenant("t" + std::to_string(i));
}

std::vector<token_id> seq(std::initializer_list<token_id> t) { return t; }

/// `o` with the repeat discount, the age-conditioned value, the prefill-end prior, the filling
/// of free memory and branch points off: the tests of other laws keep their hand arithmetic short
/// (each of those options has its own test).
hc::policy_options legacy(hc::policy_options o) {
  o.fill_free = false;
  o.repeat_discount = false;
  o.age_value = false;
  o.prefill_prior = false;
  o.branch_prior = false;
  o.admit_by_value = false;
  return o;
}

/// Victim checks shared by admit and evict: each victim, in order, is an unpinned state with the
/// model's least ΔE[r] per byte at that moment; it is then removed from the model. The victims'
/// ends are counted afterwards, unless `count_ends` is false (the caller still compares at the
/// call's P(hit | age) and counts them with `count_victim_ends`).
void count_victim_ends(ht::tree_policy_model& model, const std::vector<node_id>& victims) {
  for (node_id v : victims) model.age_event(model.age_ends, model.age_of(v));
}
void check_victims(ht::tree_policy_model& model, const std::vector<node_id>& victims,
                   node_id exclude, bool count_ends = true) {
  for (node_id v : victims) {
    REQUIRE(model.nodes.count(v) == 1);
    auto& n = model.nodes.at(v);
    CHECK(n.bytes > 0);
    CHECK(n.pins == 0);
    CHECK(v != exclude);
    const long double base = model.cost();
    const long double mine =
        (model.cost(v) - base) / static_cast<long double>(n.bytes) * model.hit_chance(v);
    const long double best = model.min_delta_per_byte(exclude);
    CHECK(static_cast<double>(mine) ==
          doctest::Approx(static_cast<double>(best)).epsilon(1e-9).scale(1e-12));
    n.bytes = 0;
  }
  // Ends are counted once the call's victims are all chosen (P(hit | age) is fixed per call).
  if (count_ends) count_victim_ends(model, victims);
}

/// 1 if the model's unpinned states hold at least two different P(hit | age) when `victims` are
/// about to be checked (so the age factor could change the order), else 0.
int count_aged(const ht::tree_policy_model& model, const std::vector<node_id>& victims) {
  if (victims.empty() || !model.age_value) return 0;
  long double lo = 2, hi = -1;
  for (const auto& [id, n] : model.nodes) {
    if (n.bytes == 0 || n.pins) continue;
    lo = std::min(lo, model.hit_chance(id));
    hi = std::max(hi, model.hit_chance(id));
  }
  return hi > lo ? 1 : 0;
}

}  // namespace

TEST_CASE("match walks full blocks, partial blocks and other namespaces never match") {
  hc::state_policy pol({.block_size = 4, .state_bytes = 10, .capacity_bytes = 100});
  const auto a = seq({1, 2, 3, 4, 5, 6, 7, 8, 9, 10});  // 2 full blocks + 2 tokens
  const auto path = pol.insert(ns_of(0), a);
  REQUIRE(path.size() == 2);
  auto m = pol.match(ns_of(0), a);
  CHECK(m.matched_tokens == 8);
  CHECK(m.node == path[1]);
  CHECK(m.path == path);
  CHECK(m.resume_tokens == 0);
  CHECK(m.replay_tokens == 8);
  pol.unpin(m.resume_node);
  // Same tokens, another namespace: nothing matches, and inserting gives disjoint nodes.
  auto m2 = pol.match(ns_of(1), a);
  CHECK(m2.matched_tokens == 0);
  pol.unpin(m2.resume_node);
  const auto path2 = pol.insert(ns_of(1), a);
  for (node_id x : path2)
    for (node_id y : path) CHECK(x != y);
  CHECK(pol.namespace_count() == 2);
  // Divergence inside block 2: only block 1 matches.
  auto m3 = pol.match(ns_of(0), seq({1, 2, 3, 4, 5, 6, 0, 8}));
  CHECK(m3.matched_tokens == 4);
  CHECK(m3.node == path[0]);
  pol.unpin(m3.resume_node);
}

TEST_CASE("key-based calls reach the same nodes as token-based ones") {
  hc::state_policy pol({.block_size = 4, .capacity_bytes = 8});
  const auto ns = ns_of(2);
  const auto a = seq({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  const auto path = pol.insert(ns, a);
  const auto keys = hc::block_keys(pol.hash(), ns, a, 4);
  REQUIRE(keys.size() == 3);
  CHECK(pol.insert_keys(ns, keys) == path);
  auto m = pol.match_keys(ns, std::span<const hc::digest>(keys).first(2));
  CHECK(m.matched_tokens == 8);
  CHECK(m.node == path[1]);
  pol.unpin(m.resume_node);
  // Keys computed under another namespace never reach these nodes.
  const auto other = hc::block_keys(pol.hash(), ns_of(1), a, 4);
  auto m2 = pol.match_keys(ns, other);
  CHECK(m2.matched_tokens == 0);
  pol.unpin(m2.resume_node);
  // An engine's own chained keys (e.g. vLLM block hashes) work as long as they are consistent.
  const std::vector<hc::digest> engine{{1, 1}, {2, 2}};
  const auto p2 = pol.insert_keys(ns, engine);
  auto m3 = pol.match_keys(ns, engine);
  CHECK(m3.node == p2[1]);
  CHECK(m3.matched_tokens == 8);
  pol.unpin(m3.resume_node);
}

TEST_CASE("match_keys with hints: any hints give the unhinted match, against inserted prefixes") {
  // Two policies fed the same inserts, admissions and erasures (so the same ids); every query
  // matches one without hints and the other with hints drawn from: the right node, a stale id
  // (an erased node), another live node, no_node, or none at all (a short span). Each result
  // must equal the unhinted one field by field, and its depth the longest inserted prefix of the
  // query's keys still present (the reference: a set of key prefixes, erasures applied). (An
  // erased node's record is cleared, so its parent check already fails; the bounds check of
  // `live_slot` is what rejects an id whose slot was never issued.)
  std::mt19937_64 rng(5);
  hc::state_policy a({.block_size = 4, .capacity_bytes = 64}),
      b({.block_size = 4, .capacity_bytes = 64});
  const auto ns = ns_of(1);
  std::set<std::vector<hc::digest>> present;  // the reference: every present key prefix
  std::map<std::vector<hc::digest>, node_id> id_of;
  std::vector<node_id> erased;
  std::map<std::vector<hc::digest>, node_id> erased_of;  // the last erased node of a prefix
  auto keys_of = [&](std::size_t branch, std::size_t len) {
    std::vector<hc::digest> k;
    for (std::size_t i = 0; i < len; ++i) k.push_back({branch < i ? 0 : branch * 100 + i, i});
    return k;
  };
  std::size_t hinted = 0, queries = 0;
  for (int round = 0; round < 400; ++round) {
    const std::size_t branch = rng() % 6, len = 1 + rng() % 10;
    const auto k = keys_of(branch, len);
    const int op = static_cast<int>(rng() % 4);
    if (op == 0) {  // insert
      const auto pa = a.insert_keys(ns, k), pb = b.insert_keys(ns, k);
      REQUIRE(pa == pb);
      for (std::size_t i = 0; i < len; ++i) {
        std::vector<hc::digest> pre(k.begin(), k.begin() + static_cast<std::ptrdiff_t>(i + 1));
        present.insert(pre);
        id_of[pre] = pa[i];
      }
      if (rng() % 2) {  // a state somewhere on the path
        const auto at = pa[rng() % len];
        (void)a.admit(at, 16);
        (void)b.admit(at, 16);
      }
    } else if (op == 1 && !present.empty()) {  // erase a leaf (a present prefix with no longer one)
      auto it = present.begin();
      std::advance(it, static_cast<std::ptrdiff_t>(rng() % present.size()));
      std::vector<hc::digest> leaf = *it;
      for (bool longer = true; longer;) {
        longer = false;
        for (const auto& p : present)
          if (p.size() == leaf.size() + 1 && std::equal(leaf.begin(), leaf.end(), p.begin())) {
            leaf = p;
            longer = true;
            break;
          }
      }
      const node_id v = id_of.at(leaf);
      a.erase(v);
      b.erase(v);
      present.erase(leaf);
      erased.push_back(v);
      erased_of[leaf] = v;
    } else {  // match, without and with hints
      const auto ma = a.match_keys(ns, k);
      std::vector<node_id> hints;
      const std::size_t nh = rng() % (len + 1);
      for (std::size_t i = 0; i < nh; ++i) {
        const int kind = static_cast<int>(rng() % 6);
        std::vector<hc::digest> pre(k.begin(), k.begin() + static_cast<std::ptrdiff_t>(i + 1));
        if (kind <= 1 && present.count(pre)) {
          hints.push_back(id_of.at(pre));
        } else if (kind == 2 && erased_of.count(pre)) {
          hints.push_back(erased_of.at(pre));  // this block's own node, erased (maybe re-made)
        } else if (kind == 2 && !erased.empty()) {
          hints.push_back(erased[rng() % erased.size()]);
        } else if (kind == 3 && !id_of.empty()) {
          auto it = id_of.begin();
          std::advance(it, static_cast<std::ptrdiff_t>(rng() % id_of.size()));
          hints.push_back(it->second);
        } else if (kind == 4) {
          hints.push_back((node_id{7} << 32) | (1u << 30));  // no node of this policy at all
        } else {
          hints.push_back(hc::no_node);
        }
      }
      const auto mb = b.match_keys(ns, k, hints);
      CHECK(mb.path == ma.path);
      CHECK(mb.node == ma.node);
      CHECK(mb.matched_tokens == ma.matched_tokens);
      CHECK(mb.resume_node == ma.resume_node);
      CHECK(mb.resume_tokens == ma.resume_tokens);
      CHECK(mb.replay_tokens == ma.replay_tokens);
      std::size_t want = 0;
      while (want < len && present.count(std::vector<hc::digest>(
                               k.begin(), k.begin() + static_cast<std::ptrdiff_t>(want + 1))))
        ++want;
      CHECK(ma.matched_tokens == want * 4);
      a.unpin(ma.resume_node);
      b.unpin(mb.resume_node);
      hinted += nh;
      ++queries;
    }
  }
  CHECK(queries > 50);
  CHECK(hinted > 100);
}

TEST_CASE("resume from the deepest state, pins keep a state from eviction") {
  hc::state_policy pol({.block_size = 2, .state_bytes = 5, .capacity_bytes = 10});
  const auto a = seq({1, 2, 3, 4, 5, 6, 7, 8});
  const auto p = pol.insert(ns_of(0), a);
  CHECK(pol.admit(p[0], 5).admitted);
  CHECK(pol.admit(p[2], 5).admitted);
  auto m = pol.match(ns_of(0), a);
  CHECK(m.matched_tokens == 8);
  CHECK(m.resume_node == p[2]);
  CHECK(m.resume_tokens == 6);
  CHECK(m.replay_tokens == 2);
  CHECK(pol.pinned(p[2]));
  // Full pool; admitting p[3] must evict p[0] (p[2] is pinned).
  auto r = pol.admit(p[3], 5);
  CHECK(r.admitted);
  CHECK(r.victims == std::vector<node_id>{p[0]});
  // Now p[2] (pinned) and p[3]: a third state cannot get room.
  pol.pin(p[3]);
  auto r2 = pol.admit(p[1], 5);
  CHECK_FALSE(r2.admitted);
  CHECK(r2.victims.empty());
  CHECK(pol.used_bytes() == 10);
  pol.unpin(p[3]);
  pol.unpin(m.resume_node);
  CHECK(pol.evict(1).size() == 1);
  CHECK(pol.used_bytes() == 5);
}

TEST_CASE("prefill plan: chunk grid ∩ block grid, junction, tail, planned nodes") {
  // The base rules (fill_free, which adds free-room positions, has its own test).
  hc::state_policy pol({.block_size = 4,
                        .state_bytes = 1,
                        .capacity_bytes = 8,
                        .replan_every = 0,
                        .fill_free = false});
  std::vector<token_id> a(32);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<token_id>(i + 1);
  (void)pol.insert(ns_of(0), std::span<const token_id>(a).first(16));
  // The request shares 16 tokens and goes on to 32.
  auto m = pol.match(ns_of(0), a);
  REQUIRE(m.matched_tokens == 16);
  const std::vector<std::size_t> chunks{6, 12, 16, 18, 24, 30, 32};
  auto plan = pol.prefill_plan(m, 32, chunks);
  // 16: the junction (on both grids); 32: the tail; 6, 18, 30: off the block grid.
  CHECK(plan == std::vector<std::size_t>{16, 32});
  // Without 16 in the chunk grid the junction cannot be snapshot.
  const std::vector<std::size_t> coarse{12, 24, 32};
  CHECK(pol.prefill_plan(m, 32, coarse) == std::vector<std::size_t>{32});
  // A planned node on the replayed path is snapshot too: observe matches ending at block 2.
  pol.unpin(m.resume_node);
  for (int i = 0; i < 5; ++i) {
    auto mi = pol.match(ns_of(0), std::span<const token_id>(a).first(8));
    pol.unpin(mi.resume_node);
  }
  auto rp = pol.replan();
  CHECK(rp.adopted);
  CHECK(pol.planned(m.path[1]));
  CHECK(pol.prefill_plan(m, 32, chunks) == std::vector<std::size_t>{16, 32});  // 8: off-grid
  const std::vector<std::size_t> with8{8, 12, 16, 32};
  CHECK(pol.prefill_plan(m, 32, with8) == std::vector<std::size_t>{8, 16, 32});
  CHECK_THROWS_AS((void)pol.prefill_plan(m, 32, std::vector<std::size_t>{40}),
                  hc::invalid_argument);
  CHECK_THROWS_AS((void)pol.prefill_plan(m, 8, chunks), hc::invalid_argument);
}

TEST_CASE("replan hysteresis: the same statistics do not flip the plan") {
  hc::state_policy pol({.block_size = 1,
                        .state_bytes = 1,
                        .capacity_bytes = 1,
                        .gamma = 1.0,
                        .replan_every = 0,
                        .hysteresis = 0.05});
  const auto a = seq({1, 2, 3, 4});
  const auto b = seq({1, 2, 7, 8});
  (void)pol.insert(ns_of(0), a);
  const auto pb = pol.insert(ns_of(0), b);
  const auto pa = pol.insert(ns_of(0), a);
  // 50 matches end at a's leaf, 49 at b's: one state at a's leaf is optimal (cost 49·4 < 50·4,
  // and the junction at depth 2 costs 99·2).
  for (int i = 0; i < 50; ++i) pol.unpin(pol.match(ns_of(0), a).resume_node);
  for (int i = 0; i < 49; ++i) pol.unpin(pol.match(ns_of(0), b).resume_node);
  auto r1 = pol.replan();
  CHECK(r1.adopted);
  CHECK(r1.planned == 1);
  CHECK(pol.planned(pa[3]));
  // Two more on b: b's leaf is now better (200 < 204) but by less than 5 %: the plan stays.
  for (int i = 0; i < 2; ++i) pol.unpin(pol.match(ns_of(0), b).resume_node);
  auto r2 = pol.replan();
  CHECK_FALSE(r2.adopted);
  CHECK(r2.expected_after == doctest::Approx(200.0 / 101.0));
  CHECK(r2.expected_before == doctest::Approx(204.0 / 101.0));
  CHECK(pol.planned(pa[3]));
  // Many observations on b: the plan moves to b's leaf.
  for (int i = 0; i < 40; ++i) pol.unpin(pol.match(ns_of(0), b).resume_node);
  auto r3 = pol.replan();
  CHECK(r3.adopted);
  CHECK(pol.planned(pb[3]));
}

TEST_CASE("EW statistics stay finite and exact over many observations") {
  for (double gamma : {0.5, 0.9, 0.99, 1.0}) {
    hc::state_policy pol(
        legacy({.block_size = 1, .capacity_bytes = 4, .gamma = gamma, .replan_every = 0}));
    const auto a = seq({1, 2, 3});
    const auto p = pol.insert(ns_of(0), a);
    std::mt19937 rng(1);
    long double w[3] = {0, 0, 0};
    for (int i = 0; i < 3000; ++i) {
      const std::size_t len = 1 + rng() % 3;
      pol.unpin(pol.match(ns_of(0), std::span<const token_id>(a).first(len)).resume_node);
      for (auto& x : w) x *= gamma;
      w[len - 1] += 1;
    }
    const long double tot = w[0] + w[1] + w[2];
    double sum = 0;
    for (int k = 0; k < 3; ++k) {
      const double s = pol.match_share(p[static_cast<std::size_t>(k)]);
      CHECK(std::isfinite(s));
      CHECK(s == doctest::Approx(static_cast<double>(w[k] / tot)).epsilon(1e-9));
      sum += s;
    }
    CHECK(sum == doctest::Approx(1.0));
    CHECK(std::isfinite(pol.expected_recompute()));
  }
}

TEST_CASE("age-conditioned value stays finite and exact over many events") {
  // γ = 0.5 doubles the common scale of the age counts per event, so it is folded back every
  // ~500 events; 3000 resumes and drops checked against eager decay in long double.
  for (double gamma : {0.5, 0.99}) {
    CAPTURE(gamma);
    auto o = legacy({.block_size = 1, .capacity_bytes = 4, .gamma = gamma, .replan_every = 0});
    o.age_value = true;
    hc::state_policy pol(o);
    const auto a = seq({1, 2, 3});
    const auto p = pol.insert(ns_of(0), a);
    std::mt19937 rng(3);
    long double hits[34] = {}, ends[34] = {};
    std::uint64_t obs = 0, touched[3] = {0, 0, 0};
    bool held[3] = {false, false, false};
    auto bucket = [](std::uint64_t age) {
      int b = 0;
      for (; age; age >>= 1) ++b;
      return b;
    };
    auto event = [&](long double* bins, std::uint64_t age) {
      for (int j = 0; j < 34; ++j) hits[j] *= gamma, ends[j] *= gamma;
      bins[bucket(age)] += 1;
    };
    for (int i = 0; i < 3000; ++i) {
      const std::size_t k = rng() % 3;
      if (rng() % 4 == 0) {  // drop or admit the state at depth k + 1
        if (held[k]) {
          pol.drop(p[k]);
          event(ends, obs - touched[k]);
        } else {
          REQUIRE(pol.admit(p[k], 1).admitted);
          touched[k] = obs;
        }
        held[k] = !held[k];
        continue;
      }
      const std::size_t len = k + 1;
      const auto m = pol.match(ns_of(0), std::span<const token_id>(a).first(len));
      for (std::size_t d = len; d-- > 0;)
        if (held[d]) {
          event(hits, obs - touched[d]);
          touched[d] = obs;
          break;
        }
      pol.unpin(m.resume_node);
      ++obs;
    }
    for (std::size_t k = 0; k < 3; ++k) {
      if (!held[k]) continue;
      long double h = 0, n = 0, ht = 0, nt = 0;
      for (int j = 0; j < 34; ++j) {
        ht += hits[j];
        nt += hits[j] + ends[j];
        if (j >= bucket(obs - touched[k])) h += hits[j], n += hits[j] + ends[j];
      }
      const long double all = (ht + 0.5L) / (nt + 1);
      const double got = pol.hit_chance(p[k]);
      CHECK(std::isfinite(got));
      CHECK(got == doctest::Approx(static_cast<double>((h + all) / (n + 1))).epsilon(1e-9));
    }
  }
}

TEST_CASE("model-based: pool bound, exact victim order, pins, namespaces, erase") {
  std::mt19937 rng(2026);
  int carried_total = 0;  // carried mass then matched, over the runs (#21 item 3 exercised)
  for (int run = 0; run < 6; ++run) {
    CAPTURE(run);
    const std::size_t B = 1 + run % 3;
    const double gamma = run % 2 ? 0.9 : 1.0;
    // Runs 0–2 with the defaults (fresh-end prior, repeat discount, age-conditioned value,
    // prefill-end prior: a random node of each insert is noted as a prefill end), run 3 the
    // defaults without the age value, runs 4–5 with the repeat discount, the age value and the
    // prefill-end prior off too (legacy); runs 2 and 5 fill free memory.
    const bool plain = run >= 4;
    hc::policy_options o{
        .block_size = B, .state_bytes = 3, .capacity_bytes = 20, .gamma = gamma, .replan_every = 7};
    if (plain) o = legacy(o);
    o.age_value = run < 3;
    o.prefill_prior = !plain;
    o.fill_free = run == 2 || run == 5;  // a match is followed by its prefill (plan, admit)
    hc::state_policy pol(o);
    ht::tree_policy_model model;
    model.gamma = gamma;
    model.repeat = !plain;
    model.age_value = o.age_value;
    model.prefill_prior = o.prefill_prior;
    int aged = 0;            // victims chosen while two states had different P(hit | age)
    int refused = 0;         // admissions refused by value (admit_by_value)
    std::size_t filled = 0;  // positions fill_free added to plans (the branch is exercised)
    // Reference of what is cached: (namespace, block prefix) per node.
    std::map<node_id, std::pair<int, std::vector<token_id>>> prefix_of;
    std::set<std::pair<int, std::vector<token_id>>> present;
    std::vector<std::pair<node_id, int>> pins;  // (node, count) to release later
    std::vector<node_id> erased;                // ids of erased nodes (stale from then on)
    int roots_erased = 0, reused = 0;           // namespace roots erased; slots reused
    int carried = 0;          // erases that moved real mass to a parent still holding a prior
    int carried_matched = 0;  // … followed by a match at that parent (its first real one)
    auto random_tokens = [&] {
      std::vector<token_id> t;
      const std::size_t base = rng() % 3;
      for (std::size_t i = 0; i < 2 * B * base; ++i) t.push_back(static_cast<token_id>(i % 5));
      const std::size_t extra = rng() % (6 * B);
      for (std::size_t i = 0; i < extra; ++i) t.push_back(static_cast<token_id>(rng() % 3));
      return t;
    };
    auto ensure_root = [&](node_id r) {
      if (!model.nodes.count(r)) model.nodes[r] = {ht::tree_policy_model::none, 0};
    };
    // The shares are a distribution over the live nodes: Σ ŵ = 1 while there is mass, else 0.
    // (A root the model has not seen has no mass: no match ended there and it holds no prior.)
    const auto check_distribution = [&] {
      double sum = 0;
      for (const auto& [id, n] : model.nodes) sum += pol.match_share(id);
      if (model.total() > 0)
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-9));
      else
        CHECK(sum == 0.0);
    };
    // Erases leaf or childless root `v` from the policy and the model; true if it moved real
    // mass to a parent that still holds a prior.
    const auto erase_one = [&](node_id v) {
      const bool root = model.nodes.at(v).parent == ht::tree_policy_model::none;
      if (model.nodes.at(v).bytes) model.age_event(model.age_ends, model.age_of(v));
      const node_id up = model.nodes.at(v).parent;
      const bool carry = !root && model.nodes.at(v).weight > 0 && model.nodes.at(up).fresh;
      carried += carry;
      pol.erase(v);
      model.erase(v);
      if (root) {
        ++roots_erased;
      } else {
        present.erase(prefix_of.at(v));
        prefix_of.erase(v);
      }
      CHECK_FALSE(pol.contains(v));
      erased.push_back(v);
      return carry;
    };
    // A match of the cached block prefix of non-root `v` (ends at v), mirrored in the model.
    const auto match_at = [&](node_id v) {
      const auto& [vns, t] = prefix_of.at(v);
      auto m = pol.match(ns_of(vns), t);
      CHECK(m.node == v);
      node_id want = v;
      while (model.nodes.at(want).parent != ht::tree_policy_model::none &&
             model.nodes.at(want).bytes == 0)
        want = model.nodes.at(want).parent;
      model.resumed(want);
      model.observe(v);
      CHECK(m.resume_node == want);
      model.nodes.at(want).pins++;
      pins.push_back({want, 1});
    };
    for (int step = 0; step < 400; ++step) {
      const int ns = static_cast<int>(rng() % 3);
      const int op = static_cast<int>(rng() % 10);
      // The engine's insert of `t` (after its match, when fill_free), checked against the model.
      const auto do_insert = [&](const std::vector<token_id>& t) {
        const auto path = pol.insert(ns_of(ns), t);
        REQUIRE(path.size() == t.size() / B);
        for (std::size_t i = 0; i < path.size(); ++i) {
          std::vector<token_id> pre(t.begin(),
                                    t.begin() + static_cast<std::ptrdiff_t>((i + 1) * B));
          const node_id par = pol.parent(path[i]);
          if (i > 0) CHECK(par == path[i - 1]);
          if (i == 0) ensure_root(par);
          if (!model.nodes.count(path[i])) {
            for (node_id e : erased) reused += (e & 0xffffffffu) == (path[i] & 0xffffffffu);
            model.nodes[path[i]] = {par, (i + 1) * B};
            prefix_of[path[i]] = {ns, pre};
            present.insert({ns, pre});
          }
          // No node is shared across namespaces or prefixes.
          CHECK(prefix_of[path[i]] == std::make_pair(ns, pre));
        }
        if (!path.empty()) model.inserted_end(path.back());
        if (o.prefill_prior && !path.empty()) {  // the prompt ended at a random block of it
          const node_id pe = path[rng() % path.size()];
          pol.note_prefill_end(pe);
          model.prefill_end(pe);
        }
        return path;
      };
      if (op <= 2) {  // insert
        (void)do_insert(random_tokens());
      } else if (op <= 4) {  // match
        const auto t = random_tokens();
        auto m = pol.match(ns_of(ns), t);
        std::size_t expect = 0;
        for (std::size_t k = B; k <= t.size(); k += B) {
          if (!present.count({ns, std::vector<token_id>(
                                      t.begin(), t.begin() + static_cast<std::ptrdiff_t>(k))}))
            break;
          expect = k;
        }
        CHECK(m.matched_tokens == expect);
        node_id root = m.node;
        while (pol.parent(root) != hc::no_node) root = pol.parent(root);
        ensure_root(root);
        // Expected resume: deepest state on the path.
        node_id want = root;
        for (node_id v : m.path)
          if (model.nodes.at(v).bytes) want = v;
        model.resumed(want);
        model.observe(m.node);
        CHECK(m.resume_node == want);
        CHECK(m.replay_tokens == m.matched_tokens - model.nodes.at(want).depth);
        model.nodes.at(m.resume_node).pins++;
        pins.push_back({m.resume_node, 1});
        if (o.fill_free) {  // the prefill: insert, plan on the block grid, admit the plan
          std::vector<std::size_t> grid;
          for (std::size_t p = B; p <= t.size(); p += B) grid.push_back(p);
          const auto want_plan = model.prefill_plan(
              B, model.nodes.at(want).depth, m.path, t.size(), grid,
              [&](node_id v) { return pol.planned(v); }, true, 20, 3);
          const auto plan = pol.prefill_plan(m, t.size(), grid);
          CHECK(plan == want_plan);
          const auto path = do_insert(t);
          const auto plain_plan = model.prefill_plan(
              B, model.nodes.at(want).depth, m.path, t.size(), grid,
              [&](node_id v) { return pol.planned(v); }, false, 20, 3);
          filled += want_plan.size() - plain_plan.size();  // the free-room positions
          if (3 * plan.size() + model.used() <= 20) {      // all in free room: nothing displaced
            for (std::size_t p : plan) {
              const node_id v = path[p / B - 1];
              const auto r = pol.admit(v, 3);
              CHECK(r.admitted);
              CHECK(r.victims.empty());
              model.admitted(v, 3);
            }
          }
        }
      } else if (op <= 6) {  // admit a random node
        if (prefix_of.empty()) continue;
        auto it = prefix_of.begin();
        std::advance(it, static_cast<long>(rng() % prefix_of.size()));
        const node_id v = it->first;
        const std::size_t bytes = 1 + rng() % 8;
        const bool had = model.nodes.at(v).bytes != 0;
        const std::size_t used = model.used();
        auto r = pol.admit(v, bytes);
        if (had) {
          CHECK(r.admitted);
          CHECK(r.victims.empty());
        } else if (used + bytes <= 20) {
          CHECK(r.admitted);
          CHECK(r.victims.empty());
          model.admitted(v, bytes);
        } else {
          std::size_t unpinned = 0;
          for (auto& [id, n] : model.nodes)
            if (n.bytes && !n.pins && id != v) unpinned += n.bytes;
          const std::size_t need = used + bytes - 20;
          const bool room = unpinned >= need && bytes <= 20;
          // With admit_by_value, a state where no real match ended is refused unless it is
          // worth more than the first victim (a near tie may go either way).
          bool refuse = false, tie = false;
          if (room && o.admit_by_value && model.speculative(v)) {
            const long double mine = model.admission_value(v, bytes);
            const long double least = model.min_delta_per_byte(v);
            tie = std::fabs(static_cast<double>(mine - least)) <=
                  1e-9 * std::fabs(static_cast<double>(least)) + 1e-12;
            refuse = mine <= least;
          }
          if (!tie) CHECK(r.admitted == (room && !refuse));
          if (!r.admitted && room) {
            CHECK(r.victims.empty());  // a refusal by value evicts nothing
            ++refused;
          }
          aged += count_aged(model, r.victims);
          check_victims(model, r.victims, v);
          if (r.admitted) model.admitted(v, bytes);
        }
      } else if (op == 7) {  // evict
        const std::size_t bytes = rng() % 10;
        auto victims = pol.evict(bytes);
        aged += count_aged(model, victims);
        check_victims(model, victims, hc::no_node);
      } else if (op == 8) {  // unpin something
        if (!pins.empty()) {
          const std::size_t i = rng() % pins.size();
          pol.unpin(pins[i].first);
          model.nodes.at(pins[i].first).pins--;
          pins.erase(pins.begin() + static_cast<std::ptrdiff_t>(i));
        }
      } else if (rng() % 4 == 0) {  // forget namespace `ns`: its leaves deepest first, its root
        node_id root = hc::no_node;
        for (const auto& [id, pre] : prefix_of)
          if (pre.first == ns && model.nodes.at(id).parent != ht::tree_policy_model::none &&
              model.nodes.at(model.nodes.at(id).parent).parent == ht::tree_policy_model::none)
            root = model.nodes.at(id).parent;
        if (root == hc::no_node) continue;
        std::vector<std::pair<std::size_t, node_id>> sub;  // (depth, node) under root
        std::set<node_id> in_sub;
        for (const auto& [id, n] : model.nodes) {
          node_id a = id;
          while (a != root && model.nodes.at(a).parent != ht::tree_policy_model::none)
            a = model.nodes.at(a).parent;
          if (a != root) continue;
          sub.push_back({n.depth, id});
          in_sub.insert(id);
        }
        for (std::size_t i = pins.size(); i-- > 0;)  // the namespace's requests are finished
          if (in_sub.count(pins[i].first)) {
            pol.unpin(pins[i].first);
            model.nodes.at(pins[i].first).pins--;
            pins.erase(pins.begin() + static_cast<std::ptrdiff_t>(i));
          }
        std::sort(sub.rbegin(), sub.rend());  // deepest first, the root (depth 0) last
        for (const auto& [d, v] : sub) {
          erase_one(v);
          check_distribution();
        }
      } else {  // erase a random unpinned leaf or childless namespace root (or drop a state)
        std::vector<node_id> leaves;
        for (auto& [id, n] : model.nodes) {
          if (n.pins) continue;
          bool has_child = false;
          for (auto& [id2, n2] : model.nodes) has_child |= n2.parent == id;
          if (!has_child) leaves.push_back(id);
        }
        if (leaves.empty()) continue;
        std::vector<node_id> carriers;  // leaves with real mass under a parent holding a prior
        for (node_id v : leaves) {
          const auto& n = model.nodes.at(v);
          if (n.parent != ht::tree_policy_model::none && n.weight > 0 &&
              model.nodes.at(n.parent).fresh)
            carriers.push_back(v);
        }
        if (!carriers.empty() && rng() % 2) {
          // A conversation's last block is evicted; its next turn ends one block up, at an end
          // no match has ended at before: that first real match keeps the carried mass.
          const node_id v = carriers[rng() % carriers.size()];
          const node_id up = model.nodes.at(v).parent;
          CHECK(erase_one(v));
          match_at(up);
          ++carried_matched;
        } else if (const node_id v = leaves[rng() % leaves.size()];
                   model.nodes.at(v).parent != ht::tree_policy_model::none && rng() % 2) {
          if (model.nodes.at(v).bytes) model.age_event(model.age_ends, model.age_of(v));
          pol.drop(v);
          model.nodes.at(v).bytes = 0;
        } else {
          erase_one(v);
        }
      }
      // Invariants after every step.
      REQUIRE(pol.used_bytes() <= pol.capacity_bytes());
      CHECK(pol.used_bytes() == model.used());
      const long double tot = model.total();
      check_distribution();
      if (!erased.empty()) {  // a stale id: every call detects it, even after its slot's reuse
        const node_id e = erased[rng() % erased.size()];
        CHECK_FALSE(pol.contains(e));
        CHECK_FALSE(pol.has_state(e));
        CHECK_FALSE(pol.pinned(e));
        CHECK_THROWS_AS(pol.admit(e, 1), hc::stale_handle_error);
        CHECK_THROWS_AS((void)pol.match_share(e), hc::stale_handle_error);
        CHECK_THROWS_AS(pol.pin(e), hc::stale_handle_error);
      }
      for (auto& [id, n] : model.nodes) {
        CHECK(pol.has_state(id) == (n.bytes != 0));
        if (n.bytes != 0) {
          const double p = pol.hit_chance(id);
          CHECK(std::isfinite(p));
          CHECK(p == doctest::Approx(static_cast<double>(model.hit_chance(id))).epsilon(1e-12));
        }
        CHECK(pol.pinned(id) == (n.pins != 0));
        const double s = pol.match_share(id);
        CHECK(std::isfinite(s));
        if (tot > 0)
          CHECK(s ==
                doctest::Approx(static_cast<double>(model.share(id))).epsilon(1e-9).scale(1e-12));
      }
    }
    if (o.age_value) CHECK(aged > 0);
    if (o.prefill_prior) CHECK(model.pre_hit > 0);  // a prefill-end prior was replaced by a match
    if (o.fill_free) CHECK(filled > 0);
    if (o.admit_by_value) CHECK(refused > 0);  // the refusal branch is exercised
    CHECK(roots_erased > 0);  // the branches of #21 are exercised
    CHECK(reused > 0);
    carried_total += carried_matched;
  }
  CHECK(carried_total > 0);
}

TEST_CASE("fresh-end prior: p = (h + 1)/(n + 2) at a new end until a match replaces it") {
  // γ = 1/2, B = 1. By hand (weights in units of the latest observation, decayed ×γ per match;
  // h, n decayed ×γ per fresh end):
  //  insert 1 2 3        end a2: n = 1, h = 0, prior 1/3             → share(a2) = 1
  //  match  1 2 3        a2 was fresh: h = 1, prior replaced by 1 observation
  //  insert 1 2 3 4 5    end b4: n = 1.5, h = 0.5, prior 1.5/3.5 = 3/7 → a2 : b4 = 1 : 3/7
  //  insert 9 9          end c1: n = 1.75, h = 0.25, prior 1.25/3.75 = 1/3
  //  weights a2 = 1, b4 = 3/7, c1 = 1/3, total 37/21.
  for (bool prior : {true, false}) {
    hc::state_policy pol(legacy({.block_size = 1,
                                 .state_bytes = 1,
                                 .capacity_bytes = 2,
                                 .gamma = 0.5,
                                 .replan_every = 0,
                                 .fresh_prior = prior}));
    const auto a = pol.insert(ns_of(0), seq({1, 2, 3}));
    CHECK(pol.match_share(a[2]) == doctest::Approx(prior ? 1.0 : 0.0));
    pol.unpin(pol.match(ns_of(0), seq({1, 2, 3})).resume_node);
    CHECK(pol.match_share(a[2]) == doctest::Approx(1.0));
    const auto b = pol.insert(ns_of(0), seq({1, 2, 3, 4, 5}));
    CHECK(pol.match_share(b[4]) == doctest::Approx(prior ? 0.3 : 0.0));
    const auto c = pol.insert(ns_of(0), seq({9, 9}));
    CHECK(pol.match_share(a[2]) == doctest::Approx(prior ? 21.0 / 37 : 1.0));
    CHECK(pol.match_share(b[4]) == doctest::Approx(prior ? 9.0 / 37 : 0.0));
    CHECK(pol.match_share(c[1]) == doctest::Approx(prior ? 7.0 / 37 : 0.0));
    // Eviction by ΔE[r]/byte: Δ(b4) = 5 · 3/7 > Δ(c1) = 2 · 1/3, so c1 goes (without the prior
    // both are 0 and the least recently admitted, b4, goes).
    CHECK(pol.admit(b[4], 1).admitted);
    CHECK(pol.admit(c[1], 1).admitted);
    const auto v = pol.evict(1);
    REQUIRE(v.size() == 1);
    CHECK(v[0] == (prior ? c[1] : b[4]));
    if (prior) {  // held {b4}: E[r] = (1·3 + 3/7·0 + 1/3·2) / (37/21) = 77/37
      CHECK(pol.expected_recompute() == doctest::Approx(77.0 / 37));
      // A match at c1 replaces its prior by one observation: weights ×1/2, c1 = 1.
      pol.unpin(pol.match(ns_of(0), seq({9, 9})).resume_node);
      CHECK(pol.match_share(c[1]) == doctest::Approx(1.0 / (0.5 + 1.5 / 7 + 1.0)));
      // Erasing the fresh leaf b4 drops its prior (nothing moves to b3).
      pol.erase(b[4]);
      CHECK(pol.match_share(b[3]) == 0.0);
      CHECK(pol.match_share(a[2]) == doctest::Approx(0.5 / 1.5));
    }
  }
}

TEST_CASE("fresh-end prior: a late first match spreads the next prior over its age") {
  // γ = 1/2, B = 1. insert 1: end a0, p = 1/3. Three matches of nothing (root), then one at a0:
  // its prior has decayed to 1/3 · 1/8, so its age is log(1/8)/log(1/2) = 3 observations and
  // D = 3; (1 − γ)·D = 1.5 > 1, so the next prior is p / 1.5. insert 2: n = 1.5, h = 0.5,
  // p = 3/7, prior 2/7. Weights: root 1/2 + 1/4 + 1/8 = 0.875, a0 = 1, b0 = 2/7.
  hc::state_policy pol(legacy(
      {.block_size = 1, .state_bytes = 1, .capacity_bytes = 1, .gamma = 0.5, .replan_every = 0}));
  const auto a = pol.insert(ns_of(0), seq({1}));
  for (int i = 0; i < 3; ++i) pol.unpin(pol.match(ns_of(0), seq({})).resume_node);
  pol.unpin(pol.match(ns_of(0), seq({1})).resume_node);
  const auto b = pol.insert(ns_of(0), seq({2}));
  const double total = 0.875 + 1.0 + 2.0 / 7;
  CHECK(pol.match_share(b[0]) == doctest::Approx(2.0 / 7 / total));
  CHECK(pol.match_share(a[0]) == doctest::Approx(1.0 / total));
}

TEST_CASE("prefill-end prior: p_P = (h_P + 1)/(n_P + 2) on its own books, apart from turn ends") {
  // γ = 1/2, B = 1. By hand (weights in units of the latest observation):
  //  insert 1 2 3          turn end a2: n = 1, h = 0, π = 1/3
  //  prefill end a0        n_P = 1, h_P = 0, π_P = 1/3
  //  match 1               a0's π_P replaced: h_P = 1, age log(1)/log γ = 0 (D_P = 0);
  //                        a0 = 1, a2 = 1/6
  //  insert 1 2 3 4 5      turn end b4: n = 1.5, h = 0 (the prefill hit is not a turn-end hit),
  //                        π = 1/3.5 = 2/7
  //  prefill end b3        n_P = 1.5, h_P = 0.5, π_P = 1.5/3.5 = 3/7
  //  prefill ends a0, b4   no-ops: a match ended at a0, b4 holds the turn-end prior
  //  weights a0 = 1, a2 = 1/6, b4 = 2/7, b3 = 3/7: total 79/42 (off: b3 = 0, total 61/42).
  for (bool on : {true, false}) {
    CAPTURE(on);
    auto o = legacy(
        {.block_size = 1, .state_bytes = 1, .capacity_bytes = 2, .gamma = 0.5, .replan_every = 0});
    o.prefill_prior = on;
    hc::state_policy pol(o);
    const auto a = pol.insert(ns_of(0), seq({1, 2, 3}));
    pol.note_prefill_end(a[0]);
    CHECK(pol.match_share(a[0]) == doctest::Approx(on ? 0.5 : 0.0));  // 1/3 of 2/3
    pol.unpin(pol.match(ns_of(0), seq({1})).resume_node);
    const auto b = pol.insert(ns_of(0), seq({1, 2, 3, 4, 5}));
    pol.note_prefill_end(b[3]);
    pol.note_prefill_end(a[0]);
    pol.note_prefill_end(b[4]);
    const double total = on ? 79.0 / 42 : 61.0 / 42;
    CHECK(pol.match_share(a[0]) == doctest::Approx(1.0 / total));
    CHECK(pol.match_share(a[2]) == doctest::Approx(1.0 / 6 / total));
    CHECK(pol.match_share(b[4]) == doctest::Approx(2.0 / 7 / total));
    CHECK(pol.match_share(b[3]) == doctest::Approx(on ? 3.0 / 7 / total : 0.0));
    CHECK(pol.prefill_share() == doctest::Approx(on ? 3.0 / 7 : 0.5));
    if (!on) continue;
    // Five matches of nothing, then one at b3: π_P decayed by γ^5, age 5; D_P = (0·γ + 5) /
    // (1·γ + 1) = 10/3, h_P = 0.5 + 1 = 1.5. insert 7 7, prefill end c0: n_P = 1.75,
    // h_P = 0.75, p_P = 7/15, (1 − γ)·D_P = 5/3 > 1, so π_P = 7/15 · 3/5 = 7/25 (b3 = 1 now).
    for (int i = 0; i < 5; ++i) pol.unpin(pol.match(ns_of(0), seq({})).resume_node);
    pol.unpin(pol.match(ns_of(0), seq({1, 2, 3, 4})).resume_node);
    const double b3_before = pol.match_share(b[3]);
    const auto c = pol.insert(ns_of(0), seq({7, 7}));
    pol.note_prefill_end(c[0]);
    CHECK(pol.prefill_share() == doctest::Approx(7.0 / 15));
    CHECK(pol.match_share(c[0]) / pol.match_share(b[3]) == doctest::Approx(7.0 / 25));
    // Erasing the leaves c1 (turn-end prior) then c0 (π_P) drops both priors, nothing moves up:
    // the shares are those before insert 7 7.
    pol.erase(c[1]);
    pol.erase(c[0]);
    CHECK(pol.match_share(b[3]) == doctest::Approx(b3_before));
  }
}

TEST_CASE("repeat discount: a first match counts q = (h2 + 1)/(n1 + 2) until a second one") {
  // γ = 1/2, B = 1, no prior. Weights in units of the latest observation (decayed ×γ per match):
  //  match 1  a first: n1 = 1, h2 = 0, q = 1/3            a = 1/3
  //  match 2  b first: n1 = 1.5, q = 1/3.5 = 2/7          a = 1/6, b = 2/7
  //  match 1  a second: a = (1/12)/(2/7) = 7/24, +1        a = 31/24, b = 1/7; h2 = 1
  //  match 1  a third: a full observation                  a = 31/48 + 1 = 79/48, b = 1/14
  // Without it: a = 1/8 + 1/2 + 1 = 13/8, b = 1/4.
  for (bool on : {true, false}) {
    CAPTURE(on);
    auto o = legacy({.block_size = 1,
                     .capacity_bytes = 1,
                     .gamma = 0.5,
                     .replan_every = 0,
                     .fresh_prior = false});
    o.repeat_discount = on;
    hc::state_policy pol(o);
    const auto a = pol.insert(ns_of(0), seq({1}));
    const auto b = pol.insert(ns_of(0), seq({2}));
    for (auto t : {1, 2, 1, 1})
      pol.unpin(pol.match(ns_of(0), seq({static_cast<token_id>(t)})).resume_node);
    const double wa = on ? 79.0 / 48 : 13.0 / 8, wb = on ? 1.0 / 14 : 0.25;
    CHECK(pol.match_share(a[0]) == doctest::Approx(wa / (wa + wb)));
    CHECK(pol.match_share(b[0]) == doctest::Approx(wb / (wa + wb)));
  }
}

TEST_CASE("admission: with admit_by_value off, a new state always displaces the cheapest one") {
  // Capacity one state. a3 (depth 3) holds the two matches: Δ(a3) = 3·w > 0. A state at c
  // (depth 1, never matched) would remove nothing from E[r] (Δ(c) = 0), yet it is admitted and
  // displaces a3, the only held state: every state displaces with admit_by_value off (legacy;
  // the rule of 0.2.0 and 0.2.1).
  hc::state_policy pol(legacy({.block_size = 1,
                               .state_bytes = 1,
                               .capacity_bytes = 1,
                               .replan_every = 0,
                               .fresh_prior = false}));
  REQUIRE_FALSE(pol.options().admit_by_value);
  const auto a = pol.insert(ns_of(0), seq({1, 2, 3}));
  for (int i = 0; i < 2; ++i) pol.unpin(pol.match(ns_of(0), seq({1, 2, 3})).resume_node);
  CHECK(pol.admit(a[2], 1).admitted);
  const auto c = pol.insert(ns_of(0), seq({5}));
  const auto r = pol.admit(c[0], 1);
  CHECK(r.admitted);
  CHECK(r.victims == std::vector<node_id>{a[2]});
  CHECK_FALSE(pol.has_state(a[2]));
  CHECK(pol.has_state(c[0]));
  CHECK(pol.used_bytes() == 1);
  // A pinned held state cannot make room: nothing changes.
  pol.pin(c[0]);
  const auto r2 = pol.admit(a[2], 1);
  CHECK_FALSE(r2.admitted);
  CHECK(r2.victims.empty());
  CHECK(pol.has_state(c[0]));
}

TEST_CASE("admission by value: a speculative state must outrank the first victim, by hand") {
  // γ = 1, B = 1, capacity one state, no priors and no age value, so a value is ΔE[r] per byte:
  // gap · W(region). Two matches end at a3 (W = 2); a3 held: Δ(a3) = 3·2 = 6.
  auto o = legacy({.block_size = 1,
                   .state_bytes = 1,
                   .capacity_bytes = 1,
                   .gamma = 1.0,
                   .replan_every = 0,
                   .fresh_prior = false});
  o.admit_by_value = true;
  hc::state_policy pol(o);
  const auto a = pol.insert(ns_of(0), seq({1, 2, 3}));
  for (int i = 0; i < 2; ++i) pol.unpin(pol.match(ns_of(0), seq({1, 2, 3})).resume_node);
  REQUIRE(pol.admit(a[2], 1).admitted);
  // c1: no match ever ended there and nothing below it: worth 0 ≤ 6, refused; nothing changes.
  const auto c = pol.insert(ns_of(0), seq({5}));
  const auto r = pol.admit(c[0], 1);
  CHECK_FALSE(r.admitted);
  CHECK(r.victims.empty());
  CHECK(pol.has_state(a[2]));
  CHECK_FALSE(pol.has_state(c[0]));
  CHECK(pol.used_bytes() == 1);
  // d2: a match ended there (W = 1, Δ = 2·1 = 2 < 6), but observed demand is admitted as before:
  // it displaces a3.
  const auto d = pol.insert(ns_of(0), seq({7, 8}));
  pol.unpin(pol.match(ns_of(0), seq({7, 8})).resume_node);
  const auto r2 = pol.admit(d[1], 1);
  CHECK(r2.admitted);
  CHECK(r2.victims == std::vector<node_id>{a[2]});
  // a2: no match ended there, but with a3 gone its region would hold a3's two matches:
  // 2·(0 + 2) = 4 > Δ(d2) = 2, so it is admitted and displaces d2.
  const auto r3 = pol.admit(a[1], 1);
  CHECK(r3.admitted);
  CHECK(r3.victims == std::vector<node_id>{d[1]});
  // With the pool full of a2 (value 4): a1 (gap 1, region a1 + … up to a2: W = 0) is refused; a3
  // (gap 1 below a2, its own two matches: 1·2 = 2 ≤ 4) is observed, so it is admitted.
  CHECK_FALSE(pol.admit(a[0], 1).admitted);
  const auto r4 = pol.admit(a[2], 1);
  CHECK(r4.admitted);
  CHECK(r4.victims == std::vector<node_id>{a[1]});
  // A full pool whose only state is pinned refuses as before, speculative or not.
  const auto m = pol.match(ns_of(0), seq({1, 2, 3}));  // resumes from a3: pinned
  CHECK_FALSE(pol.admit(c[0], 1).admitted);
  CHECK_FALSE(pol.admit(d[1], 1).admitted);
  pol.unpin(m.resume_node);
}

namespace {
/// The hand-worked pool of the two tests below: blocks of B tokens, one match ends at a1 (depth
/// 1 block), a later one at a3 (3 blocks); states of 1 byte at a1 and a3 in a pool of 4, KV
/// charged K bytes per block. With `log`, victims are logged from the start.
struct two_states {
  hc::state_policy pol;
  std::vector<node_id> a;
  node_id root = hc::no_node;
  two_states(std::size_t B, std::size_t K, std::vector<hc::tree_victim>* log = nullptr)
      : pol(options(B, K)) {
    pol.set_victim_log(log);
    std::vector<token_id> t(3 * B);
    std::iota(t.begin(), t.end(), token_id{1});
    a = pol.insert(ns_of(0), t);
    root = pol.match(ns_of(0), std::vector<token_id>(t.begin(), t.begin() + B)).resume_node;
    pol.unpin(root);
    pol.unpin(pol.match(ns_of(0), t).resume_node);
    REQUIRE(pol.admit(a[0], 1).admitted);
    REQUIRE(pol.admit(a[2], 1).admitted);
  }
  static hc::policy_options options(std::size_t B, std::size_t K) {
    auto o = legacy({.block_size = B,
                     .state_bytes = 1,
                     .capacity_bytes = 4,
                     .replan_every = 0,
                     .fresh_prior = false});
    o.kv_block_bytes = K;
    return o;
  }
};
}  // namespace

TEST_CASE("joint KV charge: the deepest state of a path is charged its gap's KV, by hand") {
  // B = 1; one match ends at a1 (depth 1), a later one at a3 (depth 3); states at a1 and a3.
  // Δ(a1) = 1·γ (its region a1, a2 holds the earlier, decayed match), Δ(a3) = 2·1. Without the
  // charge a1 goes first (γ < 2). With kv_block_bytes = 1, a3 has no state below it and frees
  // its byte and its gap's two blocks of KV: 2/3 < γ/1, so a3 goes (a1, with a3 below, is not
  // charged). tests/tree/eviction_test.cpp has the brute force.
  for (const std::size_t K : {std::size_t{0}, std::size_t{1}}) {
    CAPTURE(K);
    two_states p(1, K);
    CHECK(p.pol.evict(1) == std::vector<node_id>{K == 0 ? p.a[0] : p.a[2]});
  }
}

TEST_CASE("victim log: each victim's ΔE[r], value, gap and neighbours, by hand") {
  // The pool of the joint-KV test above with blocks of B = 2 tokens: a match ends at a1 (depth
  // 1 block; observation 1, mass 1/γ), then one at a3 (3 blocks; observation 2, mass 1/γ²);
  // states at a1 and a3. Σ w = 1/γ + 1/γ², so W(a1)/Σ w = γ/(1 + γ), W(a3)/Σ w = 1/(1 + γ).
  // K = 0: a1 goes first (gap 2 tokens, ΔE = 2γ/(1 + γ), a3 below it); then a3, now 6 tokens
  //   below the root (a1's region went to the root: ΔE = 6 · W(a3)/Σ w = 6/(1 + γ)).
  // K = 1: a3 goes first (4 tokens below a1, ΔE = 4/(1 + γ), freeing 1 + 2 bytes: its byte and
  //   its two blocks of KV, nothing below it); then a1 (2 tokens, ΔE = 2, freeing 1 + 1 bytes).
  const double g = 0.99;
  for (const std::size_t K : {std::size_t{0}, std::size_t{1}}) {
    CAPTURE(K);
    std::vector<hc::tree_victim> log;
    two_states p(2, K, &log);
    auto& pol = p.pol;
    const auto& a = p.a;
    const node_id root = p.root;
    CHECK(log.empty());  // nothing was evicted yet
    const auto first = pol.evict(1);
    const auto second = pol.evict(1);
    REQUIRE(log.size() == 2);
    CHECK(first == std::vector<node_id>{log[0].node});
    CHECK(second == std::vector<node_id>{log[1].node});
    for (const auto& v : log) {
      CHECK(v.bytes == 1);
      CHECK(v.age == 0);  // admitted after the last observation, never resumed from
      CHECK(!v.planned);
      CHECK(!v.prior);
    }
    if (K == 0) {
      CHECK(log[0].node == a[0]);
      CHECK(log[0].up == root);
      CHECK(log[0].gap_tokens == 2);
      CHECK(log[0].states_below == 1);
      CHECK(log[0].expected_tokens == doctest::Approx(2 * g / (1 + g)));
      CHECK(log[0].value == doctest::Approx(2 * g / (1 + g)));
      CHECK(log[1].node == a[2]);
      CHECK(log[1].up == root);
      CHECK(log[1].gap_tokens == 6);
      CHECK(log[1].states_below == 0);
      CHECK(log[1].expected_tokens == doctest::Approx(6 / (1 + g)));
      CHECK(log[1].value == doctest::Approx(6 / (1 + g)));
    } else {
      CHECK(log[0].node == a[2]);
      CHECK(log[0].up == a[0]);
      CHECK(log[0].gap_tokens == 4);
      CHECK(log[0].states_below == 0);
      CHECK(log[0].expected_tokens == doctest::Approx(4 / (1 + g)));
      CHECK(log[0].value == doctest::Approx(4 / (1 + g) / 3));
      CHECK(log[1].node == a[0]);
      CHECK(log[1].up == root);
      CHECK(log[1].gap_tokens == 2);
      CHECK(log[1].states_below == 0);
      CHECK(log[1].expected_tokens == doctest::Approx(2.0));
      CHECK(log[1].value == doctest::Approx(1.0));
    }
    // An admission's victims are logged too; with the log off nothing more is appended.
    REQUIRE(pol.admit(a[1], 4).admitted);
    REQUIRE(pol.admit(a[0], 1).admitted);  // needs a[1]'s 4 bytes: a[1] goes
    REQUIRE(log.size() == 3);
    CHECK(log[2].node == a[1]);
    CHECK(log[2].bytes == 4);
    pol.set_victim_log(nullptr);
    REQUIRE(pol.admit(a[1], 4).admitted);
    CHECK(log.size() == 3);
  }
}

TEST_CASE("age-conditioned value: P(hit | age) from log2-bucketed hits and ends, by hand") {
  // γ = 1 (no decay), B = 1, so the counts are integers. Buckets: 0 = age 0, 1 = age 1,
  // 2 = ages 2–3, 3 = ages 4–7. P(hit | a) = (H≥b + P̄)/(N≥b + 1), P̄ = (H + 1/2)/(N + 1).
  auto o = legacy({.block_size = 1,
                   .state_bytes = 1,
                   .capacity_bytes = 2,
                   .gamma = 1.0,
                   .replan_every = 0,
                   .fresh_prior = false});
  o.age_value = true;
  hc::state_policy pol(o);
  const auto a = pol.insert(ns_of(0), seq({1, 2}));
  REQUIRE(pol.admit(a[1], 1).admitted);                 // touched at observation 0
  CHECK(pol.hit_chance(a[1]) == doctest::Approx(0.5));  // no events: P̄ = 1/2
  // Three resumes from a2 at observations 0, 1, 2: ages 0, 1, 1 → hits b0 = 1, b1 = 2.
  for (int i = 0; i < 3; ++i) pol.unpin(pol.match(ns_of(0), seq({1, 2})).resume_node);
  const auto c = pol.insert(ns_of(0), seq({5}));
  REQUIRE(pol.admit(c[0], 1).admitted);  // touched at observation 3
  // Four matches that resume from the root (no state, no event): observation 7.
  for (int i = 0; i < 4; ++i) pol.unpin(pol.match(ns_of(0), seq({7})).resume_node);
  // a2 is 5 old (bucket 3): nothing seen there; P = P̄ = (3 + 1/2)/(3 + 1) = 0.875.
  CHECK(pol.hit_chance(a[1]) == doctest::Approx(0.875));
  pol.drop(c[0]);  // an end at age 4 (bucket 3): H = 3, N = 4, P̄ = 3.5/5 = 0.7
  CHECK(pol.hit_chance(a[1]) == doctest::Approx((0.0 + 0.7) / (1.0 + 1.0)));  // 0.35
  REQUIRE(pol.admit(c[0], 1).admitted);                                       // age 0, bucket 0
  CHECK(pol.hit_chance(c[0]) == doctest::Approx((3.0 + 0.7) / (4.0 + 1.0)));  // 0.74
  // A resume from a2 at age 5: hit b3, a2 touched at 7. H = 4, N = 5, P̄ = 4.5/6 = 0.75; now
  // observation 8, so a2 and c are both 1 old (bucket 1: H≥1 = 2 + 1 = 3, N≥1 = 3 hits + the
  // end in b3 = 4).
  pol.unpin(pol.match(ns_of(0), seq({1, 2})).resume_node);
  CHECK(pol.hit_chance(a[1]) == doctest::Approx((3.0 + 0.75) / (4.0 + 1.0)));
  CHECK(pol.hit_chance(c[0]) == doctest::Approx((3.0 + 0.75) / (4.0 + 1.0)));
  // One more idle observation: both 2 old (bucket 2: H≥2 = 1, N≥2 = 2).
  pol.unpin(pol.match(ns_of(0), seq({7})).resume_node);
  CHECK(pol.hit_chance(a[1]) == doctest::Approx((1.0 + 0.75) / (2.0 + 1.0)));
  CHECK_THROWS_AS((void)pol.hit_chance(a[0]), hc::invalid_argument);  // no state
  // Off: the factor is 1.
  o.age_value = false;
  hc::state_policy off(o);
  const auto b = off.insert(ns_of(0), seq({1}));
  REQUIRE(off.admit(b[0], 1).admitted);
  CHECK(off.hit_chance(b[0]) == 1.0);
}

TEST_CASE("age-conditioned value: a long-idle state goes before a recently admitted one") {
  // γ = 1, B = 1, unit bytes, capacity 2. x = [1,1] is admitted at observation 0 and resumed
  // at observations 0, 1, 2 (hits at ages 0, 1, 1: b0 = 1, b1 = 2), so Δ(x) = 2 tokens · 3 = 6.
  // z = [3] is admitted at 3 and dropped at 13 (an end at age 10: b4) while 2 matches end at
  // y = [2,2] (no state on its path: no event) and 8 at an unknown [9]. y is admitted at 13:
  // Δ(y) = 2 · 2 = 4. By value alone y goes (4 < 6). With the age: P̄ = (3 + 1/2)/(4 + 1) = 0.7,
  // x is 11 old (b4): P = (0 + 0.7)/(1 + 1) = 0.35, 6 · 0.35 = 2.1; y is 0 old (b0):
  // P = (3 + 0.7)/(4 + 1) = 0.74, 4 · 0.74 = 2.96 — x goes.
  for (bool age : {true, false}) {
    CAPTURE(age);
    auto o = legacy({.block_size = 1,
                     .state_bytes = 1,
                     .capacity_bytes = 2,
                     .gamma = 1.0,
                     .replan_every = 0,
                     .fresh_prior = false});
    o.age_value = age;
    hc::state_policy pol(o);
    const auto x = pol.insert(ns_of(0), seq({1, 1}));
    const auto y = pol.insert(ns_of(0), seq({2, 2}));
    const auto z = pol.insert(ns_of(0), seq({3}));
    REQUIRE(pol.admit(x[1], 1).admitted);
    for (int i = 0; i < 3; ++i) pol.unpin(pol.match(ns_of(0), seq({1, 1})).resume_node);
    REQUIRE(pol.admit(z[0], 1).admitted);
    for (int i = 0; i < 2; ++i) pol.unpin(pol.match(ns_of(0), seq({2, 2})).resume_node);
    for (int i = 0; i < 8; ++i) pol.unpin(pol.match(ns_of(0), seq({9})).resume_node);
    pol.drop(z[0]);
    REQUIRE(pol.admit(y[1], 1).admitted);
    CHECK(pol.hit_chance(x[1]) == doctest::Approx(age ? 0.35 : 1.0));
    CHECK(pol.hit_chance(y[1]) == doctest::Approx(age ? 0.74 : 1.0));
    const auto v = pol.evict(1);
    CHECK(v == std::vector<node_id>{age ? x[1] : y[1]});
  }
}

TEST_CASE("replan_work: automatic re-plans wait for work proportional to the tree") {
  for (double work : {0.0, 1e6}) {
    hc::state_policy pol({.block_size = 1,
                          .state_bytes = 1,
                          .capacity_bytes = 1,
                          .replan_every = 1,
                          .replan_work = work});
    CHECK(pol.replans() == 0);
    CHECK(pol.replan_ns() == 0.0);
    const auto a = pol.insert(ns_of(0), seq({1, 2, 3}));
    for (int i = 0; i < 5; ++i) pol.unpin(pol.match(ns_of(0), seq({1, 2, 3})).resume_node);
    // The optimal single state for matches that all end at a2 is a2 itself.
    CHECK(pol.planned(a[2]) == (work == 0.0));
    // Every observation re-plans without a work threshold (five matches), none with a huge one.
    CHECK(pol.replans() == (work == 0.0 ? 5u : 0u));
    CHECK((pol.replan_ns() > 0.0) == (work == 0.0));
    const double before = pol.replan_ns();
    CHECK(pol.replan().planned == 1);
    CHECK(pol.replans() == (work == 0.0 ? 6u : 1u));  // explicit calls count too
    CHECK(pol.replan_ns() > before);
    CHECK(pol.planned(a[2]));
  }
}

TEST_CASE("typed errors for bad options and bad calls") {
  using opts = hc::policy_options;
  CHECK_THROWS_AS(hc::state_policy(opts{.block_size = 0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.state_bytes = 0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.capacity_bytes = 0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.gamma = 0.0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.gamma = std::nan("")}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.gamma = 1.5}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.hysteresis = 1.0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.hysteresis = -0.1}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.replan_work = -1.0}), hc::invalid_argument);
  CHECK_THROWS_AS(hc::state_policy(opts{.replan_work = std::nan("")}), hc::invalid_argument);
  hc::state_policy pol({.block_size = 2, .capacity_bytes = 10});
  const auto p = pol.insert(ns_of(0), seq({1, 2, 3, 4}));
  CHECK_THROWS_AS(pol.admit(999, 1), hc::invalid_argument);
  CHECK_THROWS_AS(pol.admit(p[0], 0), hc::invalid_argument);
  CHECK_THROWS_AS(pol.admit(pol.parent(p[0]), 1), hc::invalid_argument);  // namespace root
  CHECK_THROWS_AS(pol.unpin(p[0]), hc::invalid_argument);
  CHECK_THROWS_AS(pol.erase(p[0]), hc::invalid_argument);  // has a child
  pol.pin(p[1]);
  CHECK_THROWS_AS(pol.erase(p[1]), hc::invalid_argument);  // pinned
  pol.unpin(p[1]);
  pol.erase(p[1]);
  CHECK_THROWS_AS(pol.drop(p[1]), hc::invalid_argument);  // gone
  CHECK_FALSE(pol.admit(p[0], 11).admitted);              // larger than the pool
  CHECK(pol.used_bytes() == 0);
  try {
    (void)pol.admit(p[0], 0);
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "bytes");
  }
}

TEST_CASE("the worked example of docs/tree.md") {
  hc::state_policy pol(
      legacy({.block_size = 16, .state_bytes = 1, .capacity_bytes = 2, .replan_every = 0}));
  const auto ns = hc::namespace_key{}.with_tenant("acme");
  std::vector<token_id> sys(64);
  for (std::size_t i = 0; i < 64; ++i) sys[i] = static_cast<token_id>(1000 + i);
  auto t1 = sys;
  for (token_id i = 0; i < 40; ++i) t1.push_back(2000 + i);  // 104 tokens
  auto m = pol.match(ns, t1);
  CHECK(m.matched_tokens == 0);
  CHECK(pol.prefill_plan(m, t1.size(), std::vector<std::size_t>{64, 96, 104}) ==
        std::vector<std::size_t>{96});
  auto path = pol.insert(ns, t1);
  const node_id n96 = path[5];
  CHECK(pol.admit(n96, 1).victims.empty());
  pol.unpin(m.resume_node);
  auto t2 = t1;
  for (token_id i = 0; i < 56; ++i) t2.push_back(3000 + i);  // 160 tokens
  m = pol.match(ns, t2);
  CHECK(m.matched_tokens == 96);
  CHECK(m.resume_tokens == 96);
  CHECK(m.replay_tokens == 0);
  CHECK(pol.prefill_plan(m, t2.size(), std::vector<std::size_t>{160}) ==
        std::vector<std::size_t>{160});
  path = pol.insert(ns, t2);
  const node_id n160 = path[9];
  CHECK(pol.admit(n160, 1).victims.empty());
  pol.unpin(m.resume_node);
  auto u1 = sys;
  for (token_id i = 0; i < 30; ++i) u1.push_back(4000 + i);  // 94 tokens
  m = pol.match(ns, u1);
  CHECK(m.matched_tokens == 64);
  CHECK(m.resume_tokens == 0);
  CHECK(m.replay_tokens == 64);
  CHECK(pol.prefill_plan(m, u1.size(), std::vector<std::size_t>{64, 80, 94}) ==
        std::vector<std::size_t>{64, 80});
  path = pol.insert(ns, u1);
  CHECK(pol.admit(path[3], 1).victims == std::vector<node_id>{n160});
  CHECK(pol.admit(path[4], 1).victims == std::vector<node_id>{n96});
  pol.unpin(m.resume_node);
  const auto r = pol.replan();
  CHECK(r.adopted);
  // By hand (γ = 0.99, s_k = γ^−k the mass of observation k): weights root s1, n96 s2, n64 s3
  // and the fresh-end priors n160 p2·s2, n80 p3·s3 with p2 = (0.99 + 1)/(1.99 + 2) and
  // p3 = (0.9801 + 1)/(2.9701 + 2). Plan {64, 96}: n80 replays 16, n160 replays 64.
  const double g = 0.99, s1 = 1 / g, s2 = s1 / g, s3 = s2 / g;
  const double p2 = 1.99 / 3.99, p3 = 1.9801 / 4.9701;
  const double total = s1 + s2 + s3 + p2 * s2 + p3 * s3;
  CHECK(r.expected_after == doctest::Approx((16 * p3 * s3 + 64 * p2 * s2) / total));
  CHECK(r.expected_before ==
        doctest::Approx((96 * s2 + 160 * p2 * s2 + 64 * s3 + 80 * p3 * s3) / total));
  CHECK(pol.planned(path[3]));
  CHECK(pol.planned(n96));
}

TEST_CASE("fill free memory: free room gets evenly spread snapshots, valued 0 until matched") {
  // B = 4, one state = 1 byte, a pool of 4. A 40-token prompt (10 blocks) on an empty tree:
  // the plan without fill_free is the tail {40}; with it, F = 4 − 1 = 3 of the 9 other
  // candidates 4, 8, …, 36, the ⌈i·9/3⌉-th for i = 1, 2, 3: 12, 24, 36.
  hc::policy_options o{.block_size = 4, .state_bytes = 1, .capacity_bytes = 4, .replan_every = 0};
  auto plain_opts = o;
  plain_opts.fill_free = false;
  o.fill_free = true;
  hc::state_policy pol(o), plain(plain_opts);
  std::vector<token_id> t1;
  for (token_id i = 0; i < 40; ++i) t1.push_back(i);
  std::vector<std::size_t> grid;
  for (std::size_t p = 4; p <= 40; p += 4) grid.push_back(p);
  const auto m0 = plain.match(ns_of(0), t1);
  CHECK(plain.prefill_plan(m0, 40, grid) == std::vector<std::size_t>{40});
  const auto m1 = pol.match(ns_of(0), t1);
  const auto plan = pol.prefill_plan(m1, 40, grid);
  CHECK(plan == std::vector<std::size_t>{12, 24, 36, 40});
  // A coarser chunk grid limits the candidates: 16, 32 and the tail 40 (room for all).
  CHECK(pol.prefill_plan(m1, 40, std::vector<std::size_t>{16, 30, 32, 40}) ==
        std::vector<std::size_t>{16, 32, 40});
  const auto p1 = pol.insert(ns_of(0), t1);
  for (std::size_t p : plan) {
    const auto r = pol.admit(p1[p / 4 - 1], 1);
    CHECK(r.admitted);
    CHECK(r.victims.empty());  // free room: nothing displaced
  }
  pol.unpin(m1.resume_node);
  CHECK(pol.used_bytes() == 4);
  // A second prompt shares 24 tokens and goes on with 24 new ones: it resumes at 24 (a filled
  // state). The pool is full: no free room, the plan is the tail 48 only.
  std::vector<token_id> t2(t1.begin(), t1.begin() + 24);
  for (token_id i = 0; i < 24; ++i) t2.push_back(100 + i);
  const auto m2 = pol.match(ns_of(0), t2);
  CHECK(m2.resume_tokens == 24);
  CHECK(pol.prefill_plan(m2, 48, std::vector<std::size_t>{28, 36, 44, 48}) ==
        std::vector<std::size_t>{48});
  const auto p2 = pol.insert(ns_of(0), t2);
  // Admitting the tail (the new end, valued by its fresh-end prior) evicts a state whose region
  // no match has ended in: 12 (nodes 4…12, no weight) and 36 (node 36) are worth 0 (24 holds
  // the match, 40 the first prompt's prior); the tie goes to the least recently used, 12.
  const auto r = pol.admit(p2[11], 1);
  CHECK(r.admitted);
  CHECK(r.victims == std::vector<node_id>{p1[2]});
  pol.unpin(m2.resume_node);
}

// ---- issue #21: stale ids, erased mass, the shares as a distribution -------------------------

TEST_CASE("stale ids: tenant A's erased leaf id cannot admit into tenant B's node (#21 item 1)") {
  // Tenant B's namespace exists before A's leaf is erased, so B's next new node takes the slot
  // A's leaf left (the free list is LIFO). A's engine still holds the id from its match.
  hc::state_policy pol(legacy(
      {.block_size = 1, .state_bytes = 1, .capacity_bytes = 4, .gamma = 1.0, .replan_every = 0}));
  (void)pol.insert(ns_of(2), seq({5}));  // tenant B's namespace
  const auto a = pol.insert(ns_of(1), seq({1, 2}));
  const auto m = pol.match(ns_of(1), seq({1, 2}));
  pol.unpin(m.resume_node);
  const node_id held = m.path[1];
  REQUIRE(held == a[1]);
  pol.erase(a[1]);
  const auto b = pol.insert(ns_of(2), seq({7, 8}));
  // Premise: B's first new node sits in the slot A's leaf left.
  CHECK((b[0] & 0xffffffffu) == (held & 0xffffffffu));
  CHECK(b[0] != held);
  CHECK_THROWS_AS(pol.admit(held, 1), hc::stale_handle_error);
  CHECK(pol.used_bytes() == 0);
  CHECK_FALSE(pol.has_state(b[0]));
  // B resumes from nothing A stored.
  const auto mb = pol.match(ns_of(2), seq({7, 8}));
  CHECK(mb.resume_tokens == 0);
  pol.unpin(mb.resume_node);
  // The error names the argument, the id, its slot and both generations.
  try {
    (void)pol.admit(held, 1);
    FAIL("admit of a stale id did not throw");
  } catch (const hc::stale_handle_error& e) {
    CHECK(e.argument() == "node");
    CHECK(e.value() == std::to_string(held));
    CHECK(e.slot() == (held & 0xffffffffu));
    CHECK(e.generation() == held >> 32);
    CHECK(e.current_generation() == b[0] >> 32);
    CHECK(e.current_generation() == e.generation() + 1);
  }
  // Every call that takes an id detects it; the predicates answer false.
  CHECK_THROWS_AS(pol.drop(held), hc::stale_handle_error);
  CHECK_THROWS_AS(pol.pin(held), hc::stale_handle_error);
  CHECK_THROWS_AS(pol.unpin(held), hc::stale_handle_error);
  CHECK_THROWS_AS(pol.erase(held), hc::stale_handle_error);
  CHECK_THROWS_AS(pol.note_prefill_end(held), hc::stale_handle_error);
  CHECK_THROWS_AS((void)pol.state_bytes(held), hc::stale_handle_error);
  CHECK_THROWS_AS((void)pol.depth_tokens(held), hc::stale_handle_error);
  CHECK_THROWS_AS((void)pol.parent(held), hc::stale_handle_error);
  CHECK_THROWS_AS((void)pol.match_share(held), hc::stale_handle_error);
  CHECK_THROWS_AS((void)pol.hit_chance(held), hc::stale_handle_error);
  CHECK_FALSE(pol.contains(held));
  CHECK_FALSE(pol.has_state(held));
  CHECK_FALSE(pol.planned(held));
  CHECK_FALSE(pol.pinned(held));
  CHECK(pol.contains(b[0]));
  // A stale id in a match result is skipped by prefill_plan (never read as B's node): A's old
  // match ended at the erased leaf; its plan only offers the tail beyond it.
  CHECK(pol.prefill_plan(m, 3, std::vector<std::size_t>{1, 2, 3}) == std::vector<std::size_t>{3});
  // An id whose slot this policy never had is an invalid argument, not a stale handle.
  CHECK_THROWS_AS(pol.admit(999, 1), hc::invalid_argument);
  try {
    (void)pol.admit(999, 1);
  } catch (const hc::stale_handle_error&) {
    FAIL("an id never issued is not stale");
  } catch (const hc::invalid_argument&) {
  }
}

TEST_CASE("erased mass survives the parent's first real match (#21 item 3)") {
  // γ = 1, B = 1, fresh-end prior on (junction prior off). p = [1] is an inserted end that no
  // match has ended at (it holds its prior π); its child c = [1 2] and x = [9] are matched once
  // each. Erasing c moves c's one observation to p; the first real match at p replaces π by
  // one observation and keeps what c left: p = 2, x = 1, share(p) = 2/3.
  hc::state_policy pol(legacy(
      {.block_size = 1, .state_bytes = 1, .capacity_bytes = 4, .gamma = 1.0, .replan_every = 0}));
  const auto p = pol.insert(ns_of(0), seq({1}));
  const auto c = pol.insert(ns_of(0), seq({1, 2}));
  const auto x = pol.insert(ns_of(0), seq({9}));
  pol.unpin(pol.match(ns_of(0), seq({9})).resume_node);
  pol.unpin(pol.match(ns_of(0), seq({1, 2})).resume_node);
  pol.erase(c[1]);
  pol.unpin(pol.match(ns_of(0), seq({1})).resume_node);
  CHECK(pol.match_share(p[0]) == doctest::Approx(2.0 / 3));
  CHECK(pol.match_share(x[0]) == doctest::Approx(1.0 / 3));
}

TEST_CASE("erasing a namespace root takes its weight out of the total (#21 item 4)") {
  // γ = 1, B = 1, no priors. One match ends at namespace 1's root (nothing cached there), two
  // at namespace 2's node [5]. Erasing namespace 1 (its childless root) leaves [5] with every
  // match that remains: share 1, and the shares of the live nodes sum to 1.
  hc::state_policy pol(legacy({.block_size = 1,
                               .state_bytes = 1,
                               .capacity_bytes = 4,
                               .gamma = 1.0,
                               .replan_every = 0,
                               .fresh_prior = false}));
  const auto m1 = pol.match(ns_of(1), seq({3}));
  pol.unpin(m1.resume_node);
  const auto v = pol.insert(ns_of(2), seq({5}));
  for (int i = 0; i < 2; ++i) pol.unpin(pol.match(ns_of(2), seq({5})).resume_node);
  CHECK(pol.match_share(v[0]) == doctest::Approx(2.0 / 3));
  pol.erase(m1.node);
  CHECK(pol.namespace_count() == 1);
  CHECK(pol.match_share(v[0]) == doctest::Approx(1.0));
  CHECK(pol.match_share(pol.parent(v[0])) == 0.0);
  // [5]'s mass moves to its root; erasing that root too leaves no mass at all, so the next
  // match is the whole distribution.
  const node_id r2 = pol.parent(v[0]);
  pol.erase(v[0]);
  CHECK(pol.match_share(r2) == doctest::Approx(1.0));
  pol.erase(r2);
  CHECK(pol.namespace_count() == 0);
  const auto m3 = pol.match(ns_of(3), seq({}));
  pol.unpin(m3.resume_node);
  CHECK(pol.match_share(m3.node) == doctest::Approx(1.0));
}

TEST_CASE("branch point: the best (q − matched)·F(u − q) of every candidate, against brute force") {
  // B = 1, γ = 0.9. Random prompts over a small alphabet leave the tree at random depths; the
  // test keeps its own EW law of the divergences D = offered − matched of the matches that ended
  // where an inserted prompt goes on (long double, decayed eagerly), and for random prompts
  // enumerates every candidate chunk end q in (lo, u) with its gain (q − lo)·F(u − q), F(d) = the
  // EW share of D ≤ 2^j − 1 for the largest such bound ≤ d.
  const long double gamma = 0.9L;
  auto o = legacy(
      {.block_size = 1, .state_bytes = 1, .capacity_bytes = 8, .gamma = 0.9, .replan_every = 0});
  o.branch_prior = true;
  hc::state_policy pol(o);
  std::mt19937 rng(7);
  std::vector<long double> law(40, 0.0L);  // EW mass per exact D
  std::vector<std::vector<token_id>> inserted;
  int checked = 0, found = 0;
  for (int step = 0; step < 400; ++step) {
    std::vector<token_id> p(2 + rng() % 30);
    for (auto& t : p) t = static_cast<token_id>(rng() % 3);
    const std::size_t P = p.size(), u = P - 1;
    const auto m = pol.match(ns_of(0), std::span<const token_id>(p).first(u));
    // The brute force, with the law as it stands after this match: a divergence counts when the
    // match ended where an earlier prompt goes on (a node with children), not at a leaf.
    const std::size_t matched = m.path.size();
    const bool inside = std::any_of(inserted.begin(), inserted.end(), [&](const auto& e) {
      return e.size() > matched &&
             std::equal(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(matched), e.begin());
    });
    if (matched < u && inside) {
      for (auto& w : law) w *= gamma;
      law[u - m.path.size()] += 1.0L;
    }
    std::vector<std::size_t> chunks;
    for (std::size_t q = 1; q <= P; ++q)
      if (rng() % 3 != 0) chunks.push_back(q);
    const auto got = pol.branch_point(m, P, chunks);
    long double total = 0.0L;
    for (auto w : law) total += w;
    const std::size_t lo = std::max(m.matched_tokens, m.resume_tokens);
    long double best = 0.0L;
    for (auto q : chunks) {
      if (q <= lo || q >= u) continue;
      const std::size_t d = u - q;
      std::size_t bound = 0;  // the largest 2^j − 1 ≤ d, j ≥ 1
      for (std::size_t j = 1; (std::size_t{1} << j) - 1 <= d; ++j)
        bound = (std::size_t{1} << j) - 1;
      long double f = 0.0L;
      for (std::size_t k = 1; k <= bound && k < law.size(); ++k) f += law[k];
      if (total > 0) f /= total;
      best = std::max(best, static_cast<long double>(q - lo) * f);
    }
    ++checked;
    if (best <= 0.0L) {
      CHECK_FALSE(got.has_value());
    } else {
      REQUIRE(got.has_value());
      ++found;
      const std::size_t q = *got;
      CHECK(std::find(chunks.begin(), chunks.end(), q) != chunks.end());
      CHECK(q > lo);
      CHECK(q < u);
      const std::size_t d = u - q;
      std::size_t bound = 0;
      for (std::size_t j = 1; (std::size_t{1} << j) - 1 <= d; ++j)
        bound = (std::size_t{1} << j) - 1;
      long double f = 0.0L;
      for (std::size_t k = 1; k <= bound && k < law.size(); ++k) f += law[k];
      f /= total;
      CHECK(static_cast<double>(static_cast<long double>(q - lo) * f) ==
            doctest::Approx(static_cast<double>(best)).epsilon(1e-9));
    }
    pol.unpin(m.resume_node);
    (void)pol.insert(ns_of(0), p);
    inserted.push_back(p);
  }
  CHECK(checked == 400);
  CHECK(found > 100);  // the law is not empty for most prompts
}

TEST_CASE("branch point: another question on a cached document resumes at it") {
  // B = 1, documents of 20 blocks, questions of 3 (2 usable). Two questions on document 1 teach
  // the law (D = 22 cold, then D = 2); the first question on document 2 snapshots the branch
  // point u − 3 = 19; the second question on document 2 then resumes there instead of at 0.
  for (bool on : {true, false}) {
    CAPTURE(on);
    auto o = legacy({.block_size = 1,
                     .state_bytes = 1,
                     .capacity_bytes = 64,
                     .gamma = 0.99,
                     .replan_every = 0});
    o.branch_prior = on;
    hc::state_policy pol(o);
    auto doc = [](token_id d) {
      std::vector<token_id> v;
      for (token_id i = 0; i < 20; ++i) v.push_back(d * 100 + i);
      return v;
    };
    auto ask = [&](token_id d, token_id q) {
      auto p = doc(d);
      p.push_back(1000 + q);
      p.push_back(2000 + q);
      p.push_back(3000 + q);  // P = 23, u = 22: the question's first 2 blocks are usable
      const auto m = pol.match(ns_of(0), std::span<const token_id>(p).first(p.size() - 1));
      std::vector<std::size_t> chunks;
      for (std::size_t c = m.resume_tokens + 1; c <= p.size(); ++c) chunks.push_back(c);
      const auto bp = pol.branch_point(m, p.size(), chunks);
      const auto path = pol.insert(ns_of(0), p);
      if (bp) {
        pol.note_branch_point(path[*bp - 1]);
        (void)pol.admit(path[*bp - 1], 1);
      }
      pol.unpin(m.resume_node);
      return std::pair{m, bp};
    };
    (void)ask(1, 1);  // cold: D = 22 (bucket 5), no law yet: no branch point
    (void)ask(1, 2);  // leaves document 1 at 20: D = 2 (bucket 2); nothing beyond 20 + 1 to gain
    // Document 2, cold (lo = 0, u = 22): F_1 = 0, F_2 = F_3 = F_4 > 0 and a divergence of 31 no
    // longer fits, so the best is j = 2, the deepest candidate u − 3 = 19.
    const auto [m3, bp3] = ask(2, 1);
    CHECK(m3.matched_tokens == 0);
    if (!on) {
      CHECK_FALSE(bp3.has_value());
    } else {
      REQUIRE(bp3.has_value());
      CHECK(*bp3 == 19);
    }
    const double share_before = pol.branch_share();
    const auto [m4, bp4] = ask(2, 2);  // leaves document 2 at 20
    CHECK(m4.matched_tokens == 20);
    CHECK(m4.resume_tokens == (on ? 19u : 0u));
    if (on) CHECK(pol.branch_share() > share_before);  // the branch point was reached
  }
}

TEST_CASE("branch point: taken only if its state would outrank the pool's first victim") {
  // B = 1, γ = 0.9, one state of room. Five questions on document 1 teach the law (D = 2) and
  // leave their matches at its end (block 20); a state there is worth 20 blocks × their mass.
  // The first question on document 2 would snapshot at 19 (as with room), but its state's value,
  // 19 × π_I with π_I ≤ p̂_I = 1/2 observation, is below the held state's: nothing is announced.
  // After 60 observations elsewhere (full matches of another prompt: no divergence, no change to
  // the held state's region) that mass has decayed by 0.9^60, and the same question on
  // document 3 gets its branch point. With room for a second state it is taken at once.
  for (std::size_t capacity : {1u, 2u}) {
    CAPTURE(capacity);
    auto o = legacy({.block_size = 1,
                     .state_bytes = 1,
                     .capacity_bytes = capacity,
                     .gamma = 0.9,
                     .replan_every = 0});
    o.branch_prior = true;
    hc::state_policy pol(o);
    auto prompt = [](token_id d, token_id q) {
      std::vector<token_id> v;
      for (token_id i = 0; i < 20; ++i) v.push_back(d * 100 + i);
      for (token_id i = 1; i <= 3; ++i) v.push_back(i * 1000 + q);  // P = 23, u = 22
      return v;
    };
    auto point = [&](const std::vector<token_id>& p) {
      const auto m = pol.match(ns_of(0), std::span<const token_id>(p).first(p.size() - 1));
      std::vector<std::size_t> chunks;
      for (std::size_t c = 1; c <= p.size(); ++c) chunks.push_back(c);
      const auto bp = pol.branch_point(m, p.size(), chunks);
      pol.unpin(m.resume_node);
      return bp;
    };
    std::vector<node_id> doc1;
    for (token_id q = 1; q <= 6; ++q) {
      (void)point(prompt(1, q));
      doc1 = pol.insert(ns_of(0), prompt(1, q));
    }
    REQUIRE(pol.admit(doc1[19], 1).admitted);
    CHECK(pol.divergence_within(2) > 0.0);  // D = 2 ≤ 3
    const auto first = point(prompt(2, 1));
    if (capacity == 2) {
      REQUIRE(first.has_value());
      CHECK(*first == 19);
      continue;
    }
    CHECK_FALSE(first.has_value());
    const auto z = seq({7, 8, 9});
    (void)pol.insert(ns_of(0), z);
    for (int i = 0; i < 60; ++i) {
      const auto m = pol.match(ns_of(0), z);
      pol.unpin(m.resume_node);
    }
    const auto later = point(prompt(3, 1));
    REQUIRE(later.has_value());
    CHECK(*later == 19);
  }
}

TEST_CASE("branch point: typed errors, nothing changed") {
  auto o = legacy({.block_size = 2, .state_bytes = 1, .capacity_bytes = 4, .replan_every = 0});
  o.branch_prior = true;
  hc::state_policy pol(o);
  const auto p = seq({1, 2, 3, 4, 5, 6});
  const auto m = pol.match(ns_of(0), p);
  const std::vector<std::size_t> over{2, 8};
  CHECK_THROWS_AS((void)pol.branch_point(m, 6, over), hc::invalid_argument);
  auto bad = m;
  bad.matched_tokens = 4;  // path size 0 ≠ 4 / 2
  const std::vector<std::size_t> ok{2, 4};
  CHECK_THROWS_AS((void)pol.branch_point(bad, 6, ok), hc::invalid_argument);
  CHECK_FALSE(pol.branch_point(m, 0, {}).has_value());
  pol.unpin(m.resume_node);
  const auto path = pol.insert(ns_of(0), p);
  pol.erase(path[2]);
  CHECK_THROWS_AS(pol.note_branch_point(path[2]), hc::stale_handle_error);
  CHECK_THROWS_AS(pol.note_branch_point(node_id{12345}), hc::invalid_argument);
  // Off: no branch point, no prior, no law.
  auto off = o;
  off.branch_prior = false;
  hc::state_policy quiet(off);
  const auto m2 = quiet.match(ns_of(0), p);
  CHECK(quiet.divergence_within(32) == 0.0);
  CHECK_FALSE(quiet.branch_point(m2, 6, ok).has_value());
}

TEST_CASE("message branch point: the deepest user start past the resume, against brute force") {
  // B = 4. Random prompts under a few shared prefixes, with states admitted on their blocks so
  // matches resume at random depths; each prompt carries random user starts. The brute force
  // walks the blocks from the last usable one down to the resume and returns the first block
  // some start falls in (scanning token by token, not by dividing).
  const std::size_t B = 4;
  auto o = legacy({.block_size = B, .state_bytes = 1, .capacity_bytes = 16, .replan_every = 0});
  o.branch_prior = true;
  auto off = o;
  off.branch_prior = false;
  hc::state_policy pol(o), quiet(off);
  std::mt19937 rng(11);
  int found = 0, none = 0, resumed = 0;
  for (int step = 0; step < 500; ++step) {
    std::vector<token_id> p(1 + rng() % 60);
    const token_id family = static_cast<token_id>(rng() % 3);
    for (std::size_t i = 0; i < p.size(); ++i)
      p[i] = i < 24 ? family * 100 + static_cast<token_id>(i) : static_cast<token_id>(rng() % 5);
    const std::size_t P = p.size();
    std::vector<std::size_t> starts;
    for (std::size_t t = 0; t < P; ++t)
      if (rng() % 9 == 0) starts.push_back(t);
    const auto m = pol.match(ns_of(0), std::span<const token_id>(p).first(P - 1));
    if (m.resume_tokens > 0) ++resumed;
    const auto got = pol.message_branch_point(m, P, starts);
    std::optional<std::size_t> want;
    const std::size_t last = (P - 1) / B;  // the prompt's last usable block, u
    for (std::size_t q = last; want == std::nullopt && q-- > m.resume_tokens / B + 1;)
      for (std::size_t t = q * B; t < (q + 1) * B; ++t)
        if (std::find(starts.begin(), starts.end(), t) != starts.end()) want = q * B;
    CHECK(got == want);
    (want ? found : none) += 1;
    const auto mq = quiet.match(ns_of(0), std::span<const token_id>(p).first(P - 1));
    CHECK_FALSE(quiet.message_branch_point(mq, P, starts).has_value());
    quiet.unpin(mq.resume_node);
    pol.unpin(m.resume_node);
    const auto path = pol.insert(ns_of(0), p);
    (void)quiet.insert(ns_of(0), p);
    for (std::size_t i = 0; i < path.size(); ++i)
      if (rng() % 4 == 0) (void)pol.admit(path[i], 1);
  }
  CHECK(found > 100);
  CHECK(none > 50);
  CHECK(resumed > 50);  // the resume bound is exercised
}

TEST_CASE("prefill end: the deepest block-grid position a re-ask can resume at, brute force") {
  // Random block sizes, prompt lengths and resume points. The brute force walks the token
  // positions down from P − 1 (a re-ask computes at least the prompt's last token) and takes the
  // first one on the block grid; it counts only past the resume, and only with the prior on.
  std::mt19937 rng(5);
  int found = 0, none = 0, aligned = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const std::size_t B = 1 + rng() % 8;
    auto o = legacy({.block_size = B, .state_bytes = 1, .capacity_bytes = 64, .replan_every = 0});
    o.prefill_prior = trial % 5 != 0;
    hc::state_policy pol(o);
    // A cached path of random length with a state at a random depth, so matches resume there.
    std::vector<token_id> cached(B * (rng() % 6));
    std::iota(cached.begin(), cached.end(), token_id{1});
    const auto path = pol.insert(ns_of(0), cached);
    if (!path.empty()) (void)pol.admit(path[rng() % path.size()], 1);
    auto p = cached;
    for (std::size_t n = 1 + rng() % 40; n > 0; --n) p.push_back(static_cast<token_id>(1000 + n));
    if (trial % 3 == 0) p.resize(p.size() / B * B + (p.size() < B ? B : 0));  // P = k·B
    const std::size_t P = p.size();
    const auto m = pol.match(ns_of(0), std::span<const token_id>(p).first(P - 1));
    std::optional<std::size_t> want;
    for (std::size_t q = P - 1; q > 0 && !want; --q)
      if (q % B == 0) want = q;
    if (want && (*want <= m.resume_tokens || !o.prefill_prior)) want.reset();
    CHECK(pol.prefill_end(m, P) == want);
    (want ? found : none) += 1;
    if (want && P % B == 0) ++aligned;
    pol.unpin(m.resume_node);
  }
  CHECK(found > 100);
  CHECK(none > 30);
  CHECK(aligned > 20);  // the case where the usable end is not the last full block
  // Typed errors: a match that does not fit the prompt.
  auto on = legacy({.block_size = 2, .state_bytes = 1, .capacity_bytes = 4});
  on.prefill_prior = true;
  hc::state_policy pol(on);
  auto m = pol.match(ns_of(0), seq({1, 2, 3, 4}));
  auto bad = m;
  bad.matched_tokens = 4;
  CHECK_THROWS_AS((void)pol.prefill_end(bad, 6), hc::invalid_argument);
  CHECK_FALSE(pol.prefill_end(m, 0).has_value());
  CHECK(pol.prefill_end(m, 6) == std::optional<std::size_t>(4));  // ⌊5/2⌋·2
  CHECK(pol.prefill_end(m, 5) == std::optional<std::size_t>(4));  // ⌊4/2⌋·2
  pol.unpin(m.resume_node);
}

TEST_CASE("message branch point: typed errors, nothing changed") {
  auto o = legacy({.block_size = 2, .state_bytes = 1, .capacity_bytes = 4, .replan_every = 0});
  o.branch_prior = true;
  hc::state_policy pol(o);
  const auto p = seq({1, 2, 3, 4, 5, 6, 7, 8});
  const auto m = pol.match(ns_of(0), p);
  const std::size_t nodes = pol.node_count();
  const std::vector<std::size_t> over{2, 8};  // 8 is not below prompt_tokens
  try {
    (void)pol.message_branch_point(m, 8, over);
    FAIL("no exception");
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "user_starts[1]");
    CHECK(e.value() == "8");
  }
  auto bad = m;
  bad.matched_tokens = 4;  // path size 0 ≠ 4 / 2
  const std::vector<std::size_t> ok{3, 5};
  CHECK_THROWS_AS((void)pol.message_branch_point(bad, 8, ok), hc::invalid_argument);
  CHECK_FALSE(pol.message_branch_point(m, 0, {}).has_value());
  // u = ⌊7/2⌋ = 3: the start at 5 floors to block 2 (token 4), the deepest that qualifies.
  CHECK(pol.message_branch_point(m, 8, ok) == std::optional<std::size_t>(4));
  const std::vector<std::size_t> tail{6, 7};  // in block 3 = u: never the branch point
  CHECK_FALSE(pol.message_branch_point(m, 8, tail).has_value());
  pol.unpin(m.resume_node);
  CHECK(pol.node_count() == nodes);
  CHECK(pol.state_count() == 0);
}

TEST_CASE("admit_path: the states admit would hold, the same victims after, typed errors") {
  // Two policies fed the same requests (random paths under a few shared prefixes, matches that
  // leave weights, some states). Then each new path's nodes from some depth down are admitted:
  // one by one in policy A (`admit`), at once in policy B (`admit_path`). While they fit, B must
  // take them all and hold exactly A's states; from then on both must evict the same victims
  // (exact ranking: equal records are what makes them equal). When they do not all fit, B
  // changes nothing and returns false, and A's one-by-one admission is mirrored by B's.
  std::mt19937_64 rng(23);
  std::size_t batches = 0, refused = 0;
  for (int trial = 0; trial < 40; ++trial) {
    CAPTURE(trial);
    const std::size_t cap = 8 + rng() % 60;
    const hc::policy_options o{
        .block_size = 2, .state_bytes = 1, .capacity_bytes = cap, .replan_every = 0};
    hc::state_policy a(o), b(o);
    std::vector<node_id> all;
    for (int req = 0; req < 60; ++req) {
      const auto ns = ns_of(static_cast<int>(rng() % 2));
      std::vector<hc::digest> k;
      const std::size_t prefix = rng() % 3, len = 2 + rng() % 30;
      for (std::size_t i = 0; i < len; ++i)
        k.push_back({i < 4 ? prefix * 10 + i : rng() % 4 == 0 ? 7 : rng(), i});
      const auto ma = a.match_keys(ns, k), mb = b.match_keys(ns, k);
      REQUIRE(ma.path == mb.path);
      a.unpin(ma.resume_node);
      b.unpin(mb.resume_node);
      const auto pa = a.insert_keys(ns, k), pb = b.insert_keys(ns, k);
      REQUIRE(pa == pb);
      all.insert(all.end(), pa.begin(), pa.end());
      // The snapshots of one prefill: from a random depth down, every other block or so.
      std::vector<node_id> snaps;
      for (std::size_t i = rng() % len; i < len; i += 1 + rng() % 3) snaps.push_back(pa[i]);
      if (snaps.empty()) continue;
      std::size_t fresh = 0;
      for (const node_id v : snaps) fresh += a.has_state(v) ? 0 : 1;
      const bool fits = a.used_bytes() + fresh <= cap;
      const std::size_t before = b.used_bytes();
      const bool took = b.admit_path(snaps, 1);
      CHECK(took == fits);
      if (took) {
        ++batches;
        for (const node_id v : snaps) CHECK(a.admit(v, 1).admitted);
      } else {
        ++refused;
        CHECK(b.used_bytes() == before);
        for (const node_id v : snaps) {
          const auto ra = a.admit(v, 1), rb = b.admit(v, 1);
          CHECK(ra.admitted == rb.admitted);
          CHECK(ra.victims == rb.victims);
        }
      }
      for (const node_id v : all)
        if (a.contains(v)) REQUIRE(a.has_state(v) == b.has_state(v));
      CHECK(a.used_bytes() == b.used_bytes());
    }
    // The same victims, one at a time, until both are empty.
    while (a.used_bytes() > 0) {
      const auto va = a.evict(1), vb = b.evict(1);
      REQUIRE(va == vb);
      if (va.empty()) break;
    }
  }
  CHECK(batches > 300);
  CHECK(refused > 100);

  // Typed errors, nothing changed.
  hc::state_policy pol({.block_size = 1, .state_bytes = 1, .capacity_bytes = 16});
  const auto p = pol.insert(ns_of(0), seq({1, 2, 3, 4}));
  const auto q = pol.insert(ns_of(0), seq({1, 9}));
  CHECK_THROWS_AS((void)pol.admit_path(std::vector<node_id>{p[0], p[2]}, 0), hc::invalid_argument);
  CHECK_THROWS_AS((void)pol.admit_path(std::vector<node_id>{p[2], p[1]}, 1), hc::invalid_argument);
  CHECK_THROWS_AS((void)pol.admit_path(std::vector<node_id>{p[1], p[1]}, 1), hc::invalid_argument);
  CHECK_THROWS_AS((void)pol.admit_path(std::vector<node_id>{p[1], q[1]}, 1), hc::invalid_argument);
  CHECK_THROWS_AS((void)pol.admit_path(std::vector<node_id>{p[0], p[3] + (1ULL << 40)}, 1),
                  hc::invalid_argument);
  CHECK(pol.used_bytes() == 0);
  CHECK(pol.admit_path(std::vector<node_id>{p[0], p[2], p[3]}, 1));
  CHECK(pol.has_state(p[0]));
  CHECK_FALSE(pol.has_state(p[1]));
  CHECK(pol.has_state(p[3]));
  CHECK(pol.used_bytes() == 3);
  CHECK(pol.admit_path(std::vector<node_id>{}, 1));
}
