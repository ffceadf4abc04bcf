// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <hybridcache/storage.hpp>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

namespace hc = hybridcache;

TEST_CASE("row-major matrix view addresses elements as r*cols + c") {
  std::vector<int> data(12);
  std::iota(data.begin(), data.end(), 0);
  auto m = hc::make_view(std::span<int>(data), 3, 4);
  CHECK(m.extent(0) == 3);
  CHECK(m.extent(1) == 4);
  CHECK(m.stride(0) == 4);
  CHECK(m.stride(1) == 1);
  CHECK(m.is_contiguous());
  for (std::size_t r = 0; r < 3; ++r)
    for (std::size_t c = 0; c < 4; ++c) CHECK(m(r, c) == static_cast<int>(r * 4 + c));
  hc::matrix_view<const int> cm = m;  // const conversion
  CHECK(cm(2, 3) == 11);
  CHECK(m.span().size() == 12);
}

TEST_CASE("strided (transposed) view is not contiguous and indexes through strides") {
  std::vector<int> data(6);
  std::iota(data.begin(), data.end(), 0);
  // Transpose of a 2x3 row-major matrix: extents 3x2, strides {1, 3}.
  hc::matrix_view<int> t(data.data(), {3, 2}, {1, 3});
  CHECK_FALSE(t.is_contiguous());
  CHECK(t(0, 1) == 3);
  CHECK(t(2, 0) == 2);
  CHECK_THROWS_AS(t.span(), hc::invalid_argument);
}

TEST_CASE("bad shapes and indices are errors that name the argument") {
  std::vector<float> data(5);
  CHECK_THROWS_AS(hc::make_view(std::span<float>(data), 2, 3), hc::invalid_argument);
  try {
    (void)hc::make_view(std::span<float>(data), 2, 3);
  } catch (const hc::invalid_argument& e) {
    CHECK(e.argument() == "span.size()");
    CHECK(e.value() == "5");
    CHECK(std::string(e.what()).find("rows*cols = 6") != std::string::npos);
  }
  auto v = hc::make_view(std::span<float>(data));
  CHECK_THROWS_AS(v.at(5), hc::invalid_argument);
  CHECK_NOTHROW(v.at(4));
}

TEST_CASE("error messages render special values") {
  CHECK(hc::detail::to_display(std::numeric_limits<double>::quiet_NaN()) == "nan");
  CHECK(hc::detail::to_display(-std::numeric_limits<double>::infinity()) == "-inf");
  CHECK(hc::detail::to_display(std::string_view("ab")) == "\"ab\"");
  CHECK(hc::detail::indexed("w", 3) == "w[3]");
  CHECK_THROWS_WITH_AS(hc::detail::throw_invalid("budget", -1, "must be >= 0"),
                       "hybridcache: invalid argument 'budget' = -1: must be >= 0",
                       hc::invalid_argument);
}
