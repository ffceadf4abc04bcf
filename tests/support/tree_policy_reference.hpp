#pragma once
// SPDX-License-Identifier: Apache-2.0
// An independent model of tree::state_policy's books for the model-based test: node → parent,
// depth, EW match-end weight (long double, decayed eagerly: every weight × γ per observation),
// state bytes and pins, all in std::map; the fresh-end prior (policy_options::fresh_prior) as
// its own eager rule: an inserted end no match has ended at gets weight p = (h + 1)/(n + 2), h
// and n the EW (γ per insert) counts of such ends matched later / inserted, divided by
// (1 − γ)·D when that exceeds 1 (D the EW mean age, in observations, at the first match, read off
// the prior's decay); a match replaces it.
// ΔE[r] of dropping a state is computed by evaluating E[r] with and without it, walking every node
// up to its deepest state — no shared code with include/hybridcache/tree.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace hybridcache_test {

struct tree_policy_model {
  struct node {
    std::uint32_t parent;  // UINT32_MAX for a namespace root
    std::size_t depth;     // tokens
    long double weight = 0;
    std::size_t bytes = 0;
    int pins = 0;
    bool fresh = false;  // weight is the prior of an inserted end, no match ended here yet
  };
  std::map<std::uint32_t, node> nodes;
  long double gamma = 1;
  bool prior = true;
  long double ends = 0, ends_hit = 0, delay_sum = 0, delay_n = 0;
  [[nodiscard]] long double share() const { return (ends_hit + 1) / (ends + 2); }

  void observe(std::uint32_t v) {
    auto& e = nodes.at(v);
    if (e.fresh) {  // its age from the prior's eager decay: weight = p_insert · γ^age
      const long double ratio = e.weight / share();
      const long double age =
          (gamma < 1 && ratio > 0 && ratio < 1) ? std::log(ratio) / std::log(gamma) : 0;
      delay_sum = delay_sum * gamma + age;
      delay_n = delay_n * gamma + 1;
      e.fresh = false;
      e.weight = 0;
      ends_hit += 1;
    }
    for (auto& [id, n] : nodes) n.weight *= gamma;
    e.weight += 1;
  }
  /// An insert whose last full block is `v`.
  void inserted_end(std::uint32_t v) {
    auto& e = nodes.at(v);
    if (!prior || e.parent == UINT32_MAX || e.fresh || e.weight > 0) return;
    ends = ends * gamma + 1;
    ends_hit *= gamma;
    long double p = share();
    if (gamma < 1 && delay_n > 0) {
      const long double spread = (1 - gamma) * delay_sum / delay_n;
      if (spread > 1) p /= spread;
    }
    e.weight = p;
    e.fresh = true;
  }
  /// Leaf `v` is erased: its real weight moves to its parent, a prior is dropped.
  void erase(std::uint32_t v) {
    auto& e = nodes.at(v);
    if (!e.fresh) nodes.at(e.parent).weight += e.weight;
    nodes.erase(v);
  }
  [[nodiscard]] long double total() const {
    long double t = 0;
    for (const auto& [id, n] : nodes) t += n.weight;
    return t;
  }
  [[nodiscard]] std::size_t used() const {
    std::size_t u = 0;
    for (const auto& [id, n] : nodes) u += n.bytes;
    return u;
  }
  /// Σ_v w(v)(depth(v) − depth(anchor(v))), unnormalised, with `skip` treated as stateless.
  [[nodiscard]] long double cost(std::uint32_t skip = UINT32_MAX) const {
    long double c = 0;
    for (const auto& [id, n] : nodes) {
      std::uint32_t a = id;
      while (nodes.at(a).parent != UINT32_MAX && (nodes.at(a).bytes == 0 || a == skip))
        a = nodes.at(a).parent;
      c += n.weight * static_cast<long double>(n.depth - nodes.at(a).depth);
    }
    return c;
  }
  /// The least ΔE[r] per byte over unpinned states other than `exclude` (unnormalised).
  [[nodiscard]] long double min_delta_per_byte(std::uint32_t exclude) const {
    const long double base = cost();
    long double best = -1;
    for (const auto& [id, n] : nodes) {
      if (n.bytes == 0 || n.pins != 0 || id == exclude) continue;
      const long double d = (cost(id) - base) / static_cast<long double>(n.bytes);
      if (best < 0 || d < best) best = d;
    }
    return best;
  }
};

}  // namespace hybridcache_test
