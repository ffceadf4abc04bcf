// SPDX-License-Identifier: Apache-2.0
// Splice three cached segments into a running Gated DeltaNet state (HYPIC eq. 6).
//
// A request is [prefix | doc A | doc B | doc C]. Each document was summarised once, on its own,
// into (T_C, S_C|0); at request time the running state after the prefix is advanced through the
// three documents by three affine steps instead of re-running their 3×700 tokens. The result is
// compared with the token-by-token recurrence, and with the naive sum of end states.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <hybridcache/state.hpp>

namespace hc = hybridcache;

namespace {

constexpr std::size_t dk = 32, dv = 16;

struct segment {
  std::vector<float> k, v, beta, log_gate;
  std::size_t length = 0;
  hc::token_inputs<float> view() const { return {length, dk, dv, k, v, beta, log_gate}; }
};

// Stand-in for a layer's per-token keys, values, write strengths and log-gates.
segment make_segment(std::size_t length, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::uniform_real_distribution<float> beta(0.2f, 0.8f), gate(-0.02f, -0.001f);
  segment s;
  s.length = length;
  for (std::size_t t = 0; t < length; ++t) {
    float n2 = 0;
    std::vector<float> key(dk);
    for (auto& x : key) {
      x = nd(rng);
      n2 += x * x;
    }
    for (auto x : key) s.k.push_back(x / std::sqrt(n2));  // L2-normalised keys
    for (std::size_t c = 0; c < dv; ++c) s.v.push_back(nd(rng));
    s.beta.push_back(beta(rng));
    s.log_gate.push_back(gate(rng));  // scalar gate: Gated DeltaNet
  }
  return s;
}

double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double e = 0, n = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    e += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    n += double(b[i]) * b[i];
  }
  return std::sqrt(e / n);
}

}  // namespace

int main() {
  const segment prefix = make_segment(300, 1);
  const segment docs[3] = {make_segment(700, 2), make_segment(700, 3), make_segment(700, 4)};

  // Cache time: each document on its own, from a zero state.
  std::vector<hc::segment_summary<float>> cached;
  for (const auto& d : docs) cached.push_back(hc::summarize(d.view(), hc::transition_rule::delta));
  std::printf("cached %zu summaries: family %s, T_C %zux%zu, S_C|0 %zux%zu\n", cached.size(),
              std::string(hc::to_string(cached[0].family())).c_str(), dk, dk, dk, dv);

  // Request time: the running state after the prefix, then HYPIC eq. 6 over the three documents.
  const std::vector<float> zero(dk * dv, 0.0f);
  const auto after_prefix =
      hc::run_recurrence(prefix.view(), hc::transition_rule::delta, std::span<const float>(zero));
  const auto spliced = hc::apply(cached, std::span<const float>(after_prefix));

  // Check: the same tokens, one by one.
  auto full = after_prefix;
  for (const auto& d : docs)
    full = hc::run_recurrence(d.view(), hc::transition_rule::delta, std::span<const float>(full));
  const double err = relative_error(spliced, full);

  // What caching end states alone (naive addition, HYPIC eq. 3) would have produced.
  const auto naive = hc::naive_addition(std::span<const hc::segment_summary<float>>(cached),
                                        std::span<const float>(after_prefix));
  const double naive_err = relative_error(naive, full);

  // The three summaries can also be pre-combined into one (balanced tree) and reused as a unit.
  const auto combined = hc::fold(cached);
  const auto via_fold = hc::apply(combined, std::span<const float>(after_prefix));

  std::printf("composition law vs token-by-token: relative error %.2e\n", err);
  std::printf("naive addition   vs token-by-token: relative error %.2e\n", naive_err);
  std::printf("folded summary (%zu tokens)    : relative error %.2e\n", combined.length(),
              relative_error(via_fold, full));
  const bool ok = err < 1e-4 && relative_error(via_fold, full) < 1e-4 && naive_err > 1e-2;
  std::printf("%s\n", ok ? "OK" : "UNEXPECTED");
  return ok ? 0 : 1;
}
