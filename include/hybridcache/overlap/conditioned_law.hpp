#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// A depth law conditioned on what is known when an entry is inserted: its length L
/// (docs/design/conditioned_law.md). A single histogram pooled over entries of different lengths
/// cannot say "just before the end of *this* entry"; this law can.
///
/// Three components, each a law over the depths 1..L of an entry of length L:
/// - head-anchored: p^H_L(t) ∝ h_t, h the EW histogram of the depth t itself (the paper's law);
/// - tail-anchored: p^T_L(t) ∝ g_{L−t+1}, g the EW histogram of u + 1, u = L_e − t the distance
///   from the matched entry's end at which the overlap stopped;
/// - prior: p^U_L(t) = 1/L (uniform; its DP is balanced spacing, Thm. 1).
///
/// The law of an entry of length L is the mixture p_L = π_H p^H_L + π_T p^T_L + π_U p^U_L
/// (a component with no mass on 1..L drops out and the others are renormalised). The weights
/// π are set online by exponentially forgotten EM: for every hit (t, L_e), with k = ⌊t/B⌋ its
/// block and P^c_{L_e}(k) each component's probability of that block under the last snapshot
/// (which has not seen this hit),
///
///     ρ_c = π_c P^c(k) / Σ_c' π_c' P^c'(k),      π_c ← (1 − η) π_c + η ρ_c,   η = 1 − γ_π.
///
/// The prior's weight thus shrinks as the histograms learn to predict better than uniform and
/// grows back when they stop doing so. Block masses are linear in p, so the block-compressed
/// problem of the mixture is the mixture of the components' problems and the DP stays exact for
/// the law it is given (placement/block_planner.hpp).
///
/// `law_kind::pooled` and `law_kind::tail` keep one component with weight 1 (no prior): the
/// paper's setting and the tail-only law.
///
/// ```cpp
/// hybridcache::depth_law_estimator est(8192, {.kind = hybridcache::law_kind::conditioned});
/// est.observe(/*depth=*/4000, /*entry_length=*/4100);   // a hit 100 tokens before the end
/// est.refresh();                                          // snapshot (e.g. every 10 requests)
/// auto law = est.snapshot().block_law(6000, 64);          // the law of a new 6000-token entry
/// auto plan = hybridcache::plan_entry(*law, 2);
/// ```

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/overlap/ew_histogram.hpp"
#include "hybridcache/placement/block_planner.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Which depth law an estimator keeps (file comment).
enum class law_kind : std::uint8_t {
  pooled,       ///< the paper's: one histogram of the depth, head-anchored
  tail,         ///< one histogram of the distance from the matched entry's end
  conditioned,  ///< head + tail + uniform prior, weights set online (default)
};

/// The law's name as used on the command line.
constexpr std::string_view to_string(law_kind k) noexcept {
  switch (k) {
    case law_kind::pooled:
      return "pooled";
    case law_kind::tail:
      return "tail";
    case law_kind::conditioned:
      return "conditioned";
  }
  return "?";
}

/// The law called `name`, if any.
constexpr std::optional<law_kind> parse_law_kind(std::string_view name) noexcept {
  for (auto k : {law_kind::pooled, law_kind::tail, law_kind::conditioned}) {
    if (to_string(k) == name) return k;
  }
  return std::nullopt;
}

/// Settings of `depth_law_estimator`.
struct depth_law_options {
  law_kind kind = law_kind::conditioned;
  double gamma = 0.99;          ///< decay of the histograms per hit, in (0, 1]
  double weight_gamma = 0.99;   ///< γ_π: decay of the mixture weights' EM per hit, in (0, 1)
  std::size_t granularity = 1;  ///< B of the block likelihoods that set the weights (≥ 1)
  bool record_misses = true;    ///< a miss ages the head histogram (not the tail one)
};

/// A snapshot of the law: prefix sums of the component histograms and the mixture weights.
struct depth_law_snapshot {
  law_kind kind = law_kind::pooled;
  depth_prefix_sums head, tail;            ///< of h (depth t) and g (u + 1)
  std::array<double, 3> weights{1, 0, 0};  ///< π_H, π_T, π_U

  /// The law of an entry of `length` tokens on the grid of `granularity`, smoothed to
  /// (1 − ε) p_L + ε·uniform; nullopt when no component has mass on 1..L.
  /// @throws invalid_argument for granularity 0, length 0 or ε outside [0, 1].
  [[nodiscard]] std::optional<entry_block_law> block_law(std::size_t length,
                                                         std::size_t granularity,
                                                         double smoothing = 0.0) const {
    if (kind == law_kind::pooled)
      return head.block_law(depth_anchor::head, length, granularity, smoothing);
    if (kind == law_kind::tail)
      return tail.block_law(depth_anchor::tail, length, granularity, smoothing);
    const std::optional<entry_block_law> parts[3] = {
        head.block_law(depth_anchor::head, length, granularity),
        tail.block_law(depth_anchor::tail, length, granularity),
        head.block_law(depth_anchor::head, length, granularity, 1.0)};
    double sum = 0.0;
    for (int c = 0; c < 3; ++c) sum += parts[c] ? weights[static_cast<std::size_t>(c)] : 0.0;
    if (!(sum > 0.0)) return std::nullopt;
    entry_block_law out = *parts[2];
    for (auto& x : out.mass) x = 0.0;
    out.total = out.moment = out.no_cache = 0.0;
    for (int c = 0; c < 3; ++c) {
      if (!parts[c]) continue;
      const double w = (1.0 - smoothing) * weights[static_cast<std::size_t>(c)] / sum +
                       (c == 2 ? smoothing : 0.0);
      for (std::size_t k = 0; k < out.mass.size(); ++k) out.mass[k] += w * parts[c]->mass[k];
      out.total += w * parts[c]->total;
      out.moment += w * parts[c]->moment;
      out.no_cache += w * parts[c]->no_cache;
    }
    if (!parts[2]) return std::nullopt;  // unreachable: the uniform part always exists
    return out;
  }

  /// Probability of the block k = ⌊t/B⌋ of depth t (clipped to 1..L) under component c
  /// (0 head, 1 tail, 2 prior) for an entry of length L; 0 when the component has no mass there.
  [[nodiscard]] double block_probability(int c, std::size_t depth, std::size_t length,
                                         std::size_t b) const noexcept {
    const std::size_t k = depth / b;
    const std::size_t lo = k == 0 ? 1 : k * b,
                      hi = (k + 1) * b - 1 < length ? (k + 1) * b - 1 : length;
    if (c == 2) return static_cast<double>(hi - lo + 1) / static_cast<double>(length);
    const depth_prefix_sums& s = c == 0 ? head : tail;
    const double total = s.mass(length);
    if (!(total > 0.0)) return 0.0;
    // Head: depths lo..hi. Tail: indices L − hi + 1 .. L − lo + 1.
    const double m =
        c == 0 ? s.mass(hi) - s.mass(lo - 1) : s.mass(length - lo + 1) - s.mass(length - hi);
    return m / total;
  }
};

/// Online estimator of the conditioned law (file comment). Feed hits with `observe`, take a
/// snapshot with `refresh` (the likelihoods that set the weights use the latest snapshot, so each
/// hit is scored by a law that has not seen it).
class depth_law_estimator {
 public:
  /// @param max_depth the longest entry N (largest depth and entry length).
  /// @throws invalid_argument for max_depth == 0, gamma outside (0, 1], weight_gamma outside
  ///         (0, 1) or granularity 0.
  depth_law_estimator(std::size_t max_depth, depth_law_options opts = {})
      : opts_(opts), head_(max_depth, opts.gamma), tail_(max_depth, opts.gamma) {
    if (!(opts.weight_gamma > 0.0 && opts.weight_gamma < 1.0)) {
      detail::throw_invalid("weight_gamma", opts.weight_gamma, "must lie in (0, 1)");
    }
    if (opts.granularity == 0)
      detail::throw_invalid("granularity", opts.granularity, "must be >= 1");
    snap_.kind = opts.kind;
    if (opts.kind == law_kind::tail) snap_.weights = {0, 1, 0};
    if (opts.kind == law_kind::conditioned) snap_.weights = {1.0 / 3, 1.0 / 3, 1.0 / 3};
    weights_ = snap_.weights;
  }

  /// Records one request: a hit at `depth` ≥ 1 on an entry of `entry_length` tokens, or a miss
  /// (depth 0; recorded in the head histogram when record_misses).
  /// @throws invalid_argument unless depth ≤ entry_length ≤ max_depth (entry_length ≥ 1 on a hit).
  void observe(std::size_t depth, std::size_t entry_length) {
    if (depth == 0) {
      if (opts_.kind != law_kind::tail && opts_.record_misses) head_.observe(0);
      return;
    }
    if (entry_length < depth || entry_length > head_.max_depth()) {
      detail::throw_invalid("entry_length", entry_length,
                            "must lie in depth.." + std::to_string(head_.max_depth()));
    }
    if (opts_.kind == law_kind::conditioned) {
      std::array<double, 3> r{};
      double sum = 0.0;
      for (int c = 0; c < 3; ++c) {
        r[static_cast<std::size_t>(c)] =
            weights_[static_cast<std::size_t>(c)] *
            snap_.block_probability(c, depth, entry_length, opts_.granularity);
        sum += r[static_cast<std::size_t>(c)];
      }
      const double eta = 1.0 - opts_.weight_gamma;
      if (sum > 0.0) {
        for (std::size_t c = 0; c < 3; ++c)
          weights_[c] = (1.0 - eta) * weights_[c] + eta * r[c] / sum;
      }
    }
    ++hits_;
    if (opts_.kind != law_kind::tail) head_.observe(depth);
    if (opts_.kind != law_kind::pooled) tail_.observe(entry_length - depth + 1);
  }

  /// Takes a new snapshot of the histograms and weights. O(N).
  void refresh() {
    if (opts_.kind != law_kind::tail) snap_.head.assign(head_.pmf());
    if (opts_.kind != law_kind::pooled) snap_.tail.assign(tail_.pmf());
    snap_.weights = weights_;
  }

  /// The latest snapshot (empty histograms before the first `refresh`).
  [[nodiscard]] const depth_law_snapshot& snapshot() const noexcept { return snap_; }
  /// The mixture weights now (π_H, π_T, π_U).
  [[nodiscard]] const std::array<double, 3>& weights() const noexcept { return weights_; }
  /// Whether any hit has been recorded.
  [[nodiscard]] bool any_hit() const noexcept { return hits_ > 0; }
  [[nodiscard]] const ew_histogram& head_histogram() const noexcept { return head_; }
  [[nodiscard]] const ew_histogram& tail_histogram() const noexcept { return tail_; }
  [[nodiscard]] const depth_law_options& options() const noexcept { return opts_; }

 private:
  depth_law_options opts_;
  ew_histogram head_, tail_;
  depth_law_snapshot snap_;
  std::array<double, 3> weights_{1, 0, 0};
  std::uint64_t hits_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
