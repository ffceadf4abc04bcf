// SPDX-License-Identifier: Apache-2.0
// detail::held_tree (include/hybridcache/sim/detail/held_tree.hpp), the incremental tree of held
// states behind marconi_policy's eviction, against a brute-force restatement of the scan it
// replaced: per held state, walk up to the nearest held ancestor a and count, per a, the distinct
// branches (a's children on those walks). Random tries and random add/remove sequences. Then
// marconi_policy itself against the full-scan eviction it replaced (`scan_marconi`), request by
// request.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <hybridcache/sim/detail/held_tree.hpp>
#include <hybridcache/sim/detail/random.hpp>
#include <hybridcache/sim/tree.hpp>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace hc = hybridcache;

namespace {

struct brute {
  std::map<std::uint32_t, std::uint32_t> kids;  ///< held a → distinct branches below it
  std::map<std::uint32_t, std::uint32_t> anc;   ///< held v → depth of nearest held ancestor
};

brute scan(const hc::tree_trace& t, const std::set<std::uint32_t>& held) {
  brute b;
  std::set<std::pair<std::uint32_t, std::uint32_t>> branches;  // (a, c)
  for (auto v : held) {
    std::uint32_t c = v, a = t.parent(v);
    while (a != hc::tree_trace::no_parent && held.count(a) == 0) {
      c = a;
      a = t.parent(a);
    }
    b.anc[v] = a == hc::tree_trace::no_parent ? 0 : t.depth(a);
    if (a != hc::tree_trace::no_parent) branches.emplace(a, c);
  }
  for (auto v : held) b.kids[v] = 0;
  for (const auto& [a, c] : branches) ++b.kids[a];
  return b;
}

/// A random trie of `n` nodes under `roots` namespace roots (each node's parent drawn among the
/// earlier ones, biased to recent nodes so that chains form).
hc::tree_trace random_trie(hc::detail::rng& g, std::size_t n, std::size_t roots) {
  hc::tree_trace t("random", 4);
  for (std::size_t r = 0; r < roots; ++r) t.root_of(std::to_string(r));
  while (t.node_count() < n) {
    const auto m = t.node_count();
    const auto back = std::min<std::uint64_t>(m, g.next() % 2 == 0 ? 3 : m);
    const auto p = static_cast<std::uint32_t>(m - 1 - g.next() % back);
    t.new_node(p, t.ns(p));
  }
  return t;
}

}  // namespace

TEST_CASE("held_tree: children and nearest held ancestors match the per-eviction scan") {
  hc::detail::rng g(24);
  for (int trial = 0; trial < 40; ++trial) {
    const std::size_t n = 5 + g.next() % 60, roots = 1 + g.next() % 3;
    const auto t = random_trie(g, n, roots);
    hc::detail::held_tree h;
    h.reset(t, trial % 2 == 0 ? hc::detail::trie_euler::of(t) : nullptr);
    std::set<std::uint32_t> held;
    for (int op = 0; op < 120; ++op) {
      const auto v = static_cast<std::uint32_t>(g.next() % t.node_count());
      const auto before = scan(t, held);
      std::set<std::uint32_t> reported, reported_kids;
      const auto note = [&](std::uint32_t x) { reported.insert(x); };
      const auto note_kids = [&](std::uint32_t x) { reported_kids.insert(x); };
      if (held.count(v) != 0) {
        h.remove(v, note, note_kids);
        held.erase(v);
      } else {
        h.add(v, note, note_kids);
        held.insert(v);
      }
      const auto after = scan(t, held);
      REQUIRE(h.nodes() == std::vector<std::uint32_t>(held.begin(), held.end()));
      REQUIRE(h.size() == held.size());
      for (auto x : held) {
        CHECK(h.holds(x));
        CHECK(h.children(x) == after.kids.at(x));
        CHECK(h.anc_depth(x) == after.anc.at(x));
        // every other held state whose ancestor changed was reported
        if (x != v && before.anc.count(x) != 0 && before.anc.at(x) != after.anc.at(x))
          CHECK(reported.count(x) == 1);
        if (x != v && before.kids.count(x) != 0 && before.kids.at(x) != after.kids.at(x))
          CHECK(reported_kids.count(x) == 1);
      }
      CHECK(reported.count(v) == 0);
      CHECK(reported_kids.count(v) == 0);
      for (auto x : reported_kids) CHECK(held.count(x) == 1);
    }
  }
}

TEST_CASE("held_tree: a hand-worked chain and fork") {
  // root ─ a ─ b ─ c
  //             └ d ─ e
  hc::tree_trace t("hand", 4);
  const auto root = t.root_of(std::nullopt);
  const auto a = t.new_node(root, 0), b = t.new_node(a, 0), c = t.new_node(b, 0),
             d = t.new_node(b, 0), e = t.new_node(d, 0);
  hc::detail::held_tree h;
  h.reset(t, nullptr);
  const auto none = [](std::uint32_t) {};
  h.add(c, none, none);
  h.add(e, none, none);
  h.add(a, none, none);  // a's branches: both through b → one child
  CHECK(h.children(a) == 1);
  CHECK(h.anc_depth(c) == 1);
  CHECK(h.anc_depth(e) == 1);
  std::vector<std::uint32_t> got;
  h.add(
      b, [&](std::uint32_t x) { got.push_back(x); }, none);  // b: two children (c, d's subtree)
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::uint32_t>{c, e});
  CHECK(h.children(b) == 2);
  CHECK(h.children(a) == 1);
  CHECK(h.anc_depth(b) == 1);
  CHECK(h.anc_depth(e) == 2);
  h.remove(a, none, none);
  CHECK(h.anc_depth(b) == 0);
  h.remove(b, none, none);
  CHECK(h.anc_depth(c) == 0);
  CHECK(h.anc_depth(e) == 0);
  CHECK(h.children(c) == 0);
}

namespace {

/// marconi_policy's rules with the eviction as the artifact's full scan (the code before
/// held_tree): per eviction, walk every held state up to its nearest held ancestor, count the
/// distinct branches, min-max normalise both terms over the candidates and take the first lowest
/// score in ascending id order. Tuning replays itself per α.
class scan_marconi final : public hc::tree_policy {
 public:
  scan_marconi(double alpha, bool tune, const hc::tree_cost_model& cost, std::size_t multiplier,
               std::size_t last)
      : alpha_(alpha), tune_(tune), cost_(cost), multiplier_(multiplier), last_(last) {}
  std::string name() const override { return "scan_marconi"; }
  void reset(const hc::tree_context& ctx) override {
    ctx_ = ctx;
    ts_.assign(ctx.trace->node_count(), 0);
    held_.clear();
    budget_ = ctx.pool->capacity();
    if (cost_.kv.mode == hc::kv_mode::joint && ctx.state_bytes > 0.0) {
      const auto kv_share = static_cast<std::size_t>(std::floor(cost_.kv.bytes / ctx.state_bytes));
      budget_ = budget_ > kv_share ? budget_ - kv_share : 0;
    }
  }
  std::size_t resume(const hc::tree_step& s) override {
    ++clock_;
    ++seen_;
    const auto path = s.path();
    const std::size_t hit = hc::deepest_held(*ctx_.pool, path, s.match);
    if (hit > 0) ts_[path[hit - 1]] = clock_;
    return hc::deepest_held(*ctx_.pool, path, s.usable);
  }
  void plan_prefill(const hc::tree_step& s, std::vector<std::size_t>& positions) override {
    branch_ = 0;
    const std::size_t b = s.match;
    if (b > s.resumed && b <= s.prompt_blocks) {
      const auto v = s.path()[b - 1];
      if (!ctx_.pool->holds(v) && ctx_.tree->children(v) > 0) {
        branch_ = b;
        positions.push_back(b);
      }
    }
  }
  void after_prefill(const hc::tree_step& s) override {
    if (branch_ == 0) return;
    insert_match(s.path());
    ++clock_;
    make_room(2);
    const auto v = s.path()[branch_ - 1];
    if (!ctx_.pool->holds(v) && ctx_.pool->size() < ctx_.pool->capacity()) {
      ctx_.pool->add(v);
      held_.insert(v);
      ts_[v] = clock_;
    }
  }
  void finish(const hc::tree_step& s) override {
    const auto path = s.path();
    if (tune_ && !tuned_ && window_ > 0 && seen_ == window_) {
      alpha_ = tune(s.index + 1);
      tuned_ = true;
    }
    if (branch_ == 0) {
      insert_match(path);
      ++clock_;
      make_room(1);
    }
    branch_ = 0;
    if (path.empty() || path.size() <= s.resumed) return;
    const auto v = path.back();
    if (ctx_.pool->holds(v) || ctx_.pool->size() >= ctx_.pool->capacity()) return;
    ctx_.pool->add(v);
    held_.insert(v);
    ts_[v] = clock_;
  }
  void on_dropped(std::uint32_t v) override { held_.erase(v); }
  hc::kv_order kv_eviction() const override {
    return ctx_.kv == hc::kv_mode::joint ? hc::kv_order::stateless_first : hc::kv_order::lru;
  }
  std::uint32_t shed_state() override {
    if (held_.empty()) return hc::tree_trace::no_parent;
    const auto v = pick();
    forget(v);
    return v;
  }
  double alpha() const { return alpha_; }

 private:
  void insert_match(std::span<const std::uint32_t> path) {
    ++clock_;
    const std::size_t d = hc::deepest_held(*ctx_.pool, path, path.size());
    if (d > 0) ts_[path[d - 1]] = clock_;
  }
  void make_room(std::size_t need) {
    auto& pool = *ctx_.pool;
    if (ctx_.grow && pool.size() + need > pool.capacity()) ctx_.grow(need);
    if (pool.size() + need <= pool.capacity()) return;
    ++clock_;
    if (window_ == 0) window_ = multiplier_ * seen_;
    while (!held_.empty() && pool.size() + need > pool.capacity()) {
      const auto v = pick();
      ctx_.pool->remove(v);
      forget(v);
      if (ctx_.grow && pool.size() + need > pool.capacity()) ctx_.grow(need);
    }
  }
  /// Off the books; with one branch of held states below, those whose nearest held ancestor
  /// was `v` (the node Marconi merges `v` into) keep the later access time.
  void forget(std::uint32_t v) {
    std::set<std::uint32_t> tops;  // the first node below v on each branch to a held state
    std::vector<std::uint32_t> below;
    for (const auto x : held_) {
      if (x == v) continue;
      std::uint32_t c = x, a = ctx_.trace->parent(x);
      while (a != hc::tree_trace::no_parent && a != v && !ctx_.pool->holds(a)) {
        c = a;
        a = ctx_.trace->parent(a);
      }
      if (a == v) {
        tops.insert(c);
        below.push_back(x);
      }
    }
    held_.erase(v);
    if (tops.size() == 1)
      for (const auto x : below) ts_[x] = std::max(ts_[x], ts_[v]);
  }
  static void normalize(std::vector<double>& x) {
    if (x.size() > 1) {
      const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
      const double a = *lo, b = *hi;
      if (a != b) {
        for (auto& v : x) v = (v - a) / (b - a);
        return;
      }
    }
    std::fill(x.begin(), x.end(), 1.0);
  }
  std::uint32_t pick() {
    const auto& t = *ctx_.trace;
    const std::vector<std::uint32_t> held(held_.begin(), held_.end());
    std::vector<double> anc_depth(held.size(), 0.0);
    std::set<std::pair<std::uint32_t, std::uint32_t>> branches;
    for (std::size_t i = 0; i < held.size(); ++i) {
      std::uint32_t c = held[i], a = t.parent(c);
      while (a != hc::tree_trace::no_parent && !ctx_.pool->holds(a)) {
        c = a;
        a = t.parent(a);
      }
      if (a != hc::tree_trace::no_parent) {
        anc_depth[i] = static_cast<double>(t.depth(a));
        branches.emplace(a, c);
      }
    }
    std::map<std::uint32_t, std::size_t> kids;
    for (const auto& [a, c] : branches) ++kids[a];
    std::vector<std::size_t> cand;
    for (std::size_t i = 0; i < held.size(); ++i)
      if (kids[held[i]] <= 1) cand.push_back(i);
    if (cand.empty())
      for (std::size_t i = 0; i < held.size(); ++i) cand.push_back(i);
    const double B = static_cast<double>(t.block());
    const double kv_token = cost_.model.kv_bytes_per_token();
    std::vector<double> eff(cand.size()), rec(cand.size());
    for (std::size_t c = 0; c < cand.size(); ++c) {
      const std::size_t i = cand[c];
      const double dv = static_cast<double>(t.depth(held[i])), da = anc_depth[i];
      eff[c] = ctx_.flops((dv - da) * B, da * B) / (ctx_.state_bytes + kv_token * dv * B);
      const double age = static_cast<double>(clock_ - std::min(clock_, ts_[held[i]]));
      rec[c] = 1.0 / std::max(age, 1e-9);
    }
    normalize(eff);
    normalize(rec);
    std::size_t best = 0;
    for (std::size_t c = 1; c < cand.size(); ++c)
      if (alpha_ * eff[c] + rec[c] < alpha_ * eff[best] + rec[best]) best = c;
    return held[cand[best]];
  }
  double tune(std::size_t end) {
    const auto& t = *ctx_.trace;
    double best = 0.0, best_saved = -1.0;
    for (double a : hc::marconi_policy::default_grid()) {
      scan_marconi p(a, false, cost_, multiplier_, last_);
      hc::tree_replayer r(t, p, budget_, *ctx_.usable, cost_, 0);
      double saved = 0.0;
      for (std::size_t i = 0; i < end; ++i) {
        r.step();
        if (i + last_ >= end)
          saved += ctx_.flops(static_cast<double>(r.last_resume() * t.block()), 0.0);
      }
      if (saved > best_saved) {
        best_saved = saved;
        best = a;
      }
    }
    return best;
  }

  double alpha_;
  bool tune_;
  hc::tree_cost_model cost_;
  std::size_t multiplier_, last_;
  hc::tree_context ctx_{};
  std::vector<std::uint64_t> ts_;
  std::set<std::uint32_t> held_;
  std::uint64_t clock_ = 0;
  std::size_t seen_ = 0, window_ = 0, budget_ = 0, branch_ = 0;
  bool tuned_ = false;
};

}  // namespace

TEST_CASE("marconi_policy: the same states, request by request, as the full-scan eviction") {
  // Small synthetic multi-turn traces (shared system prompts, branches, agent rewrites), every
  // KV mode (a tight KV budget drops states), fixed α and the artifact's tuning.
  int runs = 0;
  for (std::uint64_t seed = 1; seed <= 3; ++seed) {
    hc::multi_turn_options o;
    o.sessions = 30;
    o.system_tokens = 256;
    o.seed = seed;
    const auto t = hc::synthetic_multi_turn(o);
    for (const auto mode : {hc::kv_mode::unlimited, hc::kv_mode::separate, hc::kv_mode::joint}) {
      hc::tree_cost_model cost;
      cost.kv.mode = mode;
      cost.kv.bytes = 300.0 * static_cast<double>(t.block()) * cost.model.kv_bytes_per_token();
      const auto usable = hc::usable_matches(t, cost);
      for (const std::size_t budget : {2, 3, 5, 8, 16}) {
        for (const double alpha : {-1.0, 0.0, 0.3, 1.0, 2.0}) {  // -1: tuned from α = 0
          const bool tune = alpha < 0.0;
          const double a0 = tune ? 0.0 : alpha;
          hc::marconi_policy fast(a0, tune, cost, "marconi", hc::marconi_policy::default_grid(), 2,
                                  40);
          scan_marconi ref(a0, tune, cost, 2, 40);
          hc::tree_replayer rf(t, fast, budget, usable, cost);
          hc::tree_replayer rr(t, ref, budget, usable, cost);
          bool same = true;
          for (std::size_t i = 0; i < t.size() && same; ++i) {
            rf.step();
            rr.step();
            same = rf.last_resume() == rr.last_resume() && rf.pool().size() == rr.pool().size();
            for (std::uint32_t v = 0; same && v < t.node_count(); ++v)
              same = rf.pool().holds(v) == rr.pool().holds(v);
          }
          CHECK(same);
          CHECK(fast.alpha() == ref.alpha());
          CHECK(rf.metrics().prefill_flops == rr.metrics().prefill_flops);
          ++runs;
        }
      }
    }
  }
  CHECK(runs == 225);
}
