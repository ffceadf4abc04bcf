// SPDX-License-Identifier: Apache-2.0
// compat/v0_1.hpp: every hybridcache 0.1 spelling it brings back names the flat entity, and each
// forwarder returns what the flat function returns. Compiled with -Wno-deprecated-declarations
// (tests/compat/CMakeLists.txt); that a use does warn is checked by compat/v0_1_warns (a TU that
// must fail under -Werror=deprecated-declarations). The list below is the compat header's, entry
// for entry: a name added there and not here, or the reverse, is a review finding.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <hybridcache/compat/v0_1.hpp>  // the only hybridcache include: the header is enough

namespace hc = hybridcache;
namespace state = hybridcache::state;
namespace segment = hybridcache::segment;
namespace store = hybridcache::store;
namespace sim = hybridcache::sim;
namespace tree = hybridcache::tree;

// ---- types and class templates: the very same types -------------------------------------------
static_assert(std::is_same_v<state::batch_options, hc::batch_options>);
static_assert(std::is_same_v<state::bf16_summary, hc::bf16_summary>);
static_assert(std::is_same_v<state::bound_weights, hc::bound_weights>);
static_assert(std::is_same_v<state::bulk_executor, hc::bulk_executor>);
static_assert(std::is_same_v<state::check_report, hc::check_report>);
static_assert(
    std::is_same_v<state::delta_product_inputs<double>, hc::delta_product_inputs<double>>);
static_assert(std::is_same_v<state::dplr_inputs<double>, hc::dplr_inputs<double>>);
static_assert(std::is_same_v<state::elementwise_summary<double>, hc::elementwise_summary<double>>);
static_assert(std::is_same_v<state::error_model, hc::error_model>);
static_assert(
    std::is_same_v<state::expanded_delta_product<double>, hc::expanded_delta_product<double>>);
static_assert(std::is_same_v<state::family, hc::transition_family>);
static_assert(std::is_same_v<state::gate_kind, hc::gate_kind>);
static_assert(std::is_same_v<state::matrix<double>, hc::state_matrix<double>>);
static_assert(std::is_same_v<state::naive_error_report, hc::naive_error_report>);
static_assert(std::is_same_v<state::precision, hc::precision>);
static_assert(std::is_same_v<state::rule, hc::transition_rule>);
static_assert(std::is_same_v<state::seam_options, hc::seam_options>);
static_assert(std::is_same_v<state::seam_plan, hc::seam_plan>);
static_assert(std::is_same_v<state::segment_outputs<double>, hc::segment_outputs<double>>);
static_assert(std::is_same_v<state::segment_role, hc::segment_role>);
static_assert(std::is_same_v<state::segment_summary<double>, hc::segment_summary<double>>);
static_assert(std::is_same_v<state::selective_inputs<double>, hc::selective_inputs<double>>);
static_assert(std::is_same_v<state::splice_options, hc::splice_options>);
static_assert(std::is_same_v<state::splice_step, hc::splice_step>);
static_assert(std::is_same_v<state::summarize_method, hc::summarize_method>);
static_assert(std::is_same_v<state::summarize_options, hc::summarize_options>);
static_assert(std::is_same_v<state::token_inputs<double>, hc::token_inputs<double>>);
static_assert(std::is_same_v<state::token_range, hc::token_range>);
static_assert(std::is_same_v<segment::constant_hash, hc::constant_hash>);
static_assert(std::is_same_v<segment::digest, hc::digest>);
static_assert(std::is_same_v<segment::digest_hasher, hc::digest_hasher>);
static_assert(std::is_same_v<segment::key_view, hc::key_view>);
static_assert(std::is_same_v<segment::namespace_field, hc::namespace_field>);
static_assert(std::is_same_v<segment::namespace_key, hc::namespace_key>);
static_assert(std::is_same_v<segment::segment_index<int>, hc::segment_index<int>>);
static_assert(std::is_same_v<segment::segment_kind, hc::segment_kind>);
static_assert(std::is_same_v<segment::segment_range, hc::segment_range>);
static_assert(std::is_same_v<segment::segment_role, hc::segment_role>);
static_assert(std::is_same_v<segment::segmentation, hc::segmentation>);
#if HYBRIDCACHE_COMPAT_HAS_OPENSSL
static_assert(std::is_same_v<segment::sha256_hash, hc::sha256_hash>);
#endif
static_assert(std::is_same_v<segment::split_options, hc::split_options>);
static_assert(std::is_same_v<segment::verified_key, hc::verified_key>);
static_assert(std::is_same_v<segment::verified_key_equal, hc::verified_key_equal>);
static_assert(std::is_same_v<segment::verified_key_hash, hc::verified_key_hash>);
static_assert(std::is_same_v<segment::xxh3_hash, hc::xxh3_hash>);
static_assert(std::is_same_v<store::entry_class, hc::entry_class>);
static_assert(
    std::is_same_v<store::frozen_pool<int, std::string>, hc::frozen_pool<int, std::string>>);
static_assert(std::is_same_v<store::insert_status, hc::insert_status>);
static_assert(std::is_same_v<store::last_k_cache, hc::last_k_cache>);
static_assert(std::is_same_v<store::last_k_match, hc::last_k_match>);
static_assert(std::is_same_v<store::last_k_overlap, hc::last_k_overlap>);
static_assert(std::is_same_v<store::lru_pool<int, std::string>, hc::lru_pool<int, std::string>>);
static_assert(std::is_same_v<store::pic_store<int, int>, hc::pic_store<int, int>>);
static_assert(std::is_same_v<store::pic_store_options, hc::pic_store_options>);
static_assert(std::is_same_v<store::pool_stats, hc::pool_stats>);
#if HYBRIDCACHE_COMPAT_HAS_REDIS
static_assert(std::is_same_v<store::redis_errc, hc::redis_errc>);
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
static_assert(std::is_same_v<store::redis_error, hc::redis_error>);
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
static_assert(std::is_same_v<store::redis_index_stats, hc::redis_index_stats>);
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
static_assert(std::is_same_v<store::redis_options, hc::redis_options>);
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
static_assert(std::is_same_v<store::redis_segment_index, hc::redis_segment_index>);
#endif
static_assert(std::is_same_v<store::release_reason, hc::release_reason>);
static_assert(std::is_same_v<store::segment_location, hc::segment_location>);
static_assert(std::is_same_v<store::virtual_block_index<hc::lru_pool<int, std::string>>,
                             hc::virtual_block_index<hc::lru_pool<int, std::string>>>);
static_assert(std::is_same_v<sim::agent_loop_options, hc::agent_loop_options>);
static_assert(std::is_same_v<sim::arrival_options, hc::arrival_options>);
static_assert(std::is_same_v<sim::block_hash_record, hc::block_hash_record>);
static_assert(std::is_same_v<sim::block_tree, hc::block_tree>);
static_assert(std::is_same_v<sim::byte_tokenizer, hc::byte_tokenizer>);
static_assert(std::is_same_v<sim::code_edit_options, hc::code_edit_options>);
static_assert(std::is_same_v<sim::composition_costs, hc::composition_costs>);
static_assert(std::is_same_v<sim::doc_qa_skewed_options, hc::doc_qa_skewed_options>);
static_assert(std::is_same_v<sim::dominance_check, hc::dominance_check>);
static_assert(std::is_same_v<sim::dominance_status, hc::dominance_status>);
static_assert(std::is_same_v<sim::family_draft, hc::family_draft>);
static_assert(std::is_same_v<sim::family_event, hc::family_event>);
static_assert(std::is_same_v<sim::family_request, hc::family_request>);
static_assert(std::is_same_v<sim::kv_budget, hc::kv_budget>);
static_assert(std::is_same_v<sim::kv_mode, hc::kv_mode>);
static_assert(std::is_same_v<sim::last_k_overlap, hc::last_k_overlap>);
static_assert(std::is_same_v<sim::library_policy, hc::library_policy>);
static_assert(std::is_same_v<sim::llamacpp_policy, hc::llamacpp_policy>);
static_assert(std::is_same_v<sim::lru_engine_policy, hc::lru_engine_policy>);
static_assert(std::is_same_v<sim::marconi_policy, hc::marconi_policy>);
static_assert(std::is_same_v<sim::model_shape, hc::model_shape>);
static_assert(std::is_same_v<sim::multi_node_options, hc::multi_node_options>);
static_assert(std::is_same_v<sim::multi_node_result, hc::multi_node_result>);
static_assert(std::is_same_v<sim::multi_turn_options, hc::multi_turn_options>);
static_assert(std::is_same_v<sim::namespace_stats, hc::namespace_stats>);
static_assert(std::is_same_v<sim::oracle_exact_policy, hc::oracle_exact_policy>);
static_assert(std::is_same_v<sim::oracle_policy, hc::oracle_policy>);
static_assert(std::is_same_v<sim::progress_fn, hc::progress_fn>);
static_assert(std::is_same_v<sim::rag_options, hc::rag_options>);
static_assert(std::is_same_v<sim::recency_order, hc::recency_order>);
static_assert(std::is_same_v<sim::request, hc::request>);
static_assert(std::is_same_v<sim::request_group, hc::request_group>);
static_assert(std::is_same_v<sim::segment_reuse_options, hc::segment_reuse_options>);
static_assert(std::is_same_v<sim::segment_reuse_result, hc::segment_reuse_result>);
static_assert(
    std::is_same_v<sim::sglang_extra_buffer_lazy_policy, hc::sglang_extra_buffer_lazy_policy>);
static_assert(std::is_same_v<sim::sglang_extra_buffer_policy, hc::sglang_extra_buffer_policy>);
static_assert(std::is_same_v<sim::sglang_no_buffer_policy, hc::sglang_no_buffer_policy>);
static_assert(std::is_same_v<sim::sglang_policy, hc::sglang_policy>);
static_assert(std::is_same_v<sim::sparse_prefix_options, hc::sparse_prefix_options>);
static_assert(std::is_same_v<sim::sparse_prefix_result, hc::sparse_prefix_result>);
static_assert(std::is_same_v<sim::sparse_prefix_simulator, hc::sparse_prefix_simulator>);
static_assert(std::is_same_v<sim::state_pool, hc::state_pool>);
static_assert(std::is_same_v<sim::strategy, hc::placement_strategy>);
static_assert(std::is_same_v<sim::strategy_result, hc::strategy_result>);
static_assert(std::is_same_v<sim::synthetic_options, hc::synthetic_options>);
static_assert(std::is_same_v<sim::synthetic_rag_options, hc::synthetic_rag_options>);
static_assert(std::is_same_v<sim::text_document, hc::text_document>);
static_assert(std::is_same_v<sim::text_rag_prompt, hc::text_rag_prompt>);
static_assert(std::is_same_v<sim::token_id, hc::token_id>);
static_assert(std::is_same_v<sim::token_slice, hc::token_slice>);
static_assert(std::is_same_v<sim::trace, hc::trace>);
static_assert(std::is_same_v<sim::tree_context, hc::tree_context>);
static_assert(std::is_same_v<sim::tree_cost_model, hc::tree_cost_model>);
static_assert(std::is_same_v<sim::tree_family_options, hc::tree_family_options>);
static_assert(std::is_same_v<sim::tree_metrics, hc::tree_metrics>);
static_assert(std::is_same_v<sim::tree_options, hc::tree_options>);
static_assert(std::is_same_v<sim::tree_policy, hc::tree_policy>);
static_assert(std::is_same_v<sim::tree_replayer, hc::tree_replayer>);
static_assert(std::is_same_v<sim::tree_request, hc::tree_request>);
static_assert(std::is_same_v<sim::tree_result, hc::tree_result>);
static_assert(std::is_same_v<sim::tree_step, hc::tree_step>);
static_assert(std::is_same_v<sim::tree_trace, hc::tree_trace>);
static_assert(std::is_same_v<sim::tree_trace_builder, hc::tree_trace_builder>);
static_assert(std::is_same_v<sim::trtllm_policy, hc::trtllm_policy>);
static_assert(std::is_same_v<sim::ttft_breakdown, hc::ttft_breakdown>);
static_assert(std::is_same_v<sim::ttft_summary, hc::ttft_summary>);
static_assert(std::is_same_v<sim::vllm_align_dense_policy, hc::vllm_align_dense_policy>);
static_assert(std::is_same_v<sim::vllm_align_policy, hc::vllm_align_policy>);
static_assert(std::is_same_v<sim::vllm_all_policy, hc::vllm_all_policy>);
static_assert(std::is_same_v<sim::vllm_policy, hc::vllm_policy>);
static_assert(std::is_same_v<sim::word_tokenizer, hc::word_tokenizer>);
static_assert(std::is_same_v<tree::admit_result, hc::admit_result>);
static_assert(std::is_same_v<tree::basic_state_policy<>, hc::basic_state_policy<>>);
static_assert(std::is_same_v<tree::match_result, hc::match_result>);
static_assert(std::is_same_v<tree::node_id, hc::node_id>);
static_assert(std::is_same_v<tree::policy_options, hc::policy_options>);
static_assert(std::is_same_v<tree::replan_result, hc::replan_result>);
static_assert(std::is_same_v<tree::state_policy, hc::state_policy>);

// ---- constants: the very same objects -----------------------------------------------------------
static_assert(&state::exp_budget_ulps == &hc::exp_budget_ulps);
static_assert(&sim::all_strategies == &hc::all_placement_strategies);
static_assert(&sim::hypic_fig14_composition == &hc::hypic_fig14_composition);
static_assert(&sim::model_presets == &hc::model_presets);
static_assert(&sim::qwen3_5_0_8b == &hc::qwen3_5_0_8b);
static_assert(&sim::qwen3_next_80b_a3b == &hc::qwen3_next_80b_a3b);
static_assert(&sim::tree_family_names == &hc::tree_family_names);
static_assert(&sim::tree_policy_names == &hc::tree_policy_names);
static_assert(&sim::tree_policy_variants == &hc::tree_policy_variants);
static_assert(&tree::no_node == &hc::no_node);

// ---- the concept (re-stated, not deprecated) ----------------------------------------------------
static_assert(segment::hash_policy<hc::xxh3_hash> && hc::hash_policy<hc::xxh3_hash>);
static_assert(!segment::hash_policy<int> && !hc::hash_policy<int>);

// ---- namespace aliases (cannot be deprecated): the same namespaces ----------------------------
static_assert(std::is_same_v<state::detail::rng, hc::detail::rng>);
static_assert(std::is_same_v<sim::detail::rng, hc::detail::rng>);
static_assert(std::is_same_v<store::detail::rng, hc::detail::rng>);
static_assert(std::is_same_v<tree::detail::node_index, hc::detail::node_index>);
static_assert(std::is_same_v<state::fla::dims, hc::fla::dims>);
static_assert(std::is_same_v<state::mamba::scan_args<double>, hc::mamba::scan_args<double>>);
static_assert(std::is_same_v<state::npy::array, hc::npy::array>);

namespace {

// The forwarder's result is the flat function's: same type, equal value.
template <class A, class B>
void check_same(const A& a, const B& b) {
  static_assert(std::is_same_v<A, B>);
  CHECK(a == b);
}

template <class Real>
void check_same_summary(const hc::segment_summary<Real>& a, const hc::segment_summary<Real>& b) {
  CHECK(a.family() == b.family());
  CHECK(a.length() == b.length());
  const auto ea = a.end_state(), eb = b.end_state();
  CHECK(std::vector<Real>(ea.begin(), ea.end()) == std::vector<Real>(eb.begin(), eb.end()));
  const auto ta = a.transition(), tb = b.transition();
  CHECK(std::vector<Real>(ta.begin(), ta.end()) == std::vector<Real>(tb.begin(), tb.end()));
}

}  // namespace

TEST_CASE("compat v0_1: every forwarded function name exists in its 0.1 namespace") {
  // A block-scope using-declaration compiles only if the name is declared there (all 81).
  using hc::segment::block_keys;           // -> block_keys
  using hc::segment::block_keys_into;      // -> block_keys_into
  using hc::segment::chain_key;            // -> chain_key
  using hc::segment::root_key;             // -> root_key
  using hc::segment::segment_key;          // -> segment_key
  using hc::segment::splice;               // -> splice_request
  using hc::segment::split;                // -> split_request
  using hc::sim::agent_loop;               // -> agent_loop
  using hc::sim::build_block_hash_trace;   // -> build_block_hash_trace
  using hc::sim::build_document_qa;        // -> build_document_qa
  using hc::sim::build_rag;                // -> build_rag
  using hc::sim::build_system_prompts;     // -> build_system_prompts
  using hc::sim::check_dominance;          // -> check_dominance
  using hc::sim::code_edit;                // -> code_edit
  using hc::sim::cold_dispatch;            // -> cold_dispatch
  using hc::sim::cold_segments_request;    // -> cold_segments_request
  using hc::sim::composition_ttft;         // -> composition_ttft
  using hc::sim::deepest_held;             // -> deepest_held
  using hc::sim::doc_qa_skewed;            // -> doc_qa_skewed
  using hc::sim::expand_block_hash;        // -> expand_block_hash
  using hc::sim::find_model;               // -> find_model
  using hc::sim::from_trace;               // -> from_trace
  using hc::sim::generate_requests;        // -> generate_requests
  using hc::sim::hypic_fig14_prefill;      // -> hypic_fig14_prefill
  using hc::sim::is_fixed_baseline;        // -> is_fixed_baseline
  using hc::sim::make_tree_policy;         // -> make_tree_policy
  using hc::sim::parse_strategy;           // -> parse_strategy
  using hc::sim::rag_sessions;             // -> rag_sessions
  using hc::sim::replay_tree;              // -> replay_tree
  using hc::sim::simulate_multi_node;      // -> simulate_multi_node
  using hc::sim::simulate_segment_reuse;   // -> simulate_segment_reuse
  using hc::sim::simulate_sparse_prefix;   // -> simulate_sparse_prefix
  using hc::sim::simulate_tree;            // -> simulate_tree
  using hc::sim::static_optimum;           // -> static_optimum
  using hc::sim::synthetic_document_qa;    // -> synthetic_document_qa
  using hc::sim::synthetic_multi_turn;     // -> synthetic_multi_turn
  using hc::sim::synthetic_multimodal;     // -> synthetic_multimodal
  using hc::sim::synthetic_rag;            // -> synthetic_rag
  using hc::sim::synthetic_system_prompt;  // -> synthetic_system_prompt
  using hc::sim::to_string;                // -> to_string
  using hc::sim::tree_family;              // -> tree_family
  using hc::sim::tree_family_draft;        // -> tree_family_draft
  using hc::sim::tune_marconi_alpha;       // -> tune_marconi_alpha
  using hc::sim::usable_matches;           // -> usable_matches
  using hc::sim::uses_budget;              // -> uses_budget
  using hc::state::abs_bound_weights;      // -> abs_bound_weights
  using hc::state::apply;                  // -> apply
  using hc::state::apply_dense;            // -> apply_dense
  using hc::state::apply_elementwise;      // -> apply_elementwise
  using hc::state::apply_heads;            // -> apply_heads
  using hc::state::cached_interior;        // -> cached_interior
  using hc::state::check_close;            // -> check_close
  using hc::state::compose;                // -> compose
  using hc::state::compose_dense;          // -> compose_dense
  using hc::state::compose_elementwise;    // -> compose_elementwise
  using hc::state::default_scale;          // -> default_scale
  using hc::state::element_tolerance;      // -> element_tolerance
  using hc::state::end_state_matrix;       // -> end_state_matrix
  using hc::state::expand;                 // -> expand
  using hc::state::family_of;              // -> family_of
  using hc::state::fold;                   // -> fold
  using hc::state::gamma_of;               // -> gamma_of
  using hc::state::naive_addition;         // -> naive_addition
  using hc::state::naive_error;            // -> naive_error
  using hc::state::outputs;                // -> outputs
  using hc::state::parse_precision;        // -> parse_precision
  using hc::state::plan_seams;             // -> plan_seams
  using hc::state::promote;                // -> promote
  using hc::state::rerotate;               // -> rerotate
  using hc::state::rerotate_state;         // -> rerotate_state
  using hc::state::role_of;                // -> role_of
  using hc::state::round_to_bf16;          // -> round_to_bf16
  using hc::state::run_recurrence;         // -> run_recurrence
  using hc::state::splice;                 // -> splice
  using hc::state::summarize;              // -> summarize
  using hc::state::summarize_heads;        // -> summarize_heads
  using hc::state::to_bf16;                // -> to_bf16
  using hc::state::to_float;               // -> to_float
  using hc::state::to_string;              // -> to_string
  using hc::state::transition_matrix;      // -> transition_matrix
  using hc::state::unit_roundoff;          // -> unit_roundoff
}

TEST_CASE("compat v0_1: state forwarders return what the flat functions return") {
  // Two tokens, dk = dv = 2, additive rule with a scalar gate: small, valid, not trivial.
  const std::vector<double> k{1.0, 0.5, -0.25, 2.0}, v{0.5, 1.0, 1.5, -1.0}, g{-0.5, -0.25};
  const hc::token_inputs<double> in{2, 2, 2, k, v, {}, g};
  const auto rule = hc::transition_rule::additive;
  const auto s = hc::summarize(in, rule);
  check_same_summary(state::summarize(in, rule), s);
  check_same(state::family_of(in, rule), hc::family_of(in, rule));
  const std::vector<double> prefix{1.0, 2.0, 3.0, 4.0};
  const std::span<const double> p(prefix);
  check_same(state::apply(s, p), hc::apply(s, p));
  check_same(state::run_recurrence(in, rule, p), hc::run_recurrence(in, rule, p));
  check_same_summary(state::compose(s, s), hc::compose(s, s));
  const std::vector<hc::segment_summary<double>> run{s, s, s};
  check_same_summary(state::fold(run), hc::fold(run));
  check_same(state::transition_matrix(s), hc::transition_matrix(s));
  check_same(state::end_state_matrix(s), hc::end_state_matrix(s));

  check_same(state::role_of(0, 3), hc::role_of(0, 3));
  check_same(state::role_of(2, 3), hc::role_of(2, 3));
  check_same(state::cached_interior(std::size_t{100}, hc::segment_role::reusable),
             hc::cached_interior(std::size_t{100}, hc::segment_role::reusable));
  check_same(state::promote(hc::transition_family::scalar, hc::transition_family::dense),
             hc::promote(hc::transition_family::scalar, hc::transition_family::dense));
  check_same(state::unit_roundoff(hc::precision::bf16), hc::unit_roundoff(hc::precision::bf16));
  check_same(state::parse_precision("fp32"), hc::parse_precision("fp32"));
  check_same(state::gamma_of(1e-3), hc::gamma_of(1e-3));
  check_same(state::default_scale(std::size_t{64}), hc::default_scale(std::size_t{64}));
  check_same(state::round_to_bf16(1.2345f), hc::round_to_bf16(1.2345f));
  check_same(state::to_string(hc::transition_rule::delta),
             hc::to_string(hc::transition_rule::delta));
  check_same(state::to_string(hc::precision::fp32), hc::to_string(hc::precision::fp32));

  const std::vector<float> kf{1.0f, 0.5f, -0.25f, 2.0f}, vf{0.5f, 1.0f, 1.5f, -1.0f},
      gf{-0.5f, -0.25f};
  const auto sf = hc::summarize(hc::token_inputs<float>{2, 2, 2, kf, vf, {}, gf}, rule);
  const auto packed = hc::to_bf16(sf);
  const auto old_packed = state::to_bf16(sf);
  static_assert(std::is_same_v<decltype(old_packed), decltype(packed)>);
  check_same_summary(state::to_float(packed), hc::to_float(packed));
  check_same_summary(state::to_float(old_packed), hc::to_float(packed));
}

TEST_CASE("compat v0_1: segment forwarders, split and splice under their new names") {
  const hc::token_id toks[] = {1, 2, 0, 3, 4, 0, 5};
  const std::span<const hc::token_id> t(toks);
  const hc::split_options opts{.separator = 0};  // a braced list cannot go through a forwarder
  const auto seg = hc::split_request(t, opts);
  const auto old_seg = segment::split(t, opts);
  REQUIRE(old_seg.segments.size() == seg.segments.size());
  for (std::size_t i = 0; i < seg.segments.size(); ++i) {
    CHECK(old_seg.segments[i].begin == seg.segments[i].begin);
    CHECK(old_seg.segments[i].end == seg.segments[i].end);
    CHECK(old_seg.segments[i].role == seg.segments[i].role);
  }
  check_same(segment::splice(t, seg, hc::token_id{9}), hc::splice_request(t, seg, hc::token_id{9}));

  const hc::xxh3_hash h{};
  const hc::namespace_key ns{};
  const auto root = hc::root_key(h, ns);
  check_same(segment::root_key(h, ns), root);
  check_same(segment::chain_key(h, root, t), hc::chain_key(h, root, t));
  check_same(segment::segment_key(h, ns, t), hc::segment_key(h, ns, t));
  check_same(segment::block_keys(h, ns, t, std::size_t{2}),
             hc::block_keys(h, ns, t, std::size_t{2}));
  std::vector<hc::digest> a(3), b(3);
  check_same(segment::block_keys_into(h, ns, t, std::size_t{2}, std::span<hc::digest>(a)),
             hc::block_keys_into(h, ns, t, std::size_t{2}, std::span<hc::digest>(b)));
  CHECK(a == b);
}

TEST_CASE("compat v0_1: sim forwarders") {
  check_same(sim::parse_strategy("dp"), hc::parse_strategy("dp"));
  check_same(sim::parse_strategy("no-such"), hc::parse_strategy("no-such"));
  check_same(sim::uses_budget(hc::placement_strategy::dp),
             hc::uses_budget(hc::placement_strategy::dp));
  check_same(sim::is_fixed_baseline(hc::placement_strategy::sqrt),
             hc::is_fixed_baseline(hc::placement_strategy::sqrt));
  check_same(sim::to_string(hc::placement_strategy::dp), hc::to_string(hc::placement_strategy::dp));
  const auto m = sim::find_model("qwen3.5-0.8b");
  const auto fm = hc::find_model("qwen3.5-0.8b");
  static_assert(std::is_same_v<decltype(m), decltype(fm)>);
  REQUIRE(m.has_value());
  REQUIRE(fm.has_value());
  CHECK(m->name == fm->name);
  // The renamed constant and its old spelling walk the same strategies.
  CHECK(std::size(sim::all_strategies) == std::size(hc::all_placement_strategies));
}
