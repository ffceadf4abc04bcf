#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of the reference kit as the private submodule
/// `hybridcache._hybridcache._testing` (wrapped by the pure-Python `hybridcache.testing`): one
/// head's float64 reference outputs, final state and derived bound weights for every family
/// (state/outputs.hpp, state/tolerance.hpp), and the element tolerance of tolerance.hpp,
/// vectorised, so Python asserts use exactly the bounds `hybridcache verify` uses.

#include <hybridcache/state/outputs.hpp>
#include <hybridcache/state/tolerance.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstddef>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "common.hpp"

namespace hybridcache_python {

namespace testing_detail {

namespace hc = hybridcache;
using arr1 = in_array<double, 1>;

inline std::span<const double> span_or_empty(const std::optional<arr1>& a) {
  return a ? std::span<const double>(a->data(), a->size()) : std::span<const double>();
}

inline hc::precision precision_arg(const std::string& name, const std::string& v) {
  const auto p = hc::parse_precision(v);
  if (!p) hybridcache::detail::throw_invalid(name, v, "must be 'fp64', 'fp32', 'fp16' or 'bf16'");
  return *p;
}

using head_result = std::tuple<numpy_array<double>, numpy_array<double>, numpy_array<double>,
                               numpy_array<double>, double>;

/// One head: (o (L·dv), final_state (dk·dv), bound_o, bound_state, depth_per_token).
inline head_result head(const std::string& family, std::size_t L, std::size_t dk, std::size_t dv,
                        const arr1& q, const arr1& k, const arr1& v, const std::optional<arr1>& g,
                        const std::optional<arr1>& beta, const std::optional<arr1>& a,
                        const std::optional<arr1>& b, const std::optional<arr1>& dt,
                        const std::optional<arr1>& A, std::optional<double> scale,
                        const std::optional<arr1>& initial_state, std::size_t num_householder) {
  const std::span<const double> qs(q.data(), q.size()), ks(k.data(), k.size()),
      vs(v.data(), v.size()), gs = span_or_empty(g), bs = span_or_empty(beta),
                              init = span_or_empty(initial_state);
  const double sc = scale ? *scale : hc::default_scale(dk);
  hc::segment_outputs<double> out;
  hc::bound_weights w;
  if (family == "rwkv7") {
    hc::dplr_inputs<double> in{L, dk, dv, ks, vs, span_or_empty(a), span_or_empty(b), gs};
    out = hc::outputs(in, qs, scale, init);
    w = hc::abs_bound_weights(in, qs, sc, init);
  } else if (family == "mamba1") {
    hc::selective_inputs<double> in{L, dk, dv, ks, vs, span_or_empty(dt), span_or_empty(A)};
    out = hc::outputs(in, qs, scale, init);
    w = hc::abs_bound_weights(in, qs, sc, init);
  } else if (family == "gated_delta_product") {
    hc::delta_product_inputs<double> in{L, dk, dv, num_householder, ks, vs, bs, gs};
    out = hc::outputs(in, qs, scale, init);
    w = hc::abs_bound_weights(in, qs, sc, init);
  } else {
    const bool delta =
        family == "delta" || family == "deltanet" || family == "gated_deltanet" || family == "kda";
    if (!delta && family != "additive" && family != "linear" && family != "gla" &&
        family != "simple_gla")
      hybridcache::detail::throw_invalid("family", family,
                                         "must be linear, simple_gla, gla, deltanet, "
                                         "gated_deltanet, kda, rwkv7, gated_delta_product or "
                                         "mamba1");
    hc::token_inputs<double> in{L, dk, dv, ks, vs, bs, gs};
    const auto r = delta ? hc::transition_rule::delta : hc::transition_rule::additive;
    out = hc::outputs(in, r, qs, scale, init);
    w = hc::abs_bound_weights(in, r, qs, sc, init);
  }
  return {to_numpy(std::move(out.o)), to_numpy(std::move(out.final_state)),
          to_numpy(std::move(w.o)), to_numpy(std::move(w.state)), w.depth_per_token};
}

/// element_tolerance over arrays (all of one length).
inline numpy_array<double> tolerance(const arr1& weight, const arr1& depth, const arr1& steps,
                                     const arr1& ref, const std::string& accumulate,
                                     const std::string& state_storage, const std::string& output) {
  const std::size_t n = ref.size();
  if (weight.size() != n || depth.size() != n || steps.size() != n)
    hybridcache::detail::throw_invalid("weight.size", weight.size(),
                                       "weight, depth, steps and ref must have one length");
  const hc::error_model m{precision_arg("accumulate", accumulate),
                          precision_arg("state_storage", state_storage),
                          precision_arg("output", output)};
  std::vector<double> tol(n);
  for (std::size_t i = 0; i < n; ++i)
    tol[i] =
        hc::element_tolerance(weight.data()[i], depth.data()[i], steps.data()[i], ref.data()[i], m);
  return to_numpy(std::move(tol));
}

}  // namespace testing_detail

inline void bind_testing(nb::module_& parent) {
  nb::module_ m = parent.def_submodule(
      "_testing", "Reference kit internals; use the Python package hybridcache.testing.");
  m.def("head", &testing_detail::head, nb::arg("family"), nb::arg("L"), nb::arg("dk"),
        nb::arg("dv"), nb::arg("q"), nb::arg("k"), nb::arg("v"), nb::arg("g") = nb::none(),
        nb::arg("beta") = nb::none(), nb::arg("a") = nb::none(), nb::arg("b") = nb::none(),
        nb::arg("dt") = nb::none(), nb::arg("A") = nb::none(), nb::arg("scale") = nb::none(),
        nb::arg("initial_state") = nb::none(), nb::arg("num_householder") = 1,
        "One head's float64 reference: (o, final_state, bound_o, bound_state, depth_per_token), "
        "all flat, token-major, state keys x values.");
  m.def("tolerance", &testing_detail::tolerance, nb::arg("weight"), nb::arg("depth"),
        nb::arg("steps"), nb::arg("ref"), nb::arg("accumulate"), nb::arg("state_storage"),
        nb::arg("output"),
        "gamma(depth*u_acc + steps*u_store)*weight + u_out*|ref|, elementwise "
        "(state/tolerance.hpp).");
}

}  // namespace hybridcache_python
