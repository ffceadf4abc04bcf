// SPDX-License-Identifier: Apache-2.0
// Independent reference for the conditioned depth law (docs/design/conditioned_law.md): keeps
// every hit, recomputes the EW head/tail weights from their definition at each snapshot, runs
// the mixture weights' EM step with those snapshots and writes the token-level mixture out.
// Nothing here calls the code under test.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

namespace law_ref {

struct conditioned {
  double gamma = 0.99, weight_gamma = 0.99;
  std::size_t block = 1, max_depth = 1;
  std::vector<std::pair<std::size_t, std::size_t>> hits{};  // (t, L)
  std::vector<double> head{}, tail{};  // EW weights at the snapshot, index i − 1
  std::array<double, 3> pi{1.0 / 3, 1.0 / 3, 1.0 / 3}, pi_snap{1.0 / 3, 1.0 / 3, 1.0 / 3};

  // Probability of depth t's block (t clipped to 1..L) under component c at the snapshot.
  double block_p(int c, std::size_t t, std::size_t len) const {
    const std::size_t k = t / block;
    const std::size_t lo = k == 0 ? 1 : k * block, hi = std::min((k + 1) * block - 1, len);
    if (c == 2) return static_cast<double>(hi - lo + 1) / static_cast<double>(len);
    double in = 0, all = 0;
    for (std::size_t d = 1; d <= len; ++d) {
      const double w =
          c == 0 ? (head.empty() ? 0.0 : head[d - 1]) : (tail.empty() ? 0.0 : tail[len - d]);
      all += w;
      if (d >= lo && d <= hi) in += w;
    }
    return all > 0 ? in / all : 0.0;
  }
  void observe(std::size_t t, std::size_t len) {
    std::array<double, 3> r{};
    double sum = 0;
    for (int c = 0; c < 3; ++c)
      sum += r[static_cast<std::size_t>(c)] = pi[static_cast<std::size_t>(c)] * block_p(c, t, len);
    if (sum > 0) {
      for (std::size_t c = 0; c < 3; ++c)
        pi[c] = weight_gamma * pi[c] + (1 - weight_gamma) * r[c] / sum;
    }
    hits.emplace_back(t, len);
  }
  void refresh() {
    head.assign(max_depth, 0.0);
    tail.assign(max_depth, 0.0);
    const std::size_t n = hits.size();
    for (std::size_t s = 0; s < n; ++s) {
      const double w = std::pow(gamma, static_cast<double>(n - 1 - s));
      head[hits[s].first - 1] += w;
      tail[hits[s].second - hits[s].first] += w;  // index u + 1 = L − t + 1
    }
    pi_snap = pi;
  }
  // p_L(t), t = 1..L (index t − 1): the mixture of the components with mass on 1..L.
  std::vector<double> law(std::size_t len) const {
    std::vector<double> p(len, 0.0);
    double hs = 0, ts = 0;
    for (std::size_t d = 1; d <= len; ++d) {
      hs += head.empty() ? 0.0 : head[d - 1];
      ts += tail.empty() ? 0.0 : tail[len - d];
    }
    const double wh = hs > 0 ? pi_snap[0] : 0.0, wt = ts > 0 ? pi_snap[1] : 0.0, wu = pi_snap[2];
    const double z = wh + wt + wu;
    for (std::size_t d = 1; d <= len; ++d) {
      p[d - 1] = wu / z / static_cast<double>(len);
      if (wh > 0) p[d - 1] += wh / z * head[d - 1] / hs;
      if (wt > 0) p[d - 1] += wt / z * tail[len - d] / ts;
    }
    return p;
  }
};

}  // namespace law_ref
