#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of the prefix-tree work (docs/tree.md): the exact tree planner
/// (`place_optimal_tree`, `optimal_tree_frontier`, `expected_recompute_tree`, DESIGN §7) at the top
/// level, and the online policy as the submodule `hybridcache.tree` (`state_policy`,
/// `policy_options`, `match_result`, `admit_result`, `replan_result`, and the candidate shadows'
/// `leader_safeguard`).

#include <hybridcache/placement/tree.hpp>
#include <hybridcache/tree.hpp>
#include <hybridcache/tree/safeguard.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "bind_segment.hpp"
#include "common.hpp"

namespace hybridcache_python {

/// The vector a Python caller hands to `state_policy.set_victim_log` (Python owns it; the
/// policy keeps it alive and only appends).
struct victim_log {
  std::vector<hybridcache::tree_victim> records;
};

/// Node ids / positions from Python (int64 arrays, or any sequence NumPy converts), checked to
/// be >= 0 before they become std::size_t (never wrapped).
inline std::vector<std::size_t> to_ids(nb::handle obj, const char* name) {
  nb::object holder;
  const auto a = as_array<std::int64_t>(obj, "int64", holder, name);
  std::vector<std::size_t> out(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a.data()[i] < 0)
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed(name, i), a.data()[i],
                                         "must be >= 0");
    out[i] = static_cast<std::size_t>(a.data()[i]);
  }
  return out;
}

/// Node ids from Python for the calls that accept `no_node` (uint64 arrays, e.g. a
/// `match_result.path`, or any sequence of ints NumPy converts to uint64; a negative int raises).
inline std::vector<hybridcache::node_id> to_node_ids(nb::handle obj, const char* name) {
  nb::object holder;
  const auto a = as_array<std::uint64_t>(obj, "uint64", holder, name);
  return {a.data(), a.data() + a.size()};
}

/// Chained block keys from Python: a sequence of `segment.digest` (what `segment.block_keys`
/// returns), or an array of shape (n, 2) whose row i is key i's (lo, hi) as uint64 (what
/// `segment.block_keys_array` returns; an engine's own 128-bit block hashes without a Python
/// object per block). Another array shape is `InvalidArgument` naming `keys.ndim` or
/// `keys.shape[1]`; anything else is `TypeError`.
inline std::vector<hybridcache::digest> to_keys(nb::handle obj) {
  std::vector<hybridcache::digest> out;
  // An array first: the sequence cast would make a Python object of each row before failing.
  if (nb::hasattr(obj, "ndim") && nb::hasattr(obj, "shape")) {
    nb::object holder;
    const auto a = as_array<std::uint64_t, 2>(obj, "uint64", holder, "keys");
    if (a.shape(1) != 2)
      hybridcache::detail::throw_invalid("keys.shape[1]", a.shape(1), "must be 2 (lo, hi)");
    out.resize(a.shape(0));
    const std::uint64_t* row = a.data();
    for (auto& k : out) {
      k = {row[0], row[1]};
      row += 2;
    }
    return out;
  }
  if (nb::try_cast(obj, out, /*convert=*/false)) return out;
  throw nb::type_error(
      "keys: expected a sequence of segment.digest (segment.block_keys) or an (n, 2) uint64 "
      "array of (lo, hi) rows (segment.block_keys_array)");
}

inline void bind_tree(nb::module_& m) {
  namespace hc = hybridcache;
  using namespace nb::literals;

  // ---- exact planner (top level, like place_optimal) ------------------------------------------
  nb::class_<hc::tree_placement>(m, "tree_placement",
                                 "An optimal tree plan: checkpoint node ids and their E[r].")
      .def_prop_ro(
          "checkpoints", [](const hc::tree_placement& p) { return to_numpy_index(p.checkpoints); },
          fresh_array, "int64 array of node ids, ascending, never 0.")
      .def_ro("expected_recompute", &hc::tree_placement::expected_recompute,
              "E[r] = sum_v w(v)(depth(v) - depth(anchor(v))), weights normalised, in tokens.")
      .def("__repr__", [](const hc::tree_placement& p) {
        return nb::str("tree_placement(checkpoints={}, expected_recompute={})")
            .format(p.checkpoints.size(), p.expected_recompute);
      });

  m.def(
      "place_optimal_tree",
      [](nb::handle parent, in_array<double> depth, in_array<double> weight, std::size_t budget) {
        const auto par = to_ids(parent, "tree.parent");
        nb::gil_scoped_release unlocked;
        return hc::place_optimal_tree({par, as_span(depth), as_span(weight)}, budget);
      },
      "parent"_a, "depth"_a, "weight"_a, "budget"_a,
      "The exact optimal set of at most `budget` checkpoint nodes in a prefix tree (DESIGN §7).\n"
      "Nodes are in topological order, node 0 the root: parent[v] < v, depth[0] = 0, depth\n"
      "strictly increasing along edges, weights >= 0 (where matches end; normalised). Releases\n"
      "the GIL. Raises InvalidArgument naming the bad argument.");
  m.def(
      "optimal_tree_frontier",
      [](nb::handle parent, in_array<double> depth, in_array<double> weight,
         std::size_t max_budget) {
        const auto par = to_ids(parent, "tree.parent");
        std::vector<double> v;
        {
          nb::gil_scoped_release unlocked;
          v = hc::optimal_tree_frontier({par, as_span(depth), as_span(weight)}, max_budget);
        }
        return to_numpy(std::move(v));
      },
      "parent"_a, "depth"_a, "weight"_a, "max_budget"_a,
      "V(M), the optimal E[r] for every budget M = 0..max_budget (float64 array). Not convex in\n"
      "M in general on trees (it is on chains).");
  m.def(
      "expected_recompute_tree",
      [](nb::handle parent, in_array<double> depth, in_array<double> weight,
         nb::handle checkpoints) {
        const auto par = to_ids(parent, "tree.parent");
        const auto cps = to_ids(checkpoints, "checkpoints");
        return hc::expected_recompute_tree({par, as_span(depth), as_span(weight)}, cps);
      },
      "parent"_a, "depth"_a, "weight"_a, "checkpoints"_a,
      "E[r] of a given checkpoint set (duplicates and the root change nothing).");

  // ---- online policy (submodule) -------------------------------------------------------------
  nb::module_ t = m.def_submodule(
      "tree",
      "The online prefix-tree state policy: match -> prefill_plan -> insert -> admit -> unpin, "
      "evict under pressure, periodic exact re-plans (docs/tree.md).");
  t.attr("no_node") = hc::no_node;

  nb::class_<hc::policy_options>(t, "policy_options", "Construction parameters of state_policy.")
      .def(
          "__init__",
          [](hc::policy_options* o, std::size_t block_size, std::size_t state_bytes,
             std::size_t capacity_bytes, double gamma, std::size_t replan_every, double hysteresis,
             bool snapshot_junction, bool snapshot_tail, bool fresh_prior, double replan_work,
             bool repeat_discount, bool age_value, bool prefill_prior, bool fill_free,
             bool branch_prior, std::size_t kv_block_bytes, bool admit_by_value, bool age_classes) {
            new (o) hc::policy_options{
                block_size,      state_bytes,       capacity_bytes, gamma,       replan_every,
                hysteresis,      snapshot_junction, snapshot_tail,  fresh_prior, replan_work,
                repeat_discount, age_value,         prefill_prior,  fill_free,   branch_prior,
                kv_block_bytes,  admit_by_value,    age_classes};
          },
          "block_size"_a = 16, "state_bytes"_a = 1, "capacity_bytes"_a = 1, "gamma"_a = 0.99,
          "replan_every"_a = 10, "hysteresis"_a = 0.02, "snapshot_junction"_a = true,
          "snapshot_tail"_a = true, "fresh_prior"_a = true, "replan_work"_a = 1.0,
          "repeat_discount"_a = true, "age_value"_a = true, "prefill_prior"_a = true,
          "fill_free"_a = true, "branch_prior"_a = true, "kv_block_bytes"_a = 0,
          "admit_by_value"_a = true, "age_classes"_a = false)
      .def_rw("block_size", &hc::policy_options::block_size)
      .def_rw("state_bytes", &hc::policy_options::state_bytes)
      .def_rw("capacity_bytes", &hc::policy_options::capacity_bytes)
      .def_rw("gamma", &hc::policy_options::gamma)
      .def_rw("replan_every", &hc::policy_options::replan_every)
      .def_rw("hysteresis", &hc::policy_options::hysteresis)
      .def_rw("snapshot_junction", &hc::policy_options::snapshot_junction)
      .def_rw("snapshot_tail", &hc::policy_options::snapshot_tail)
      .def_rw("fresh_prior", &hc::policy_options::fresh_prior)
      .def_rw("replan_work", &hc::policy_options::replan_work)
      .def_rw("repeat_discount", &hc::policy_options::repeat_discount)
      .def_rw("age_value", &hc::policy_options::age_value,
              "Scale a state's value by the learned P(hit | age) (EVA, default on; docs/tree.md).")
      .def_rw("prefill_prior", &hc::policy_options::prefill_prior,
              "Prior for noted prefill ends, learned apart from turn ends (default on; "
              "docs/tree.md).")
      .def_rw("fill_free", &hc::policy_options::fill_free,
              "prefill_plan also offers positions into the pool's free room (docs/tree.md).")
      .def_rw("branch_prior", &hc::policy_options::branch_prior,
              "Learn where requests leave the tree; branch_point snapshots a new prompt there "
              "(default on; docs/tree.md).")
      .def_rw("kv_block_bytes", &hc::policy_options::kv_block_bytes,
              "0, or with states and KV in one pool one block's KV bytes: a state with no state "
              "below it is ranked per byte of itself and its gap's KV (docs/tree.md).")
      .def_rw("admit_by_value", &hc::policy_options::admit_by_value,
              "A full pool refuses a state at a node no match has ended at when it is worth no "
              "more than the least valuable held state (default on; docs/tree.md).")
      .def_rw("age_classes", &hc::policy_options::age_classes,
              "With age_value: learn P(hit | age) apart for states admitted on a prior and for "
              "the others (default off; the library's row runs it in its long-memory candidate; "
              "docs/tree.md).");

  nb::class_<hc::match_result>(t, "match_result", "What state_policy.match found.")
      .def_ro("node", &hc::match_result::node, "Deepest cached node (namespace root if none).")
      .def_ro("matched_tokens", &hc::match_result::matched_tokens)
      .def_ro("resume_node", &hc::match_result::resume_node,
              "Deepest node holding a state (pinned until unpin).")
      .def_ro("resume_tokens", &hc::match_result::resume_tokens)
      .def_ro("replay_tokens", &hc::match_result::replay_tokens,
              "matched - resume: cached KV whose recurrent state is recomputed.")
      .def_prop_ro(
          "path",
          [](const hc::match_result& r) {
            return to_numpy(std::vector<std::uint64_t>(r.path.begin(), r.path.end()));
          },
          fresh_array, "uint64 array: path[i] is the node of block i.")
      .def("__repr__", [](const hc::match_result& r) {
        return nb::str("match_result(matched_tokens={}, resume_tokens={}, replay_tokens={})")
            .format(r.matched_tokens, r.resume_tokens, r.replay_tokens);
      });

  nb::class_<hc::admit_result>(t, "admit_result", "What state_policy.admit did.")
      .def_ro("admitted", &hc::admit_result::admitted)
      .def_ro("victims", &hc::admit_result::victims, "States the engine must free now.");

  nb::class_<hc::tree_victim>(t, "tree_victim",
                              "One state the policy took as a victim, with the figures it was "
                              "ranked by when it went (state_policy.set_victim_log).")
      .def_ro("node", &hc::tree_victim::node)
      .def_ro("up", &hc::tree_victim::up,
              "The held state above it when it went, or its namespace root.")
      .def_ro("gap_tokens", &hc::tree_victim::gap_tokens, "depth(node) - depth(up), tokens.")
      .def_ro("expected_tokens", &hc::tree_victim::expected_tokens,
              "Delta E[r] / sum w: the tokens per request its loss adds to E[r].")
      .def_ro("value", &hc::tree_victim::value,
              "Its rank: expected_tokens per byte freed, times P(hit | age).")
      .def_ro("bytes", &hc::tree_victim::bytes)
      .def_ro("age", &hc::tree_victim::age, "Observations since its admission or its last resume.")
      .def_ro("states_below", &hc::tree_victim::states_below)
      .def_ro("planned", &hc::tree_victim::planned)
      .def_ro("prior", &hc::tree_victim::prior)
      .def("__repr__", [](const hc::tree_victim& v) {
        return nb::str("tree_victim(node={}, gap_tokens={}, expected_tokens={}, value={})")
            .format(v.node, v.gap_tokens, v.expected_tokens, v.value);
      });

  nb::class_<victim_log>(t, "victim_log",
                         "A list the policy appends its victims to (state_policy.set_victim_log): "
                         "len(), [i] (negative i from the end), clear().")
      .def(nb::init<>())
      .def("__len__", [](const victim_log& l) { return l.records.size(); })
      .def(
          "__getitem__",
          [](const victim_log& l, std::int64_t i) {
            const auto n = static_cast<std::int64_t>(l.records.size());
            if (i < 0) i += n;
            if (i < 0 || i >= n) throw nb::index_error("victim_log index out of range");
            return l.records[static_cast<std::size_t>(i)];
          },
          "i"_a)
      .def("clear", [](victim_log& l) { l.records.clear(); });

  nb::class_<hc::replan_result>(t, "replan_result", "What state_policy.replan did.")
      .def_ro("adopted", &hc::replan_result::adopted)
      .def_ro("expected_before", &hc::replan_result::expected_before)
      .def_ro("expected_after", &hc::replan_result::expected_after)
      .def_ro("planned", &hc::replan_result::planned);

  nb::class_<hc::state_policy>(
      t, "state_policy",
      "Where to keep recurrent states in a prefix tree, learned online. Not thread-safe: call it\n"
      "under the engine's scheduler lock. Node ids are ints (slot + generation, 64 bits); the id\n"
      "of an erased node raises StaleHandleError in every call; no_node marks 'none'.")
      .def(nb::init<hc::policy_options>(), "options"_a)
      .def(nb::init<hc::policy_options, hc::xxh3_hash>(), "options"_a, "hash"_a,
           "With a given key hash (e.g. segment.xxh3_hash(secret), to share keys between "
           "processes); without it, a fresh random secret.")
      .def(
          "match",
          [](hc::state_policy& p, const hc::namespace_key& ns, nb::handle tokens) {
            const token_ids tk = to_token_ids(tokens);
            return p.match(ns, tk.view);
          },
          "ns"_a, "tokens"_a,
          "Walks the full blocks of `tokens`, observes where the match ends and pins the resume\n"
          "state (call unpin(resume_node) once it is loaded).")
      .def(
          "prefill_plan",
          [](const hc::state_policy& p, const hc::match_result& r, std::size_t prompt_tokens,
             nb::handle chunk_ends) {
            return to_numpy_index(
                p.prefill_plan(r, prompt_tokens, to_ids(chunk_ends, "chunk_ends")));
          },
          "m"_a, "prompt_tokens"_a, "chunk_ends"_a,
          "Token positions to snapshot during the prefill (int64 array, ascending).")
      .def(
          "branch_point",
          [](hc::state_policy& p, const hc::match_result& r, std::size_t prompt_tokens,
             nb::handle chunk_ends) -> std::optional<std::size_t> {
            return p.branch_point(r, prompt_tokens, to_ids(chunk_ends, "chunk_ends"));
          },
          "m"_a, "prompt_tokens"_a, "chunk_ends"_a,
          "The learned branch point of the prefill (a chunk end to snapshot too), or None: also "
          "None when the pool is full and the branch state would be its first victim.")
      .def(
          "prefill_end",
          [](const hc::state_policy& p, const hc::match_result& r, std::size_t prompt_tokens)
              -> std::optional<std::size_t> { return p.prefill_end(r, prompt_tokens); },
          "m"_a, "prompt_tokens"_a,
          "Where to snapshot the prefill's end for the prefill-end prior: the prompt's usable end "
          "floor((P - 1) / B) * B, where a re-ask resumes, if past the resume; else None.")
      .def(
          "message_branch_point",
          [](const hc::state_policy& p, const hc::match_result& r, std::size_t prompt_tokens,
             nb::handle user_starts) -> std::optional<std::size_t> {
            return p.message_branch_point(r, prompt_tokens, to_ids(user_starts, "user_starts"));
          },
          "m"_a, "prompt_tokens"_a, "user_starts"_a,
          "The deepest user-message start past the resume point, floored to the block grid, "
          "whose block is not the prompt's last (offer it in place of branch_point), or None.")
      .def(
          "insert",
          [](hc::state_policy& p, const hc::namespace_key& ns, nb::handle tokens) {
            const token_ids tk = to_token_ids(tokens);
            const auto path = p.insert(ns, tk.view);
            return to_numpy(std::vector<std::uint64_t>(path.begin(), path.end()));
          },
          "ns"_a, "tokens"_a, "Adds the full blocks; returns the node of each block (uint64).")
      .def_prop_ro(
          "hash", [](const hc::state_policy& p) -> const hc::xxh3_hash& { return p.hash(); },
          nb::rv_policy::reference_internal,
          "The policy's key hash (its own random secret): segment.block_keys(pol.hash, ns, "
          "tokens, block_size) gives the keys match_keys / insert_keys / extend_keys expect.")
      .def(
          "match_keys",
          [](hc::state_policy& p, const hc::namespace_key& ns, nb::handle keys, nb::handle hints) {
            const auto k = to_keys(keys);
            if (hints.is_none()) return p.match_keys(ns, k);
            const auto h = to_node_ids(hints, "hints");
            return p.match_keys(ns, k, h);
          },
          "ns"_a, "keys"_a, "hints"_a = nb::none(),
          "match for an engine that already has the chained block keys (segment.block_keys with\n"
          "this policy's hash). hints[i]: the node extend_keys returned for block i, or no_node;\n"
          "a hint is checked in O(1) and a wrong one is ignored, so the result never depends on "
          "it.")
      .def(
          "insert_keys",
          [](hc::state_policy& p, const hc::namespace_key& ns, nb::handle keys) {
            const auto path = p.insert_keys(ns, to_keys(keys));
            return to_numpy(std::vector<std::uint64_t>(path.begin(), path.end()));
          },
          "ns"_a, "keys"_a,
          "insert from the chained block keys; returns each block's node (uint64).")
      .def(
          "extend_keys",
          [](hc::state_policy& p, const hc::namespace_key& ns, nb::handle parent, nb::handle keys) {
            const auto k = to_keys(keys);
            std::vector<hc::node_id> path;
            if (!nb::hasattr(parent, "__len__")) {  // one node: an int or a NumPy integer
              hc::node_id v = 0;
              if (!nb::try_cast(parent, v, /*convert=*/true))
                hc::detail::throw_invalid("parent", nb::str(parent).c_str(),
                                          "must be a node id (an int >= 0) or a sequence of them");
              path = p.extend_keys(ns, v, k);
            } else {
              const auto prefix = to_node_ids(parent, "parent");
              path = p.extend_keys(ns, std::span<const hc::node_id>(prefix), k);
            }
            return to_numpy(std::vector<std::uint64_t>(path.begin(), path.end()));
          },
          "ns"_a, "parent"_a, "keys"_a,
          "A sequence still being computed (issue #22's causal protocol). parent an int: adds "
          "`keys` below that node (no_node: the namespace's root). parent a sequence: the nodes "
          "a match of the same keys found (match_result.path), checked in O(1), so only the "
          "blocks beyond them are walked. Returns the nodes of `keys` (uint64); notes no end "
          "(note_sequence_end does).")
      .def("extend_key", &hc::state_policy::extend_key, "ns"_a, "parent"_a, "key"_a,
           "extend_keys(ns, parent, [key])[0]: the one block a decode step adds.")
      .def("note_sequence_end", &hc::state_policy::note_sequence_end, "end"_a,
           "The sequence added by extend_keys ended at `end` (as insert_keys would note it).")
      .def("admit", &hc::state_policy::admit, "node"_a, "bytes"_a,
           "The engine stored a state at `node`; returns the victims to free first.")
      .def(
          "admit_path",
          [](hc::state_policy& p, nb::handle path, std::size_t bytes) {
            const auto ids = to_ids(path, "path");
            return p.admit_path(std::vector<hc::node_id>(ids.begin(), ids.end()), bytes);
          },
          "path"_a, "bytes"_a,
          "The snapshots of one prefill at once (each node below the one before): if those without "
          "a state all fit the free room, admits them as `admit` for each would and returns True; "
          "else changes nothing and returns False.")
      .def("set_capacity_bytes", &hc::state_policy::set_capacity_bytes, "bytes"_a,
           "The pool's budget is now `bytes` (states sharing one memory pool with KV); returns "
           "the victims to free, in evict's order, when the states held exceed it.")
      .def("reserve", &hc::state_policy::reserve, "nodes"_a,
           "Reserves room for `nodes` nodes, so the index never grows on the request path.")
      .def_prop_ro("bookkeeping_bytes", &hc::state_policy::bookkeeping_bytes,
                   "Bytes of the node records, index slots, state records and side tables.")
      .def("evict", &hc::state_policy::evict, "bytes"_a,
           "Frees at least `bytes`: victims by least exact increase of E[r] per byte.")
      .def(
          "set_victim_log",
          [](hc::state_policy& p, victim_log* log) {
            p.set_victim_log(log ? &log->records : nullptr);
          },
          "log"_a.none(), nb::keep_alive<1, 2>(),
          "Every state admit, evict and set_capacity_bytes take from now on appends a "
          "tree_victim to `log` (a victim_log, kept alive by the policy); None stops it.")
      .def("drop", &hc::state_policy::drop, "node"_a)
      .def("pin", &hc::state_policy::pin, "node"_a)
      .def("unpin", &hc::state_policy::unpin, "node"_a)
      .def("erase", &hc::state_policy::erase, "node"_a,
           "Removes a leaf whose KV the engine evicted (its id is stale from then on).")
      .def("replan", &hc::state_policy::replan, "Exact re-plan with hysteresis.")
      .def_prop_ro("replans", &hc::state_policy::replans,
                   "Re-plans run so far, automatic and explicit.")
      .def_prop_ro("replan_ns", &hc::state_policy::replan_ns,
                   "Their total wall time in nanoseconds.")
      .def("expected_recompute", &hc::state_policy::expected_recompute)
      .def("has_state", &hc::state_policy::has_state, "node"_a)
      .def("state_bytes", &hc::state_policy::state_bytes, "node"_a)
      .def("planned", &hc::state_policy::planned, "node"_a)
      .def("pinned", &hc::state_policy::pinned, "node"_a)
      .def("contains", &hc::state_policy::contains, "node"_a)
      .def("depth_tokens", &hc::state_policy::depth_tokens, "node"_a)
      .def("parent", &hc::state_policy::parent, "node"_a)
      .def("match_share", &hc::state_policy::match_share, "node"_a)
      .def("hit_chance", &hc::state_policy::hit_chance, "node"_a,
           "P(hit | age) of the state held at node (1 with age_value off).")
      .def("note_prefill_end", &hc::state_policy::note_prefill_end, "node"_a,
           "The prefill ended at node: its prior with prefill_prior on (before admit).")
      .def("note_branch_point", &hc::state_policy::note_branch_point, "node"_a,
           "The engine snapshots the branch point at node: its prior (before admit).")
      .def("branch_share", &hc::state_policy::branch_share,
           "EW share of noted branch points a later match reached, (h_I + 1)/(n_I + 2).")
      .def("divergence_within", &hc::state_policy::divergence_within, "j"_a,
           "F_j = P(D <= 2^j - 1 | D >= 1), the learned divergence law (blocks).")
      .def("prefill_share", &hc::state_policy::prefill_share,
           "EW share of noted prefill ends matched later, (h_P + 1)/(n_P + 2).")
      .def_prop_ro("used_bytes", &hc::state_policy::used_bytes)
      .def_prop_ro("capacity_bytes", &hc::state_policy::capacity_bytes)
      .def_prop_ro("state_count", &hc::state_policy::state_count)
      .def_prop_ro("node_count", &hc::state_policy::node_count)
      .def_prop_ro("namespace_count", &hc::state_policy::namespace_count)
      .def_prop_ro("observations", &hc::state_policy::observations);

  // ---- the candidate shadows' safeguard (tree/safeguard.hpp, docs/design/tree_safeguard.md) ----
  nb::class_<hc::leader_safeguard>(
      t, "leader_safeguard",
      "Follow-the-lazy-leader over candidate policies run in shadow: observe() each request's\n"
      "per-candidate recompute (tokens) and usable tokens, follow the returned leader. A switch\n"
      "needs a lead above max(mean usable tokens per request with usable > 0, hand-over loss\n"
      "per switch).")
      .def(nb::init<std::size_t, std::size_t>(), "candidates"_a = 1, "initial"_a = 0)
      .def(
          "observe",
          [](hc::leader_safeguard& g, const std::vector<double>& losses, double usable) {
            return g.observe(losses, usable);
          },
          "losses"_a, "usable"_a,
          "Scores one request (losses[c]: tokens candidate c would recompute; usable: the\n"
          "request's usable tokens) and returns the leader for its decisions.")
      .def("note_handover", &hc::leader_safeguard::note_handover, "tokens"_a,
           "The real pool recomputed `tokens` more than its leader on the last request.")
      .def_prop_ro("leader", &hc::leader_safeguard::leader)
      .def_prop_ro("margin", &hc::leader_safeguard::margin, "delta: the switching margin now.")
      .def_prop_ro(
          "scores",
          [](const hc::leader_safeguard& g) {
            return std::vector<double>(g.scores().begin(), g.scores().end());
          },
          "Cumulative recompute L_c of every candidate.")
      .def_prop_ro(
          "led",
          [](const hc::leader_safeguard& g) {
            return std::vector<std::size_t>(g.led().begin(), g.led().end());
          },
          "Requests each candidate led.")
      .def_prop_ro("best_score", &hc::leader_safeguard::best_score)
      .def_prop_ro("leader_loss", &hc::leader_safeguard::leader_loss)
      .def_prop_ro("switches", &hc::leader_safeguard::switches)
      .def_prop_ro("requests", &hc::leader_safeguard::requests)
      .def_prop_ro("decisions", &hc::leader_safeguard::decisions,
                   "Requests scored with usable > 0 (the ones the margin averages over).")
      .def_prop_ro("handover", &hc::leader_safeguard::handover)
      .def_prop_ro("regret_bound", &hc::leader_safeguard::regret_bound,
                   "Theorem 1's S (delta* + l_max) + delta* on leader_loss - best_score.");
}

}  // namespace hybridcache_python
