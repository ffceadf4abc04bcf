#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `tree_statistics`: the law the tree policy learns online on its tree (DESIGN §3's
/// exponentially weighted histogram, carried onto the prefix tree as DESIGN §7 asks;
/// docs/tree.md "Structure"). Per node v of a `tree_index` it keeps the match-end mass
///
///   ŵ(v) = (1−γ)/(1−γ^n) Σ_{s≤n} γ^{n−s} [match s ended at v],
///
/// stored unnormalised as w(v) = Σ_s γ^{−s}[…] times a common scale that is folded back into
/// every weight (and every state's region, through the caller's callback) before it could pass
/// 1e150, so every value stays finite forever at O(1) amortised cost; ŵ(v) = w(v) / Σ_u w(u).
/// Beside the counts it learns the priors and the discounts of policy_options, every one
/// learned online (docs/tree.md, "Constants"):
///
/// - the fresh-end prior π(e) = p̂ · min(1, 1/((1 − γ) D̂)) observations at the end e of an
///   inserted sequence where no match has ended yet, p̂ = (h + 1)/(n + 2) the EW share of such
///   ends that a later match ended at, D̂ their EW mean age then; the first real match at e
///   replaces π (docs/tree.md, "Fresh ends"; `fresh_prior`);
/// - the prefill-end prior π_P = p̂_P · min(1, 1/((1 − γ) D̂_P)), the same law on its own books
///   (`prefill_prior`);
/// - the branch prior π_I = p̂_I · min(1, 1/((1 − γ) D̂_I)), the same law on its own books, with
///   the divergence law F_j = P(D ≤ 2^j − 1 | D ≥ 1) of where requests leave a cached path (EW
///   per event, log2 buckets) that chooses the branch point (`branch_prior`, added after 0.2.0);
/// - the repeat discount: a node's first real match counts q = (h₂ + 1)/(n₁ + 2) observations,
///   its second restores the first to a full one (×1/q) (`repeat_discount`);
/// - P(hit | age) = (H_{≥b} + s·P̄)/(H_{≥b} + E_{≥b} + s), b = bit_width(age), from EW counts of
///   resumes (H_j) and of state ends (E_j) per log2 age bucket (`age_value`, EVA); with
///   `age_classes`, the same law on the books of each of two classes of states (EVA's classes):
///   those admitted at a node holding a prior (fresh end, prefill end, branch point: class 1) and
///   the others (class 0), each P̄ its class's own.
///
/// The constants that are not learned are fixed a priori: the +1/+2 of p̂ and q (a uniform
/// Laplace prior on a share never observed), the s/2 and s of P(hit | age) (one pseudo-event at
/// the all-age share, and the all-age share itself one pseudo-event at 1/2), the log2 age
/// buckets (ages span 0 to 2^32 observations; a power-of-two grid gives every scale the same
/// resolution in 33 bins) and the fold-back threshold 1e150 (any value far below the double
/// range's 1.8e308 with room for one more factor 1/γ; it changes no result, only when the scale
/// is folded back).
///
/// A held state's region W(c) (the mass anchored at c, tree/eviction.hpp) changes with the
/// weights: the calls that change a weight below a state take that region as a pointer (nullptr:
/// the anchor is a namespace root, whose empty state is free).

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/tree/index.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// What `tree_statistics` learns, and how fast (the statistics' fields of policy_options).
struct tree_statistics_options {
  double gamma = 0.99;  ///< γ, the decay per observation, in (0, 1]
  bool fresh_prior = true;
  bool repeat_discount = true;
  bool age_value = true;
  bool prefill_prior = true;
  bool branch_prior = true;
  bool age_classes = false;  ///< P(hit | age) per class of state (policy_options::age_classes)
};

/// The statistics of the tree policy (see the file comment). Not thread-safe.
class tree_statistics {
 public:
  using slot_id = tree_node::slot_id;
  static constexpr slot_id no_slot = tree_node::no_slot;
  /// bit_width(a): bucket 0 holds age 0, bucket j ≥ 1 the ages [2^{j−1}, 2^j).
  static constexpr std::size_t age_buckets = 33;

  /// p · min(1, 1 / ((1 − γ) D̂)) with D̂ = delay_sum / delay_n (p unchanged before any first
  /// match or with γ = 1): a match expected within the EW memory 1/(1 − γ) counts as one
  /// observation, a later one as its rate p / D̂ per observation times that memory.
  [[nodiscard]] static double delay_discounted(double gamma, double p, double delay_sum,
                                               double delay_n) noexcept {
    if (!(gamma < 1.0) || !(delay_n > 0.0)) return p;
    const double spread = (1.0 - gamma) * (delay_sum / delay_n);
    return spread > 1.0 ? p / spread : p;
  }
  [[nodiscard]] static std::size_t age_bucket(std::uint32_t age) noexcept {
    return static_cast<std::size_t>(std::bit_width(age));
  }

  /// @pre o.gamma ∈ (0, 1] (policy_options validates it).
  explicit tree_statistics(const tree_statistics_options& o)
      : opts_(o), gamma_(o.gamma), inv_gamma_(1.0 / o.gamma) {}

  // ---- observations ---------------------------------------------------------------------

  /// One EW observation: a match ended at `v`. If v holds a fresh-end or prefill-end prior, the
  /// real match replaces it (and its age, from the prior's decay, is learned); with the repeat
  /// discount a first match counts q, a second restores the first. `region` is W of v's anchor
  /// (nullptr for a root); `scale_regions(f)` multiplies every held region by f when the common
  /// scale is folded back.
  template <class ScaleRegions>
  void observe(tree_index& ix, slot_id v, double* region, ScaleRegions&& scale_regions) {
    if ((ix[v].flags & (tree_node::fresh_flag | tree_node::prefill_flag)) ==
        (tree_node::fresh_flag | tree_node::prefill_flag)) {
      // The first real match at a prefill end replaces π_P.
      replace_prior(ix, v, region, prefill_share(), pre_delay_sum_, pre_delay_n_, pre_hit_);
    } else if (ix[v].flags & tree_node::branch_flag) {  // a match ended at a branch point
      branch_hit(ix, v, region);
    } else if (ix[v].flags & tree_node::fresh_flag) {  // the first real match replaces π
      replace_prior(ix, v, region, fresh_share(), delay_sum_, delay_n_, ends_hit_);
    }
    scale_ *= inv_gamma_;
    if (scale_ > 1e150) {
      const double f = 1.0 / scale_;
      for (auto& n : ix.slots()) n.weight *= f;
      for (auto& [c, w] : carried_) w *= f;
      scale_regions(f);
      total_ *= f;
      scale_ = 1.0;
    }
    double add = scale_;
    tree_node& n = ix[v];
    if (opts_.repeat_discount && n.parent != no_slot && !(n.flags & tree_node::repeat_flag)) {
      if (!(n.flags & tree_node::once_flag)) {  // first real match: q observations
        once_n_ = once_n_ * gamma_ + 1.0;
        once_hit_ *= gamma_;
        add = repeat_share() * scale_;
        n.flags |= tree_node::once_flag;
      } else {  // second: the first becomes a full observation
        const double extra = n.weight * (1.0 / repeat_share() - 1.0);
        once_hit_ += 1.0;
        n.weight += extra;
        if (region) *region += extra;
        total_ += extra;
        n.flags =
            static_cast<std::uint8_t>((n.flags & ~tree_node::once_flag) | tree_node::repeat_flag);
      }
    }
    n.weight += add;
    if (region) *region += add;
    total_ += add;
    ++observations_;
  }

  /// An inserted sequence ended at `v`. A non-root node no match has ended at yet gets the
  /// fresh-end prior π = p̂ · min(1, 1/((1 − γ) D̂)) · scale. @returns the mass added at v (to
  /// add to W of v's anchor), or nothing when no prior was set.
  std::optional<double> note_end(tree_index& ix, slot_id v) {
    return set_prior(ix, v, opts_.fresh_prior, ends_, ends_hit_, tree_node::fresh_flag,
                     [this] { return fresh_prior(); });
  }

  /// A request's prefill ended at `v`: a non-root node no match has ended at yet (no weight, no
  /// prior) gets the prefill-end prior π_P · scale. @returns the mass added, or nothing.
  std::optional<double> note_prefill_end(tree_index& ix, slot_id v) {
    return set_prior(ix, v, opts_.prefill_prior, pre_ends_, pre_hit_,
                     tree_node::fresh_flag | tree_node::prefill_flag,
                     [this] { return prefill_prior_mass(); });
  }

  /// The engine will snapshot at `v`, a learned branch point of a request's prompt
  /// (`state_policy::branch_point`): a non-root node no match has ended at yet gets the branch
  /// prior π_I = p̂_I · min(1, 1/((1 − γ) D̂_I)) · scale. @returns the mass added, or nothing.
  std::optional<double> note_branch(tree_index& ix, slot_id v) {
    return set_prior(ix, v, opts_.branch_prior, br_ends_, br_hit_,
                     tree_node::fresh_flag | tree_node::branch_flag,
                     [this] { return branch_prior_mass(); });
  }
  /// A match passed through (or ended at) `v`, which holds a branch prior: the prior is dropped
  /// (the match's own mass is real) and the branch point counted as reached, at the prior's age.
  /// `region` is W of v's anchor (nullable).
  void branch_hit(tree_index& ix, slot_id v, double* region) {
    replace_prior(ix, v, region, branch_share(), br_delay_sum_, br_delay_n_, br_hit_);
  }
  /// Whether `v` holds a branch prior.
  [[nodiscard]] static bool has_branch_prior(const tree_index& ix, slot_id v) noexcept {
    return (ix[v].flags & tree_node::branch_flag) != 0;
  }
  /// A request's prompt left the cached tree `blocks` ≥ 1 blocks before the end of its usable
  /// match (its divergence D): one EW event of the divergence law (γ per event).
  void note_divergence(std::size_t blocks) {
    if (!opts_.branch_prior || blocks == 0) return;
    div_scale_ *= inv_gamma_;
    if (div_scale_ > 1e150) {
      for (auto& b : div_) b /= div_scale_;
      div_total_ /= div_scale_;
      div_scale_ = 1.0;
    }
    div_[age_bucket(static_cast<std::uint32_t>(std::min<std::size_t>(blocks, 0xFFFFFFFFu)))] +=
        div_scale_;
    div_total_ += div_scale_;
  }
  /// The EW share of divergences in bucket j (D ∈ [2^{j−1}, 2^j − 1]); 0 before any.
  [[nodiscard]] double divergence_share(std::size_t j) const noexcept {
    return (div_total_ > 0.0 && j < age_buckets) ? div_[j] / div_total_ : 0.0;
  }
  /// F_j = P(D ≤ 2^j − 1 | D ≥ 1): the EW share of divergences in buckets 1…j; 0 before any.
  [[nodiscard]] double divergence_within(std::size_t j) const noexcept {
    double s = 0.0;
    for (std::size_t i = 1; i <= j && i < age_buckets; ++i) s += divergence_share(i);
    return s;
  }

  /// Whether `v` still holds a fresh-end or prefill-end prior.
  [[nodiscard]] static bool has_prior(const tree_index& ix, slot_id v) noexcept {
    return ix[v].holds_prior();
  }
  /// Removes the prior of `v` from v, the total and `region` (W of v's anchor, nullable); mass
  /// that erased children carried to v stays (it is real: matches that ended below v).
  void drop_prior(tree_index& ix, slot_id v, double* region) {
    tree_node& n = ix[v];
    double prior = n.weight;
    if (const auto it = carried_.find(v); it != carried_.end()) {
      prior = std::max(0.0, n.weight - it->second);
      n.weight = it->second;
      carried_.erase(it);
    } else {
      n.weight = 0.0;
    }
    n.flags &= static_cast<std::uint8_t>(
        ~(tree_node::fresh_flag | tree_node::prefill_flag | tree_node::branch_flag));
    total_ = std::max(0.0, total_ - prior);
    if (region) *region = std::max(0.0, *region - prior);
  }

  /// Leaf `v` is about to leave the index (its prior, if any, dropped first with `drop_prior`):
  /// its mass moves to its parent (matches that ended there now end one block up) and is
  /// remembered as carried if the parent holds a prior; a namespace root's mass leaves the total
  /// (exactly 0 once `last_namespace` goes), so the shares still sum to 1.
  void forget(tree_index& ix, slot_id v, bool last_namespace) {
    const tree_node& n = ix[v];
    if (n.parent == no_slot) {
      total_ = last_namespace ? 0.0 : std::max(0.0, total_ - n.weight);
    } else {
      tree_node& p = ix[n.parent];
      p.weight += n.weight;
      if ((p.flags & tree_node::fresh_flag) && n.weight > 0.0) carried_[n.parent] += n.weight;
    }
  }

  // ---- ages (policy_options::age_value) ------------------------------------------------

  /// The classes of `age_classes`: 0, admitted on no prior; 1, admitted on a prior.
  static constexpr std::size_t age_class_count = 2;
  /// A resume from a state of age `age` (observations since its admission or last resume) and
  /// of class `cls` (read only with `age_classes`).
  /// @throws invalid_argument for cls ≥ age_class_count (nothing is counted).
  void note_hit_age(std::uint32_t age, std::size_t cls = 0) {
    age_event(age_hits_, age, cls_hits_[checked_class(cls)]);
  }
  /// A state of class `cls` left the pool (evicted or dropped) at age `age`.
  /// @throws invalid_argument for cls ≥ age_class_count (nothing is counted).
  void note_end_age(std::uint32_t age, std::size_t cls = 0) {
    age_event(age_ends_, age, cls_ends_[checked_class(cls)]);
  }
  /// P(hit | age) = (H_{≥b} + s·P̄)/(H_{≥b} + E_{≥b} + s), P̄ = (H + s/2)/(H + E + s). The
  /// table of the 33 bins' values is rebuilt only after a new event, so ranking K states costs
  /// one lookup each.
  [[nodiscard]] double hit_given_age(std::uint32_t age) const noexcept {
    return hit_given_age_table()[age_bucket(age)];
  }
  /// The 33 values P(hit | bin j), j = `age_bucket(age)`, as `hit_given_age` reads them (rebuilt
  /// here if an event came since). Valid until the next `note_hit_age` / `note_end_age`.
  [[nodiscard]] const double* hit_given_age_table() const noexcept {
    if (age_dirty_) rebuild_age_table();
    return age_hit_;
  }
  /// With `age_classes`: the 33 values P(hit | bin j) of class `cls` alone, the law above on
  /// that class's resumes and ends (its own P̄); without, `hit_given_age_table()`. Valid until the
  /// next event. @throws invalid_argument for cls ≥ age_class_count.
  [[nodiscard]] const double* hit_given_age_table(std::size_t cls) const {
    const std::size_t c = checked_class(cls);
    if (!opts_.age_classes) return hit_given_age_table();
    if (age_dirty_) rebuild_age_table();
    return cls_hit_[c];
  }

  // ---- queries ------------------------------------------------------------------------

  /// ŵ(v) = w(v) / Σ w (0 while no mass is left).
  [[nodiscard]] double match_share(const tree_index& ix, slot_id v) const noexcept {
    return total_ > 0.0 ? ix[v].weight / total_ : 0.0;
  }
  /// q = (h₂ + 1)/(n₁ + 2): EW share of first matches at a node followed by a second one.
  [[nodiscard]] double repeat_share() const noexcept { return (once_hit_ + 1.0) / (once_n_ + 2.0); }
  /// p̂ = (h + 1)/(n + 2): EW share of fresh ends that a later match ended at.
  [[nodiscard]] double fresh_share() const noexcept { return (ends_hit_ + 1.0) / (ends_ + 2.0); }
  /// π / (mass of one observation) = p̂ · min(1, 1 / ((1 − γ) D̂)).
  [[nodiscard]] double fresh_prior() const noexcept {
    return delay_discounted(gamma_, fresh_share(), delay_sum_, delay_n_);
  }
  /// p̂_P = (h_P + 1)/(n_P + 2) (1/2 before any noted prefill end).
  [[nodiscard]] double prefill_share() const noexcept {
    return (pre_hit_ + 1.0) / (pre_ends_ + 2.0);
  }
  /// π_P / (mass of one observation) = p̂_P · min(1, 1/((1 − γ) D̂_P)).
  [[nodiscard]] double prefill_prior_mass() const noexcept {
    return delay_discounted(gamma_, prefill_share(), pre_delay_sum_, pre_delay_n_);
  }
  /// The prior of `v` (one that holds a prior): its weight less the mass erased children
  /// carried to it.
  [[nodiscard]] double prior_of(const tree_index& ix, slot_id v) const {
    const auto it = carried_.find(v);
    return it == carried_.end() ? ix[v].weight : std::max(0.0, ix[v].weight - it->second);
  }
  /// p̂_I = (h_I + 1)/(n_I + 2): EW share of noted branch points a later match reached.
  [[nodiscard]] double branch_share() const noexcept { return (br_hit_ + 1.0) / (br_ends_ + 2.0); }
  /// π_I / (mass of one observation) = p̂_I · min(1, 1/((1 − γ) D̂_I)).
  [[nodiscard]] double branch_prior_mass() const noexcept {
    return delay_discounted(gamma_, branch_share(), br_delay_sum_, br_delay_n_);
  }
  /// Σ_u w(u), unnormalised (the common scale included).
  [[nodiscard]] double total() const noexcept { return total_; }
  [[nodiscard]] double gamma() const noexcept { return gamma_; }
  /// The mass of one observation now (the common scale).
  [[nodiscard]] double observation_mass() const noexcept { return scale_; }
  [[nodiscard]] std::uint64_t observations() const noexcept { return observations_; }
  /// Bytes of the side table of carried mass.
  [[nodiscard]] std::size_t bookkeeping_bytes() const noexcept {
    return detail::table_bytes(carried_);
  }

 private:
  /// Gives non-root `v`, where no match has ended yet (no weight, no prior), the prior
  /// mass() · scale with `flags`, one more noted end on the books (ends, hit) first (both ×γ):
  /// the one law of the fresh-end, prefill-end and branch priors. Nothing when `on` is false.
  template <class Mass>
  std::optional<double> set_prior(tree_index& ix, slot_id v, bool on, double& ends, double& hit,
                                  std::uint32_t flags, Mass&& mass) {
    if (!on || ix[v].parent == no_slot) return std::nullopt;
    tree_node& n = ix[v];
    if ((n.flags & tree_node::fresh_flag) || n.weight > 0.0) return std::nullopt;
    ends = ends * gamma_ + 1.0;
    hit *= gamma_;
    const double prior = mass() * scale_;
    n.weight = prior;
    n.flags |= flags;
    total_ += prior;
    return prior;
  }
  /// A real match replaces the prior of `v` (share: its books' p̂ now): its age in observations,
  /// read off the prior's decay (w / scale = p̂_then · γ^age, p̂_then ≈ p̂), joins the books' EW
  /// mean age (delay_sum, delay_n, ×γ each), the prior is dropped and the hit counted.
  void replace_prior(tree_index& ix, slot_id v, double* region, double share, double& delay_sum,
                     double& delay_n, double& hit) {
    const double age = prior_age(prior_of(ix, v) / scale_ / share);
    delay_sum = delay_sum * gamma_ + age;
    delay_n = delay_n * gamma_ + 1.0;
    drop_prior(ix, v, region);
    hit += 1.0;
  }
  /// The age, in observations, of a prior π that has decayed to `ratio` = w / π of its value:
  /// w = π · γ^age, so age = log(ratio) / log γ (0 when γ = 1 or the ratio is not in (0, 1)).
  [[nodiscard]] double prior_age(double ratio) const noexcept {
    return (gamma_ < 1.0 && ratio > 0.0 && ratio < 1.0) ? std::log(ratio) / std::log(gamma_) : 0.0;
  }
  /// One EW event of age `age` in `bins` (hits or ends): every bin decays by γ per event, kept
  /// as Σ γ^{−t} with a common scale folded back before it could overflow (finite forever).
  static std::size_t checked_class(std::size_t cls) {
    if (cls >= age_class_count)
      hybridcache::detail::throw_invalid("cls", cls, "must be < 2 (age_class_count)");
    return cls;
  }
  /// With `age_classes` the event also joins its class's `cls_bins` (the classes share the
  /// decay: γ per event of either class, one scale).
  void age_event(double* bins, std::uint32_t age, double* cls_bins) {
    if (!opts_.age_value) return;
    age_scale_ *= inv_gamma_;
    if (age_scale_ > 1e150) {
      const double f = 1.0 / age_scale_;
      for (std::size_t j = 0; j < age_buckets; ++j) {
        age_hits_[j] *= f;
        age_ends_[j] *= f;
        for (std::size_t c = 0; c < age_class_count; ++c) {
          cls_hits_[c][j] *= f;
          cls_ends_[c][j] *= f;
        }
      }
      age_scale_ = 1.0;
    }
    bins[age_bucket(age)] += age_scale_;
    if (opts_.age_classes) cls_bins[age_bucket(age)] += age_scale_;
    age_dirty_ = true;
  }

  /// P(hit | bin) from EW hits / ends per bin (see `hit_given_age`), into `out`.
  void age_table(const double* hits, const double* ends, double* out) const noexcept {
    double h = 0.0, n = 0.0;
    double suffix_h[age_buckets], suffix_n[age_buckets];
    for (std::size_t j = age_buckets; j-- > 0;) {
      h += hits[j];
      n += hits[j] + ends[j];
      suffix_h[j] = h;
      suffix_n[j] = n;
    }
    const double s = age_scale_;
    const double all = (suffix_h[0] + 0.5 * s) / (suffix_n[0] + s);
    for (std::size_t j = 0; j < age_buckets; ++j)
      out[j] = (suffix_h[j] + s * all) / (suffix_n[j] + s);
  }
  void rebuild_age_table() const noexcept {
    age_table(age_hits_, age_ends_, age_hit_);
    if (opts_.age_classes)
      for (std::size_t c = 0; c < age_class_count; ++c)
        age_table(cls_hits_[c], cls_ends_[c], cls_hit_[c]);
    age_dirty_ = false;
  }

  tree_statistics_options opts_;
  double gamma_ = 1.0, inv_gamma_ = 1.0;
  // Mass that erased children moved to a node still holding a prior (its weight = prior + this).
  std::unordered_map<slot_id, double> carried_;
  double scale_ = 1.0, total_ = 0.0;
  std::uint64_t observations_ = 0;
  double once_n_ = 0.0, once_hit_ = 0.0;    // EW counts of first matches / of those repeated
  double ends_ = 0.0, ends_hit_ = 0.0;      // EW counts of fresh ends and of those matched later
  double delay_sum_ = 0.0, delay_n_ = 0.0;  // EW sum / count of their ages at the first match
  double pre_ends_ = 0.0, pre_hit_ = 0.0;   // the same for noted prefill ends (prefill_prior)
  double pre_delay_sum_ = 0.0, pre_delay_n_ = 0.0;
  double br_ends_ = 0.0, br_hit_ = 0.0;  // the same for noted branch points (branch_prior)
  double br_delay_sum_ = 0.0, br_delay_n_ = 0.0;
  // The divergence law: EW counts of D per log2 bucket, their sum, a common scale.
  double div_[age_buckets] = {}, div_total_ = 0.0, div_scale_ = 1.0;
  // Age-conditioned value: EW hits / ends per log2 age bucket, common scale, P(hit | bin).
  double age_hits_[age_buckets] = {}, age_ends_[age_buckets] = {};
  double age_scale_ = 1.0;
  mutable double age_hit_[age_buckets] = {};  // P(hit | bin), rebuilt after an event
  mutable bool age_dirty_ = true;
  // The same per class of state (age_classes), on the common scale above.
  double cls_hits_[age_class_count][age_buckets] = {}, cls_ends_[age_class_count][age_buckets] = {};
  mutable double cls_hit_[age_class_count][age_buckets] = {};
};

HYBRIDCACHE_NAMESPACE_END
