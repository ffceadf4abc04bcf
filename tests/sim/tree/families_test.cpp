// SPDX-License-Identifier: Apache-2.0
// The synthetic tree-trace families (sim/tree/families.hpp, issue #24's tuning set): determinism
// in the seed; every promise a generator makes (how many tokens a request shares with an earlier
// one: a rewrite point, an edit position, common passages, a document) against the longest common
// prefix recomputed naively from the tokens, and the trie's common-prefix depth against that
// prefix's full blocks; the samplers against their closed forms; bad input.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <hybridcache/sim/tree/families.hpp>
#include <map>
#include <string>
#include <vector>

namespace hc = hybridcache;

namespace {

using tokens = std::vector<hc::token_id>;

// Small instances keep the Debug build quick; the default sizes are checked once below.
hc::family_draft small(std::string_view name, std::uint64_t seed) {
  const std::map<std::string_view, std::size_t> sessions{
      {"agent-loop", 24},      {"rag", 300},          {"code-edit", 40},  {"doc-qa-skewed", 80},
      {"prompt-library", 300}, {"doc-qa-repeat", 80}, {"tree-search", 20}};
  return hc::tree_family_draft(name, {.sessions = sessions.at(name), .seed = seed});
}

std::size_t naive_lcp(const tokens& a, const tokens& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

std::size_t common_nodes(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  return i;
}

/// Agent-loop, hand-sized: 3 sessions of one 1000-token harness, 500-token tasks, 6 steps, and
/// every step compacts to system + task + the last item.
hc::agent_loop_options every_step_compacts() {
  hc::agent_loop_options o;
  o.sessions = 3;
  o.system_prompts = 1;
  o.system_min = o.system_max = 1000;
  o.task_min = o.task_max = 500;
  o.steps_min = o.steps_max = 6;
  o.rewrite_probability = 1.0;
  o.keep_head_max = 0;
  o.keep_tail = 1;
  return o;
}

struct promise_counts {
  std::map<hc::family_event, std::size_t> events;
  std::size_t checked = 0;
};

// Every promise of `d` against the tokens, and the trie of block `block` against the tokens.
promise_counts check_promises(const hc::family_draft& d, std::size_t block) {
  const auto t = d.build(block);
  REQUIRE(t.size() == d.requests.size());
  promise_counts c;
  tokens a, b;
  for (std::size_t i = 0; i < d.requests.size(); ++i) {
    const auto& q = d.requests[i];
    ++c.events[q.event];
    d.materialize(i, a);
    REQUIRE(a.size() == q.prompt_tokens + q.output_tokens);
    CHECK(t.requests()[i].prompt_tokens == q.prompt_tokens);
    CHECK(t.requests()[i].path.size() == a.size() / block);
    if (q.ref == hc::family_request::npos) {
      CHECK(q.event == hc::family_event::none);
      continue;
    }
    REQUIRE(q.ref < i);  // an earlier request
    d.materialize(q.ref, b);
    const std::size_t lcp = naive_lcp(a, b);
    CHECK_MESSAGE(lcp == q.shared_with_ref, d.name, " request ", i, " ref ", q.ref);
    // The trie shares exactly the full blocks of the common prefix (tokens are unique ids, so
    // no later block can coincide).
    CHECK(common_nodes(t.requests()[i].path, t.requests()[q.ref].path) == lcp / block);
    if (q.event == hc::family_event::extend) CHECK(lcp == b.size());  // all of the reference
    if (q.event == hc::family_event::rewrite || q.event == hc::family_event::edit) {
      // Diverges strictly inside the reference's prompt: a break mid-sequence.
      CHECK(lcp < d.requests[q.ref].prompt_tokens);
    }
    ++c.checked;
  }
  return c;
}

}  // namespace

TEST_CASE("tree families: a seed names one trace and another seed another") {
  for (auto name : hc::tree_family_names) {
    CAPTURE(name);
    const auto a = small(name, 7).build(64), b = small(name, 7).build(64);
    const auto c = small(name, 8).build(64);
    REQUIRE(a.size() == b.size());
    CHECK(a.node_count() == b.node_count());
    CHECK(a.name() == std::string(name));
    bool same_as_c = a.size() == c.size();
    for (std::size_t i = 0; i < a.size(); ++i) {
      const auto &x = a.requests()[i], &y = b.requests()[i];
      CHECK(x.path == y.path);
      CHECK(x.prompt_tokens == y.prompt_tokens);
      CHECK(x.output_tokens == y.output_tokens);
      CHECK(x.arrival == y.arrival);
      if (same_as_c) {
        const auto& z = c.requests()[i];
        same_as_c = x.path == z.path && x.prompt_tokens == z.prompt_tokens &&
                    x.output_tokens == z.output_tokens && x.arrival == z.arrival;
      }
    }
    CHECK_FALSE(same_as_c);
  }
}

TEST_CASE("tree families: every promised shared prefix is the tokens' and the trie's") {
  for (auto name : hc::tree_family_names) {
    CAPTURE(name);
    for (std::uint64_t seed : {1, 2}) {
      for (std::size_t block : {16, 64, 512}) {
        const auto c = check_promises(small(name, seed), block);
        CHECK(c.checked > 0);
      }
    }
  }
}

TEST_CASE(
    "tree families: the defaults give a few thousand long interleaved requests whose "
    "promises hold") {
  // Sizes the families promise (families.hpp): a few thousand requests of thousands to tens of
  // thousands of tokens, sessions interleaved in time, each family's own way of breaking prefixes
  // present.
  for (auto name : hc::tree_family_names) {
    CAPTURE(name);
    const auto d = hc::tree_family_draft(name);
    CHECK(d.requests.size() >= 1500);
    CHECK(d.requests.size() <= 6000);
    double prompt = 0.0;
    std::size_t longest = 0;
    for (const auto& q : d.requests) {
      prompt += static_cast<double>(q.prompt_tokens);
      longest = std::max(longest, q.prompt_tokens);
    }
    prompt /= static_cast<double>(d.requests.size());
    CHECK(prompt >= 3000.0);
    CHECK(prompt <= 30000.0);
    // prompt-library is mostly single-turn: its prompts are a system prompt and a message.
    CHECK(longest >= (name == "prompt-library" ? 10000u : 20000u));
    // Arrival order, and sessions interleave: some session has another's request between two of
    // its own.
    bool sorted = true, interleaved = false;
    std::map<std::uint32_t, std::size_t> last;
    for (std::size_t i = 0; i < d.requests.size(); ++i) {
      if (i > 0 && d.requests[i].arrival < d.requests[i - 1].arrival) sorted = false;
      const auto it = last.find(d.requests[i].session);
      if (it != last.end() && it->second + 1 < i) interleaved = true;
      last[d.requests[i].session] = i;
    }
    CHECK(sorted);
    CHECK(interleaved);
    const auto c = check_promises(d, 64);
    using ev = hc::family_event;
    if (name == "agent-loop") {
      CHECK(c.events.at(ev::rewrite) >= 50);  // compactions happen, and break mid-sequence
      CHECK(c.events.at(ev::extend) >= 1000);
    } else if (name == "code-edit") {
      CHECK(c.events.at(ev::edit) >= 100);
      CHECK(c.events.at(ev::extend) >= 100);
    } else if (name == "rag") {
      CHECK(c.events.at(ev::sibling) >= 1000);
      CHECK(c.events.at(ev::extend) >= 500);
    } else if (name == "prompt-library") {
      CHECK(c.events.at(ev::sibling) >= 2500);  // every conversation's first request
      CHECK(c.events.at(ev::extend) >= 500);
    } else if (name == "tree-search") {
      // Every kept node is expanded by an extension of the request that wrote it, and its other
      // samples repeat its whole prompt (the promise, checked above, is then the prompt).
      CHECK(c.events.at(ev::extend) >= 500);
      std::size_t samples = 0;
      for (const auto& q : d.requests)
        samples += q.event == ev::sibling && q.shared_with_ref == q.prompt_tokens;
      CHECK(samples >= 1500);
    } else if (name == "doc-qa-repeat") {
      // Questions stand alone, and most prompts were asked before in full (the promise, checked
      // above against the tokens' longest common prefix, is then the whole prompt).
      CHECK(c.events.count(ev::extend) == 0);
      std::size_t repeats = 0;
      for (const auto& q : d.requests)
        repeats += q.event == ev::sibling && q.shared_with_ref == q.prompt_tokens;
      CHECK(repeats >= d.requests.size() / 2);
    } else {
      CHECK(c.events.at(ev::sibling) >= 1000);  // documents come back
      CHECK(c.events.at(ev::extend) >= 300);
    }
  }
}

TEST_CASE("tree families: agent-loop rewrites diverge at the rewrite point after the task") {
  // Hand-sized: one harness, every step compacts (probability 1), keep_head_max = 0, so each
  // compaction keeps system + task + the last item and the next request diverges right after
  // the task: the promise is system + task tokens, the same for every rewrite of a session.
  const auto d = hc::agent_loop(every_step_compacts());
  REQUIRE(d.requests.size() == 18);
  std::size_t rewrites = 0;
  tokens a, b;
  for (std::size_t i = 0; i < d.requests.size(); ++i) {
    const auto& q = d.requests[i];
    if (q.event != hc::family_event::rewrite) continue;
    ++rewrites;
    d.materialize(i, a);
    d.materialize(q.ref, b);
    CHECK(naive_lcp(a, b) == 1500);
    CHECK(q.shared_with_ref == 1500);
  }
  // Step 0 leaves one item (nothing between head and tail to compact); every later step leaves
  // at least two and compacts, so the requests of steps 2..5 are rewrites: 4 per session.
  CHECK(rewrites == 12);
}

TEST_CASE("tree families: user messages start after the system prompt and at each user turn") {
  // Agent-loop, hand-sized as above but every compaction summarises: the task starts after the
  // 1000-token system prompt, and from the third step on the summary (after system + task)
  // starts one more message; calls and tool results start none.
  auto o = every_step_compacts();
  o.truncate_fraction = 0.0;
  const auto d = hc::agent_loop(o);
  const auto t = d.build(64);
  for (std::size_t i = 0; i < d.requests.size(); ++i) {
    const auto& q = d.requests[i];
    const auto& starts = t.requests()[i].user_starts;
    CHECK(starts == d.user_starts(i));
    if (q.event == hc::family_event::rewrite)
      CHECK(starts == std::vector<std::size_t>{1000, 1500});
    else
      CHECK(starts == std::vector<std::size_t>{1000});
  }
  // Every family: strictly ascending inside the prompt, the first where the system prompt ends,
  // and (all but agent-loop, whose prompts end with a tool result) the last where the prompt's
  // last piece, the user's question, instruction or message, begins.
  for (auto name : hc::tree_family_names) {
    CAPTURE(name);
    const auto f = small(name, 3);
    for (std::size_t i = 0; i < f.requests.size(); ++i) {
      const auto& q = f.requests[i];
      const auto starts = f.user_starts(i);
      REQUIRE_FALSE(starts.empty());
      CHECK(std::is_sorted(starts.begin(), starts.end()));
      CHECK(std::adjacent_find(starts.begin(), starts.end()) == starts.end());
      CHECK(starts.back() < q.prompt_tokens);
      std::size_t system = 0;
      for (const auto& x : q.tokens) {
        if (x.role != hc::slice_role::system) break;
        system += x.size();
      }
      CHECK(system > 0);
      CHECK(starts.front() == system);
      // agent-loop's prompts end with a tool result, tree-search's with a reasoning step.
      if (name == std::string_view("agent-loop") || name == std::string_view("tree-search"))
        continue;
      std::size_t at = 0, last = 0;
      for (const auto& x : q.tokens) {
        if (at == q.prompt_tokens) break;
        last = at;
        at += x.size();
      }
      CHECK(starts.back() == last);
    }
  }
}

TEST_CASE("tree families: code-edit diverges at the edit position inside the file") {
  // One repository, one session, one core file of exactly 1000 tokens and no task files, every
  // turn edits: the next request diverges at system (100) + the edit position, which is < 1000 +
  // the inserted tokens; every follow-up is an edit event.
  hc::code_edit_options o;
  o.sessions = 1;
  o.repos = 1;
  o.files_per_repo = 1;
  o.core_files = 1;
  o.task_files_min = o.task_files_max = 0;
  o.file_min = o.file_max = 1000;
  o.system_tokens = 100;
  o.turns_min = o.turns_max = 5;
  o.edit_probability = 1.0;
  const auto d = hc::code_edit(o);
  REQUIRE(d.requests.size() == 5);
  tokens a, b;
  for (std::size_t i = 1; i < 5; ++i) {
    const auto& q = d.requests[i];
    CHECK(q.event == hc::family_event::edit);
    CHECK(q.ref == i - 1);
    d.materialize(i, a);
    d.materialize(i - 1, b);
    const auto lcp = naive_lcp(a, b);
    CHECK(lcp == q.shared_with_ref);
    CHECK(lcp >= 100);
    CHECK(lcp < d.requests[i - 1].prompt_tokens);
  }
}

TEST_CASE("tree families: the samplers follow their closed forms") {
  hybridcache::detail::rng r(99);
  // Bounded Pareto on [1500, 60000], alpha 1.1: P(X <= x) = (1 − (l/x)^a) / (1 − (l/h)^a).
  const double l = 1500, h = 60000, alpha = 1.1;
  const int n = 40000;
  std::vector<std::size_t> xs;
  for (int i = 0; i < n; ++i)
    xs.push_back(hybridcache::detail::bounded_pareto(r, alpha, 1500, 60000));
  CHECK(*std::min_element(xs.begin(), xs.end()) >= 1500);
  CHECK(*std::max_element(xs.begin(), xs.end()) <= 60000);
  for (double x : {2000.0, 3000.0, 6000.0, 20000.0}) {
    const double want = (1 - std::pow(l / x, alpha)) / (1 - std::pow(l / h, alpha));
    const double got =
        static_cast<double>(std::count_if(
            xs.begin(), xs.end(), [&](std::size_t v) { return static_cast<double>(v) <= x; })) /
        n;
    CHECK(got == doctest::Approx(want).epsilon(0.02));
  }
  // Geometric with mean 7 (uncapped in effect at cap 1000): sample mean within 3 %.
  double sum = 0;
  for (int i = 0; i < n; ++i)
    sum += static_cast<double>(hybridcache::detail::geometric(r, 7.0, 1000));
  CHECK(sum / n == doctest::Approx(7.0).epsilon(0.03));
  // Log-uniform on [100, 4000]: the median is sqrt(100 · 4001) ≈ 632.
  std::vector<std::size_t> ls;
  for (int i = 0; i < n; ++i) ls.push_back(hybridcache::detail::log_uniform(r, 100, 4000));
  std::nth_element(ls.begin(), ls.begin() + n / 2, ls.end());
  CHECK(static_cast<double>(ls[n / 2]) == doctest::Approx(std::sqrt(100.0 * 4001.0)).epsilon(0.03));
}

TEST_CASE("tree families: bad input names the argument") {
  CHECK_THROWS_AS(hc::tree_family_draft("agent-loops"), hybridcache::invalid_argument);
  hc::agent_loop_options a;
  a.sessions = 0;
  CHECK_THROWS_AS(hc::agent_loop(a), hybridcache::invalid_argument);
  a = {};
  a.call_min = 500;  // > call_max
  CHECK_THROWS_AS(hc::agent_loop(a), hybridcache::invalid_argument);
  hc::rag_options r;
  r.corpus = 5;  // < k_max + 3
  CHECK_THROWS_AS(hc::rag_sessions(r), hybridcache::invalid_argument);
  r = {};
  r.ranked_order = 1.5;
  CHECK_THROWS_AS(hc::rag_sessions(r), hybridcache::invalid_argument);
  hc::code_edit_options c;
  c.files_per_repo = 4;  // < core 3 + task 4
  CHECK_THROWS_AS(hc::code_edit(c), hybridcache::invalid_argument);
  hc::doc_qa_skewed_options q;
  q.length_alpha = 0.0;
  CHECK_THROWS_AS(hc::doc_qa_skewed(q), hybridcache::invalid_argument);
  q = {};
  q.doc_min = 0;
  CHECK_THROWS_AS(hc::doc_qa_skewed(q), hybridcache::invalid_argument);
  hc::prompt_library_options p;
  p.apps = 0;
  CHECK_THROWS_AS(hc::prompt_library(p), hybridcache::invalid_argument);
  p = {};
  p.body_min = 7000;  // > body_max
  CHECK_THROWS_AS(hc::prompt_library(p), hybridcache::invalid_argument);
  p = {};
  p.drift_share = -0.1;
  CHECK_THROWS_AS(hc::prompt_library(p), hybridcache::invalid_argument);
  p = {};
  p.drift_every = 0;
  CHECK_THROWS_AS(hc::prompt_library(p), hybridcache::invalid_argument);
  hc::tree_search_options s;
  s.problems = 0;
  CHECK_THROWS_AS(hc::tree_search(s), hybridcache::invalid_argument);
  s = {};
  s.branch_min = 5;  // > branch_max
  CHECK_THROWS_AS(hc::tree_search(s), hybridcache::invalid_argument);
  s = {};
  s.width_min = 0;
  CHECK_THROWS_AS(hc::tree_search(s), hybridcache::invalid_argument);
  s = {};
  s.spread = 0.0;
  CHECK_THROWS_AS(hc::tree_search(s), hybridcache::invalid_argument);
}

TEST_CASE(
    "tree families: prompt-library branches at the vendor header, the app body, the version") {
  // The three levels of sharing, counted from the generator's own draws and checked against the
  // tokens: first requests of two conversations share exactly a vendor header (same vendor,
  // other app), a header ++ body (same app, other version) or header ++ body ++ last section
  // (same version), and nothing when the vendors differ.
  const auto d = hc::prompt_library({.conversations = 800, .seed = 3});
  tokens a, b;
  std::map<std::string, std::size_t> levels;
  for (std::size_t i = 0; i < d.requests.size(); ++i) {
    const auto& q = d.requests[i];
    if (q.event != hc::family_event::sibling) continue;
    d.materialize(i, a);
    d.materialize(q.ref, b);
    const std::size_t lcp = naive_lcp(a, b);
    REQUIRE(lcp == q.shared_with_ref);
    // The slices say which level it is: the number of leading slices the two requests share.
    const auto& x = q.tokens;
    const auto& y = d.requests[q.ref].tokens;
    std::size_t same = 0;
    while (same < x.size() && same < y.size() && x[same].segment == y[same].segment) ++same;
    std::size_t covered = 0;
    for (std::size_t k = 0; k < same; ++k) covered += x[k].size();
    CHECK(covered == lcp);
    ++levels[same == 0 ? "none" : same == 1 ? "vendor" : same == 2 ? "app" : "version"];
  }
  // Every level occurs (a vendor of many apps, popular apps, apps with several versions).
  CHECK(levels["none"] > 0);
  CHECK(levels["vendor"] > 0);
  CHECK(levels["app"] > 0);
  CHECK(levels["version"] > 0);
}

TEST_CASE("tree families: tree-search samples a node's prompt, then extends the kept samples") {
  // Hand-sized: one search, beam width 2, 3 samples per node, 4 depths: 3 requests at depth 0
  // (the root) and 2 · 3 at each later depth. Checked from the tokens alone: the samples of a
  // node have one prompt and differ from the first output token, and every later prompt is the
  // whole prompt ++ output of one request of the depth before.
  hc::tree_search_options o;
  o.problems = 1;
  o.width_min = o.width_max = 2;
  o.branch_min = o.branch_max = 3;
  o.depth_min = o.depth_max = 4;
  const auto d = hc::tree_search(o);
  REQUIRE(d.requests.size() == 3 + 3 * 6);
  std::vector<tokens> all(d.requests.size()), prompts(d.requests.size());
  for (std::size_t i = 0; i < d.requests.size(); ++i) {
    d.materialize(i, all[i]);
    prompts[i].assign(all[i].begin(),
                      all[i].begin() + static_cast<std::ptrdiff_t>(d.requests[i].prompt_tokens));
  }
  // Requests in arrival order are depth by depth: [0, 3), [3, 9), [9, 15), [15, 21).
  const std::size_t begin[] = {0, 3, 9, 15, 21};
  for (std::size_t depth = 0; depth < 4; ++depth) {
    std::map<tokens, std::size_t> samples;  // prompt -> how many requests sent it
    for (std::size_t i = begin[depth]; i < begin[depth + 1]; ++i) {
      ++samples[prompts[i]];
      if (depth == 0) continue;
      std::size_t parents = 0;
      for (std::size_t j = begin[depth - 1]; j < begin[depth]; ++j) parents += prompts[i] == all[j];
      CHECK(parents == 1);
    }
    CHECK(samples.size() == (depth == 0 ? 1u : 2u));
    for (const auto& [prompt, n] : samples) CHECK(n == 3);
    // Samples of one prompt part at their first output token.
    for (std::size_t i = begin[depth]; i < begin[depth + 1]; ++i)
      for (std::size_t j = i + 1; j < begin[depth + 1]; ++j)
        if (prompts[i] == prompts[j]) CHECK(naive_lcp(all[i], all[j]) == prompts[i].size());
  }
}
