#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of state/ as the submodule `hybridcache.state`: the composition-law algebra
/// for linear-attention heads (HYPIC §3.1, eq. 2, 4, 6). One head, K-first: keys (L, dk), values
/// (L, dv), state (dk, dv). float64 and float32 are both bound; float32 arrays stay float32.
///
///   S_i = T_i S_{i-1} + u_i                          run_recurrence
///   (T_C, S_C|0) = (T_L ... T_1, S_L from S_0 = 0)   summarize -> segment_summary
///   (T2, S2) o (T1, S1) = (T2 T1, T2 S1 + S2)        compose(first, then), fold(run)
///   S = T_C S_prev + S_C|0                           apply(summary or run, prefix_state)

#include <hybridcache/state.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"

namespace hybridcache_python {

template <class Real>
using gate_1d = in_array<Real, 1>;
template <class Real>
using gate_2d = in_array<Real, 2>;

/// Keeps the (possibly converted) gate array alive while token_inputs points into it.
template <class Real>
struct token_inputs_holder {
  hybridcache::token_inputs<Real> in;
  nb::object gate_keepalive;
};

template <class Real>
token_inputs_holder<Real> make_inputs(const in_array<Real, 2>& k, const in_array<Real, 2>& v,
                                      const std::optional<in_array<Real, 1>>& beta,
                                      const nb::object& log_gate) {
  namespace hc = hybridcache;
  token_inputs_holder<Real> h;
  auto& in = h.in;
  in.length = k.shape(0);
  in.dk = k.shape(1);
  in.dv = v.shape(1);
  if (v.shape(0) != in.length)
    hc::detail::throw_invalid(
        "v.shape[0]", v.shape(0),
        "keys and values need the same number of tokens " + std::to_string(in.length));
  in.k = as_span(k);
  in.v = as_span(v);
  if (beta) in.beta = as_span(*beta);
  if (!log_gate.is_none()) {
    // (L,) is a scalar gate per token, (L, dk) a per-key-row (diagonal) gate.
    gate_1d<Real> g1;
    gate_2d<Real> g2;
    if (nb::try_cast(log_gate, g1, /*convert=*/true)) {
      in.log_gate = as_span(g1);
      h.gate_keepalive = nb::cast(g1);
    } else if (nb::try_cast(log_gate, g2, /*convert=*/true)) {
      if (g2.shape(1) != in.dk)
        hc::detail::throw_invalid("log_gate.shape[1]", g2.shape(1),
                                  "a diagonal gate has dk = " + std::to_string(in.dk) + " columns");
      in.log_gate = as_span(g2);
      h.gate_keepalive = nb::cast(g2);
    } else {
      throw nb::type_error("log_gate must be None or a 1-D (L,) or 2-D (L, dk) float array");
    }
  }
  return h;
}

/// rule=None picks delta when beta is given, additive otherwise.
inline hybridcache::transition_rule pick_rule(std::optional<hybridcache::transition_rule> r,
                                              bool has_beta) {
  if (r) return *r;
  return has_beta ? hybridcache::transition_rule::delta : hybridcache::transition_rule::additive;
}

template <class Real>
numpy_array<Real, 2> state_to_numpy(std::vector<Real>&& s, std::size_t dk, std::size_t dv) {
  return to_numpy_2d(std::move(s), dk, dv);
}

template <class Real>
std::vector<Real> copy_vector(std::span<const Real> s) {
  return std::vector<Real>(s.begin(), s.end());
}

template <class Real>
void bind_state_for(nb::module_& s, const char* summary_name, const char* dtype_name) {
  namespace hc = hybridcache;
  using summary = hc::segment_summary<Real>;
  using matrix = in_array<Real, 2>;

  nb::class_<summary>(
      s, summary_name,
      (std::string("Cached (T_C, S_C|0) of one segment of one head, ") + dtype_name +
       " (HYPIC eq. 4). Scalar/diagonal families keep log-decays; dense keeps "
       "the dk x dk matrix.")
          .c_str())
      .def_static(
          "identity", [](std::size_t dk, std::size_t dv) { return summary::identity(dk, dv); },
          nb::arg("dk"), nb::arg("dv"), "The monoid identity (I, 0).")
      .def_static(
          "scalar",
          [](double log_decay, matrix end_state, std::size_t length) {
            return summary::scalar(end_state.shape(0), end_state.shape(1), length, log_decay,
                                   copy_vector<Real>(as_span(end_state)));
          },
          nb::arg("log_decay"), nb::arg("end_state"), nb::arg("length") = 0,
          "A scalar-family summary T_C = exp(log_decay) I, from a cached (dk, dv) end state.")
      .def_static(
          "diagonal",
          [](in_array<double> log_decay, matrix end_state, std::size_t length) {
            auto ld = as_span(log_decay);
            return summary::diagonal(end_state.shape(0), end_state.shape(1), length,
                                     std::vector<double>(ld.begin(), ld.end()),
                                     copy_vector<Real>(as_span(end_state)));
          },
          nb::arg("log_decay"), nb::arg("end_state"), nb::arg("length") = 0,
          "A diagonal-family summary T_C = Diag(exp(log_decay)), log_decay of shape (dk,).")
      .def_static(
          "dense",
          [](matrix transition, matrix end_state, std::size_t length) {
            if (transition.shape(0) != end_state.shape(0) ||
                transition.shape(1) != end_state.shape(0))
              hc::detail::throw_invalid(
                  "transition.shape[0]", transition.shape(0),
                  "a dense transition is dk x dk with dk = end_state.shape[0]");
            return summary::dense(end_state.shape(0), end_state.shape(1), length,
                                  copy_vector<Real>(as_span(transition)),
                                  copy_vector<Real>(as_span(end_state)));
          },
          nb::arg("transition"), nb::arg("end_state"), nb::arg("length") = 0,
          "A dense-family summary from a cached (dk, dk) transition and (dk, dv) end state.")
      .def_prop_ro("family", &summary::family)
      .def_prop_ro("length", &summary::length, "Number of tokens summarised.")
      .def_prop_ro("dk", &summary::dk)
      .def_prop_ro("dv", &summary::dv)
      .def_prop_ro(
          "end_state",
          [](const summary& x) {
            return state_to_numpy(copy_vector<Real>(x.end_state()), x.dk(), x.dv());
          },
          fresh_array, "S_C|0 as a (dk, dv) array (a copy).")
      .def_prop_ro(
          "log_decay",
          [](const summary& x) { return to_numpy(copy_vector<double>(x.log_decay())); },
          fresh_array, "Log-decays: 1 (scalar), dk (diagonal) or 0 (dense) values.")
      .def_prop_ro(
          "transition",
          [](const summary& x) {
            return state_to_numpy(copy_vector<Real>(x.transition()), x.dk(), x.dk());
          },
          fresh_array, "T_C as a (dk, dk) array, for every family (a copy).")
      .def("__repr__", [summary_name](const summary& x) {
        return nb::str("{}(family={}, length={}, dk={}, dv={})")
            .format(summary_name, std::string(hc::to_string(x.family())), x.length(), x.dk(),
                    x.dv());
      });

  s.def(
      "summarize",
      [](matrix k, matrix v, std::optional<in_array<Real, 1>> beta, nb::object log_gate,
         std::optional<hc::transition_rule> rule, hc::summarize_method method, std::size_t chunk) {
        const auto h = make_inputs<Real>(k, v, beta, log_gate);
        hc::summarize_options o;
        o.method = method;
        o.chunk = chunk;
        const hc::transition_rule r = pick_rule(rule, beta.has_value());
        nb::gil_scoped_release unlocked;
        return hc::summarize(h.in, r, o);
      },
      nb::arg("k"), nb::arg("v"), nb::arg("beta").none() = nb::none(),
      nb::arg("log_gate").none() = nb::none(), nb::arg("rule").none() = nb::none(),
      nb::arg("method") = hc::summarize_method::automatic, nb::arg("chunk") = 64,
      "The summary (T_C, S_C|0) of one head's tokens. k: (L, dk), v: (L, dv); beta: (L,) write\n"
      "strengths (delta rule); log_gate: None, (L,) scalar or (L, dk) diagonal log-decays (<= 0).\n"
      "rule=None means delta if beta is given, else additive. Releases the GIL.");

  s.def(
      "run_recurrence",
      [](matrix k, matrix v, matrix initial_state, std::optional<in_array<Real, 1>> beta,
         nb::object log_gate, std::optional<hc::transition_rule> rule) {
        const auto h = make_inputs<Real>(k, v, beta, log_gate);
        const hc::transition_rule r = pick_rule(rule, beta.has_value());
        const std::size_t dk = h.in.dk, dv = h.in.dv;
        std::vector<Real> out;
        {
          nb::gil_scoped_release unlocked;
          out = hc::run_recurrence(h.in, r, as_span(initial_state));
        }
        return state_to_numpy(std::move(out), dk, dv);
      },
      nb::arg("k"), nb::arg("v"), nb::arg("initial_state"), nb::arg("beta").none() = nb::none(),
      nb::arg("log_gate").none() = nb::none(), nb::arg("rule").none() = nb::none(),
      "Token-by-token S_i = T_i S_{i-1} + u_i from initial_state (dk, dv); returns the end state.\n"
      "What an engine runs per token today, and how seam tokens are recomputed. Releases the GIL.");

  s.def(
      "compose", [](const summary& first, const summary& then) { return hc::compose(first, then); },
      nb::arg("first"), nb::arg("then"), nb::call_guard<nb::gil_scoped_release>(),
      "The summary of `first`, then `then`: (T_then T_first, T_then S_first + S_then).");
  s.def(
      "fold", [](const std::vector<summary>& run) { return hc::fold(run); }, nb::arg("run"),
      nb::call_guard<nb::gil_scoped_release>(),
      "Composes a run C_1..C_n (in order) into one summary (balanced tree).");
  s.def(
      "apply",
      [](const summary& x, matrix prefix_state) {
        std::vector<Real> out;
        {
          nb::gil_scoped_release unlocked;
          out = hc::apply(x, as_span(prefix_state));
        }
        return state_to_numpy(std::move(out), x.dk(), x.dv());
      },
      nb::arg("summary"), nb::arg("prefix_state"),
      "HYPIC eq. 6 for one segment: T_C prefix_state + S_C|0, as (dk, dv).");
  s.def(
      "apply",
      [](const std::vector<summary>& run, matrix prefix_state) {
        std::vector<Real> out;
        {
          nb::gil_scoped_release unlocked;
          out = hc::apply(run, as_span(prefix_state));
        }
        return state_to_numpy(std::move(out), prefix_state.shape(0), prefix_state.shape(1));
      },
      nb::arg("run"), nb::arg("prefix_state"),
      "HYPIC eq. 6: applies the run C_1..C_n in order to prefix_state (dk, dv).");
}

inline void bind_state(nb::module_& m) {
  namespace hc = hybridcache;
  nb::module_ s = m.def_submodule(
      "state",
      "Composition-law state algebra for linear-attention heads (HYPIC eq. 2, 4, 6): summarize, "
      "compose, fold, apply, run_recurrence. float64 and float32.");
  nb::enum_<hc::transition_rule>(s, "rule",
                                 "Write rule: additive (u = k v^T) or delta (I - beta k k^T).")
      .value("additive", hc::transition_rule::additive)
      .value("delta", hc::transition_rule::delta);
  nb::enum_<hc::transition_family>(s, "family", "Transition family: scalar < diagonal < dense.")
      .value("scalar", hc::transition_family::scalar)
      .value("diagonal", hc::transition_family::diagonal)
      .value("dense", hc::transition_family::dense);
  nb::enum_<hc::summarize_method>(s, "summarize_method", "Dense-family summarize path.")
      .value("automatic", hc::summarize_method::automatic)
      .value("per_token", hc::summarize_method::per_token)
      .value("chunked", hc::summarize_method::chunked);
  // float64 first: inputs that need a conversion (lists, integers) become float64.
  bind_state_for<double>(s, "segment_summary", "float64");
  bind_state_for<float>(s, "segment_summary_f32", "float32");
}

}  // namespace hybridcache_python
