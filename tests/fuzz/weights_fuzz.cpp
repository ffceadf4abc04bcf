// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the overlap-weights parser (overlap/weights_io.hpp), built and run by
// scripts/test.d/fuzz.sh. For any input bytes:
//   - parse_weights either throws hybridcache::invalid_argument whose message is bounded
//     (≤ 256 bytes) and printable ASCII (caller bytes are escaped, never echoed raw), or returns
//     a non-empty vector of finite weights ≥ 0 — no other exception type escapes;
//   - accepted weights then go through the placement entry points that normalise them
//     (expected_recompute, place_optimal, optimal_frontier): each either throws
//     hybridcache::error (all-zero mass) or returns finite values — never NaN, even for
//     all-subnormal weights.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include <hybridcache/overlap/weights_io.hpp>
#include <hybridcache/placement.hpp>

namespace hc = hybridcache;

namespace {
[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "weights_fuzz: %s\n", msg.c_str());
  std::abort();
}

void check_message(const std::string& m) {
  if (m.size() > 256) die("error message longer than 256 bytes");
  for (char c : m) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) die("unescaped byte in an error message");
  }
}

void check_finite(double x, const char* what) {
  if (!std::isfinite(x)) die(std::string(what) + " is not finite");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<double> w;
  try {
    w = hc::parse_weights(text);
  } catch (const hc::invalid_argument& e) {
    check_message(e.what());
    return 0;
  } catch (const std::exception& e) {
    die(std::string("untyped exception from parse_weights: ") + e.what());
  }
  if (w.empty()) die("accepted an empty histogram");
  for (double x : w)
    if (!std::isfinite(x) || x < 0.0) die("accepted a weight that is not finite and >= 0");
  if (w.size() > 512) w.resize(512);  // bound the placement work per input
  try {
    check_finite(hc::expected_recompute(w, hc::place_balanced(w.size(), 3)), "expected_recompute");
    const auto p = hc::place_optimal(w, 3);
    check_finite(p.expected_recompute, "place_optimal");
    for (double v : hc::optimal_frontier(w, 4)) check_finite(v, "optimal_frontier");
  } catch (const hc::error& e) {
    check_message(e.what());
  } catch (const std::exception& e) {
    die(std::string("untyped exception from placement: ") + e.what());
  }
  return 0;
}
