#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of select/ (top level of `hybridcache`, as in C++): SparseX's sparse-Q scores
/// (§3.2 eqs. 1–2), token selection (Algorithm 1 lines 13–17) and the layer plan (§3.4):
///
///     A_h = softmax(Q_sq,h K_hᵀ · scale + M_causal[I_nr, :]),   s_j = 1/(H·|I_nr|) Σ_h Σ_i A_h[i,
///     j] R = I_nr ∪ S_key (top_k reused tokens by s_j, ties to the lower index) ∪ S_ov ∪ S_tail
///
/// Queries and keys are used in place (any strides with a unit-stride head axis); float32 stays
/// float32 (both must be float32), anything else runs in float64.

#include <hybridcache/select.hpp>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common.hpp"
#include "strided.hpp"

namespace hybridcache_python {

namespace select_detail {

namespace hc = hybridcache;

/// Reused ranges from a sequence of (begin, end) pairs or an (n, 2) integer array.
inline std::vector<hc::token_range> to_ranges(nb::handle obj) {
  nb::object np = nb::module_::import_("numpy");
  nb::object arr;
  try {
    arr = np.attr("asarray")(obj, nb::arg("dtype") = np.attr("int64"));
  } catch (const nb::python_error&) {
    hc::detail::throw_invalid("reused", std::string(nb::repr(obj.type()).c_str()),
                              "must be (begin, end) pairs of token positions");
  }
  std::vector<hc::token_range> out;
  if (nb::cast<std::size_t>(arr.attr("size")) == 0) return out;
  in_array<std::int64_t, 2> pairs;
  if (!nb::try_cast(np.attr("ascontiguousarray")(arr), pairs, true) || pairs.shape(1) != 2)
    hc::detail::throw_invalid("reused.shape", std::string(nb::repr(arr.attr("shape")).c_str()),
                              "must be (n, 2): (begin, end) pairs");
  for (std::size_t i = 0; i < pairs.shape(0); ++i) {
    const std::int64_t b = pairs(i, 0), e = pairs(i, 1);
    if (b < 0 || e < 0)
      hc::detail::throw_invalid(hc::detail::indexed("reused", i),
                                std::to_string(b) + ".." + std::to_string(e),
                                "positions must be >= 0");
    out.push_back({static_cast<std::size_t>(b), static_cast<std::size_t>(e)});
  }
  return out;
}

inline numpy_array<bool> to_bool_mask(const std::vector<std::uint8_t>& m) {
  auto* owner = new std::vector<std::uint8_t>(m.size());
  for (std::size_t i = 0; i < m.size(); ++i) (*owner)[i] = m[i] != 0 ? 1 : 0;
  nb::capsule free_when_done(
      owner, [](void* p) noexcept { delete static_cast<std::vector<std::uint8_t>*>(p); });
  const std::size_t shape[1] = {owner->size()};
  return numpy_array<bool>(reinterpret_cast<bool*>(owner->data()), 1, shape, free_when_done);
}

template <class T>
std::vector<double> scores_as(const any_array& q, const in_array<std::int64_t>& pos,
                              const any_array& k, const hc::sparse_q_options& opt) {
  auto qv = view_of<const T, 3>(q, "queries");
  auto kv = view_of<const T, 3>(k, "keys");
  hc::vector_view<const std::int64_t> pv(pos.data(), {pos.size()});
  std::vector<double> out(k.shape(0));
  hc::vector_view<double> ov(out.data(), {out.size()});
  nb::gil_scoped_release unlocked;
  hc::sparse_q_scores(qv, pv, kv, ov, opt);
  return out;
}

inline numpy_array<double> sparse_q_scores(nb::handle queries, const in_array<std::int64_t>& pos,
                                           nb::handle keys, std::optional<double> scale,
                                           std::size_t workspace_bytes) {
  input_array q = to_input(queries, "queries", "float64");
  input_array k = to_input(keys, "keys", "float64");
  check_ndim(q.array, "queries", 3, "[n_q, heads, head_dim]");
  check_ndim(k.array, "keys", 3, "[T, kv_heads, head_dim]");
  const bool f32 = dtype_of(q.array.dtype()) == storage_dtype::f32 &&
                   dtype_of(k.array.dtype()) == storage_dtype::f32;
  if (!f32) {  // float64 (converting whatever is not float64 already, with one copy)
    nb::object np = nb::module_::import_("numpy");
    for (input_array* a : {&q, &k}) {
      if (dtype_of(a->array.dtype()) == storage_dtype::f64) continue;
      a->holder = np.attr("asarray")(nb::cast(a->array), nb::arg("dtype") = np.attr("float64"));
      a->array = nb::cast<any_array>(a->holder);
    }
  }
  hc::sparse_q_options opt;
  if (scale) {
    if (!(*scale > 0.0))
      hc::detail::throw_invalid("scale", *scale, "must be > 0 (None: 1/sqrt(d))");
    opt.scale = *scale;
  }
  opt.workspace_bytes = workspace_bytes;
  std::vector<double> s = f32 ? scores_as<float>(q.array, pos, k.array, opt)
                              : scores_as<double>(q.array, pos, k.array, opt);
  return to_numpy(std::move(s));
}

}  // namespace select_detail

inline void bind_select(nb::module_& m) {
  namespace hc = hybridcache;
  namespace sd = select_detail;
  using namespace nb::literals;

  m.def(
      "sparse_q_scores", &sd::sparse_q_scores, "queries"_a, "positions"_a, "keys"_a,
      "scale"_a = nb::none(), "workspace_bytes"_a = 0,
      "SparseX sparse-Q scores s_j (eqs. 1-2) of every prompt token, float64 [T]:\n"
      "queries [n_q, heads, d] of the non-reuse tokens at strictly increasing positions\n"
      "[n_q], keys [T, kv_heads, d] (grouped-query: head h reads kv head h // (H/H_kv)).\n"
      "scale=None means 1/sqrt(d). Causal: s_j = 0 after the last query position; sum_j s_j = 1.");
  m.def(
      "non_reuse_positions",
      [](nb::handle reused, std::size_t t_len) {
        return to_numpy_index(hc::non_reuse_positions(sd::to_ranges(reused), t_len));
      },
      "reused"_a, "t_len"_a,
      "I_nr: the positions of a t_len-token prompt outside the reused (begin, end) ranges.");

  nb::class_<hc::token_selection>(
      m, "token_selection",
      "One SparseX selection. Index arrays are int64 and ascending, except key (best first); "
      "recompute_mask is a bool array over the prompt (True: recompute).")
      .def_prop_ro(
          "non_reuse", [](const hc::token_selection& s) { return to_numpy_index(s.non_reuse); },
          fresh_array, "I_nr")
      .def_prop_ro(
          "key", [](const hc::token_selection& s) { return to_numpy_index(s.key); }, fresh_array,
          "S_key: top_k reused tokens by score, best first (ties: lower index first)")
      .def_prop_ro(
          "overflow", [](const hc::token_selection& s) { return to_numpy_index(s.overflow); },
          fresh_array, "S_ov: reused tokens within block_size of a non-reuse interval")
      .def_prop_ro(
          "tail", [](const hc::token_selection& s) { return to_numpy_index(s.tail); }, fresh_array,
          "S_tail: the last fallback_tokens of a final reused segment")
      .def_prop_ro(
          "recompute", [](const hc::token_selection& s) { return to_numpy_index(s.recompute); },
          fresh_array, "R = I_nr | S_key | S_ov | S_tail")
      .def_prop_ro(
          "recompute_mask",
          [](const hc::token_selection& s) { return sd::to_bool_mask(s.recompute_mask); },
          fresh_array);

  m.def(
      "select_tokens",
      [](const in_array<double>& scores, nb::handle reused, std::size_t top_k,
         std::size_t block_size, std::size_t fallback_tokens) {
        const auto ranges = sd::to_ranges(reused);
        hc::selection_options opt{top_k, block_size, fallback_tokens};
        return hc::select_tokens(as_span(scores), ranges, opt);
      },
      "scores"_a, "reused"_a, "top_k"_a = 0, "block_size"_a = 16, "fallback_tokens"_a = 64,
      "SparseX selection over scores [T] (e.g. sparse_q_scores) with reused (begin, end)\n"
      "ranges (ascending, disjoint): key tokens (top_k reused by score, ties to the lower\n"
      "index), overflow blocks of block_size around every non-reuse interval, and the last\n"
      "fallback_tokens of a prompt that ends in a reused segment.");

  nb::enum_<hc::layer_mode>(m, "layer_mode", "What a layer does in the hybrid plan.")
      .value("full", hc::layer_mode::full)
      .value("select", hc::layer_mode::select)
      .value("sparse", hc::layer_mode::sparse);

  nb::class_<hc::layer_plan>(
      m, "layer_plan",
      "Per-layer modes: layers < threshold-1 full, layer threshold-1 select (layer 0 when "
      "threshold = 0, recomputing I_nr only), the rest sparse (recompute R only).")
      .def_ro("threshold", &hc::layer_plan::threshold)
      .def_ro("selection_layer", &hc::layer_plan::selection_layer)
      .def_prop_ro("modes", [](const hc::layer_plan& p) { return p.modes; })
      .def(
          "mask",
          [](const hc::layer_plan& p, std::size_t layer) {
            return sd::to_bool_mask(p.mask(layer));
          },
          "layer"_a, "Recompute mask of a layer (bool [T]).")
      .def("recompute_count", &hc::layer_plan::recompute_count, "layer"_a)
      .def("recompute_fraction", &hc::layer_plan::recompute_fraction,
           "Sum over layers of recomputed tokens / (L * T).");
  m.def("make_layer_plan", &hc::make_layer_plan, "layers"_a, "threshold"_a, "selection"_a,
        "The plan for `layers` layers with threshold l* = `threshold` leading dense layers.");
  m.def("threshold_for", &hc::threshold_for, "layers"_a, "fraction"_a,
        "l* = ceil(fraction * layers), e.g. threshold_for(36, 0.15) = 6.");
}

}  // namespace hybridcache_python
