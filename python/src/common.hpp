#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Shared pieces of the Python bindings: NumPy array types, zero-copy spans over them, and
/// moving C++ results into NumPy arrays without a copy.

#include <hybridcache/error.hpp>

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace hybridcache_python {

namespace nb = nanobind;

/// A read-only, C-contiguous, host array argument (NumPy or anything exposing DLPack). Arguments
/// of another dtype or layout (or Python lists) are converted by nanobind with one copy.
template <class T, std::size_t Ndim = 1>
using in_array = nb::ndarray<const T, nb::ndim<Ndim>, nb::c_contig, nb::device::cpu>;

/// A writable, C-contiguous host array argument (no implicit conversion: results go into it).
template <class T, std::size_t Ndim = 1>
using out_array = nb::ndarray<T, nb::ndim<Ndim>, nb::c_contig, nb::device::cpu>;

/// `obj` (the argument `name`) as an `Ndim`-D host array of T: taken as it is when it is one
/// (converting another dtype or layout), else through `numpy.asarray(obj, dtype=dtype)` for
/// sequences (lists, tuples); NumPy reports what it cannot convert, and any other number of
/// dimensions is `InvalidArgument` naming `name`. `holder` keeps a converted array alive while the
/// result points into it.
template <class T, std::size_t Ndim = 1>
in_array<T, Ndim> as_array(nb::handle obj, const char* dtype, nb::object& holder,
                           const char* name) {
  in_array<T, Ndim> a;
  if (nb::try_cast(obj, a, /*convert=*/true)) return a;
  nb::object np = nb::module_::import_("numpy");
  holder = np.attr("asarray")(obj, nb::arg("dtype") = np.attr(dtype));
  const auto ndim = nb::cast<std::size_t>(holder.attr("ndim"));
  if (ndim != Ndim)
    hybridcache::detail::throw_invalid(std::string(name) + ".ndim", ndim,
                                       "must be " + std::to_string(Ndim));
  return nb::cast<in_array<T, Ndim>>(holder);
}

/// A NumPy array returned to Python.
template <class T, std::size_t Ndim = 1>
using numpy_array = nb::ndarray<nb::numpy, T, nb::ndim<Ndim>>;

/// Return policy for properties that build a new array (which owns its memory): the default
/// `reference_internal` of properties does not apply to an array that already has an owner.
inline constexpr auto fresh_array = nb::rv_policy::automatic;  // a tag type in nanobind 3

/// The elements of a contiguous array argument, as a span (no copy).
template <class Array>
auto as_span(const Array& a) {
  using value = std::remove_pointer_t<decltype(a.data())>;
  return std::span<value>(a.data(), a.size());
}

/// Moves `v` to the heap and hands it to NumPy; the capsule frees it with the array.
template <class T>
numpy_array<T> to_numpy(std::vector<T>&& v) {
  auto* owner = new std::vector<T>(std::move(v));
  nb::capsule free_when_done(owner,
                             [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const std::size_t shape[1] = {owner->size()};
  return numpy_array<T>(owner->data(), 1, shape, free_when_done);
}

/// As `to_numpy`, with a 2-D shape (rows, cols) over row-major `v`.
template <class T>
numpy_array<T, 2> to_numpy_2d(std::vector<T>&& v, std::size_t rows, std::size_t cols) {
  auto* owner = new std::vector<T>(std::move(v));
  nb::capsule free_when_done(owner,
                             [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  const std::size_t shape[2] = {rows, cols};
  return numpy_array<T, 2>(owner->data(), 2, shape, free_when_done);
}

/// std::size_t results as int64 NumPy arrays (NumPy's default integer on 64-bit Linux).
inline numpy_array<std::int64_t> to_numpy_index(const std::vector<std::size_t>& v) {
  std::vector<std::int64_t> out(v.begin(), v.end());
  return to_numpy(std::move(out));
}

}  // namespace hybridcache_python
