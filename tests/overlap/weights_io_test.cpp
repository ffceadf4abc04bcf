// SPDX-License-Identifier: Apache-2.0
// The text weights format and the synthetic laws.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <hybridcache/overlap.hpp>

namespace hc = hybridcache;

TEST_CASE("parse_weights: whitespace separated, '#' comments, weight i is depth i+1") {
  CHECK(hc::parse_weights("1 2\t3\n4\r\n  5e-1 +6 # seven 7\n# 8\n9") ==
        std::vector<double>{1, 2, 3, 4, 0.5, 6, 9});
  std::istringstream in("0 0.1 0\n0.2 0.7\n");
  CHECK(hc::read_weights(in) == std::vector<double>{0, 0.1, 0, 0.2, 0.7});
  CHECK(hc::parse_weights("3#c\n4") == std::vector<double>{3, 4});
}

TEST_CASE("parse_weights rejects bad tokens by index") {
  auto arg = [](const char* text) {
    try {
      (void)hc::parse_weights(text);
    } catch (const hc::invalid_argument& e) {
      return e.argument() + " " + e.value();
    }
    return std::string("<no throw>");
  };
  CHECK(arg("1 2 x") == "weights[2] \"x\"");
  CHECK(arg("1 -2") == "weights[1] -2");
  CHECK(arg("nan") == "weights[0] nan");
  CHECK(arg("1 inf") == "weights[1] inf");
  CHECK(arg("1e999") == "weights[0] \"1e999\"");
  CHECK(arg("1,2") == "weights[0] \"1,2\"");
  CHECK(arg("  # only a comment\n") == "weights \"[]\"");
  CHECK(arg("") == "weights \"[]\"");
}

TEST_CASE("synthetic laws sum to 1 and have the paper's shapes") {
  const std::size_t n = 4096;
  for (auto s : {hc::overlap_shape::document_qa, hc::overlap_shape::system_prompts,
                 hc::overlap_shape::multimodal, hc::overlap_shape::uniform}) {
    const auto w = hc::synthetic_overlap(s, n);
    REQUIRE(w.size() == n);
    double sum = 0;
    for (double x : w) {
      CHECK(x > 0.0);
      sum += x;
    }
    CHECK(sum == doctest::Approx(1.0));
  }
  auto mass_below = [&](hc::overlap_shape s, double frac) {
    const auto w = hc::synthetic_overlap(s, n);
    double m = 0;
    for (std::size_t i = 0; i < static_cast<std::size_t>(frac * n); ++i) m += w[i];
    return m;
  };
  CHECK(mass_below(hc::overlap_shape::document_qa, 0.9) < 0.15);    // spike near N
  CHECK(mass_below(hc::overlap_shape::system_prompts, 0.2) > 0.8);  // short depths
  CHECK(mass_below(hc::overlap_shape::uniform, 0.5) == doctest::Approx(0.5));
  CHECK_THROWS_AS(hc::synthetic_overlap(hc::overlap_shape::uniform, 0), hc::invalid_argument);
  CHECK(hc::to_string(hc::overlap_shape::multimodal) == "multimodal");
}
