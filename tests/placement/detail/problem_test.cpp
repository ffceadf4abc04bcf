// SPDX-License-Identifier: Apache-2.0
// The input checks and normalisation every placement entry shares (placement/detail/problem.hpp),
// through the public calls that use them: bad input throws hybridcache::invalid_argument naming
// the argument; all-subnormal weights normalise like their normal multiples.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <hybridcache/placement.hpp>

namespace hc = hybridcache;

namespace {
template <class F>
std::string rejected_argument(F&& f) {
  try {
    f();
  } catch (const hc::invalid_argument& e) {
    return e.argument();
  }
  return "<no throw>";
}
}  // namespace

TEST_CASE("bad weights are rejected by name") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> empty;
  const std::vector<double> zero(5, 0.0);
  const std::vector<double> with_nan = {1, nan, 2};
  const std::vector<double> with_inf = {1, 2, inf};
  const std::vector<double> negative = {1, -0.5};
  for (auto method : {hc::placement_method::cht, hc::placement_method::lagrangian}) {
    const hc::placement_options o{.granularity = 1, .method = method};
    CHECK(rejected_argument([&] { (void)hc::place_optimal(empty, 2, o); }) == "weights");
    CHECK(rejected_argument([&] { (void)hc::place_optimal(zero, 2, o); }) == "weights");
    CHECK(rejected_argument([&] { (void)hc::place_optimal(with_nan, 2, o); }) == "weights[1]");
    CHECK(rejected_argument([&] { (void)hc::place_optimal(with_inf, 2, o); }) == "weights[2]");
    CHECK(rejected_argument([&] { (void)hc::place_optimal(negative, 2, o); }) == "weights[1]");
  }
  CHECK(rejected_argument([&] { (void)hc::optimal_frontier(with_nan, 2); }) == "weights[1]");
  CHECK(rejected_argument([&] { (void)hc::expected_recompute(zero, {}); }) == "weights");
  CHECK(rejected_argument([&] { (void)hc::savings(empty, {}); }) == "weights");
  CHECK(rejected_argument([&] { (void)hc::reduction(negative, {}); }) == "weights[1]");
  try {
    (void)hc::place_optimal(with_nan, 1);
    FAIL("no throw");
  } catch (const hc::error& e) {
    CHECK(std::string(e.what()).find("nan") != std::string::npos);
  }
}

TEST_CASE("bad granularity and checkpoints are rejected by name") {
  const std::vector<double> w = {1, 2, 3};
  CHECK(rejected_argument([&] { (void)hc::place_optimal(w, 1, {.granularity = 0}); }) ==
        "granularity");
  CHECK(rejected_argument([&] { (void)hc::place_optimal(w, 1, {.granularity = 4}); }) ==
        "granularity");
  CHECK(rejected_argument([&] { (void)hc::optimal_frontier(w, 1, {.granularity = 0}); }) ==
        "granularity");
  CHECK(hc::place_optimal(w, 1, {.granularity = 3}).checkpoints == std::vector<std::size_t>{3});
  const std::vector<std::size_t> zero_pos = {0}, beyond = {4}, unsorted = {2, 1};
  CHECK(rejected_argument([&] { (void)hc::expected_recompute(w, zero_pos); }) == "checkpoints[0]");
  CHECK(rejected_argument([&] { (void)hc::expected_recompute(w, beyond); }) == "checkpoints[0]");
  CHECK(rejected_argument([&] { (void)hc::expected_recompute(w, unsorted); }) == "checkpoints[1]");
  CHECK(rejected_argument([&] { (void)hc::place_block(5, 0); }) == "block");
  CHECK(rejected_argument([&] { (void)hc::place_balanced(0, 1); }) == "n");
  CHECK(rejected_argument([&] { (void)hc::uniform_optimal_recompute(0, 1); }) == "n");
  CHECK(rejected_argument([&] { (void)hc::clip_to_granularity(zero_pos, 0); }) == "granularity");
}

TEST_CASE("all-subnormal weights give the same answers as their normal multiples (no NaN)") {
  // Multiplying by a power of two changes no ratio, so every normalised quantity must be
  // identical for w and 2^k·w. The all-subnormal case used to scale by 2^1074 = inf → NaN.
  const std::vector<double> normal{1.0, 3.0, 0.0, 2.0, 5.0, 1.0, 4.0};
  std::vector<double> tiny(normal.size());
  for (std::size_t i = 0; i < normal.size(); ++i) tiny[i] = std::ldexp(normal[i], -1072);
  for (double x : tiny) REQUIRE((x == 0.0 || std::fpclassify(x) == FP_SUBNORMAL));
  const std::vector<std::size_t> c{2, 5};
  CHECK(hc::expected_recompute(tiny, c) == hc::expected_recompute(normal, c));
  CHECK(hc::no_cache_recompute(tiny) == hc::no_cache_recompute(normal));
  CHECK(hc::savings(tiny, c) == hc::savings(normal, c));
  CHECK(hc::reduction(tiny, c) == hc::reduction(normal, c));
  for (std::size_t m = 0; m <= normal.size(); ++m) {
    const auto a = hc::place_optimal(tiny, m);
    const auto b = hc::place_optimal(normal, m);
    CHECK(a.checkpoints == b.checkpoints);
    CHECK(a.expected_recompute == b.expected_recompute);
    CHECK(std::isfinite(a.expected_recompute));
  }
  CHECK(hc::optimal_frontier(tiny, 7) == hc::optimal_frontier(normal, 7));
  // The smallest subnormal alone: the law is a point mass at depth 3.
  const std::vector<double> point{0.0, 0.0, std::numeric_limits<double>::denorm_min()};
  CHECK(hc::no_cache_recompute(point) == 3.0);
  CHECK(hc::expected_recompute(point, std::vector<std::size_t>{3}) == 0.0);
}
