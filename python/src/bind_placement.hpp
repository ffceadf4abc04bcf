#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of placement/ and overlap/: the exact checkpoint planner (Theorem 2 of the
/// sparse prefix caching paper), its frontier, the deterministic baselines, the recompute metrics,
/// and the overlap-depth histograms that feed it (§4.2, p̂_t = (1−γ)/(1−γ^n) Σ γ^{n−s} e_{T_s}).

#include <hybridcache/error.hpp>
#include <hybridcache/overlap.hpp>
#include <hybridcache/placement.hpp>

#include <nanobind/stl/string.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"

namespace hybridcache_python {

/// Checkpoint positions from Python (int64, as NumPy makes them): negatives are refused, not
/// wrapped to huge unsigned values.
inline std::vector<std::size_t> to_positions(const in_array<std::int64_t>& a, const char* name) {
  std::vector<std::size_t> out(a.size());
  const std::int64_t* p = a.data();
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (p[i] < 0)
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed(name, i), p[i],
                                         "positions are >= 1");
    out[i] = static_cast<std::size_t>(p[i]);
  }
  return out;
}

inline hybridcache::placement_options make_placement_options(std::size_t granularity,
                                                             hybridcache::placement_method method) {
  hybridcache::placement_options o;
  o.granularity = granularity;
  o.method = method;
  return o;
}

/// Feeds every depth of an array to a histogram (one call, GIL released by the caller).
template <class Histogram>
void observe_all(Histogram& h, const in_array<std::int64_t>& depths) {
  for (std::size_t i = 0; i < depths.size(); ++i) {
    const std::int64_t d = depths.data()[i];
    if (d < 0)
      hybridcache::detail::throw_invalid(hybridcache::detail::indexed("depths", i), d,
                                         "depths are >= 0 (0 = miss)");
    h.observe(static_cast<std::size_t>(d));
  }
}

/// refresh_policy with a Python callback. The callback is stored here (not only inside the C++
/// std::function) so the garbage collector can see it: an engine that passes its own bound method
/// creates the cycle engine -> policy -> callback -> engine, which tp_traverse/tp_clear break.
struct py_refresh_policy {
  py_refresh_policy(std::size_t max_depth, std::size_t budget, nb::object on_plan,
                    const hybridcache::refresh_options& o)
      : callback(std::move(on_plan)),
        policy(
            max_depth, budget,
            [this](const hybridcache::placement& p) {
              // The callback gets its own copy of the plan: `current` is overwritten by the
              // next re-plan, so a reference would change (or dangle) under the caller.
              if (callback.is_valid() && !callback.is_none())
                callback(nb::cast(hybridcache::placement(p), nb::rv_policy::move));
            },
            o) {}
  py_refresh_policy(const py_refresh_policy&) = delete;
  py_refresh_policy& operator=(const py_refresh_policy&) = delete;

  nb::object callback;
  hybridcache::refresh_policy policy;
};

inline int refresh_policy_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  Py_VISIT(nb::inst_ptr<py_refresh_policy>(self)->callback.ptr());
  return 0;
}

inline int refresh_policy_clear(PyObject* self) {
  nb::inst_ptr<py_refresh_policy>(self)->callback = nb::object();
  return 0;
}

inline PyType_Slot refresh_policy_slots[] = {
    {Py_tp_traverse, reinterpret_cast<void*>(refresh_policy_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(refresh_policy_clear)},
    {0, nullptr}};

inline void bind_placement(nb::module_& m) {
  namespace hc = hybridcache;
  using index_array = in_array<std::int64_t>;

  nb::enum_<hc::placement_method>(m, "placement_method",
                                  "Exact algorithm run by place_optimal (all give the optimum).")
      .value("automatic", hc::placement_method::automatic, "the faster one for this (N, M)")
      .value("cht", hc::placement_method::cht, "layered DP with a monotone convex hull trick")
      .value("lagrangian", hc::placement_method::lagrangian, "price search (Aliens/WQS)");

  nb::class_<hc::placement>(m, "placement",
                            "A checkpoint plan: strictly increasing positions (1-based depths) and "
                            "the expected recompute E[r] they achieve, in tokens.")
      .def_prop_ro(
          "checkpoints", [](const hc::placement& p) { return to_numpy_index(p.checkpoints); },
          fresh_array, "int64 array of checkpoint positions.")
      .def_ro("expected_recompute", &hc::placement::expected_recompute,
              "E[r] = sum_t p_t (t - l(t)) under the normalised weights.")
      .def("__repr__", [](const hc::placement& p) {
        return nb::str("placement(checkpoints={}, expected_recompute={})")
            .format(p.checkpoints.size(), p.expected_recompute);
      });

  m.def(
      "place_optimal",
      [](in_array<double> weights, std::size_t budget, std::size_t granularity,
         hc::placement_method method) -> hc::placement {
        return hc::place_optimal(as_span(weights), budget,
                                 make_placement_options(granularity, method));
      },
      nb::arg("weights"), nb::arg("budget"), nb::arg("granularity") = 1,
      nb::arg("method") = hc::placement_method::automatic, nb::call_guard<nb::gil_scoped_release>(),
      "The exact optimal plan with at most `budget` checkpoints for overlap weights\n"
      "(weights[i] for depth i+1, normalised internally). With granularity B > 1 positions are\n"
      "restricted to {B, 2B, ...} and the DP is exact over them. O(N*M). Releases the GIL.\n\n"
      "Raises InvalidArgument for empty, negative, non-finite or all-zero weights and for a\n"
      "granularity of 0 or above N.");
  m.def(
      "optimal_frontier",
      [](in_array<double> weights, std::size_t max_budget, std::size_t granularity) {
        std::vector<double> v = hc::optimal_frontier(as_span(weights), max_budget,
                                                     make_placement_options(granularity, {}));
        return to_numpy(std::move(v));
      },
      nb::arg("weights"), nb::arg("max_budget"), nb::arg("granularity") = 1,
      nb::call_guard<nb::gil_scoped_release>(),
      "E[r] of the best plan for every budget M = 0..max_budget (max_budget + 1 values).\n"
      "Releases the GIL.");

  const auto positions = [](std::vector<std::size_t> (*f)(std::size_t, std::size_t)) {
    return [f](std::size_t n, std::size_t k) { return to_numpy_index(f(n, k)); };
  };
  m.def("place_balanced", positions(&hc::place_balanced), nb::arg("n"), nb::arg("budget"),
        "Balanced spacing floor(i(N+1)/(M+1)), i = 1..M: optimal for uniform overlap (Thm. 1).");
  m.def("place_block", positions(&hc::place_block), nb::arg("n"), nb::arg("block"),
        "The fixed grid B, 2B, ..., floor(N/B)B (block storage as in vLLM/SGLang).");
  m.def("place_logarithmic", positions(&hc::place_logarithmic), nb::arg("n"), nb::arg("budget"),
        "Geometrically growing gaps from the start of the prefix.");
  m.def(
      "place_sqrt", [](std::size_t n) { return to_numpy_index(hc::place_sqrt(n)); }, nb::arg("n"),
      "The sqrt(N) grid: place_block(n, floor(sqrt(n))).");
  m.def(
      "place_dense", [](std::size_t n) { return to_numpy_index(hc::place_dense(n)); }, nb::arg("n"),
      "A checkpoint at every token 1..N.");
  m.def(
      "place_none", [](std::size_t n) { return to_numpy_index(hc::place_none(n)); }, nb::arg("n"),
      "No checkpoint (the no-cache baseline).");
  m.def(
      "clip_to_granularity",
      [](index_array checkpoints, std::size_t granularity) {
        const auto c = to_positions(checkpoints, "checkpoints");
        return to_numpy_index(hc::clip_to_granularity(c, granularity));
      },
      nb::arg("checkpoints"), nb::arg("granularity"),
      "Moves each position down to its block boundary, dropping zeros and duplicates.");

  m.def(
      "expected_recompute",
      [](in_array<double> weights, index_array checkpoints) {
        const auto c = to_positions(checkpoints, "checkpoints");
        nb::gil_scoped_release unlocked;
        return hc::expected_recompute(as_span(weights), c);
      },
      nb::arg("weights"), nb::arg("checkpoints"),
      "E[r] = sum_t p_t (t - l(t)) of the given checkpoints under the normalised weights.");
  m.def(
      "savings",
      [](in_array<double> weights, index_array checkpoints) {
        const auto c = to_positions(checkpoints, "checkpoints");
        nb::gil_scoped_release unlocked;
        return hc::savings(as_span(weights), c);
      },
      nb::arg("weights"), nb::arg("checkpoints"), "1 - E[r]/R_nc, in [0, 1].");
  m.def(
      "reduction",
      [](in_array<double> weights, index_array checkpoints) {
        const auto c = to_positions(checkpoints, "checkpoints");
        nb::gil_scoped_release unlocked;
        return hc::reduction(as_span(weights), c);
      },
      nb::arg("weights"), nb::arg("checkpoints"), "R_nc / E[r] >= 1 (inf when E[r] = 0).");
  m.def(
      "no_cache_recompute",
      [](in_array<double> weights) { return hc::no_cache_recompute(as_span(weights)); },
      nb::arg("weights"), "R_nc = sum_t p_t t, the recompute with no checkpoint.");
  m.def("uniform_optimal_recompute", &hc::uniform_optimal_recompute, nb::arg("n"),
        nb::arg("budget"), "Closed-form optimal E[r] under uniform overlap (Theorem 1).");

  // -- overlap/ ----------------------------------------------------------------------------------
  nb::class_<hc::ew_histogram>(m, "ew_histogram",
                               "Exponentially weighted histogram of overlap depths 0..max_depth "
                               "(0 = miss); gamma = 0.99 is the paper's setting.")
      .def(nb::init<std::size_t, double>(), nb::arg("max_depth"), nb::arg("gamma") = 0.99)
      .def("observe", &hc::ew_histogram::observe, nb::arg("depth"),
           "Records one request's overlap depth (0 = miss). O(1).")
      .def(
          "observe_many", [](hc::ew_histogram& h, index_array depths) { observe_all(h, depths); },
          nb::arg("depths"), nb::call_guard<nb::gil_scoped_release>(),
          "Records every depth of an array, in order (GIL released).")
      .def(
          "pmf", [](const hc::ew_histogram& h) { return to_numpy(h.pmf()); },
          "Law of the depth given a hit, t = 1..max_depth (sums to 1; zeros before any hit).")
      .def(
          "weights", [](const hc::ew_histogram& h) { return to_numpy(h.weights()); },
          "The weights p_t themselves (sum to 1 - miss_rate).")
      .def_prop_ro("miss_rate", &hc::ew_histogram::miss_rate)
      .def_prop_ro("observations", &hc::ew_histogram::observations)
      .def_prop_ro("max_depth", &hc::ew_histogram::max_depth)
      .def_prop_ro("gamma", &hc::ew_histogram::gamma);

  nb::class_<hc::empirical_histogram>(m, "empirical_histogram",
                                      "Counts of overlap depths 0..max_depth (0 = miss).")
      .def(nb::init<std::size_t>(), nb::arg("max_depth"))
      .def("observe", &hc::empirical_histogram::observe, nb::arg("depth"))
      .def(
          "observe_many",
          [](hc::empirical_histogram& h, index_array depths) { observe_all(h, depths); },
          nb::arg("depths"), nb::call_guard<nb::gil_scoped_release>())
      .def("pmf", [](const hc::empirical_histogram& h) { return to_numpy(h.pmf()); })
      .def_prop_ro("miss_rate", &hc::empirical_histogram::miss_rate)
      .def_prop_ro("observations", &hc::empirical_histogram::observations)
      .def_prop_ro("misses", &hc::empirical_histogram::misses);

  nb::class_<py_refresh_policy>(m, "refresh_policy",
                                "The paper's online loop: an ew_histogram plus an exact re-plan "
                                "every `interval` observations, handed to `on_plan`.",
                                nb::type_slots(refresh_policy_slots))
      .def(
          "__init__",
          [](py_refresh_policy* self, std::size_t max_depth, std::size_t budget, nb::object on_plan,
             double gamma, std::size_t interval, std::size_t granularity, const std::string& law,
             bool safeguard) {
            hc::refresh_options o;
            o.gamma = gamma;
            o.interval = interval;
            o.placement.granularity = granularity;
            const auto kind = hc::parse_law_kind(law);
            if (!kind) throw hc::invalid_argument("law", law, "expected pooled, tail or conditioned");
            o.law = *kind;
            o.safeguard = safeguard;
            new (self) py_refresh_policy(max_depth, budget, std::move(on_plan), o);
          },
          nb::arg("max_depth"), nb::arg("budget"), nb::arg("on_plan").none() = nb::none(),
          nb::arg("gamma") = 0.99, nb::arg("interval") = 10, nb::arg("granularity") = 1,
          nb::arg("law") = "conditioned", nb::arg("safeguard") = true)
      .def(
          "observe",
          [](py_refresh_policy& p, std::size_t depth) { return p.policy.observe(depth); },
          nb::arg("depth"),
          "Records a depth; re-plans (and calls on_plan) on every interval-th call. True if it "
          "did.")
      .def(
          "replan", [](py_refresh_policy& p) { return p.policy.replan(); },
          "Re-plans now; False before the first hit.")
      .def_prop_ro(
          "current", [](const py_refresh_policy& p) { return p.policy.current(); },
          nb::rv_policy::copy, "The latest plan.")
      .def_prop_ro("plans", [](const py_refresh_policy& p) { return p.policy.plans(); })
      .def_prop_ro("budget", [](const py_refresh_policy& p) { return p.policy.budget(); })
      .def_prop_ro(
          "histogram",
          [](const py_refresh_policy& p) -> const hc::ew_histogram& {
            return p.policy.histogram();
          },
          nb::rv_policy::reference_internal);
}

}  // namespace hybridcache_python
