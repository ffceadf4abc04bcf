// SPDX-License-Identifier: Apache-2.0
// SparseX sparse-Q selection on a toy RAG prompt: [instruction 0..7][passage A 8..39]
// [passage B 40..71][question 72..79]. The question attends to token 50 of passage B; selection
// finds it, adds overflow blocks around the non-reuse intervals, and the layer plan recomputes
// R above the threshold.
#include <cstdint>
#include <cstdio>
#include <hybridcache/select.hpp>
#include <random>
#include <vector>

int main() {
  namespace hc = hybridcache;
  const std::size_t t_len = 80, heads = 2, d = 16;
  const std::vector<hc::token_range> reused{{8, 40}, {40, 72}};
  const std::vector<std::size_t> nr = hc::non_reuse_positions(reused, t_len);  // 16 queries

  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  std::vector<float> keys(t_len * heads * d), queries(nr.size() * heads * d);
  for (auto& x : keys) x = noise(rng);
  for (auto& x : queries) x = noise(rng);
  for (std::size_t h = 0; h < heads; ++h)
    for (std::size_t c = 0; c < d; ++c) {
      keys[(50 * heads + h) * d + c] = 1.0f;                            // the needle's key
      for (std::size_t i = 8; i < nr.size(); ++i) queries[(i * heads + h) * d + c] = 1.0f;  // question
    }

  std::vector<double> scores(t_len);
  hc::sparse_q_scores(hc::strided_view<const float, 3>(queries.data(), {nr.size(), heads, d}),
                      hc::vector_view<const std::size_t>(nr.data(), {nr.size()}),
                      hc::strided_view<const float, 3>(keys.data(), {t_len, heads, d}),
                      hc::vector_view<double>(scores.data(), {t_len}));
  const hc::token_selection sel = hc::select_tokens(scores, reused, {.top_k = 4, .block_size = 4});
  std::printf("key tokens:");
  for (std::size_t j : sel.key) std::printf(" %zu (s=%.3f)", j, scores[j]);
  std::printf("\noverflow:");
  for (std::size_t j : sel.overflow) std::printf(" %zu", j);
  std::printf("\nrecompute %zu of %zu tokens\n", sel.recompute.size(), t_len);

  // 12 layers, the first 15% dense (SparseX's setting for small dense models).
  const hc::layer_plan plan = hc::make_layer_plan(12, hc::threshold_for(12, 0.15), sel);
  std::printf("threshold %zu, selection at layer %zu, recompute fraction %.2f\n", plan.threshold,
              plan.selection_layer, plan.recompute_fraction());
  return !sel.key.empty() && sel.key.front() == 50 ? 0 : 1;
}
