// SPDX-License-Identifier: Apache-2.0
// bf16 storage with fp32 compute (state/bf16.hpp) against the independent double reference:
// drift over 2k–32k steps, and bf16 summaries applied with a bf16 running state.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "common.hpp"

namespace {

using hc_ref::gate;

}  // namespace

namespace {
/// The documented drift bounds (docs/state.md): relative Frobenius error against the double
/// reference with the state stored in bf16 between tokens. Decaying and delta-rule variants
/// forget old rounding errors, so their drift stays flat at ~0.5–1.2 % (measured); ungated
/// additive attention never forgets and its growing state swamps small updates (an update below
/// half a bf16 ulp of the state is lost), so its drift grows with the step count (7 % at 2k,
/// 18 % at 32k measured): bf16 state storage is not advisable for it.
double bf16_drift_bound(const variant& v, std::size_t steps) {
  if (!v.delta && v.gate == gate::none)
    return 0.1 * std::cbrt(static_cast<double>(steps) / 2048.0);  // 0.10, 0.16, 0.25
  return 0.02;
}
}  // namespace

TEST_CASE("bf16 drift: state stored in bf16 between tokens, fp32 compute, 2k-32k steps") {
  const std::size_t checkpoints[] = {2048, 8192, 32768};
  std::uint64_t seed = 900;
  for (const variant& var : all_variants) {
    const auto t = long_tokens(32768, 8, var.delta, var.gate, -0.05, -0.001, ++seed);
    auto in = own<float>(t);
    hc_ref::mat ref(8, 2);
    std::vector<hybridcache::bfloat16> st(16);
    std::size_t done = 0;
    for (std::size_t cp : checkpoints) {
      ref = hc_ref::run_state(t, ref, done, cp);
      st = hc::run_recurrence(in.view().slice(done, cp), in.rule,
                              std::span<const hybridcache::bfloat16>(st));
      done = cp;
      std::vector<float> got(st.size());
      for (std::size_t i = 0; i < st.size(); ++i) got[i] = static_cast<float>(st[i]);
      const double err = hc_ref::rel_err(got, ref.a);
      // fp32 state over the same tokens, for comparison in the message.
      MESSAGE(std::string(var.name) << ": " << cp << " steps, bf16-state drift " << err);
      const std::string vname(var.name);
      CAPTURE(vname);
      CAPTURE(cp);
      CHECK(err < bf16_drift_bound(var, cp));
      CHECK(all_finite(got));
    }
  }
}

TEST_CASE("bf16 summaries: 32 cached segments of 1024 tokens applied with a bf16 running state") {
  std::uint64_t seed = 1900;
  for (const variant& var : all_variants) {
    const auto t = long_tokens(32768, 8, var.delta, var.gate, -0.05, -0.001, ++seed);
    auto in = own<float>(t);
    hc_ref::mat ref(8, 2);
    std::vector<float> cur(16, 0.0f);
    double worst = 0;
    for (std::size_t b = 0; b < 32768; b += 1024) {
      const auto packed = hc::to_bf16(hc::summarize(in.view().slice(b, b + 1024), in.rule));
      CHECK(packed.bytes() <= 2 * (64 + 16) + 8 * 8);
      cur = hc::apply(packed, std::span<const float>(cur));
      for (auto& x : cur) x = hc::round_to_bf16(x);
      ref = hc_ref::run_state(t, ref, b, b + 1024);
      worst = std::max(worst, hc_ref::rel_err(cur, ref.a));
    }
    MESSAGE(std::string(var.name) << ": bf16 summaries over 32k tokens, worst drift " << worst);
    const std::string vname(var.name);
    CAPTURE(vname);
    CHECK(worst < 0.02);
  }
  // Round trip: the fp32 summary of a bf16 summary holds exactly the rounded values.
  std::mt19937_64 rng(4);
  auto in = own<float>(hc_ref::random_tokens(rng, 40, 4, 3, true, gate::diagonal));
  const auto s = hc::summarize(in.view(), in.rule);
  const auto back = hc::to_float(hc::to_bf16(s));
  CHECK(back.family() == s.family());
  for (std::size_t i = 0; i < s.end_state().size(); ++i)
    CHECK(back.end_state()[i] == hc::round_to_bf16(s.end_state()[i]));
  for (std::size_t i = 0; i < s.transition().size(); ++i)
    CHECK(back.transition()[i] == hc::round_to_bf16(s.transition()[i]));
}
