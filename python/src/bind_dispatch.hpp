#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of dispatch/: LPT assignment of cold segments to prefill workers (HYPIC eq. 9).

#include <hybridcache/dispatch.hpp>

#include "common.hpp"

namespace hybridcache_python {

inline void bind_dispatch(nb::module_& m) {
  namespace hc = hybridcache;
  nb::class_<hc::assignment>(m, "assignment",
                             "Result of a dispatch: worker of each segment, per-worker load and "
                             "makespan = max(load).")
      .def_prop_ro(
          "worker_of", [](const hc::assignment& a) { return to_numpy_index(a.worker_of); },
          fresh_array, "int64 array: worker_of[i] is the worker of segment i.")
      .def_prop_ro(
          "load", [](const hc::assignment& a) { return to_numpy(std::vector<double>(a.load)); },
          fresh_array, "float64 array: total busy time of each worker.")
      .def_ro("makespan", &hc::assignment::makespan, "Heaviest worker's load (0 with no segments).")
      .def("__repr__", [](const hc::assignment& a) {
        return nb::str("assignment(segments={}, workers={}, makespan={})")
            .format(a.worker_of.size(), a.load.size(), a.makespan);
      });

  m.def(
      "lpt_assign",
      [](in_array<double> costs, std::size_t workers) -> hc::assignment {
        return hc::lpt_assign(as_span(costs), workers);
      },
      nb::arg("costs"), nb::arg("workers"), nb::call_guard<nb::gil_scoped_release>(),
      "Longest-Processing-Time-first assignment of segments with the given costs to `workers`\n"
      "identical workers (HYPIC eq. 9; within 4/3 - 1/(3m) of the optimum). Ties in cost keep the\n"
      "lower segment first, ties in load go to the lower worker. Releases the GIL.\n\n"
      "Raises InvalidArgument when workers == 0 or a cost is negative, NaN or infinite.");
  m.def(
      "lpt_assign",
      [](in_array<double> costs, in_array<double> speeds) -> hc::assignment {
        return hc::lpt_assign(as_span(costs), as_span(speeds));
      },
      nb::arg("costs"), nb::arg("speeds"), nb::call_guard<nb::gil_scoped_release>(),
      "LPT on related workers: worker w processes speeds[w] cost units per time unit; each "
      "segment\n"
      "(in descending cost) goes to the worker on which it finishes first. Loads are in time "
      "units.");
  m.def("lpt_ratio_bound", &hc::lpt_ratio_bound, nb::arg("workers"),
        "Graham's worst-case ratio of LPT to the optimum on m identical workers: 4/3 - 1/(3m).");
}

}  // namespace hybridcache_python
