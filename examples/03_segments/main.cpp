// SPDX-License-Identifier: Apache-2.0
// Example 03 (docs/segments.md, docs/store.md): a RAG request
//   system prompt <SEP> document A <SEP> document B <SEP> question
// is split into segments; two tenants cache and reuse documents in their own namespaces; the
// HYPIC store finds a private prefix hit first, then public segment hits; a last-K cache
// measures overlap depths. Exits non-zero if any expectation fails.
#include <cstdio>
#include <string>
#include <vector>

#include <hybridcache/segment.hpp>
#include <hybridcache/store.hpp>

using hybridcache::token_id;
namespace hc = hybridcache;

namespace {
int failures = 0;
void expect(bool ok, const char* what) {
  std::printf("  [%s] %s\n", ok ? "ok" : "FAIL", what);
  failures += ok ? 0 : 1;
}
std::vector<token_id> span_of(token_id first, std::size_t n) {
  std::vector<token_id> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = first + static_cast<token_id>(i);
  return v;
}
}  // namespace

int main() {
  constexpr token_id sep = 151'643;  // the application's PIC_SEPARATOR token id
  const auto system = span_of(1, 40), doc_a = span_of(1000, 300), doc_b = span_of(5000, 200),
             question = span_of(9000, 12);
  std::vector<token_id> request;
  for (const auto* part : {&system, &doc_a, &doc_b, &question}) {
    if (!request.empty()) request.push_back(sep);
    request.insert(request.end(), part->begin(), part->end());
  }

  // 1. Segmentation: leading (anchored), reusable, query; padded to 64-token blocks; seam 8.
  const auto seg = hc::split_request(request, {.separator = sep, .block_size = 64, .pad_token = 0});
  std::printf("segments of a %zu-token request (spliced length %zu):\n", request.size(),
              seg.spliced_length);
  for (const auto& s : seg.segments)
    std::printf("  role %d  tokens [%zu, %zu)  position %zu  padded %zu  seams %zu/%zu\n",
                static_cast<int>(s.role), s.begin, s.end, s.position, s.padded_length,
                s.head_seam, s.tail_seam);
  expect(seg.segments.size() == 4, "four segments: system, doc A, doc B, question");

  // 2. Namespaces: typed fields; malformed text is an error, not the shared namespace.
  const auto tenant1 = hc::namespace_key::parse("ns{tenant=acme;kb=handbook}");
  const auto tenant2 = hc::namespace_key{}.with_tenant("globex").with_knowledge_base("handbook");
  bool rejected = false;
  try {
    (void)hc::namespace_key::parse("tenant=acme");
  } catch (const hybridcache::invalid_argument& e) {
    rejected = true;
    std::printf("  rejected: %s\n", e.what());
  }
  expect(rejected, "malformed namespace text throws");

  // 3. The verified index: same namespace hits, another tenant misses the same tokens.
  hc::segment_index<std::string> index;  // keyed XXH3-128, random per-index secret
  index.insert(tenant1, doc_a, "KV(doc A) for acme");
  expect(index.find(tenant1, doc_a).has_value(), "acme finds its document");
  expect(!index.find(tenant2, doc_a).has_value(), "globex does not see acme's document");

  // 4. HYPIC store: private running state after 128 tokens, public entries per segment.
  hc::pic_store<std::string, std::string> store({.public_capacity = 1 << 20,
                                                 .public_reserved = 1 << 18,
                                                 .private_capacity = 1 << 20,
                                                 .block_size = 64});
  const std::span<const token_id> r(request);
  const auto& sa = seg.segments[1];
  const auto& sb = seg.segments[2];
  store.put_segment(tenant1, r.subspan(sa.begin, sa.length()), "summary(doc A)", 4096);
  store.put_segment(tenant1, r.subspan(sb.begin, sb.length()), "summary(doc B)", 4096);
  store.put_prefix(tenant1, r.first(128), "running state @128", 8192);
  const auto hit = store.lookup(tenant1, request, seg);
  std::printf("acme: private prefix %zu tokens, public hits %zu, misses %zu\n", hit.prefix_depth,
              hit.hits(), hit.misses());
  expect(hit.prefix_depth == 128, "private prefix hit covers the first two blocks");
  expect(hit.hits() == 1 && hit.misses() == 1,
         "doc A is partly covered by the prefix (recompute), doc B hits publicly");
  const auto other = store.lookup(tenant2, request, seg);
  expect(other.prefix_depth == 0 && other.hits() == 0, "globex shares nothing");

  // 5. Chained block keys: the namespace reaches every block.
  const hc::xxh3_hash h;
  const auto k1 = hc::block_keys(h, tenant1, request, 64);
  const auto k2 = hc::block_keys(h, tenant2, request, 64);
  bool all_differ = true;
  for (std::size_t i = 0; i < k1.size(); ++i) all_differ = all_differ && k1[i] != k2[i];
  expect(all_differ, "every block key differs between tenants");
  std::printf("  h_1 (acme) = %s\n", k1.front().to_hex().c_str());

  // 6. Last-K overlap depths (the sparse prefix caching simulation's input).
  hc::last_k_cache last_k(35);
  last_k.observe(tenant1, request);
  auto follow_up = request;
  follow_up.back() += 1;  // same context, different last question token
  const auto m = last_k.observe(tenant1, follow_up);
  std::printf("follow-up overlaps a retained entry to depth %zu of %zu\n", m.depth,
              m.entry_length);
  expect(m.depth == request.size() - 1, "overlap depth is the longest common prefix");

  std::printf("%s\n", failures == 0 ? "all expectations met" : "some expectations FAILED");
  return failures == 0 ? 0 : 1;
}
