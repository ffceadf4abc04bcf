// SPDX-License-Identifier: Apache-2.0
// libFuzzer target (clang++ -fsanitize=fuzzer,address,undefined; built and run by
// scripts/test.d/fuzz.sh): the engine-facing calls of `state_policy` in any order, with
// handles that may be stale (erased, evicted KV), foreign (another namespace) or invented.
//
// Differential: two policies with the same options receive the same operations. A matches with
// hints (`match_keys(ns, keys, hints)`, any ids), inserts a
// prompt after its match with the prefix overload `extend_keys(ns, m.path, keys)` and decode
// blocks with `extend_key`; B, the reference, matches without hints, walks every prompt from the
// namespace's root
// (`extend_keys(ns, no_node, keys)`) and adds decode blocks with the one-key vector form. Every
// call must either return the same result on both or throw `hybridcache::invalid_argument` (or
// `capacity_error`) on both; after each operation both must agree on the states held, the bytes
// used, the expected recompute (finite, >= 0) and the node count. Anything else aborts: a crash,
// a sanitizer report, an untyped exception, or a disagreement.
//
// Input: byte 0 sets the options (capacity 1-8 states of 1 byte, re-plan every 0-3
// observations); then each operation is one opcode byte and up to two argument bytes.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <hybridcache/tree.hpp>

namespace {
namespace hc = hybridcache;

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "tree_policy_fuzz: %s\n", msg.c_str());
  std::abort();
}

/// The outcome of one call: a value, or the kind of error it threw.
enum class outcome { ok, invalid, capacity };

template <class F>
outcome attempt(F&& f) {
  try {
    f();
    return outcome::ok;
  } catch (const hc::invalid_argument&) {
    return outcome::invalid;
  } catch (const hc::capacity_error&) {
    return outcome::capacity;
  }
  // Any other exception escapes to libFuzzer, which reports it as a crash.
}

struct reader {
  std::span<const std::uint8_t> d;
  std::size_t at = 0;
  bool more() const { return at < d.size(); }
  std::uint8_t next() { return at < d.size() ? d[at++] : 0; }
};

/// Prefix-unique keys of symbol sequences (as chained keys are): one key per distinct prefix.
struct keyring {
  std::map<std::vector<std::uint8_t>, std::uint64_t> ids;
  std::vector<hc::digest> keys(const std::vector<std::uint8_t>& seq) {
    std::vector<hc::digest> out;
    std::vector<std::uint8_t> prefix;
    for (auto s : seq) {
      prefix.push_back(s);
      const auto [it, fresh] = ids.emplace(prefix, ids.size() + 1);
      (void)fresh;
      out.push_back(hc::digest{it->second, 0x5EEDULL});
    }
    return out;
  }
};

void check_same(hc::state_policy& a, hc::state_policy& b, const char* after) {
  const double ea = a.expected_recompute(), eb = b.expected_recompute();
  if (!(std::isfinite(ea) && ea >= 0.0))
    die(std::string("expected recompute not finite after ") + after);
  if (a.state_count() != b.state_count() || a.used_bytes() != b.used_bytes() ||
      a.node_count() != b.node_count() || ea != eb)
    die(std::string("the two policies disagree after ") + after);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  reader in{std::span(data, size)};
  const std::uint8_t cfg = in.next();
  hc::policy_options o;
  o.block_size = 1;
  o.state_bytes = 1;
  o.capacity_bytes = 1 + (cfg & 7u);
  o.replan_every = (cfg >> 3) & 3u;
  hc::state_policy a(o), b(o);
  keyring ring;
  const hc::namespace_key spaces[3] = {hc::namespace_key{}.with_tenant("t"),
                                       hc::namespace_key{}.with_tenant("u"),
                                       hc::namespace_key::shared()};
  std::vector<hc::node_id> nodes;  // every id either policy returned (both return the same ids)
  struct open_match {
    hc::match_result m;
    std::size_t ns = 0;
    std::vector<std::uint8_t> seq;
  };
  std::vector<open_match> open;  // matches whose resume node is still pinned
  const auto any_node = [&](std::uint8_t x) -> hc::node_id {
    if (nodes.empty() || x % 8 == 7) return hc::node_id{x} * 977;  // invented or stale ids too
    return nodes[x % nodes.size()];
  };
  const auto sequence = [&](std::uint8_t x, std::uint8_t y) {
    std::vector<std::uint8_t> s(1 + x % 8);
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<std::uint8_t>((y >> (i % 4)) % 3);
    return s;
  };

  for (int ops = 0; in.more() && ops < 256; ++ops) {
    const std::uint8_t op = in.next(), x = in.next(), y = in.next();
    const auto& ns = spaces[x % 3];
    outcome ra = outcome::ok, rb = outcome::ok;
    switch (op % 12) {
      case 0: {  // match: both pin the same resume node
        const auto seq = sequence(x, y);
        const auto k = ring.keys(seq);
        hc::match_result ma, mb;
        // A is given hints (any ids, invented and stale ones too): the same match must come out.
        std::vector<hc::node_id> hints;
        for (std::size_t i = 0; i < k.size() && i < 8; ++i)
          hints.push_back(any_node(static_cast<std::uint8_t>(x + 31 * i + y)));
        ra = attempt([&] { ma = a.match_keys(ns, k, hints); });
        rb = attempt([&] { mb = b.match_keys(ns, k); });
        if (ra == outcome::ok && rb == outcome::ok) {
          if (ma.path != mb.path || ma.resume_node != mb.resume_node) die("match differs");
          open.push_back({ma, static_cast<std::size_t>(x % 3), seq});
        }
        break;
      }
      case 1: {  // the prompt after the prefill of an open match: from the match vs from the root
        if (open.empty()) break;
        auto& om = open[y % open.size()];
        auto seq = om.seq;
        for (std::uint8_t i = 0; i < x % 4; ++i) seq.push_back(static_cast<std::uint8_t>(i % 3));
        const auto k = ring.keys(seq);
        const auto& ons = spaces[(om.ns + (x >> 6)) % 3];  // sometimes another namespace
        std::vector<hc::node_id> va, vb;
        ra = attempt([&] { va = a.extend_keys(ons, std::span(om.m.path), k); });
        rb = attempt([&] { vb = b.extend_keys(ons, hc::no_node, k); });
        if (ra == outcome::ok && rb == outcome::ok) {
          if (va != vb) die("extend_keys from the match differs from the root walk");
          nodes.insert(nodes.end(), va.begin(), va.end());
        }
        break;
      }
      case 2: {  // one decode block below a node (possibly stale or invented)
        const hc::node_id parent = (y & 1) ? hc::no_node : any_node(y >> 1);
        const auto k = ring.keys(sequence(x, y)).back();
        hc::node_id va = hc::no_node;
        std::vector<hc::node_id> vb;
        ra = attempt([&] { va = a.extend_key(ns, parent, k); });
        rb = attempt([&] { vb = b.extend_keys(ns, parent, std::span(&k, 1)); });
        if (ra == outcome::ok && rb == outcome::ok) {
          if (vb.size() != 1 || va != vb.front()) die("extend_key differs");
          nodes.push_back(va);
        }
        break;
      }
      case 3: {  // a whole sequence at its end
        const auto k = ring.keys(sequence(x, y));
        std::vector<hc::node_id> va, vb;
        ra = attempt([&] { va = a.insert_keys(ns, k); });
        rb = attempt([&] { vb = b.insert_keys(ns, k); });
        if (ra == outcome::ok && rb == outcome::ok) {
          if (va != vb) die("insert_keys differs");
          nodes.insert(nodes.end(), va.begin(), va.end());
        }
        break;
      }
      case 4: {
        const hc::node_id v = any_node(x);
        const std::size_t bytes = y % 4;  // 0 is an argument error
        hc::admit_result aa, ab;
        ra = attempt([&] { aa = a.admit(v, bytes); });
        rb = attempt([&] { ab = b.admit(v, bytes); });
        if (ra == outcome::ok && rb == outcome::ok &&
            (aa.admitted != ab.admitted || aa.victims != ab.victims))
          die("admit differs");
        break;
      }
      case 5: {  // the request ends: release its pin
        if (open.empty()) break;
        const std::size_t i = x % open.size();
        ra = attempt([&] { a.unpin(open[i].m.resume_node); });
        rb = attempt([&] { b.unpin(open[i].m.resume_node); });
        open.erase(open.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      case 6: {  // the engine evicted a leaf's KV
        const hc::node_id v = any_node(x);
        ra = attempt([&] { a.erase(v); });
        rb = attempt([&] { b.erase(v); });
        break;
      }
      case 7: {
        const hc::node_id v = any_node(x);
        ra = attempt([&] { a.drop(v); });
        rb = attempt([&] { b.drop(v); });
        break;
      }
      case 8: {
        std::vector<hc::node_id> va, vb;
        ra = attempt([&] { va = a.evict(x % 5); });
        rb = attempt([&] { vb = b.evict(x % 5); });
        if (va != vb) die("evict differs");
        break;
      }
      case 9: {
        std::vector<hc::node_id> va, vb;
        ra = attempt([&] { va = a.set_capacity_bytes(x % 9); });  // 0 is an argument error
        rb = attempt([&] { vb = b.set_capacity_bytes(x % 9); });
        if (va != vb) die("set_capacity_bytes differs");
        break;
      }
      case 10: {
        const hc::node_id v = any_node(x);
        if (y & 1) {
          ra = attempt([&] { a.note_sequence_end(v); });
          rb = attempt([&] { b.note_sequence_end(v); });
        } else if (y & 2) {
          ra = attempt([&] { a.note_prefill_end(v); });
          rb = attempt([&] { b.note_prefill_end(v); });
        } else {
          ra = attempt([&] { a.note_branch_point(v); });
          rb = attempt([&] { b.note_branch_point(v); });
        }
        break;
      }
      case 11: {  // a prefill plan for an open match (a const query)
        if (open.empty()) break;
        const auto& om = open[x % open.size()];
        const std::size_t prompt = om.m.matched_tokens + y % 4;
        std::vector<std::size_t> chunks;
        for (std::size_t p = 1; p <= prompt; ++p) chunks.push_back(p);
        if (y & 0x80) chunks.push_back(prompt + 1);  // beyond the prompt: an argument error
        std::vector<std::size_t> pa, pb;
        ra = attempt([&] { pa = a.prefill_plan(om.m, prompt, chunks); });
        rb = attempt([&] { pb = b.prefill_plan(om.m, prompt, chunks); });
        if (pa != pb) die("prefill_plan differs");
        std::optional<std::size_t> qa, qb;
        const outcome ta = attempt([&] { qa = a.branch_point(om.m, prompt, chunks); });
        const outcome tb = attempt([&] { qb = b.branch_point(om.m, prompt, chunks); });
        if (ta != tb) die("branch_point: one policy threw and the other did not");
        if (qa != qb) die("branch_point differs");
        if (qa && (*qa <= om.m.matched_tokens || *qa >= prompt)) die("branch_point out of range");
        break;
      }
    }
    if (ra != rb)
      die("one policy threw and the other did not (opcode " + std::to_string(op % 12) + ")");
    check_same(a, b, ("opcode " + std::to_string(op % 12)).c_str());
  }
  (void)a.replan();
  (void)b.replan();
  check_same(a, b, "the final re-plan");
  return 0;
}
