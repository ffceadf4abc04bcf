// SPDX-License-Identifier: Apache-2.0
// Example 11: an engine that stores checkpoints per cached sequence places a new entry jointly with
// the retained ones, follows the better of its two shadow systems, and hands an evicted entry's
// states over to the sequences that share its prefix (placement/shadow.hpp, docs/placement.md).
#include <cstdio>
#include <hybridcache/placement.hpp>
#include <span>
#include <vector>

namespace hc = hybridcache;

namespace {
// What the engine's prefix index reports for a sequence: a retained entry and the common prefix.
struct share {
  std::size_t entry;
  std::size_t depth;
};

void print(const char* what, std::span<const std::size_t> positions) {
  std::printf("%-44s", what);
  for (std::size_t p : positions) std::printf(" %zu", p);
  std::printf("%s\n", positions.empty() ? " (none)" : "");
}
}  // namespace

int main() {
  constexpr std::size_t block = 64, budget = 1, length = 1290;
  // The depth law of an entry of 1290 tokens: a third of its hits stop at 640, two thirds at 1280.
  std::vector<double> w(length, 0.0);
  w[639] = 1.0;
  w[1279] = 2.0;
  const hc::depth_prefix_sums sums(w);
  const auto law = *sums.block_law(hc::depth_anchor::head, length, block);

  // The retained entries' checkpoints (positions in tokens), as the realised cache holds them.
  std::vector<std::vector<std::size_t>> held{{640}, {1280}};
  const auto positions = [&](const share& s) {
    return std::span<const std::size_t>(held[s.entry]);
  };

  // A request shares 700 tokens with entry 0 and 1000 with entry 1: it resumes at 640.
  const std::vector<share> request{{0, 700}, {1, 1000}};
  std::printf("request of depth 1000 resumes at %zu\n", hc::shared_reuse(request, positions));

  // A new entry of 1290 tokens shares 640 tokens with entry 0 and 1280 with entry 1.
  const std::vector<share> incoming{{0, 640}, {1, 1280}};
  std::vector<std::size_t> covered;
  hc::covered_blocks(incoming, positions, block, length / block, covered);
  print("blocks the retained entries cover:", covered);
  print("per-entry placement (system A):", hc::plan_entry(law, budget).checkpoints);
  print("joint placement (system B):", hc::plan_entry_covered(law, budget, covered).checkpoints);

  // The shadows' recompute per request decides which system the realised cache follows.
  hc::shadow_leader lead({.margin = 0.05});
  lead.charge(/*per_entry=*/640, /*joint=*/0);
  std::printf("after one re-plan the cache follows: %s\n",
              std::string(hc::to_string(lead.decide())).c_str());

  // Entry 0 is evicted; entry 1 shares 640 tokens with it and may take its state at 640 over.
  // Nothing else covers entry 1, and its budget is 1: it keeps the better of 640 and 1280.
  hc::handover_selector handover(block);
  std::vector<std::size_t> next;
  const auto r = handover.offer<std::size_t>(
      held[1], held[0], 640, budget, [&] { return &law; },
      [](std::vector<std::size_t>& u) { u.clear(); }, next);
  print("entry 1 after the hand-over:", r.replaced ? next : held[1]);
  const auto r2 = handover.offer<std::size_t>(
      held[1], held[0], 640, 2, [&] { return &law; },
      [](std::vector<std::size_t>& u) { u.clear(); }, next);
  print("... with a budget of 2:", r2.replaced ? next : held[1]);
  std::printf("states taken over: %zu\n", r2.taken);
  return 0;
}
