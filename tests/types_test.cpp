// SPDX-License-Identifier: Apache-2.0
// types.hpp: one vocabulary, and the former enumerators are the same values as the new ones. (That
// the 0.1 component-qualified spellings name these very types is checked through the compat
// header, tests/compat/v0_1_test.cpp.)
#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>

#include <hybridcache/segment/split.hpp>
#include <hybridcache/select/selection.hpp>
#include <hybridcache/state/seam.hpp>
#include <hybridcache/types.hpp>

namespace hc = hybridcache;

static_assert(std::is_same_v<hc::token_id, std::uint32_t>);
static_assert(hc::segment_role::middle == hc::segment_role::reusable);
static_assert(hc::segment_role::trailing == hc::segment_role::query);

TEST_CASE("token_range is half-open: begin included, end excluded") {
  constexpr hc::token_range r{3, 8};
  static_assert(r.size() == 5 && !r.empty());
  CHECK(hc::token_range{4, 4}.empty());
  CHECK(hc::token_range{4, 4}.size() == 0);
  CHECK(r == hc::token_range{3, 8});
  CHECK(r != hc::token_range{3, 9});
}

TEST_CASE("segment_role: the seam plan and the splitter agree on roles") {
  // role_of (position in a request) and split_request (separators) use one enum: the
  // first of several segments leads, the last is the query, the rest are reusable.
  CHECK(hc::role_of(0, 3) == hc::segment_role::leading);
  CHECK(hc::role_of(1, 3) == hc::segment_role::reusable);
  CHECK(hc::role_of(2, 3) == hc::segment_role::query);
  CHECK(hc::role_of(0, 1) == hc::segment_role::query);
  const hc::token_id toks[] = {1, 2, 0, 3, 4, 0, 5};  // separator 0: three pieces
  const auto r = hc::split_request(toks, {.separator = 0});
  REQUIRE(r.segments.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) CHECK(r.segments[i].role == hc::role_of(i, 3));
}
