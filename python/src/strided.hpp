#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Array arguments of any dtype and layout for the bindings of C++ functions that take strided
/// views (rope/, select/): one generic nanobind cast, the dtype read off the array, and a
/// `strided_view` over the caller's memory (no copy). Shape, dtype and layout errors are
/// `hybridcache::invalid_argument` naming the argument, i.e. `hybridcache.InvalidArgument`
/// (a ValueError) in Python.

#include <hybridcache/error.hpp>
#include <hybridcache/numeric.hpp>
#include <hybridcache/storage/view.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common.hpp"

namespace hybridcache_python {

/// A read-only host array of any dtype, shape and strides.
using any_array = nb::ndarray<nb::ro, nb::device::cpu>;
/// A writable host array of any dtype, shape and strides.
using any_mut_array = nb::ndarray<nb::device::cpu>;

/// Storage dtypes the RoPE and selection kernels take. bf16 has no NumPy dtype: its bits travel
/// as uint16 (`as_bf16 = true`).
enum class storage_dtype { f64, f32, f16, u16, other };

inline storage_dtype dtype_of(const nb::dlpack::dtype& d) {
  using code = nb::dlpack::dtype_code;
  if (d.lanes != 1) return storage_dtype::other;
  if (d.code == static_cast<std::uint8_t>(code::Float)) {
    if (d.bits == 64) return storage_dtype::f64;
    if (d.bits == 32) return storage_dtype::f32;
    if (d.bits == 16) return storage_dtype::f16;
  }
  if (d.code == static_cast<std::uint8_t>(code::UInt) && d.bits == 16) return storage_dtype::u16;
  return storage_dtype::other;
}

inline const char* dtype_name(storage_dtype t) {
  switch (t) {
    case storage_dtype::f64:
      return "float64";
    case storage_dtype::f32:
      return "float32";
    case storage_dtype::f16:
      return "float16";
    case storage_dtype::u16:
      return "uint16";
    case storage_dtype::other:
      break;
  }
  return "another dtype";
}

/// An input array: used in place when the argument already is an array (NumPy, or anything with
/// DLPack on the CPU); anything else (lists, tuples) goes through `numpy.asarray(obj, dtype)`.
struct input_array {
  any_array array;
  nb::object holder;  // keeps a converted array alive
};

inline input_array to_input(nb::handle obj, const char* name, const char* fallback_dtype) {
  input_array out;
  if (nb::try_cast(obj, out.array, /*convert=*/false)) return out;
  nb::object np = nb::module_::import_("numpy");
  try {
    out.holder = np.attr("asarray")(obj, nb::arg("dtype") = np.attr(fallback_dtype));
  } catch (const nb::python_error&) {
    hybridcache::detail::throw_invalid(name, std::string(nb::repr(obj.type()).c_str()),
                                       std::string("must be an array of ") + fallback_dtype);
  }
  out.array = nb::cast<any_array>(out.holder);
  return out;
}

/// A writable output array (never converted: results go into it).
inline any_mut_array to_output(nb::handle obj, const char* name) {
  any_mut_array out;
  if (!nb::try_cast(obj, out, /*convert=*/false))
    hybridcache::detail::throw_invalid(name, std::string(nb::repr(obj.type()).c_str()),
                                       "must be a writable array on the CPU");
  return out;
}

/// Checks the number of dimensions; `layout` describes the axes for the message.
template <class Array>
void check_ndim(const Array& a, const char* name, std::size_t ndim, const char* layout) {
  if (a.ndim() != ndim)
    hybridcache::detail::throw_invalid(std::string(name) + ".ndim", a.ndim(),
                                       "must be " + std::to_string(ndim) + " " + layout);
}

/// A strided view of `T` over `a` (already checked to hold `T`s and have rank `Rank`). Negative
/// strides are refused (views index with unsigned strides).
template <class T, std::size_t Rank, class Array>
hybridcache::strided_view<T, Rank> view_of(const Array& a, const char* name) {
  std::array<std::size_t, Rank> extents{}, strides{};
  for (std::size_t r = 0; r < Rank; ++r) {
    extents[r] = a.shape(r);
    if (a.stride(r) < 0)
      hybridcache::detail::throw_invalid(std::string(name) + ".strides[" + std::to_string(r) + "]",
                                         a.stride(r), "negative strides are not supported");
    strides[r] = static_cast<std::size_t>(a.stride(r));
  }
  return hybridcache::strided_view<T, Rank>(static_cast<T*>(const_cast<void*>(a.data())), extents,
                                            strides);
}

/// The lowest and one-past-the-highest byte an array touches (empty arrays touch nothing).
template <class Array>
std::array<std::uintptr_t, 2> byte_span(const Array& a) {
  const auto base = reinterpret_cast<std::uintptr_t>(a.data());
  std::uintptr_t hi = base + a.itemsize();
  for (std::size_t r = 0; r < a.ndim(); ++r) {
    if (a.shape(r) == 0) return {base, base};
    hi += (a.shape(r) - 1) * static_cast<std::uintptr_t>(a.stride(r)) * a.itemsize();
  }
  return {base, hi};
}

/// An output may be its input exactly (same memory, same strides: in place) or disjoint from it;
/// a partial overlap would make the result depend on the order of writes.
template <class In, class Out>
void check_alias(const In& in, const char* in_name, const Out& out, const char* out_name) {
  const auto a = byte_span(in), b = byte_span(out);
  if (a[0] >= a[1] || b[0] >= b[1] || a[1] <= b[0] || b[1] <= a[0]) return;  // disjoint
  bool same = in.data() == out.data() && in.ndim() == out.ndim();
  for (std::size_t r = 0; same && r < in.ndim(); ++r)
    same = in.shape(r) == out.shape(r) && in.stride(r) == out.stride(r);
  if (!same)
    hybridcache::detail::throw_invalid(
        out_name, "overlapping memory",
        std::string("must be ") + in_name + " itself (in place) or not overlap it");
}

/// `numpy.empty(shape, dtype)`.
template <std::size_t Rank, class Array>
nb::object empty_like_shape(const Array& a, const char* dtype) {
  nb::object np = nb::module_::import_("numpy");
  nb::list shape;
  for (std::size_t r = 0; r < Rank; ++r) shape.append(a.shape(r));
  return np.attr("empty")(nb::tuple(shape), nb::arg("dtype") = np.attr(dtype));
}

}  // namespace hybridcache_python
