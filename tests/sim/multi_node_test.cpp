// SPDX-License-Identifier: Apache-2.0
// sim/multi_node.hpp against an independent map-and-scan reference (tests/support/
// multi_node_reference.hpp) on synthetic RAG traces, plus closed-form cases.
#include <doctest/doctest.h>

#include <hybridcache/sim/multi_node.hpp>
#include <hybridcache/sim/synthetic.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "support/multi_node_reference.hpp"

namespace hc = hybridcache;

namespace {

hc::trace small_rag(std::uint64_t seed) {
  hc::synthetic_rag_options o;
  o.requests = 300;
  o.passages = 60;
  o.min_passage = 20;
  o.max_passage = 90;
  o.min_k = 2;
  o.max_k = 6;
  o.seed = seed;
  return hc::synthetic_rag(o);
}

}  // namespace

TEST_CASE("multi_node: counts, transfers and TTFT equal the reference on RAG traces") {
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const auto t = small_rag(seed);
    for (std::size_t nodes : {1u, 3u, 5u}) {
      for (std::size_t cap : {100u, 600u, 5000u, 1000000u}) {
        for (bool shared : {false, true}) {
          hc::multi_node_options o;
          o.nodes = nodes;
          o.pool_tokens = cap;
          const auto r = hc::simulate_multi_node(t, o, shared);
          const auto ref = hcref::multi_node_reference(t, nodes, cap, shared);
          CAPTURE(seed);
          CAPTURE(nodes);
          CAPTURE(cap);
          CAPTURE(shared);
          CHECK(r.requests == t.size());
          CHECK(r.segments == ref.segments);
          CHECK(r.local_hits == ref.local);
          CHECK(r.remote_hits == ref.remote);
          CHECK(r.misses == ref.misses);
          CHECK(r.transferred_tokens == ref.transferred);
          // TTFT: composition on one worker with the reference's hits, plus one transfer round.
          double sum = 0.0;
          for (std::size_t i = 0; i < t.size(); ++i) {
            const auto& q = t.requests()[i];
            std::vector<std::size_t> lengths;
            for (std::size_t s = 0; s + 1 < q.pieces.size(); ++s)
              lengths.push_back(t.piece(q.pieces[s]).size());
            std::vector<char> h(ref.hit[i].begin(), ref.hit[i].end());
            std::unique_ptr<bool[]> hb(new bool[h.size() + 1]());
            for (std::size_t s = 0; s < h.size(); ++s) hb[s] = h[s] != 0;
            double x = hc::composition_ttft(lengths, std::span<const bool>(hb.get(), h.size()),
                                            t.piece(q.pieces.back()).size(), 1, o.reuse)
                           .total;
            double remote = 0.0;
            for (std::size_t l : ref.remote_len[i]) remote += static_cast<double>(l);
            if (!ref.remote_len[i].empty())
              x += o.reuse.compose.transfer_fixed + o.transfer_ms_per_token * remote;
            sum += x;
          }
          CHECK(r.ttft_mean == doctest::Approx(sum / static_cast<double>(t.size())).epsilon(1e-12));
          if (nodes == 1) CHECK(r.remote_hits == 0);
        }
      }
    }
  }
}

TEST_CASE("multi_node: closed forms — unbounded pools, one node, namespaces never shared") {
  const auto t = small_rag(4);
  // Distinct (namespace, segment) pairs, counted by brute force.
  std::vector<std::pair<std::string, std::vector<hybridcache::token_id>>> seen;
  for (const auto& q : t.requests())
    for (std::size_t s = 0; s + 1 < q.pieces.size(); ++s) {
      const auto tok = t.piece(q.pieces[s]);
      std::pair<std::string, std::vector<hybridcache::token_id>> key{
          *q.ns, std::vector<hybridcache::token_id>(tok.begin(), tok.end())};
      if (std::find(seen.begin(), seen.end(), key) == seen.end()) seen.push_back(key);
    }
  hc::multi_node_options o;
  o.nodes = 4;
  o.pool_tokens = 1u << 30;
  // With unbounded pools and the shared index every distinct segment is prefilled exactly once.
  const auto shared = hc::simulate_multi_node(t, o, true);
  CHECK(shared.misses == seen.size());
  // Without it, once per node that sees it: at least as many misses.
  const auto local = hc::simulate_multi_node(t, o, false);
  CHECK(local.misses >= shared.misses);
  CHECK(local.remote_hits == 0);
  CHECK(local.misses + local.local_hits == shared.misses + shared.local_hits + shared.remote_hits);
  CHECK(shared.hit_rate() >= local.hit_rate());
  // One node: the index changes nothing.
  o.nodes = 1;
  const auto a = hc::simulate_multi_node(t, o, false), b = hc::simulate_multi_node(t, o, true);
  CHECK(a.misses == b.misses);
  CHECK(a.ttft_mean == b.ttft_mean);
  // Unbounded pools and free transfers: every request's hits with the index include its hits
  // without (a node's pool holds at least what it held before), so TTFT cannot grow.
  o.nodes = 4;
  o.transfer_ms_per_token = 0.0;
  o.reuse.compose.transfer_fixed = 0.0;
  CHECK(hc::simulate_multi_node(t, o, true).ttft_mean <=
        hc::simulate_multi_node(t, o, false).ttft_mean);
}

TEST_CASE("multi_node: bad input") {
  const auto t = small_rag(1);
  hc::multi_node_options o;
  o.nodes = 0;
  CHECK_THROWS_AS(hc::simulate_multi_node(t, o, true), hybridcache::invalid_argument);
  o.nodes = 65;
  CHECK_THROWS_AS(hc::simulate_multi_node(t, o, true), hybridcache::invalid_argument);
  o.nodes = 2;
  o.transfer_ms_per_token = -1.0;
  CHECK_THROWS_AS(hc::simulate_multi_node(t, o, true), hybridcache::invalid_argument);
  o.transfer_ms_per_token = std::nan("");
  CHECK_THROWS_AS(hc::simulate_multi_node(t, o, true), hybridcache::invalid_argument);
  o.transfer_ms_per_token = 0.0;
  CHECK_THROWS_AS(hc::simulate_multi_node(hc::trace("empty"), o, true),
                  hybridcache::invalid_argument);
}
