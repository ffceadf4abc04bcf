// SPDX-License-Identifier: Apache-2.0
// checked.hpp against plain 128-bit arithmetic, and one regression test per size overflow named
// in issue #11: where a wrapped size used to pass validation, the call now either returns the
// right answer (compared with an independent 128-bit / closed-form computation) or throws
// hybridcache::invalid_argument naming the operands. The throwing rows are in
// bad_input_test.cpp; this file holds the ones with a right answer to check.
#include <doctest/doctest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <hybridcache/checked.hpp>
#include <hybridcache/hybridcache.hpp>

namespace hc = hybridcache;

namespace {
constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
__extension__ using u128 = unsigned __int128;
}  // namespace

TEST_CASE("checked_add / checked_mul / checked_round_up agree with 128-bit arithmetic") {
  std::mt19937_64 rng(11);
  const std::size_t edge[] = {0,
                              1,
                              2,
                              3,
                              (std::size_t{1} << 32) - 1,
                              std::size_t{1} << 32,
                              (std::size_t{1} << 63) - 1,
                              std::size_t{1} << 63,
                              huge - 1,
                              huge};
  std::vector<std::size_t> xs(std::begin(edge), std::end(edge));
  for (int i = 0; i < 40; ++i) xs.push_back(rng() >> (rng() % 64));
  for (std::size_t a : xs) {
    for (std::size_t b : xs) {
      const u128 sum = u128(a) + b, prod = u128(a) * b;
      if (sum <= huge)
        CHECK(hc::checked_add(a, b) == static_cast<std::size_t>(sum));
      else
        CHECK_THROWS_AS((void)hc::checked_add(a, b), hc::invalid_argument);
      if (prod <= huge)
        CHECK(hc::checked_mul(a, b) == static_cast<std::size_t>(prod));
      else
        CHECK_THROWS_AS((void)hc::checked_mul(a, b), hc::invalid_argument);
      if (b != 0) {
        const u128 up = (u128(a) + b - 1) / b * b;
        if (up <= huge)
          CHECK(hc::checked_round_up(a, b) == static_cast<std::size_t>(up));
        else
          CHECK_THROWS_AS((void)hc::checked_round_up(a, b), hc::invalid_argument);
      }
      if (b >= 2 || a < huge) {
        const auto [q, r] = hc::detail::divmod_succ(a, b == 0 ? 1 : b);
        const u128 k = b == 0 ? 1 : b;
        CHECK(u128(q) == (u128(a) + 1) / k);
        CHECK(u128(r) == (u128(a) + 1) % k);
      }
    }
  }
}

TEST_CASE("checked errors name both operands and values") {
  try {
    (void)hc::checked_mul(std::size_t{1} << 40, std::size_t{1} << 30, "length", "dk");
    FAIL("no throw");
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "length * dk");
    CHECK(e.value() == "1099511627776 * 1073741824");
  }
  CHECK(hc::checked_size({}) == 1);
  CHECK(hc::checked_size({{"a", 0}, {"b", huge}, {"c", huge}}) == 0);  // empty tensor
  CHECK(hc::checked_size({{"a", 3}, {"b", 5}, {"c", 7}}) == 105);
  CHECK(hc::checked_count<double>(hc::max_allocation_bytes / 8) == hc::max_allocation_bytes / 8);
  CHECK_THROWS_AS((void)hc::checked_count<double>(hc::max_allocation_bytes / 8 + 1),
                  hc::invalid_argument);
}

TEST_CASE("overflow: n + 1 in place_balanced is exact at N = SIZE_MAX") {
  // ⌊i(N+1)/(M+1)⌋ in 128 bits, independently of the implementation's q/ρ split.
  for (std::size_t m : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}}) {
    const auto c = hc::place_balanced(huge, m);
    REQUIRE(c.size() == m);
    for (std::size_t i = 1; i <= m; ++i)
      CHECK(u128(c[i - 1]) == u128(i) * (u128(huge) + 1) / (m + 1));
  }
  CHECK(hc::place_balanced(huge, 0).empty());
}

TEST_CASE("overflow: n + 1 in the uniform closed form at N = SIZE_MAX") {
  const double n = static_cast<double>(huge);
  // M = 0: E[r] = (N + 1)/2. M = 1: N + 1 = 2^64 = 2q, q = 2^63, ρ = 0: E = 2·q(q−1)/2 / N.
  CHECK(hc::uniform_optimal_recompute(huge, 0) == doctest::Approx((n + 1.0) / 2.0));
  const double q = std::ldexp(1.0, 63);
  CHECK(hc::uniform_optimal_recompute(huge, 1) == doctest::Approx(q * (q - 1.0) / n));
  CHECK(hc::uniform_optimal_recompute(huge, huge) == 0.0);  // M = N: every depth checkpointed
}

TEST_CASE("overflow: place_block's grid terminates next to SIZE_MAX") {
  const std::size_t b = std::size_t{1} << 62;
  const auto c = hc::place_block(huge, b);  // `p += block` used to wrap and never stop
  REQUIRE(c.size() == 3);
  CHECK(c[0] == b);
  CHECK(c[1] == 2 * b);
  CHECK(c[2] == 3 * b);
  const auto s = hc::place_block(huge - 1, huge / 2);  // 2·(SIZE_MAX/2) = SIZE_MAX − 1
  REQUIRE(s.size() == 2);
  CHECK(s[1] == huge - 1);
}

TEST_CASE("place_sqrt spaces by the exact integer square root") {
  // Reference: the largest s with s·s ≤ N, found by 128-bit bisection.
  auto isqrt = [](std::size_t n) {
    u128 lo = 0, hi = u128(1) << 33;
    while (lo + 1 < hi) {
      const u128 mid = (lo + hi) / 2;
      (mid * mid <= n ? lo : hi) = mid;
    }
    return static_cast<std::size_t>(lo);
  };
  for (std::size_t n :
       {std::size_t{1}, std::size_t{3}, std::size_t{4}, std::size_t{99}, (std::size_t{1} << 36) - 1,
        std::size_t{1} << 36, ((std::size_t{1} << 18) + 1) * ((std::size_t{1} << 18) + 1) - 1}) {
    const auto c = hc::place_sqrt(n);
    const std::size_t s = isqrt(n);
    REQUIRE(c.size() == n / s);
    CHECK(c.front() == s);
  }
}

TEST_CASE("overflow: select_tokens with a block larger than the prompt") {
  // The overflow block after a non-reuse interval [a, b) is [b, min(T, b + B)); b + B used to
  // wrap for B near SIZE_MAX and select nothing. Reference: every reused token after b.
  const std::vector<double> scores{1, 1, 1, 1, 1, 1};
  const std::vector<hc::token_range> reused{{2, 6}};  // non-reuse [0, 2)
  hc::selection_options o;
  o.top_k = 0;
  o.fallback_tokens = 0;
  o.block_size = huge;
  const auto sel = hc::select_tokens(scores, reused, o);
  CHECK(sel.overflow == std::vector<std::size_t>{2, 3, 4, 5});
}
