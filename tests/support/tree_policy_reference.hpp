#pragma once
// SPDX-License-Identifier: Apache-2.0
// An independent model of state_policy's books for the model-based test: node → parent,
// depth, EW match-end weight (long double, decayed eagerly: every weight × γ per observation),
// state bytes and pins, all in std::map; the fresh-end prior (policy_options::fresh_prior) as
// its own eager rule: an inserted end no match has ended at gets weight p = (h + 1)/(n + 2), h
// and n the EW (γ per insert) counts of such ends matched later / inserted, divided by
// (1 − γ)·D when that exceeds 1 (D the EW mean age, in observations, at the first match, read off
// the prior's decay); a match replaces it.
// Repeat discount (policy_options::repeat_discount): a non-root node's first real match adds
// q = (h2 + 1)/(n1 + 2) instead of 1 (n1 ×γ per first match, h2 the second matches since); its
// second match first multiplies its (decayed) weight by 1/q (q before h2 counts it), then adds 1.
// Age-conditioned value (policy_options::age_value): every state remembers the observation count
// at its admission / last resume; a resume adds a hit, an eviction or drop an end, at the age
// obs − touched, to per-age-class counts decayed eagerly (every count × γ per event); the class of
// an age a is the number of binary digits of a (0 for a = 0). ΔE[r] per byte is multiplied by
// (H(≥c) + P̄)/(N(≥c) + 1), P̄ = (H + 1/2)/(N + 1), H / N the hits / hits + ends in classes ≥ c.
// Prefill-end prior (policy_options::prefill_prior): a noted prefill end no match has ended at
// (and holding no prior) gets p_P = (h_P + 1)/(n_P + 2), divided by (1 − γ)·D_P when that
// exceeds 1, with its own counts n_P (×γ per noted end), h_P and mean age D_P — the same rule as
// the fresh-end prior with separate books, no junction; its first match feeds only those books.
// Prefill plan (state_policy::prefill_plan), with free memory filled (policy_options::fill_free):
// the grid positions p in (resume, prompt] on the block grid: on the matched path, a stateless
// node that is planned (the caller's predicate) or the junction (p = matched < prompt); beyond
// it, the deepest (the tail); then, with fill_free, k = min(F, n) more of the n other candidates
// (beyond the match, or on it without a state), F = floor((capacity − used) / state_bytes) − (the
// plan so far), chosen as the i·n/k-th (rounded up, 1-based) for i = 1..k, in long double.
// Erase (issue #21): a node's mass is its real weight plus, while no match has ended there, its
// prior, kept in two fields. Erasing a leaf drops its prior and adds its real weight to its
// parent's real weight, where it stays (the parent's first real match zeroes only the parent's
// prior); erasing a namespace root removes its weight from the total. The shares mass / total
// are a distribution over the live nodes (`share`).
// Node ids are the policy's 64-bit handles, used as opaque map keys.
// ΔE[r] of dropping a state is computed by evaluating E[r] with and without it, walking every node
// up to its deepest state — no shared code with include/hybridcache/tree.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <vector>

namespace hybridcache_test {

struct tree_policy_model {
  /// "No node": the parent of a namespace root.
  static constexpr std::uint64_t none = ~std::uint64_t{0};
  struct node {
    std::uint64_t parent;    // none for a namespace root
    std::size_t depth;       // tokens
    long double weight = 0;  // real: matches that ended here or at erased descendants
    long double prior = 0;   // the prior of an inserted / prefill end (while fresh), else 0
    std::size_t bytes = 0;
    int pins = 0;
    bool fresh = false;         // holds a prior: no match ended here since it was set
    bool prefill = false;       // with fresh: the prior is the prefill-end prior p_P
    int hits = 0;               // real matches ended here, counted up to 2
    std::uint64_t touched = 0;  // observation count at the state's admission / last resume
  };
  bool age_value = true;
  std::uint64_t obs = 0;  // observations so far
  std::map<int, long double> age_hits, age_ends;
  static int age_class(std::uint64_t a) {
    int c = 0;
    while (a > 0) {
      ++c;
      a /= 2;
    }
    return c;
  }
  void age_event(std::map<int, long double>& bins, std::uint64_t a) {
    if (!age_value) return;
    for (auto& [c, x] : age_hits) x *= gamma;
    for (auto& [c, x] : age_ends) x *= gamma;
    bins[age_class(a)] += 1;
  }
  /// The engine stored a state at `v`.
  void admitted(std::uint64_t v, std::size_t bytes) {
    nodes.at(v).bytes = bytes;
    nodes.at(v).touched = obs;
  }
  /// A request resumes from `v` (call before `observe`).
  void resumed(std::uint64_t v) {
    auto& n = nodes.at(v);
    if (n.bytes == 0) return;
    age_event(age_hits, obs - n.touched);
    n.touched = obs;
  }
  /// The age of the state at `v` now.
  [[nodiscard]] std::uint64_t age_of(std::uint64_t v) const { return obs - nodes.at(v).touched; }
  /// P(hit | age of the state at v); 1 without the age-conditioned value.
  [[nodiscard]] long double hit_chance(std::uint64_t v) const { return hit_chance_at(age_of(v)); }
  /// P(hit | age) of a state of age `age` (a state just admitted: 0).
  [[nodiscard]] long double hit_chance_at(std::uint64_t age) const {
    if (!age_value) return 1;
    const int c = age_class(age);
    long double h = 0, n = 0, ht = 0, nt = 0;
    for (const auto& [k, x] : age_hits) {
      ht += x;
      nt += x;
      if (k >= c) h += x, n += x;
    }
    for (const auto& [k, x] : age_ends) {
      nt += x;
      if (k >= c) n += x;
    }
    const long double all = (ht + 0.5L) / (nt + 1);
    return (h + all) / (n + 1);
  }
  std::map<std::uint64_t, node> nodes;
  long double gamma = 1;
  bool prior = true;
  bool repeat = true;
  long double once_n = 0, once_hit = 0;
  [[nodiscard]] long double repeat_share() const { return (once_hit + 1) / (once_n + 2); }
  long double ends = 0, ends_hit = 0, delay_sum = 0, delay_n = 0;
  [[nodiscard]] long double share() const { return (ends_hit + 1) / (ends + 2); }

  void observe(std::uint64_t v) {
    ++obs;
    auto& e = nodes.at(v);
    if (e.fresh && e.prefill) {  // the prefill-end books: prior = p_P at note · γ^age
      const long double ratio = e.prior / prefill_share();
      const long double age =
          (gamma < 1 && ratio > 0 && ratio < 1) ? std::log(ratio) / std::log(gamma) : 0;
      pre_delay_sum = pre_delay_sum * gamma + age;
      pre_delay_n = pre_delay_n * gamma + 1;
      e.fresh = e.prefill = false;
      e.prior = 0;
      pre_hit += 1;
    } else if (e.fresh) {  // its age from the prior's eager decay: prior = p_insert · γ^age
      const long double ratio = e.prior / share();
      const long double age =
          (gamma < 1 && ratio > 0 && ratio < 1) ? std::log(ratio) / std::log(gamma) : 0;
      delay_sum = delay_sum * gamma + age;
      delay_n = delay_n * gamma + 1;
      e.fresh = false;
      e.prior = 0;
      ends_hit += 1;
    }
    for (auto& [id, n] : nodes) {
      n.weight *= gamma;
      n.prior *= gamma;
    }
    long double add = 1;
    if (repeat && e.parent != none && e.hits == 0) {
      once_n = once_n * gamma + 1;
      once_hit *= gamma;
      add = repeat_share();
    } else if (repeat && e.parent != none && e.hits == 1) {
      e.weight /= repeat_share();
      once_hit += 1;
    }
    if (e.hits < 2) ++e.hits;
    e.weight += add;
  }
  /// p / max(1, (1 − γ) · sum / n): a prior shrunk by the mean age at its first match.
  [[nodiscard]] long double discounted(long double p, long double sum, long double n) const {
    if (gamma < 1 && n > 0) {
      const long double spread = (1 - gamma) * sum / n;
      if (spread > 1) p /= spread;
    }
    return p;
  }
  /// An insert whose last full block is `v`.
  void inserted_end(std::uint64_t v) {
    auto& e = nodes.at(v);
    if (!prior || e.parent == none || e.fresh || e.weight > 0) return;
    ends = ends * gamma + 1;
    ends_hit *= gamma;
    e.prior = discounted(share(), delay_sum, delay_n);
    e.fresh = true;
  }
  bool prefill_prior = true;
  long double pre_ends = 0, pre_hit = 0, pre_delay_sum = 0, pre_delay_n = 0;
  [[nodiscard]] long double prefill_share() const { return (pre_hit + 1) / (pre_ends + 2); }
  /// The engine's prefill ended at `v` (note_prefill_end).
  void prefill_end(std::uint64_t v) {
    auto& e = nodes.at(v);
    if (!prefill_prior || e.parent == none || e.fresh || e.weight > 0) return;
    pre_ends = pre_ends * gamma + 1;
    pre_hit *= gamma;
    long double p = discounted(prefill_share(), pre_delay_sum, pre_delay_n);
    e.prior = p;
    e.fresh = e.prefill = true;
  }
  /// The prefill plan after a match that resumed at depth `resume` and matched `path` (node of
  /// each matched block), for a prompt of `prompt` tokens and chunk ends `grid`.
  [[nodiscard]] std::vector<std::size_t> prefill_plan(
      std::size_t block, std::size_t resume, const std::vector<std::uint64_t>& path,
      std::size_t prompt, const std::vector<std::size_t>& grid,
      const std::function<bool(std::uint64_t)>& planned, bool fill_free, std::size_t capacity,
      std::size_t state_bytes) const {
    const std::size_t matched = path.size() * block;
    std::set<std::size_t> plan;
    std::size_t tail = 0;
    std::set<std::size_t> other;
    for (std::size_t p : grid) {
      if (p == 0 || p % block != 0 || p <= resume || p > prompt) continue;
      if (p <= matched) {
        const std::uint64_t v = path[p / block - 1];
        if (nodes.at(v).bytes != 0) continue;
        if ((p == matched && prompt > matched) || planned(v))
          plan.insert(p);
        else
          other.insert(p);
      } else {
        if (p > tail) {
          if (tail != 0) other.insert(tail);
          tail = p;
        } else {
          other.insert(p);
        }
      }
    }
    if (tail != 0) plan.insert(tail);
    for (std::size_t p : plan) other.erase(p);
    if (fill_free) {
      const std::size_t room = (capacity - used()) / state_bytes;
      if (room > plan.size()) {
        const std::vector<std::size_t> c(other.begin(), other.end());
        const std::size_t n = c.size(), f = room - plan.size(), k = f < n ? f : n;
        for (std::size_t i = 1; i <= k; ++i) {
          const long double at = std::ceil(static_cast<long double>(i) * n / k);
          plan.insert(c[static_cast<std::size_t>(at) - 1]);
        }
      }
    }
    return {plan.begin(), plan.end()};
  }
  /// Leaf `v` is erased: its real weight moves to its parent's real weight (a namespace root's
  /// leaves the books), its prior is dropped.
  void erase(std::uint64_t v) {
    const auto& e = nodes.at(v);
    if (e.parent != none) nodes.at(e.parent).weight += e.weight;
    nodes.erase(v);
  }
  /// w(v): real weight plus prior.
  [[nodiscard]] long double mass(const node& n) const { return n.weight + n.prior; }
  [[nodiscard]] long double total() const {
    long double t = 0;
    for (const auto& [id, n] : nodes) t += mass(n);
    return t;
  }
  /// The share of `v`: mass / total over the live nodes (0 while there is no mass).
  [[nodiscard]] long double share(std::uint64_t v) const {
    const long double t = total();
    return t > 0 ? mass(nodes.at(v)) / t : 0;
  }
  [[nodiscard]] std::size_t used() const {
    std::size_t u = 0;
    for (const auto& [id, n] : nodes) u += n.bytes;
    return u;
  }
  /// Σ_v w(v)(depth(v) − depth(anchor(v))), unnormalised, with `skip` treated as stateless and
  /// `add` as holding a state.
  [[nodiscard]] long double cost(std::uint64_t skip = none, std::uint64_t add = none) const {
    long double c = 0;
    for (const auto& [id, n] : nodes) {
      std::uint64_t a = id;
      while (nodes.at(a).parent != none && ((nodes.at(a).bytes == 0 && a != add) || a == skip))
        a = nodes.at(a).parent;
      c += mass(n) * static_cast<long double>(n.depth - nodes.at(a).depth);
    }
    return c;
  }
  /// No real match has ended at `v`: its mass is a prior or nothing (admit_by_value).
  [[nodiscard]] bool speculative(std::uint64_t v) const {
    return nodes.at(v).fresh || nodes.at(v).weight == 0;
  }
  /// The value a state of `bytes` at `v` (which holds none) would be admitted with: the cost it
  /// would remove per byte times P(hit | age 0).
  [[nodiscard]] long double admission_value(std::uint64_t v, std::size_t bytes) const {
    return (cost() - cost(none, v)) / static_cast<long double>(bytes) * hit_chance_at(0);
  }
  /// The least ΔE[r] per byte over unpinned states other than `exclude` (unnormalised).
  [[nodiscard]] long double min_delta_per_byte(std::uint64_t exclude) const {
    const long double base = cost();
    long double best = -1;
    for (const auto& [id, n] : nodes) {
      if (n.bytes == 0 || n.pins != 0 || id == exclude) continue;
      const long double d = (cost(id) - base) / static_cast<long double>(n.bytes) * hit_chance(id);
      if (best < 0 || d < best) best = d;
    }
    return best;
  }
};

}  // namespace hybridcache_test
