#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The hybridcache 0.1 spellings, opt-in and deprecated (docs/design/namespaces.md, "0.2: the
/// compat header"). Since 0.2 every public name is spelled `hybridcache::X` only; code written
/// against 0.1 (`state::summarize`, `segment::namespace_key`, `sim::simulate_tree`,
/// `tree::state_policy`, `state::family`, ...) compiles again by including this one header, and
/// each use warns (`-Wdeprecated-declarations`) with the flat name to write instead. The
/// mechanical rewrite is `scripts/dev/flat_names.py <your files>`. Removed in 1.0.
///
/// What each 0.1 spelling becomes here:
///  - a type: a deprecated alias (`using family [[deprecated]] = transition_family;`), so
///    `state::family::dense` and `std::is_same_v<state::family, transition_family>` hold;
///  - a class template: a deprecated alias template with the same parameters and defaults
///    (`state::segment_summary<double>`, `store::lru_pool<K, V>`);
///  - a function (an overload set): a deprecated forwarding function template that perfectly
///    forwards to `hybridcache::X` and returns what it returns (`decltype(auto)`);
///  - a constant: a deprecated `inline constexpr` reference to the flat one;
///  - `state::detail`, `sim::detail`, `store::detail`, `tree::detail` and `state::fla`,
///    `state::mamba`, `state::npy`: namespace aliases. A namespace alias cannot carry
///    `[[deprecated]]`, so these compile silently;
///  - `segment::hash_policy`: a concept, which cannot be deprecated either; it is re-stated here as
///    `template <class T> concept hash_policy = hybridcache::hash_policy<T>;` (silent).
///
/// What 0.1 allowed and this header does not (the forwarders are templates, not the functions):
///  - braced arguments to a forwarded function (`segment::split(toks, {.separator = 0})`): a
///    forwarding template cannot deduce a braced list; name the type
///    (`split_options{.separator = 0}`) or use the flat name;
///  - explicit template arguments to a forwarded function (`state::f<float>(...)`), taking a
///    forwarder's address or passing it as a callable (`std::transform(..., state::to_string)`);
///  - argument-dependent lookup does not apply: a forwarder calls the overloads of `hybridcache`
///    declared when this header is read, so the CUDA device overloads of `apply_elementwise` & co.
///    (`<hybridcache/cuda/state/compose.cuh>`) are found only if that header is included first;
///  - an alias template is not the class template itself: `state::segment_summary` cannot be the
///    template in a partial specialisation or match a template template parameter as
///    `hybridcache::segment_summary` does; write the flat name there;
///  - reopening `namespace hybridcache::state { namespace detail { ... } }` (already refused in
///    0.1: `detail` is an alias).
///
/// Removed header paths (their content lives only in the real home; include that):
///  - `hybridcache/segment/token.hpp` -> `hybridcache/types.hpp`;
///  - `hybridcache/rope/half.hpp` -> `hybridcache/numeric.hpp`;
///  - `hybridcache/overlap/refresh_policy.hpp` -> `hybridcache/placement/refresh_policy.hpp`;
///  - `hybridcache/cuda/detail/plan.cuh` -> `hybridcache/cuda/detail/launch.cuh`,
///    `rope_plan.cuh` and `scores_plan.cuh`.
///
/// Needs Eigen (like `<hybridcache/hybridcache.hpp>`); the spellings of `segment::sha256_hash`
/// (OpenSSL 3) and of `store::redis_*` (hiredis and OpenSSL) are declared when those libraries'
/// headers are found, as their own headers need them.

#include <functional>
#include <utility>

#include "hybridcache/config.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/index.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/segment/split.hpp"
#include "hybridcache/segment/verified_key.hpp"
#include "hybridcache/sim/builders.hpp"
#include "hybridcache/sim/detail/random.hpp"
#include "hybridcache/sim/model.hpp"
#include "hybridcache/sim/multi_node.hpp"
#include "hybridcache/sim/segment_reuse.hpp"
#include "hybridcache/sim/sparse_prefix.hpp"
#include "hybridcache/sim/synthetic.hpp"
#include "hybridcache/sim/tokenize.hpp"
#include "hybridcache/sim/trace.hpp"
#include "hybridcache/sim/tree/families.hpp"
#include "hybridcache/sim/tree/library.hpp"
#include "hybridcache/sim/tree/policies.hpp"
#include "hybridcache/sim/tree/replay.hpp"
#include "hybridcache/sim/tree/simulate.hpp"
#include "hybridcache/sim/tree/trace.hpp"
#include "hybridcache/state/batch.hpp"
#include "hybridcache/state/bf16.hpp"
#include "hybridcache/state/compose.hpp"
#include "hybridcache/state/compose_views.hpp"
#include "hybridcache/state/delta_product.hpp"
#include "hybridcache/state/detail/batch_views.hpp"
#include "hybridcache/state/detail/elementwise.hpp"
#include "hybridcache/state/detail/gemm.hpp"
#include "hybridcache/state/detail/parallel.hpp"
#include "hybridcache/state/detail/token_step.hpp"
#include "hybridcache/state/dplr.hpp"
#include "hybridcache/state/eigen.hpp"
#include "hybridcache/state/fla.hpp"
#include "hybridcache/state/naive.hpp"
#include "hybridcache/state/npy.hpp"
#include "hybridcache/state/outputs.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/rope.hpp"
#include "hybridcache/state/seam.hpp"
#include "hybridcache/state/selective.hpp"
#include "hybridcache/state/summarize.hpp"
#include "hybridcache/state/summary.hpp"
#include "hybridcache/state/token_inputs.hpp"
#include "hybridcache/state/tolerance.hpp"
#include "hybridcache/store/frozen_pool.hpp"
#include "hybridcache/store/last_k_cache.hpp"
#include "hybridcache/store/lru_pool.hpp"
#include "hybridcache/store/pic_store.hpp"
#include "hybridcache/store/segment_location.hpp"
#include "hybridcache/store/virtual_blocks.hpp"
#include "hybridcache/tree/detail/node_index.hpp"
#include "hybridcache/tree/policy.hpp"

#if __has_include(<openssl/core_names.h>)
#include "hybridcache/segment/sha256_hash.hpp"
#define HYBRIDCACHE_COMPAT_HAS_OPENSSL 1
#else
#define HYBRIDCACHE_COMPAT_HAS_OPENSSL 0
#endif
#if __has_include(<hiredis/hiredis.h>) && __has_include(<openssl/crypto.h>)
#include "hybridcache/store/redis_index.hpp"
#define HYBRIDCACHE_COMPAT_HAS_REDIS 1
#else
#define HYBRIDCACHE_COMPAT_HAS_REDIS 0
#endif

// The 0.1 name `old` of the function (overload set) `hybridcache::flat`.
#define HYBRIDCACHE_COMPAT_FORWARD(old, flat)                                                      \
  template <class... Args>                                                                         \
  [[deprecated("use hybridcache::" #flat)]] constexpr decltype(auto) old(Args&&... args) noexcept( \
      noexcept(::hybridcache::flat(std::forward<Args>(args)...))) requires requires {              \
    ::hybridcache::flat(std::forward<Args>(args)...);                                              \
  }                                                                                                \
  { return ::hybridcache::flat(std::forward<Args>(args)...); }

HYBRIDCACHE_NAMESPACE_BEGIN

namespace state {                          // hybridcache 0.1 spellings: use hybridcache::X
namespace detail = ::hybridcache::detail;  // a namespace alias: cannot warn
namespace fla = ::hybridcache::fla;        // a namespace alias: cannot warn
namespace mamba = ::hybridcache::mamba;    // a namespace alias: cannot warn
namespace npy = ::hybridcache::npy;        // a namespace alias: cannot warn

HYBRIDCACHE_COMPAT_FORWARD(abs_bound_weights, abs_bound_weights)
HYBRIDCACHE_COMPAT_FORWARD(apply, apply)
HYBRIDCACHE_COMPAT_FORWARD(apply_dense, apply_dense)
HYBRIDCACHE_COMPAT_FORWARD(apply_elementwise, apply_elementwise)
HYBRIDCACHE_COMPAT_FORWARD(apply_heads, apply_heads)
using batch_options [[deprecated("use hybridcache::batch_options")]] = ::hybridcache::batch_options;
using bf16_summary [[deprecated("use hybridcache::bf16_summary")]] = ::hybridcache::bf16_summary;
using bound_weights [[deprecated("use hybridcache::bound_weights")]] = ::hybridcache::bound_weights;
using bulk_executor [[deprecated("use hybridcache::bulk_executor")]] = ::hybridcache::bulk_executor;
HYBRIDCACHE_COMPAT_FORWARD(cached_interior, cached_interior)
HYBRIDCACHE_COMPAT_FORWARD(check_close, check_close)
using check_report [[deprecated("use hybridcache::check_report")]] = ::hybridcache::check_report;
HYBRIDCACHE_COMPAT_FORWARD(compose, compose)
HYBRIDCACHE_COMPAT_FORWARD(compose_dense, compose_dense)
HYBRIDCACHE_COMPAT_FORWARD(compose_elementwise, compose_elementwise)
HYBRIDCACHE_COMPAT_FORWARD(default_scale, default_scale)
template <class Real>
using delta_product_inputs [[deprecated("use hybridcache::delta_product_inputs")]] =
    ::hybridcache::delta_product_inputs<Real>;
template <class Real>
using dplr_inputs [[deprecated("use hybridcache::dplr_inputs")]] = ::hybridcache::dplr_inputs<Real>;
HYBRIDCACHE_COMPAT_FORWARD(element_tolerance, element_tolerance)
template <class Real>
using elementwise_summary [[deprecated("use hybridcache::elementwise_summary")]] =
    ::hybridcache::elementwise_summary<Real>;
HYBRIDCACHE_COMPAT_FORWARD(end_state_matrix, end_state_matrix)
using error_model [[deprecated("use hybridcache::error_model")]] = ::hybridcache::error_model;
[[deprecated("use hybridcache::exp_budget_ulps")]] inline constexpr const auto& exp_budget_ulps =
    ::hybridcache::exp_budget_ulps;
HYBRIDCACHE_COMPAT_FORWARD(expand, expand)
template <class Real>
using expanded_delta_product [[deprecated("use hybridcache::expanded_delta_product")]] =
    ::hybridcache::expanded_delta_product<Real>;
using family [[deprecated("use hybridcache::transition_family")]] =
    ::hybridcache::transition_family;
HYBRIDCACHE_COMPAT_FORWARD(family_of, family_of)
HYBRIDCACHE_COMPAT_FORWARD(fold, fold)
HYBRIDCACHE_COMPAT_FORWARD(gamma_of, gamma_of)
using gate_kind [[deprecated("use hybridcache::gate_kind")]] = ::hybridcache::gate_kind;
template <class Real>
using matrix [[deprecated("use hybridcache::state_matrix")]] = ::hybridcache::state_matrix<Real>;
HYBRIDCACHE_COMPAT_FORWARD(naive_addition, naive_addition)
HYBRIDCACHE_COMPAT_FORWARD(naive_error, naive_error)
using naive_error_report [[deprecated("use hybridcache::naive_error_report")]] =
    ::hybridcache::naive_error_report;
HYBRIDCACHE_COMPAT_FORWARD(outputs, outputs)
HYBRIDCACHE_COMPAT_FORWARD(parse_precision, parse_precision)
HYBRIDCACHE_COMPAT_FORWARD(plan_seams, plan_seams)
using precision [[deprecated("use hybridcache::precision")]] = ::hybridcache::precision;
HYBRIDCACHE_COMPAT_FORWARD(promote, promote)
HYBRIDCACHE_COMPAT_FORWARD(rerotate, rerotate)
HYBRIDCACHE_COMPAT_FORWARD(rerotate_state, rerotate_state)
HYBRIDCACHE_COMPAT_FORWARD(role_of, role_of)
HYBRIDCACHE_COMPAT_FORWARD(round_to_bf16, round_to_bf16)
using rule [[deprecated("use hybridcache::transition_rule")]] = ::hybridcache::transition_rule;
HYBRIDCACHE_COMPAT_FORWARD(run_recurrence, run_recurrence)
using seam_options [[deprecated("use hybridcache::seam_options")]] = ::hybridcache::seam_options;
using seam_plan [[deprecated("use hybridcache::seam_plan")]] = ::hybridcache::seam_plan;
template <class Real>
using segment_outputs [[deprecated("use hybridcache::segment_outputs")]] =
    ::hybridcache::segment_outputs<Real>;
using segment_role [[deprecated("use hybridcache::segment_role")]] = ::hybridcache::segment_role;
template <class Real>
using segment_summary [[deprecated("use hybridcache::segment_summary")]] =
    ::hybridcache::segment_summary<Real>;
template <class Real>
using selective_inputs [[deprecated("use hybridcache::selective_inputs")]] =
    ::hybridcache::selective_inputs<Real>;
HYBRIDCACHE_COMPAT_FORWARD(splice, splice)
using splice_options [[deprecated("use hybridcache::splice_options")]] =
    ::hybridcache::splice_options;
using splice_step [[deprecated("use hybridcache::splice_step")]] = ::hybridcache::splice_step;
HYBRIDCACHE_COMPAT_FORWARD(summarize, summarize)
HYBRIDCACHE_COMPAT_FORWARD(summarize_heads, summarize_heads)
using summarize_method [[deprecated("use hybridcache::summarize_method")]] =
    ::hybridcache::summarize_method;
using summarize_options [[deprecated("use hybridcache::summarize_options")]] =
    ::hybridcache::summarize_options;
HYBRIDCACHE_COMPAT_FORWARD(to_bf16, to_bf16)
HYBRIDCACHE_COMPAT_FORWARD(to_float, to_float)
HYBRIDCACHE_COMPAT_FORWARD(to_string, to_string)
template <class Real>
using token_inputs [[deprecated("use hybridcache::token_inputs")]] =
    ::hybridcache::token_inputs<Real>;
using token_range [[deprecated("use hybridcache::token_range")]] = ::hybridcache::token_range;
HYBRIDCACHE_COMPAT_FORWARD(transition_matrix, transition_matrix)
HYBRIDCACHE_COMPAT_FORWARD(unit_roundoff, unit_roundoff)
}  // namespace state

namespace segment {  // hybridcache 0.1 spellings: use hybridcache::X
HYBRIDCACHE_COMPAT_FORWARD(block_keys, block_keys)
HYBRIDCACHE_COMPAT_FORWARD(block_keys_into, block_keys_into)
HYBRIDCACHE_COMPAT_FORWARD(chain_key, chain_key)
using constant_hash [[deprecated("use hybridcache::constant_hash")]] = ::hybridcache::constant_hash;
using digest [[deprecated("use hybridcache::digest")]] = ::hybridcache::digest;
using digest_hasher [[deprecated("use hybridcache::digest_hasher")]] = ::hybridcache::digest_hasher;
/// (A concept cannot be deprecated: this one re-states `hybridcache::hash_policy`.)
template <class T>
concept hash_policy = ::hybridcache::hash_policy<T>;
using key_view [[deprecated("use hybridcache::key_view")]] = ::hybridcache::key_view;
using namespace_field [[deprecated("use hybridcache::namespace_field")]] =
    ::hybridcache::namespace_field;
using namespace_key [[deprecated("use hybridcache::namespace_key")]] = ::hybridcache::namespace_key;
HYBRIDCACHE_COMPAT_FORWARD(root_key, root_key)
template <class Value, class Hash = ::hybridcache::xxh3_hash>
using segment_index [[deprecated("use hybridcache::segment_index")]] =
    ::hybridcache::segment_index<Value, Hash>;
HYBRIDCACHE_COMPAT_FORWARD(segment_key, segment_key)
using segment_kind [[deprecated("use hybridcache::segment_kind")]] = ::hybridcache::segment_kind;
using segment_range [[deprecated("use hybridcache::segment_range")]] = ::hybridcache::segment_range;
using segment_role [[deprecated("use hybridcache::segment_role")]] = ::hybridcache::segment_role;
using segmentation [[deprecated("use hybridcache::segmentation")]] = ::hybridcache::segmentation;
#if HYBRIDCACHE_COMPAT_HAS_OPENSSL
using sha256_hash [[deprecated("use hybridcache::sha256_hash")]] = ::hybridcache::sha256_hash;
#endif
HYBRIDCACHE_COMPAT_FORWARD(splice, splice_request)
HYBRIDCACHE_COMPAT_FORWARD(split, split_request)
using split_options [[deprecated("use hybridcache::split_options")]] = ::hybridcache::split_options;
using verified_key [[deprecated("use hybridcache::verified_key")]] = ::hybridcache::verified_key;
using verified_key_equal [[deprecated("use hybridcache::verified_key_equal")]] =
    ::hybridcache::verified_key_equal;
using verified_key_hash [[deprecated("use hybridcache::verified_key_hash")]] =
    ::hybridcache::verified_key_hash;
using xxh3_hash [[deprecated("use hybridcache::xxh3_hash")]] = ::hybridcache::xxh3_hash;
}  // namespace segment

namespace store {                          // hybridcache 0.1 spellings: use hybridcache::X
namespace detail = ::hybridcache::detail;  // a namespace alias: cannot warn

using entry_class [[deprecated("use hybridcache::entry_class")]] = ::hybridcache::entry_class;
template <class Key, class Value, class KeyHash = std::hash<Key>,
          class KeyEqual = std::equal_to<Key>>
using frozen_pool [[deprecated("use hybridcache::frozen_pool")]] =
    ::hybridcache::frozen_pool<Key, Value, KeyHash, KeyEqual>;
using insert_status [[deprecated("use hybridcache::insert_status")]] = ::hybridcache::insert_status;
using last_k_cache [[deprecated("use hybridcache::last_k_cache")]] = ::hybridcache::last_k_cache;
using last_k_match [[deprecated("use hybridcache::last_k_match")]] = ::hybridcache::last_k_match;
using last_k_overlap [[deprecated("use hybridcache::last_k_overlap")]] =
    ::hybridcache::last_k_overlap;
template <class Key, class Value, class KeyHash = std::hash<Key>,
          class KeyEqual = std::equal_to<Key>>
using lru_pool [[deprecated("use hybridcache::lru_pool")]] =
    ::hybridcache::lru_pool<Key, Value, KeyHash, KeyEqual>;
template <class Segment, class State, class Hash = ::hybridcache::xxh3_hash>
using pic_store [[deprecated("use hybridcache::pic_store")]] =
    ::hybridcache::pic_store<Segment, State, Hash>;
using pic_store_options [[deprecated("use hybridcache::pic_store_options")]] =
    ::hybridcache::pic_store_options;
using pool_stats [[deprecated("use hybridcache::pool_stats")]] = ::hybridcache::pool_stats;
#if HYBRIDCACHE_COMPAT_HAS_REDIS
using redis_errc [[deprecated("use hybridcache::redis_errc")]] = ::hybridcache::redis_errc;
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
using redis_error [[deprecated("use hybridcache::redis_error")]] = ::hybridcache::redis_error;
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
using redis_index_stats [[deprecated("use hybridcache::redis_index_stats")]] =
    ::hybridcache::redis_index_stats;
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
using redis_options [[deprecated("use hybridcache::redis_options")]] = ::hybridcache::redis_options;
#endif
#if HYBRIDCACHE_COMPAT_HAS_REDIS
using redis_segment_index [[deprecated("use hybridcache::redis_segment_index")]] =
    ::hybridcache::redis_segment_index;
#endif
using release_reason [[deprecated("use hybridcache::release_reason")]] =
    ::hybridcache::release_reason;
using segment_location [[deprecated("use hybridcache::segment_location")]] =
    ::hybridcache::segment_location;
template <class Pool, class Hash = ::hybridcache::xxh3_hash>
using virtual_block_index [[deprecated("use hybridcache::virtual_block_index")]] =
    ::hybridcache::virtual_block_index<Pool, Hash>;
}  // namespace store

namespace sim {                            // hybridcache 0.1 spellings: use hybridcache::X
namespace detail = ::hybridcache::detail;  // a namespace alias: cannot warn

HYBRIDCACHE_COMPAT_FORWARD(agent_loop, agent_loop)
using agent_loop_options [[deprecated("use hybridcache::agent_loop_options")]] =
    ::hybridcache::agent_loop_options;
[[deprecated(
    "use hybridcache::all_placement_strategies")]] inline constexpr const auto& all_strategies =
    ::hybridcache::all_placement_strategies;
using arrival_options [[deprecated("use hybridcache::arrival_options")]] =
    ::hybridcache::arrival_options;
using block_hash_record [[deprecated("use hybridcache::block_hash_record")]] =
    ::hybridcache::block_hash_record;
using block_tree [[deprecated("use hybridcache::block_tree")]] = ::hybridcache::block_tree;
HYBRIDCACHE_COMPAT_FORWARD(build_block_hash_trace, build_block_hash_trace)
HYBRIDCACHE_COMPAT_FORWARD(build_document_qa, build_document_qa)
HYBRIDCACHE_COMPAT_FORWARD(build_rag, build_rag)
HYBRIDCACHE_COMPAT_FORWARD(build_system_prompts, build_system_prompts)
using byte_tokenizer [[deprecated("use hybridcache::byte_tokenizer")]] =
    ::hybridcache::byte_tokenizer;
HYBRIDCACHE_COMPAT_FORWARD(check_dominance, check_dominance)
HYBRIDCACHE_COMPAT_FORWARD(code_edit, code_edit)
using code_edit_options [[deprecated("use hybridcache::code_edit_options")]] =
    ::hybridcache::code_edit_options;
HYBRIDCACHE_COMPAT_FORWARD(cold_dispatch, cold_dispatch)
HYBRIDCACHE_COMPAT_FORWARD(cold_segments_request, cold_segments_request)
using composition_costs [[deprecated("use hybridcache::composition_costs")]] =
    ::hybridcache::composition_costs;
HYBRIDCACHE_COMPAT_FORWARD(composition_ttft, composition_ttft)
HYBRIDCACHE_COMPAT_FORWARD(deepest_held, deepest_held)
HYBRIDCACHE_COMPAT_FORWARD(doc_qa_skewed, doc_qa_skewed)
using doc_qa_skewed_options [[deprecated("use hybridcache::doc_qa_skewed_options")]] =
    ::hybridcache::doc_qa_skewed_options;
using dominance_check [[deprecated("use hybridcache::dominance_check")]] =
    ::hybridcache::dominance_check;
using dominance_status [[deprecated("use hybridcache::dominance_status")]] =
    ::hybridcache::dominance_status;
HYBRIDCACHE_COMPAT_FORWARD(expand_block_hash, expand_block_hash)
using family_draft [[deprecated("use hybridcache::family_draft")]] = ::hybridcache::family_draft;
using family_event [[deprecated("use hybridcache::family_event")]] = ::hybridcache::family_event;
using family_request [[deprecated("use hybridcache::family_request")]] =
    ::hybridcache::family_request;
HYBRIDCACHE_COMPAT_FORWARD(find_model, find_model)
HYBRIDCACHE_COMPAT_FORWARD(from_trace, from_trace)
HYBRIDCACHE_COMPAT_FORWARD(generate_requests, generate_requests)
[[deprecated("use hybridcache::hypic_fig14_composition")]] inline constexpr const auto&
    hypic_fig14_composition = ::hybridcache::hypic_fig14_composition;
HYBRIDCACHE_COMPAT_FORWARD(hypic_fig14_prefill, hypic_fig14_prefill)
HYBRIDCACHE_COMPAT_FORWARD(is_fixed_baseline, is_fixed_baseline)
using kv_budget [[deprecated("use hybridcache::kv_budget")]] = ::hybridcache::kv_budget;
using kv_mode [[deprecated("use hybridcache::kv_mode")]] = ::hybridcache::kv_mode;
using last_k_overlap [[deprecated("use hybridcache::last_k_overlap")]] =
    ::hybridcache::last_k_overlap;
using library_policy [[deprecated("use hybridcache::library_policy")]] =
    ::hybridcache::library_policy;
using llamacpp_policy [[deprecated("use hybridcache::llamacpp_policy")]] =
    ::hybridcache::llamacpp_policy;
using lru_engine_policy [[deprecated("use hybridcache::lru_engine_policy")]] =
    ::hybridcache::lru_engine_policy;
HYBRIDCACHE_COMPAT_FORWARD(make_tree_policy, make_tree_policy)
using marconi_policy [[deprecated("use hybridcache::marconi_policy")]] =
    ::hybridcache::marconi_policy;
[[deprecated("use hybridcache::model_presets")]] inline constexpr const auto& model_presets =
    ::hybridcache::model_presets;
using model_shape [[deprecated("use hybridcache::model_shape")]] = ::hybridcache::model_shape;
using multi_node_options [[deprecated("use hybridcache::multi_node_options")]] =
    ::hybridcache::multi_node_options;
using multi_node_result [[deprecated("use hybridcache::multi_node_result")]] =
    ::hybridcache::multi_node_result;
using multi_turn_options [[deprecated("use hybridcache::multi_turn_options")]] =
    ::hybridcache::multi_turn_options;
using namespace_stats [[deprecated("use hybridcache::namespace_stats")]] =
    ::hybridcache::namespace_stats;
using oracle_exact_policy [[deprecated("use hybridcache::oracle_exact_policy")]] =
    ::hybridcache::oracle_exact_policy;
using oracle_policy [[deprecated("use hybridcache::oracle_policy")]] = ::hybridcache::oracle_policy;
HYBRIDCACHE_COMPAT_FORWARD(parse_strategy, parse_strategy)
using progress_fn [[deprecated("use hybridcache::progress_fn")]] = ::hybridcache::progress_fn;
[[deprecated("use hybridcache::qwen3_5_0_8b")]] inline constexpr const auto& qwen3_5_0_8b =
    ::hybridcache::qwen3_5_0_8b;
[[deprecated(
    "use hybridcache::qwen3_next_80b_a3b")]] inline constexpr const auto& qwen3_next_80b_a3b =
    ::hybridcache::qwen3_next_80b_a3b;
using rag_options [[deprecated("use hybridcache::rag_options")]] = ::hybridcache::rag_options;
HYBRIDCACHE_COMPAT_FORWARD(rag_sessions, rag_sessions)
using recency_order [[deprecated("use hybridcache::recency_order")]] = ::hybridcache::recency_order;
HYBRIDCACHE_COMPAT_FORWARD(replay_tree, replay_tree)
using request [[deprecated("use hybridcache::request")]] = ::hybridcache::request;
using request_group [[deprecated("use hybridcache::request_group")]] = ::hybridcache::request_group;
using segment_reuse_options [[deprecated("use hybridcache::segment_reuse_options")]] =
    ::hybridcache::segment_reuse_options;
using segment_reuse_result [[deprecated("use hybridcache::segment_reuse_result")]] =
    ::hybridcache::segment_reuse_result;
using sglang_extra_buffer_lazy_policy
    [[deprecated("use hybridcache::sglang_extra_buffer_lazy_policy")]] =
        ::hybridcache::sglang_extra_buffer_lazy_policy;
using sglang_extra_buffer_policy [[deprecated("use hybridcache::sglang_extra_buffer_policy")]] =
    ::hybridcache::sglang_extra_buffer_policy;
using sglang_no_buffer_policy [[deprecated("use hybridcache::sglang_no_buffer_policy")]] =
    ::hybridcache::sglang_no_buffer_policy;
using sglang_policy [[deprecated("use hybridcache::sglang_policy")]] = ::hybridcache::sglang_policy;
HYBRIDCACHE_COMPAT_FORWARD(simulate_multi_node, simulate_multi_node)
HYBRIDCACHE_COMPAT_FORWARD(simulate_segment_reuse, simulate_segment_reuse)
HYBRIDCACHE_COMPAT_FORWARD(simulate_sparse_prefix, simulate_sparse_prefix)
HYBRIDCACHE_COMPAT_FORWARD(simulate_tree, simulate_tree)
using sparse_prefix_options [[deprecated("use hybridcache::sparse_prefix_options")]] =
    ::hybridcache::sparse_prefix_options;
using sparse_prefix_result [[deprecated("use hybridcache::sparse_prefix_result")]] =
    ::hybridcache::sparse_prefix_result;
using sparse_prefix_simulator [[deprecated("use hybridcache::sparse_prefix_simulator")]] =
    ::hybridcache::sparse_prefix_simulator;
using state_pool [[deprecated("use hybridcache::state_pool")]] = ::hybridcache::state_pool;
HYBRIDCACHE_COMPAT_FORWARD(static_optimum, static_optimum)
using strategy [[deprecated("use hybridcache::placement_strategy")]] =
    ::hybridcache::placement_strategy;
using strategy_result [[deprecated("use hybridcache::strategy_result")]] =
    ::hybridcache::strategy_result;
HYBRIDCACHE_COMPAT_FORWARD(synthetic_document_qa, synthetic_document_qa)
HYBRIDCACHE_COMPAT_FORWARD(synthetic_multi_turn, synthetic_multi_turn)
HYBRIDCACHE_COMPAT_FORWARD(synthetic_multimodal, synthetic_multimodal)
using synthetic_options [[deprecated("use hybridcache::synthetic_options")]] =
    ::hybridcache::synthetic_options;
HYBRIDCACHE_COMPAT_FORWARD(synthetic_rag, synthetic_rag)
using synthetic_rag_options [[deprecated("use hybridcache::synthetic_rag_options")]] =
    ::hybridcache::synthetic_rag_options;
HYBRIDCACHE_COMPAT_FORWARD(synthetic_system_prompt, synthetic_system_prompt)
using text_document [[deprecated("use hybridcache::text_document")]] = ::hybridcache::text_document;
using text_rag_prompt [[deprecated("use hybridcache::text_rag_prompt")]] =
    ::hybridcache::text_rag_prompt;
HYBRIDCACHE_COMPAT_FORWARD(to_string, to_string)
using token_id [[deprecated("use hybridcache::token_id")]] = ::hybridcache::token_id;
using token_slice [[deprecated("use hybridcache::token_slice")]] = ::hybridcache::token_slice;
using trace [[deprecated("use hybridcache::trace")]] = ::hybridcache::trace;
using tree_context [[deprecated("use hybridcache::tree_context")]] = ::hybridcache::tree_context;
using tree_cost_model [[deprecated("use hybridcache::tree_cost_model")]] =
    ::hybridcache::tree_cost_model;
HYBRIDCACHE_COMPAT_FORWARD(tree_family, tree_family)
HYBRIDCACHE_COMPAT_FORWARD(tree_family_draft, tree_family_draft)
[[deprecated(
    "use hybridcache::tree_family_names")]] inline constexpr const auto& tree_family_names =
    ::hybridcache::tree_family_names;
using tree_family_options [[deprecated("use hybridcache::tree_family_options")]] =
    ::hybridcache::tree_family_options;
using tree_metrics [[deprecated("use hybridcache::tree_metrics")]] = ::hybridcache::tree_metrics;
using tree_options [[deprecated("use hybridcache::tree_options")]] = ::hybridcache::tree_options;
using tree_policy [[deprecated("use hybridcache::tree_policy")]] = ::hybridcache::tree_policy;
[[deprecated(
    "use hybridcache::tree_policy_names")]] inline constexpr const auto& tree_policy_names =
    ::hybridcache::tree_policy_names;
[[deprecated(
    "use hybridcache::tree_policy_variants")]] inline constexpr const auto& tree_policy_variants =
    ::hybridcache::tree_policy_variants;
using tree_replayer [[deprecated("use hybridcache::tree_replayer")]] = ::hybridcache::tree_replayer;
using tree_request [[deprecated("use hybridcache::tree_request")]] = ::hybridcache::tree_request;
using tree_result [[deprecated("use hybridcache::tree_result")]] = ::hybridcache::tree_result;
using tree_step [[deprecated("use hybridcache::tree_step")]] = ::hybridcache::tree_step;
using tree_trace [[deprecated("use hybridcache::tree_trace")]] = ::hybridcache::tree_trace;
using tree_trace_builder [[deprecated("use hybridcache::tree_trace_builder")]] =
    ::hybridcache::tree_trace_builder;
using trtllm_policy [[deprecated("use hybridcache::trtllm_policy")]] = ::hybridcache::trtllm_policy;
using ttft_breakdown [[deprecated("use hybridcache::ttft_breakdown")]] =
    ::hybridcache::ttft_breakdown;
using ttft_summary [[deprecated("use hybridcache::ttft_summary")]] = ::hybridcache::ttft_summary;
HYBRIDCACHE_COMPAT_FORWARD(tune_marconi_alpha, tune_marconi_alpha)
HYBRIDCACHE_COMPAT_FORWARD(usable_matches, usable_matches)
HYBRIDCACHE_COMPAT_FORWARD(uses_budget, uses_budget)
using vllm_align_dense_policy [[deprecated("use hybridcache::vllm_align_dense_policy")]] =
    ::hybridcache::vllm_align_dense_policy;
using vllm_align_policy [[deprecated("use hybridcache::vllm_align_policy")]] =
    ::hybridcache::vllm_align_policy;
using vllm_all_policy [[deprecated("use hybridcache::vllm_all_policy")]] =
    ::hybridcache::vllm_all_policy;
using vllm_policy [[deprecated("use hybridcache::vllm_policy")]] = ::hybridcache::vllm_policy;
using word_tokenizer [[deprecated("use hybridcache::word_tokenizer")]] =
    ::hybridcache::word_tokenizer;
}  // namespace sim

namespace tree {                           // hybridcache 0.1 spellings: use hybridcache::X
namespace detail = ::hybridcache::detail;  // a namespace alias: cannot warn

using admit_result [[deprecated("use hybridcache::admit_result")]] = ::hybridcache::admit_result;
template <class Hash = ::hybridcache::xxh3_hash>
using basic_state_policy [[deprecated("use hybridcache::basic_state_policy")]] =
    ::hybridcache::basic_state_policy<Hash>;
using match_result [[deprecated("use hybridcache::match_result")]] = ::hybridcache::match_result;
[[deprecated("use hybridcache::no_node")]] inline constexpr const auto& no_node =
    ::hybridcache::no_node;
using node_id [[deprecated("use hybridcache::node_id")]] = ::hybridcache::node_id;
using policy_options [[deprecated("use hybridcache::policy_options")]] =
    ::hybridcache::policy_options;
using replan_result [[deprecated("use hybridcache::replan_result")]] = ::hybridcache::replan_result;
using state_policy [[deprecated("use hybridcache::state_policy")]] = ::hybridcache::state_policy;
}  // namespace tree

HYBRIDCACHE_NAMESPACE_END

#undef HYBRIDCACHE_COMPAT_FORWARD
#undef HYBRIDCACHE_COMPAT_HAS_OPENSSL
#undef HYBRIDCACHE_COMPAT_HAS_REDIS
