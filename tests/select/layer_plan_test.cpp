// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/select/layer_plan.hpp>
#include <vector>

namespace hc = hybridcache;

namespace {
hc::token_selection sample_selection() {
  // 12 tokens: [0,2) non-reuse, [2,10) reused, [10,12) non-reuse; key token 5; block 1.
  std::vector<double> s(12, 0.0);
  s[5] = 1.0;
  const std::vector<hc::token_range> reused{{2, 10}};
  return hc::select_tokens(s, reused, {.top_k = 1, .block_size = 1});
}
}  // namespace

TEST_CASE("layer plan: dense below the threshold, select at ℓ*−1, sparse above") {
  const auto sel = sample_selection();
  const auto plan = hc::make_layer_plan(8, 3, sel);
  CHECK(plan.selection_layer == 2);
  const std::vector<hc::layer_mode> want{hc::layer_mode::full,   hc::layer_mode::full,
                                         hc::layer_mode::select, hc::layer_mode::sparse,
                                         hc::layer_mode::sparse, hc::layer_mode::sparse,
                                         hc::layer_mode::sparse, hc::layer_mode::sparse};
  CHECK(plan.modes == want);
  for (std::size_t l = 0; l < 3; ++l) CHECK(plan.recompute_count(l) == 12);
  // R = {0,1,10,11} ∪ {5} ∪ overflow {2, 9}.
  const std::vector<std::uint8_t> r{1, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 1};
  for (std::size_t l = 3; l < 8; ++l) CHECK(plan.mask(l) == r);
  CHECK(plan.recompute_fraction() == doctest::Approx((3 * 12 + 5 * 7) / (8.0 * 12)));
  CHECK_THROWS_AS((void)plan.mask(8), hc::invalid_argument);
}

TEST_CASE("layer plan: ℓ* = 0 selects from the sparse-Q forward, ℓ* = L is all dense") {
  const auto sel = sample_selection();
  auto plan = hc::make_layer_plan(4, 0, sel);
  CHECK(plan.modes[0] == hc::layer_mode::select);
  CHECK(plan.recompute_count(0) == 4);  // I_nr only
  CHECK(plan.recompute_count(1) == 7);
  plan = hc::make_layer_plan(4, 4, sel);
  for (std::size_t l = 0; l < 4; ++l) {
    CHECK(plan.modes[l] == hc::layer_mode::full);
    CHECK(plan.recompute_count(l) == 12);
  }
  CHECK(plan.recompute_fraction() == 1.0);
  CHECK_THROWS_AS(hc::make_layer_plan(4, 5, sel), hc::invalid_argument);
  CHECK_THROWS_AS(hc::make_layer_plan(0, 0, sel), hc::invalid_argument);
}

TEST_CASE("threshold_for: SparseX's 15-20% (small dense) and 10-15% (large/MoE) boundaries") {
  CHECK(hc::threshold_for(36, 0.15) == 6);   // Qwen3-8B: 36 layers
  CHECK(hc::threshold_for(48, 0.10) == 5);   // Qwen3-30B-A3B: 48 layers
  CHECK(hc::threshold_for(40, 0.2) == 8);
  CHECK(hc::threshold_for(10, 0.0) == 0);
  CHECK(hc::threshold_for(10, 1.0) == 10);
  CHECK_THROWS_AS(hc::threshold_for(10, 1.5), hc::invalid_argument);
  CHECK_THROWS_AS(hc::threshold_for(10, -0.1), hc::invalid_argument);
}
