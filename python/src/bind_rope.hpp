#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of rope/ (top level of `hybridcache`, as in C++): RoPE parameters
/// (half-split / interleaved pairs, partial rotary, linear and llama3 scaled θ) and the delta
/// re-alignment of cached keys, K' = R(Δ)·K (DESIGN.md §3; rope/realign.hpp):
///
///     θ_i = base^(−2i/d_rot) (then scaled),  (x_a, x_b) ← (x_a cos Δθ_i − x_b sin Δθ_i,
///                                                    x_a sin Δθ_i + x_b cos Δθ_i)
///
/// for every pair (a, b) = (i, i + d_rot/2) (half-split) or (2i, 2i+1) (interleaved); dimensions
/// past d_rot are copied. Arrays are used in place (any strides with a unit-stride head axis;
/// no copy); float64, float32 and float16 arrays keep their dtype; bfloat16 travels as its uint16
/// bits with `bfloat16=True`. The arithmetic is float32 with a double-precision angle, exactly the
/// C++ kernel's, for every dtype.

#include <hybridcache/rope.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "strided.hpp"

namespace hybridcache_python {

namespace rope_detail {

namespace hc = hybridcache;

/// The storage type of `a`: float64/32/16, or bf16 bits (uint16 with `bf16`).
inline storage_dtype key_dtype(const any_array& a, const char* name, bool bf16) {
  const storage_dtype t = dtype_of(a.dtype());
  if (t == storage_dtype::other || (t == storage_dtype::u16) != bf16)
    hc::detail::throw_invalid(std::string(name) + ".dtype",
                              t == storage_dtype::other ? "unsupported" : dtype_name(t),
                              bf16 ? "bfloat16=True needs the uint16 bits of bfloat16 keys"
                                   : "must be float64, float32 or float16 (bfloat16: its uint16 "
                                     "bits with bfloat16=True)");
  return t;
}

template <class T>
void realign_keys_as(const hc::rope_params& p, const any_array& src, const any_mut_array& dst,
                     std::int64_t delta) {
  auto s = view_of<const T, 3>(src, "src");
  auto d = view_of<T, 3>(dst, "out");
  nb::gil_scoped_release unlocked;
  hc::realign_keys(p, s, d, delta);
}

inline nb::object realign_keys(const hc::rope_params& p, nb::handle src_obj, std::int64_t delta,
                               nb::handle out_obj, bool bf16) {
  const input_array src = to_input(src_obj, "src", "float64");
  check_ndim(src.array, "src", 3, "[tokens, heads, head_dim]");
  const storage_dtype t = key_dtype(src.array, "src", bf16);
  nb::object out =
      out_obj.is_none() ? empty_like_shape<3>(src.array, dtype_name(t)) : nb::borrow(out_obj);
  const any_mut_array dst = to_output(out, "out");
  check_ndim(dst, "out", 3, "[tokens, heads, head_dim]");
  if (dtype_of(dst.dtype()) != t)
    hc::detail::throw_invalid("out.dtype", dtype_name(dtype_of(dst.dtype())),
                              std::string("must equal src.dtype = ") + dtype_name(t));
  check_alias(src.array, "src", dst, "out");
  switch (t) {
    case storage_dtype::f64:
      realign_keys_as<double>(p, src.array, dst, delta);
      break;
    case storage_dtype::f32:
      realign_keys_as<float>(p, src.array, dst, delta);
      break;
    case storage_dtype::f16:
      realign_keys_as<hc::half>(p, src.array, dst, delta);
      break;
    case storage_dtype::u16:
      realign_keys_as<hc::bfloat16>(p, src.array, dst, delta);
      break;
    case storage_dtype::other:
      break;
  }
  return out;
}

template <class T>
void realign_blocks_as(const hc::rope_params& p, const any_array& ks, const any_array& vs,
                       const any_mut_array& kd, const any_mut_array& vd,
                       const in_array<std::int64_t>& olds, const in_array<std::int64_t>& news,
                       std::size_t num_tokens, std::int64_t delta) {
  auto k_src = view_of<const T, 4>(ks, "k_cache");
  auto v_src = view_of<const T, 4>(vs, "v_cache");
  auto k_dst = view_of<T, 4>(kd, "k_out");
  auto v_dst = view_of<T, 4>(vd, "v_out");
  hc::vector_view<const std::int64_t> o(olds.data(), {olds.size()});
  hc::vector_view<const std::int64_t> n(news.data(), {news.size()});
  nb::gil_scoped_release unlocked;
  hc::realign_blocks(p, k_src, v_src, k_dst, v_dst, o, n, num_tokens, delta);
}

/// Writes go to k_out/v_out, which default to the input pools themselves (the usual paged-cache
/// use: copy old blocks to new blocks of one pool).
inline void realign_blocks(const hc::rope_params& p, nb::handle k_obj, nb::handle v_obj,
                           const in_array<std::int64_t>& old_blocks,
                           const in_array<std::int64_t>& new_blocks, std::size_t num_tokens,
                           std::int64_t delta, nb::handle k_out_obj, nb::handle v_out_obj,
                           bool bf16) {
  const any_mut_array k =
      to_output(k_out_obj.is_none() ? k_obj : k_out_obj, k_out_obj.is_none() ? "k_cache" : "k_out");
  const any_mut_array v =
      to_output(v_out_obj.is_none() ? v_obj : v_out_obj, v_out_obj.is_none() ? "v_cache" : "v_out");
  any_array ks, vs;
  if (!nb::try_cast(k_obj, ks, false))
    hc::detail::throw_invalid("k_cache", "not an array", "must be a CPU array");
  if (!nb::try_cast(v_obj, vs, false))
    hc::detail::throw_invalid("v_cache", "not an array", "must be a CPU array");
  const char* layout = "[num_blocks, block_size, heads, head_dim]";
  check_ndim(ks, "k_cache", 4, layout);
  check_ndim(vs, "v_cache", 4, layout);
  check_ndim(k, "k_out", 4, layout);
  check_ndim(v, "v_out", 4, layout);
  const storage_dtype t = key_dtype(ks, "k_cache", bf16);
  const std::pair<storage_dtype, const char*> others[] = {{dtype_of(vs.dtype()), "v_cache.dtype"},
                                                          {dtype_of(k.dtype()), "k_out.dtype"},
                                                          {dtype_of(v.dtype()), "v_out.dtype"}};
  for (const auto& [other, name] : others)
    if (other != t)
      hc::detail::throw_invalid(name, dtype_name(other),
                                std::string("must equal k_cache.dtype = ") + dtype_name(t));
  // Distinct pools must not partly overlap (the same pool in and out is the in-place case).
  check_alias(ks, "k_cache", k, "k_out");
  check_alias(vs, "v_cache", v, "v_out");
  switch (t) {
    case storage_dtype::f64:
      realign_blocks_as<double>(p, ks, vs, k, v, old_blocks, new_blocks, num_tokens, delta);
      break;
    case storage_dtype::f32:
      realign_blocks_as<float>(p, ks, vs, k, v, old_blocks, new_blocks, num_tokens, delta);
      break;
    case storage_dtype::f16:
      realign_blocks_as<hc::half>(p, ks, vs, k, v, old_blocks, new_blocks, num_tokens, delta);
      break;
    case storage_dtype::u16:
      realign_blocks_as<hc::bfloat16>(p, ks, vs, k, v, old_blocks, new_blocks, num_tokens, delta);
      break;
    case storage_dtype::other:
      break;
  }
}

}  // namespace rope_detail

inline void bind_rope(nb::module_& m) {
  namespace hc = hybridcache;
  using namespace nb::literals;

  nb::enum_<hc::rope_layout>(m, "rope_layout", "Which dimensions form a rotation pair.")
      .value("half_split", hc::rope_layout::half_split, "GPT-NeoX / HF Llama: (i, i + d_rot/2)")
      .value("interleaved", hc::rope_layout::interleaved, "GPT-J / Meta Llama: (2i, 2i + 1)");
  nb::enum_<hc::rope_scaling_kind>(m, "rope_scaling_kind")
      .value("none", hc::rope_scaling_kind::none)
      .value("linear", hc::rope_scaling_kind::linear)
      .value("llama3", hc::rope_scaling_kind::llama3);

  nb::class_<hc::rope_scaling>(
      m, "rope_scaling",
      "Frequency scaling (changes theta_i only): none; linear theta_i/factor; llama3 (HF "
      "rope_type 'llama3': wavelengths above L/low_freq_factor use theta_i/factor, below "
      "L/high_freq_factor keep theta_i, blended between).")
      .def(nb::init<>())
      .def_static("linear", &hc::rope_scaling::linear, "factor"_a)
      .def_static("llama3", &hc::rope_scaling::llama3, "factor"_a = 8.0, "low"_a = 1.0,
                  "high"_a = 4.0, "original_max_position"_a = 8192.0)
      .def_rw("kind", &hc::rope_scaling::kind)
      .def_rw("factor", &hc::rope_scaling::factor)
      .def_rw("low_freq_factor", &hc::rope_scaling::low_freq_factor)
      .def_rw("high_freq_factor", &hc::rope_scaling::high_freq_factor)
      .def_rw("original_max_position", &hc::rope_scaling::original_max_position);

  nb::class_<hc::rope_params>(
      m, "rope_params",
      "RoPE of one attention layer: head_dim d, rotary_dim d_rot (even, <= d; partial rotary "
      "when smaller), base, pair layout, scaling. theta_i = base^(-2i/d_rot), then scaled.")
      .def(
          "__init__",
          [](hc::rope_params* self, std::size_t head_dim, std::optional<std::size_t> rotary_dim,
             double base, hc::rope_layout layout, std::optional<hc::rope_scaling> scaling) {
            hc::rope_params p;
            p.head_dim = head_dim;
            p.rotary_dim = rotary_dim.value_or(head_dim);
            p.base = base;
            p.layout = layout;
            if (scaling) p.scaling = *scaling;
            p.validate();
            new (self) hc::rope_params(p);
          },
          "head_dim"_a = 128, "rotary_dim"_a = nb::none(), "base"_a = 10000.0,
          "layout"_a = hc::rope_layout::half_split, "scaling"_a = nb::none(),
          "rotary_dim=None means head_dim. Raises InvalidArgument naming a bad field.")
      .def_rw("head_dim", &hc::rope_params::head_dim)
      .def_rw("rotary_dim", &hc::rope_params::rotary_dim)
      .def_rw("base", &hc::rope_params::base)
      .def_rw("layout", &hc::rope_params::layout)
      .def_rw("scaling", &hc::rope_params::scaling)
      .def("validate", &hc::rope_params::validate)
      .def(
          "frequencies", [](const hc::rope_params& p) { return to_numpy(p.frequencies()); },
          "The d_rot/2 scaled frequencies theta_i (float64).")
      .def("__repr__", [](const hc::rope_params& p) {
        return "rope_params(head_dim=" + std::to_string(p.head_dim) +
               ", rotary_dim=" + std::to_string(p.rotary_dim) + ", base=" + std::to_string(p.base) +
               ", layout=" +
               (p.layout == hc::rope_layout::half_split ? "half_split" : "interleaved") + ")";
      });

  m.def("realign_keys", &rope_detail::realign_keys, "params"_a, "src"_a, "delta"_a,
        "out"_a = nb::none(), "bfloat16"_a = false,
        "Moves cached keys src [tokens, heads, head_dim] by delta positions: out = R(delta) src.\n"
        "out=None allocates a fresh array of src's dtype; out=src rotates in place; any other\n"
        "out must not overlap src. float64/float32/float16 keep their dtype; bfloat16 keys are\n"
        "passed as their uint16 bits with bfloat16=True. Dimensions past rotary_dim are copied.\n"
        "Returns out.");
  m.def("realign_blocks", &rope_detail::realign_blocks, "params"_a, "k_cache"_a, "v_cache"_a,
        "old_blocks"_a, "new_blocks"_a, "num_tokens"_a, "delta"_a, "k_out"_a = nb::none(),
        "v_out"_a = nb::none(), "bfloat16"_a = false,
        "SparseX's fused copy-align over paged pools [num_blocks, block_size, heads, head_dim]:\n"
        "for logical block b, block old_blocks[b] of k_cache/v_cache is written to block\n"
        "new_blocks[b] of k_out/v_out (default: the input pools themselves) with keys rotated\n"
        "by delta and values copied bit for bit; only the first num_tokens token slots.\n"
        "Keys and values share one dtype (as realign_keys).");
}

}  // namespace hybridcache_python
