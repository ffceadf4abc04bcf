// SPDX-License-Identifier: Apache-2.0
// Peak heap memory of place_optimal_tree on wide trees (issue #21 item 8), measured by counting
// every byte through a replaced global operator new/delete — which is why this is its own test
// binary (test_placement_memory). The bound checked is the one stated in
// placement/detail/tree_dp.hpp, with the DP's own tables computed here from the tree's shape.
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

#include <hybridcache/placement/tree.hpp>

namespace {
std::size_t live_bytes = 0;
std::size_t peak_bytes = 0;
constexpr std::size_t header = alignof(std::max_align_t);  // keeps the block aligned
}  // namespace

void* operator new(std::size_t bytes) {
  auto* raw = static_cast<unsigned char*>(std::malloc(bytes + header));
  if (raw == nullptr) throw std::bad_alloc();
  *reinterpret_cast<std::size_t*>(raw) = bytes;
  live_bytes += bytes;
  if (live_bytes > peak_bytes) peak_bytes = live_bytes;
  return raw + header;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  auto* raw = static_cast<unsigned char*>(p) - header;
  live_bytes -= *reinterpret_cast<std::size_t*>(raw);
  std::free(raw);
}
void operator delete(void* p, std::size_t) noexcept { operator delete(p); }

namespace hc = hybridcache;

namespace {

struct wide_tree {
  std::vector<std::size_t> parent;
  std::vector<double> depth, weight;
};

/// Root → `leaves` weighted leaves (star), depths 16·(1..256), lognormal weights.
wide_tree star(std::size_t leaves) {
  std::mt19937_64 rng(21);
  std::lognormal_distribution<double> w(0.0, 1.5);
  wide_tree t{{0}, {0.0}, {0.0}};
  for (std::size_t i = 0; i < leaves; ++i) {
    t.parent.push_back(0);
    t.depth.push_back(static_cast<double>(16 * (1 + rng() % 256)));
    t.weight.push_back(w(rng));
  }
  return t;
}

/// Bytes the heap grew by at its peak while `f` ran.
template <class F>
std::size_t peak_of(F&& f) {
  const std::size_t base = live_bytes;
  peak_bytes = live_bytes;
  f();
  return peak_bytes - base;
}

}  // namespace

TEST_CASE("place_optimal_tree on a wide star stays within the stated memory bound") {
  // 20 000 leaves at M = 1024: the former split kept one prefix merge per child,
  // 20 000 · 1025 doubles = 164 MB. The bound of tree_dp.hpp: 32 words per node, the H and X
  // tables (a leaf holds 1 + 2 values, the root 2·(min(n_w, M) + 1)), and the split's
  // (2⌈√r⌉ + 2)(M + 1) doubles for r children.
  const std::size_t leaves = 20000, m = 1024;
  const auto t = star(leaves);
  const hc::tree_view view{t.parent, t.depth, t.weight};
  std::size_t root_kids = 1;
  while (root_kids * root_kids < leaves) ++root_kids;
  const std::size_t n = leaves + 1;
  const std::size_t tables = 3 * leaves + 2 * (m + 1);
  const std::size_t split = (2 * root_kids + 2) * (m + 1);
  const std::size_t bound = 8 * (32 * n + tables + split);
  hc::tree_placement plan;
  const std::size_t peak = peak_of([&] { plan = hc::place_optimal_tree(view, m); });
  MESSAGE("peak heap growth " << peak << " bytes, bound " << bound);
  CHECK(plan.checkpoints.size() == m);
  CHECK(peak <= bound);
  // The frontier alone stays far below it too.
  const std::size_t peak_frontier = peak_of([&] { (void)hc::optimal_tree_frontier(view, m); });
  CHECK(peak_frontier <= bound);
}
