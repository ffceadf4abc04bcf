// SPDX-License-Identifier: Apache-2.0
// Table-driven hostile input (issue #11): one row per public call with an argument it must
// reject, the error type it must throw and the argument the error must name. Every row also
// proves that nothing else escapes: no std::length_error / std::bad_alloc from an absurd size
// (those are rejected before any allocation), no std::out_of_range, no crash or hang (a wrapped
// size used as a loop bound would hang or read out of bounds; ASan/UBSan builds run this too).
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <typeinfo>
#include <vector>

#include <hybridcache/checked.hpp>
#include <hybridcache/hybridcache.hpp>

namespace hc = hybridcache;

namespace {

constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();
constexpr std::size_t big = std::size_t{1} << 60;  // representable, never allocatable

enum class expect { invalid_argument, capacity_error, not_found_error, error };

struct row {
  const char* call;
  std::function<void()> run;
  expect type;
  const char* argument;  // substring of invalid_argument::argument() (nullptr: not checked)
};

const char* name_of(expect e) {
  switch (e) {
    case expect::invalid_argument:
      return "invalid_argument";
    case expect::capacity_error:
      return "capacity_error";
    case expect::not_found_error:
      return "not_found_error";
    case expect::error:
      return "error";
  }
  return "?";
}

void check_row(const row& r) {
  INFO("call: " << std::string(r.call));
  bool thrown = false;
  try {
    r.run();
  } catch (const hc::invalid_argument& e) {
    thrown = true;
    const bool ok = r.type == expect::invalid_argument || r.type == expect::error;
    CHECK_MESSAGE(ok, "threw invalid_argument, expected " << name_of(r.type) << ": " << e.what());
    if (r.argument != nullptr)
      CHECK_MESSAGE(e.argument().find(r.argument) != std::string::npos,
                    "argument() = '" << e.argument() << "', expected it to name '"
                                     << std::string(r.argument) << "': " << e.what());
    CHECK(std::string(e.what()).size() < 512);  // bounded messages
  } catch (const hc::capacity_error& e) {
    thrown = true;
    const bool ok = r.type == expect::capacity_error || r.type == expect::error;
    CHECK_MESSAGE(ok, e.what());
  } catch (const hc::not_found_error& e) {
    thrown = true;
    const bool ok = r.type == expect::not_found_error || r.type == expect::error;
    CHECK_MESSAGE(ok, e.what());
  } catch (const hc::error& e) {
    thrown = true;
    CHECK_MESSAGE(r.type == expect::error, "untyped hybridcache::error: " << e.what());
  } catch (const std::exception& e) {
    thrown = true;
    FAIL_CHECK("a non-hybridcache exception escaped (" << typeid(e).name() << "): " << e.what());
  }
  CHECK_MESSAGE(thrown, "nothing was thrown");
}

std::vector<hc::segment_summary<double>> two_shapes() {
  return {hc::segment_summary<double>::identity(2, 2), hc::segment_summary<double>::identity(3, 2)};
}

}  // namespace

TEST_CASE("checked arithmetic rejects overflow and absurd allocations") {
  const std::vector<row> rows = {
      {"checked_add(SIZE_MAX, 1)", [] { (void)hc::checked_add(huge, std::size_t{1}, "x", "y"); },
       expect::invalid_argument, "x + y"},
      {"checked_mul(2^32, 2^32)",
       [] { (void)hc::checked_mul(std::size_t{1} << 32, std::size_t{1} << 32, "dk", "dv"); },
       expect::invalid_argument, "dk * dv"},
      {"checked_size(L, dk, dv)",
       [] {
         (void)hc::checked_size({{"L", std::size_t{1} << 40}, {"dk", 1u << 20}, {"dv", 1u << 20}});
       },
       expect::invalid_argument, "dv"},
      {"checked_round_up(SIZE_MAX, 2)", [] { (void)hc::checked_round_up(huge, std::size_t{2}); },
       expect::invalid_argument, "block"},
      {"checked_round_up(1, 0)", [] { (void)hc::checked_round_up(std::size_t{1}, std::size_t{0}); },
       expect::invalid_argument, "block"},
      {"checked_count<double>(2^60)", [] { (void)hc::checked_count<double>(big, "n"); },
       expect::invalid_argument, "n"},
  };
  for (const auto& r : rows) check_row(r);
}

TEST_CASE("placement: every public call rejects bad and absurd input with a typed error") {
  const std::vector<double> w{1.0, 2.0, 3.0};
  const std::vector<double> zeros{0.0, 0.0};
  const std::vector<double> empty;
  const std::vector<row> rows = {
      {"place_none(0)", [] { (void)hc::place_none(0); }, expect::invalid_argument, "n"},
      {"place_dense(0)", [] { (void)hc::place_dense(0); }, expect::invalid_argument, "n"},
      {"place_dense(SIZE_MAX)", [] { (void)hc::place_dense(huge); }, expect::invalid_argument, "n"},
      {"place_balanced(0, 1)", [] { (void)hc::place_balanced(0, 1); }, expect::invalid_argument,
       "n"},
      {"place_balanced(SIZE_MAX, SIZE_MAX)", [] { (void)hc::place_balanced(huge, huge); },
       expect::invalid_argument, "budget"},
      {"place_block(5, 0)", [] { (void)hc::place_block(5, 0); }, expect::invalid_argument, "block"},
      {"place_block(SIZE_MAX, 1)", [] { (void)hc::place_block(huge, 1); }, expect::invalid_argument,
       "n / block"},
      {"place_sqrt(0)", [] { (void)hc::place_sqrt(0); }, expect::invalid_argument, "n"},
      {"place_logarithmic(0, 1)", [] { (void)hc::place_logarithmic(0, 1); },
       expect::invalid_argument, "n"},
      {"place_logarithmic(SIZE_MAX, SIZE_MAX)", [] { (void)hc::place_logarithmic(huge, huge); },
       expect::invalid_argument, "budget"},
      {"clip_to_granularity(c, 0)",
       [] { (void)hc::clip_to_granularity(std::vector<std::size_t>{1}, 0); },
       expect::invalid_argument, "granularity"},
      {"expected_recompute([], {})", [&] { (void)hc::expected_recompute(empty, {}); },
       expect::invalid_argument, "weights"},
      {"expected_recompute(w, {0})",
       [&] { (void)hc::expected_recompute(w, std::vector<std::size_t>{0}); },
       expect::invalid_argument, "checkpoints[0]"},
      {"no_cache_recompute(zeros)", [&] { (void)hc::no_cache_recompute(zeros); },
       expect::invalid_argument, "weights"},
      {"savings(w, {2, 2})",
       [&] {
         (void)hc::savings(w, std::vector<std::size_t>{2, 2});
       },
       expect::invalid_argument, "checkpoints[1]"},
      {"reduction({nan})", [] { (void)hc::reduction(std::vector<double>{std::nan("")}, {}); },
       expect::invalid_argument, "weights[0]"},
      {"uniform_optimal_recompute(0, 1)", [] { (void)hc::uniform_optimal_recompute(0, 1); },
       expect::invalid_argument, "n"},
      {"place_optimal(w, 1, granularity 0)",
       [&] {
         hc::placement_options o;
         o.granularity = 0;
         (void)hc::place_optimal(w, 1, o);
       },
       expect::invalid_argument, "granularity"},
      {"place_optimal(zeros, 1)", [&] { (void)hc::place_optimal(zeros, 1); },
       expect::invalid_argument, "weights"},
      {"optimal_frontier(w, SIZE_MAX)", [&] { (void)hc::optimal_frontier(w, huge); },
       expect::invalid_argument, "max_budget"},
      {"optimal_frontier(w, 2^60)", [&] { (void)hc::optimal_frontier(w, big); },
       expect::invalid_argument, "max_budget + 1"},
  };
  for (const auto& r : rows) check_row(r);
}

TEST_CASE("overlap: every public call rejects bad and absurd input with a typed error") {
  const std::vector<row> rows = {
      {"ew_histogram(0)", [] { hc::ew_histogram h(0); }, expect::invalid_argument, "max_depth"},
      {"ew_histogram(SIZE_MAX)", [] { hc::ew_histogram h(huge); }, expect::invalid_argument,
       "max_depth"},
      {"ew_histogram(4, 0)", [] { hc::ew_histogram h(4, 0.0); }, expect::invalid_argument, "gamma"},
      {"ew_histogram(4, subnormal)", [] { hc::ew_histogram h(4, 1e-310); },
       expect::invalid_argument, "gamma"},
      {"ew_histogram(4, nan)", [] { hc::ew_histogram h(4, std::nan("")); },
       expect::invalid_argument, "gamma"},
      {"ew_histogram(4, 1.5)", [] { hc::ew_histogram h(4, 1.5); }, expect::invalid_argument,
       "gamma"},
      {"ew_histogram::observe(5) on N = 4",
       [] {
         hc::ew_histogram h(4);
         h.observe(5);
       },
       expect::invalid_argument, "depth"},
      {"empirical_histogram(0)", [] { hc::empirical_histogram h(0); }, expect::invalid_argument,
       "max_depth"},
      {"empirical_histogram(SIZE_MAX)", [] { hc::empirical_histogram h(huge); },
       expect::invalid_argument, "max_depth"},
      {"empirical_histogram::observe(5) on N = 4",
       [] {
         hc::empirical_histogram h(4);
         h.observe(5);
       },
       expect::invalid_argument, "depth"},
      {"refresh_policy(interval 0)",
       [] {
         hc::refresh_options o;
         o.interval = 0;
         hc::refresh_policy p(8, 2, {}, o);
       },
       expect::invalid_argument, "interval"},
      {"refresh_policy(gamma 0)",
       [] {
         hc::refresh_options o;
         o.gamma = 0.0;
         hc::refresh_policy p(8, 2, {}, o);
       },
       expect::invalid_argument, "gamma"},
      {"synthetic_overlap(uniform, 0)",
       [] { (void)hc::synthetic_overlap(hc::overlap_shape::uniform, 0); }, expect::invalid_argument,
       "n"},
      {"synthetic_overlap(uniform, 2^60)",
       [] { (void)hc::synthetic_overlap(hc::overlap_shape::uniform, big); },
       expect::invalid_argument, "n"},
      {"parse_weights(\"\")", [] { (void)hc::parse_weights(""); }, expect::invalid_argument,
       "weights"},
      {"parse_weights(\"1e400\")", [] { (void)hc::parse_weights("1 1e400"); },
       expect::invalid_argument, "weights[1]"},
      {"parse_weights(\"-1\")", [] { (void)hc::parse_weights("-1"); }, expect::invalid_argument,
       "weights[0]"},
      {"parse_weights(NUL inside)", [] { (void)hc::parse_weights(std::string_view("1\0 2", 4)); },
       expect::invalid_argument, "weights[0]"},
      {"read_weights(\"x\")",
       [] {
         std::istringstream in("0.5 x");
         (void)hc::read_weights(in);
       },
       expect::invalid_argument, "weights[1]"},
  };
  for (const auto& r : rows) check_row(r);
}

TEST_CASE("dispatch: every public call rejects bad and absurd input with a typed error") {
  const std::vector<double> c{3.0, 1.0, 2.0};
  const std::vector<double> bad_speeds{1.0, 0.0};
  const std::vector<row> rows = {
      {"lpt_assign(c, 0)", [&] { (void)hc::lpt_assign(c, 0); }, expect::invalid_argument,
       "workers"},
      {"lpt_assign(c, SIZE_MAX)", [&] { (void)hc::lpt_assign(c, huge); }, expect::invalid_argument,
       "workers"},
      {"lpt_assign({-1}, 2)", [] { (void)hc::lpt_assign(std::vector<double>{-1.0}, 2); },
       expect::invalid_argument, "costs[0]"},
      {"lpt_assign(c, speeds with 0)", [&] { (void)hc::lpt_assign(c, bad_speeds); },
       expect::invalid_argument, "speeds[1]"},
      {"lpt_ratio_bound(0)", [] { (void)hc::lpt_ratio_bound(0); }, expect::invalid_argument,
       "workers"},
      {"exact_assign(25 segments, 2)",
       [] { (void)hc::exact_assign(std::vector<double>(25, 1.0), 2); }, expect::invalid_argument,
       "costs.size()"},
      {"exact_assign(c, 2, max_nodes 0)",
       [&] { (void)hc::exact_assign(c, 2, hc::exact_options{0}); }, expect::invalid_argument,
       "max_nodes"},
      {"exact_assign(c, SIZE_MAX)", [&] { (void)hc::exact_assign(c, huge); },
       expect::invalid_argument, "workers"},
      {"exact_assign(c, speeds with 0)", [&] { (void)hc::exact_assign(c, bad_speeds); },
       expect::invalid_argument, "speeds[1]"},
      {"pipeline_schedule(worker 5 of 2)",
       [] {
         (void)hc::pipeline_schedule(std::vector<std::size_t>{5}, 2, std::vector<double>{1.0},
                                     std::vector<double>{1.0});
       },
       expect::invalid_argument, "worker_of[0]"},
      {"pipeline_schedule(SIZE_MAX workers)",
       [] {
         (void)hc::pipeline_schedule(std::vector<std::size_t>{0}, huge, std::vector<double>{1.0},
                                     std::vector<double>{1.0});
       },
       expect::invalid_argument, "workers"},
      {"segment_costs(model per_token < 0)",
       [] {
         hc::prefill_cost_model m;
         m.per_token = -1.0;
         (void)hc::segment_costs(std::vector<std::size_t>{4}, m);
       },
       expect::invalid_argument, "per_token"},
      {"dispatch_segments(no workers)",
       [] {
         (void)hc::dispatch_segments(std::vector<hc::segment_job>{{4, hc::no_worker}},
                                     std::vector<double>{}, hc::prefill_cost_model{});
       },
       expect::invalid_argument, "speeds"},
      {"dispatch_segments(cached_on out of range)",
       [] {
         (void)hc::dispatch_segments(std::vector<hc::segment_job>{{4, 7}}, std::vector<double>{1.0},
                                     hc::prefill_cost_model{});
       },
       expect::invalid_argument, "cached_on"},
  };
  for (const auto& r : rows) check_row(r);
}

TEST_CASE("segment: every public call rejects bad and absurd input with a typed error") {
  using hc::token_id;
  const std::vector<token_id> toks{5, 9, 6, 7, 9, 8};
  const std::vector<row> rows = {
      {"split(block_size 0)",
       [&] {
         hc::split_options o;
         o.separator = 9;
         o.block_size = 0;
         (void)hc::split_request(toks, o);
       },
       expect::invalid_argument, "block_size"},
      {"split(pad == separator)",
       [&] {
         hc::split_options o;
         o.separator = 9;
         o.pad_token = 9;
         o.block_size = 4;
         (void)hc::split_request(toks, o);
       },
       expect::invalid_argument, "pad_token"},
      {"split(block_size SIZE_MAX)",
       [&] {
         hc::split_options o;
         o.separator = 9;
         o.pad_token = 0;
         o.block_size = huge;
         (void)hc::split_request(toks, o);
       },
       expect::invalid_argument, "spliced_length"},
      {"splice(begin > end)",
       [&] {
         hc::segmentation s;
         hc::segment_range r;
         r.begin = 4;
         r.end = 2;
         s.segments.push_back(r);
         (void)hc::splice_request(toks, s, 0);
       },
       expect::invalid_argument, "seg.segments[0]"},
      {"splice(padded_length SIZE_MAX)",
       [&] {
         hc::segmentation s;
         hc::segment_range r;
         r.begin = 0;
         r.end = 2;
         r.padded_length = huge;
         s.segments.push_back(r);
         s.segments.push_back(r);
         (void)hc::splice_request(toks, s, 0);
       },
       expect::invalid_argument, "spliced_length"},
      {"block_keys(block_size 0)",
       [&] {
         hc::xxh3_hash h;
         (void)hc::block_keys(h, hc::namespace_key::shared(), toks, 0);
       },
       expect::invalid_argument, "block_size"},
      {"block_keys_into(out too small)",
       [&] {
         hc::xxh3_hash h;
         std::vector<hc::digest> out(1);
         (void)hc::block_keys_into(h, hc::namespace_key::shared(), toks, 2,
                                   std::span<hc::digest>(out));
       },
       expect::invalid_argument, "out.size()"},
      {"namespace_key::decode(garbage)", [] { (void)hc::namespace_key::decode("\xff\x00garbage"); },
       expect::invalid_argument, nullptr},
      {"namespace_key::parse(garbage)", [] { (void)hc::namespace_key::parse("no=such=field\x01"); },
       expect::invalid_argument, nullptr},
      {"namespace_key::with_tenant(oversize)",
       [] {
         (void)hc::namespace_key::shared().with_tenant(
             std::string(hc::namespace_key::max_field_bytes + 1, 'a'));
       },
       expect::invalid_argument, nullptr},
  };
  for (const auto& r : rows) check_row(r);
}

TEST_CASE("store: every public call rejects bad and absurd input with a typed error") {
  using hc::token_id;
  const std::vector<row> rows = {
      {"lru_pool(10, reserved 20)", [] { hc::lru_pool<int, int> p(10, 20); },
       expect::invalid_argument, "reserved"},
      {"lru_pool::insert(bytes > C - R)",
       [] {
         hc::lru_pool<int, int> p(10, 4);
         (void)p.insert(1, 1, 7);
       },
       expect::invalid_argument, "bytes"},
      {"lru_pool::insert(reserved bytes > C)",
       [] {
         hc::lru_pool<int, int> p(10, 4);
         (void)p.insert(1, 1, 11, hc::entry_class::reserved);
       },
       expect::invalid_argument, "bytes"},
      {"frozen_pool(threshold 0)",
       [] {
         hc::lru_pool<int, int> p(10);
         hc::frozen_pool<int, int> f(p, 0.0);
       },
       expect::invalid_argument, "threshold"},
      {"frozen_pool::insert(bytes > C)",
       [] {
         hc::lru_pool<int, int> p(10);
         hc::frozen_pool<int, int> f(p, 1.0);
         (void)f.insert(1, 1, 11);
       },
       expect::invalid_argument, "bytes"},
      {"last_k_cache(0)", [] { hc::last_k_cache c(0); }, expect::invalid_argument, "k"},
      {"pic_store(block_size 0)",
       [] {
         hc::pic_store_options o;
         o.block_size = 0;
         hc::pic_store<int, int> s(o);
       },
       expect::invalid_argument, "block_size"},
      {"pic_store::put_prefix(not a multiple of the block)",
       [] {
         hc::pic_store_options o{100, 0, 100, 4};
         hc::pic_store<int, int> s(o);
         const std::vector<token_id> t{1, 2, 3};
         (void)s.put_prefix(hc::namespace_key::shared(), t, 1, 1);
       },
       expect::invalid_argument, "prefix.size()"},
      {"pic_store::lookup(segment begin > end)",
       [] {
         hc::pic_store_options o{100, 0, 100, 4};
         hc::pic_store<int, int> s(o);
         const std::vector<token_id> t{1, 2, 3, 4, 5, 6};
         hc::segmentation seg;
         hc::segment_range r;
         r.role = hc::segment_role::reusable;
         r.begin = 5;
         r.end = 2;
         seg.segments.push_back(r);
         (void)s.lookup(hc::namespace_key::shared(), t, seg);
       },
       expect::invalid_argument, "seg.segments[0]"},
      {"pic_store::lookup(segment end > size)",
       [] {
         hc::pic_store_options o{100, 0, 100, 4};
         hc::pic_store<int, int> s(o);
         const std::vector<token_id> t{1, 2, 3};
         hc::segmentation seg;
         hc::segment_range r;
         r.role = hc::segment_role::leading;
         r.begin = 0;
         r.end = 9;
         seg.segments.push_back(r);
         (void)s.lookup(hc::namespace_key::shared(), t, seg);
       },
       expect::invalid_argument, "seg.segments[0]"},
  };
  for (const auto& r : rows) check_row(r);
}

TEST_CASE("state: every public call rejects bad and absurd input with a typed error") {
  using sum = hc::segment_summary<double>;
  const std::vector<double> k4{1, 0, 0, 1}, v2{1, 2};
  const std::vector<row> rows = {
      {"segment_summary::identity(0, 1)", [] { (void)sum::identity(0, 1); },
       expect::invalid_argument, "dk"},
      {"segment_summary::identity(2^32, 2^32)",
       [] { (void)sum::identity(std::size_t{1} << 32, std::size_t{1} << 32); },
       expect::invalid_argument, "dk * dv"},
      {"segment_summary::identity(2^24, 1) (dk*dk unallocatable)",
       [] { (void)sum::identity(std::size_t{1} << 24, 1); }, expect::invalid_argument, "dk * dk"},
      {"segment_summary::scalar(wrong state size)",
       [] { (void)sum::scalar(2, 2, 1, -0.1, std::vector<double>(3)); }, expect::invalid_argument,
       "end_state.size()"},
      {"segment_summary::scalar(log_decay > 0)",
       [] { (void)sum::scalar(1, 1, 1, 0.5, std::vector<double>(1)); }, expect::invalid_argument,
       "log_decay[0]"},
      {"segment_summary::diagonal(wrong log_decay size)",
       [] { (void)sum::diagonal(2, 1, 1, std::vector<double>{-1.0}, std::vector<double>(2)); },
       expect::invalid_argument, "log_decay.size()"},
      {"segment_summary::dense(wrong transition size)",
       [] { (void)sum::dense(2, 1, 1, std::vector<double>(3), std::vector<double>(2)); },
       expect::invalid_argument, "transition.size()"},
      {"summarize(length*dk wraps)",
       [&] {
         hc::token_inputs<double> in{(std::size_t{1} << 62) + 1, 4, 1, k4, v2, {}, {}};
         (void)hc::summarize(in, hc::transition_rule::additive);
       },
       expect::invalid_argument, "length * dk"},
      {"summarize(k.size() mismatch)",
       [&] {
         hc::token_inputs<double> in{2, 2, 1, std::span<const double>(k4).first(3), v2, {}, {}};
         (void)hc::summarize(in, hc::transition_rule::additive);
       },
       expect::invalid_argument, "k.size()"},
      {"summarize(chunk 0)",
       [&] {
         hc::token_inputs<double> in{2, 2, 1, k4, v2, v2, {}};
         hc::summarize_options o;
         o.chunk = 0;
         (void)hc::summarize(in, hc::transition_rule::delta, o);
       },
       expect::invalid_argument, "opts.chunk"},
      {"token_inputs::slice(3, 1)",
       [&] {
         hc::token_inputs<double> in{2, 2, 1, k4, v2, {}, {}};
         (void)in.slice(3, 1);
       },
       expect::invalid_argument, "slice"},
      {"compose(shape mismatch)",
       [] {
         const auto v = two_shapes();
         (void)hc::compose(v[0], v[1]);
       },
       expect::invalid_argument, nullptr},
      {"fold(empty)", [] { (void)hc::fold(std::vector<sum>{}); }, expect::invalid_argument,
       nullptr},
      {"apply(wrong prefix size)",
       [] {
         const auto id = sum::identity(2, 2);
         (void)hc::apply(id, std::vector<double>(3));
       },
       expect::invalid_argument, nullptr},
      {"naive_addition(shape mismatch)",
       [] {
         const auto v = two_shapes();
         (void)hc::naive_addition(std::span<const sum>(v), std::vector<double>(4));
       },
       expect::invalid_argument, nullptr},
      {"to_float(inconsistent bf16 summary)",
       [] {
         hc::bf16_summary b;
         b.dk = 2;
         b.dv = 2;
         b.log_decay = {-1.0, -2.0};
         (void)hc::to_float(b);
       },
       expect::invalid_argument, "log_decay.size()"},
      {"plan_seams({0})",
       [] {
         (void)hc::plan_seams(std::vector<std::size_t>{4, 0});
       },
       expect::invalid_argument, "segment_lengths[1]"},
      {"plan_seams({SIZE_MAX, 1}) total wraps",
       [] {
         (void)hc::plan_seams(std::vector<std::size_t>{huge, 1});
       },
       expect::invalid_argument, "total_tokens"},
      {"splice(plan steps outside the request)",
       [&] {
         hc::seam_plan p;
         p.total_tokens = 2;
         hc::splice_step st;
         st.what = hc::splice_step::kind::recompute;
         st.tokens = {0, 5};
         p.steps.push_back(st);
         hc::token_inputs<double> in{2, 2, 1, k4, v2, {}, {}};
         (void)hc::splice(p, std::vector<sum>{}, in, hc::transition_rule::additive,
                          std::vector<double>(2));
       },
       expect::invalid_argument, "plan.steps[0]"},
      {"rerotate_state(wrong size)",
       [] {
         hc::rope_params rp;
         rp.head_dim = 4;
         rp.rotary_dim = 4;
         std::vector<double> st(7);
         hc::rerotate_state(std::span<double>(st), 4, 2, 3, rp);
       },
       expect::invalid_argument, "state.size()"},
      {"run_recurrence(wrong initial state)",
       [&] {
         hc::token_inputs<double> in{2, 2, 1, k4, v2, {}, {}};
         (void)hc::run_recurrence(in, hc::transition_rule::additive, std::vector<double>(5));
       },
       expect::invalid_argument, "initial_state.size()"},
      {"apply_heads(wrong prefix size)",
       [] {
         const std::vector<std::vector<sum>> runs{{sum::identity(2, 2)}, {sum::identity(2, 2)}};
         (void)hc::apply_heads(std::span<const std::vector<sum>>(runs), std::vector<double>(5));
       },
       expect::invalid_argument, "prefix_states.size()"},
  };
  for (const auto& r : rows) check_row(r);
}

TEST_CASE("rope, select, storage: every public call rejects bad and absurd input") {
  const std::vector<row> rows = {
      {"rope_params::validate(odd rotary_dim)",
       [] {
         hc::rope_params p;
         p.head_dim = 8;
         p.rotary_dim = 3;
         p.validate();
       },
       expect::invalid_argument, "rotary_dim"},
      {"realign_keys(shape mismatch)",
       [] {
         hc::rope_params p;
         p.head_dim = 4;
         p.rotary_dim = 4;
         std::vector<float> a(2 * 1 * 4), b(3 * 1 * 4);
         hc::strided_view<float, 3> src(a.data(), {2, 1, 4});
         hc::strided_view<float, 3> dst(b.data(), {3, 1, 4});
         hc::realign_keys(p, src, dst, 5);
       },
       expect::invalid_argument, nullptr},
      {"realign_blocks(num_tokens SIZE_MAX)",
       [] {
         hc::rope_params p;
         p.head_dim = 4;
         p.rotary_dim = 4;
         std::vector<float> k(2 * 2 * 1 * 4), v(2 * 2 * 1 * 4), k2(k), v2(v);
         std::vector<int> old_t{0}, new_t{1};
         hc::strided_view<float, 4> ks(k.data(), {2, 2, 1, 4}), vs(v.data(), {2, 2, 1, 4}),
             kd(k2.data(), {2, 2, 1, 4}), vd(v2.data(), {2, 2, 1, 4});
         hc::vector_view<int> ot(old_t.data(), {1}), nt(new_t.data(), {1});
         hc::realign_blocks(p, ks, vs, kd, vd, ot, nt, huge, 1);
       },
       expect::invalid_argument, "num_tokens"},
      {"select_tokens(block_size 0)",
       [] {
         hc::selection_options o;
         o.block_size = 0;
         (void)hc::select_tokens(std::vector<double>{1, 2}, {}, o);
       },
       expect::invalid_argument, "block_size"},
      {"select_tokens(negative score)",
       [] {
         (void)hc::select_tokens(std::vector<double>{1, -2}, {}, hc::selection_options{});
       },
       expect::invalid_argument, "scores[1]"},
      {"non_reuse_positions(range past the prompt)",
       [] {
         (void)hc::non_reuse_positions(std::vector<hc::token_range>{{1, 9}}, 4);
       },
       expect::invalid_argument, "reused[0].end"},
      {"non_reuse_positions({}, SIZE_MAX)", [] { (void)hc::non_reuse_positions({}, huge); },
       expect::invalid_argument, "t_len"},
      {"threshold_for(fraction 2)", [] { (void)hc::threshold_for(10, 2.0); },
       expect::invalid_argument, "fraction"},
      {"make_layer_plan(0 layers)", [] { (void)hc::make_layer_plan(0, 0, {}); },
       expect::invalid_argument, "layers"},
      {"make_layer_plan(SIZE_MAX layers)", [] { (void)hc::make_layer_plan(huge, 1, {}); },
       expect::invalid_argument, "layers"},
      {"make_layer_plan(non_reuse index out of range)",
       [] {
         hc::token_selection sel;
         sel.recompute_mask = {1, 0};
         sel.non_reuse = {7};
         (void)hc::make_layer_plan(4, 1, sel);
       },
       expect::invalid_argument, "selection.non_reuse[0]"},
      {"sparse_q_scores(shape mismatch)",
       [] {
         std::vector<float> q(1 * 1 * 4), k(3 * 1 * 4);
         std::vector<int> pos{0};
         std::vector<double> out(2);
         (void)hc::sparse_q_scores(hc::strided_view<float, 3>(q.data(), {1, 1, 4}),
                                   hc::vector_view<int>(pos.data(), {1}),
                                   hc::strided_view<float, 3>(k.data(), {3, 1, 4}),
                                   hc::vector_view<double>(out.data(), {2}));
       },
       expect::invalid_argument, "scores.extent(0)"},
      {"make_view(span, rows, cols) wrapped product",
       [] {
         std::vector<float> a(0);
         (void)hc::make_view(std::span<float>(a), std::size_t{1} << 32, std::size_t{1} << 32);
       },
       expect::invalid_argument, "rows * cols"},
      {"make_view(span, 2, 3) size mismatch",
       [] {
         std::vector<float> a(5);
         (void)hc::make_view(std::span<float>(a), 2, 3);
       },
       expect::invalid_argument, "span.size()"},
      {"buffer<float>(2^60)", [] { hc::buffer<float> b(big); }, expect::invalid_argument, "n"},
      {"strided_view::at(out of range)",
       [] {
         std::vector<float> a(4);
         hc::strided_view<float, 2> v(a.data(), {2, 2});
         (void)v.at(2, 0);
       },
       expect::invalid_argument, "index[0]"},
  };
  for (const auto& r : rows) check_row(r);
}
