#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Storage-policy and view concepts. Algorithms are overloaded on these:
///  - the host implementation is constrained by `host_view` (or `host_storage`);
///  - the CUDA header of the algorithm (kernels/hybridcache/cuda/...) adds an overload constrained
///    by `device_view`, which overload resolution prefers for device arguments (its constraints
///    subsume the fallback's, or it is more specialised);
///  - the host header also declares an unconstrained-space fallback for device arguments whose
///    body is `HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(View, "<the .cuh>")`: a `static_assert`
///    naming the header to include. A device view never silently runs through host code.

#include <concepts>
#include <cstddef>

#include "hybridcache/config.hpp"
#include "hybridcache/storage/memory_space.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A storage policy allocates and frees raw bytes in one memory space:
/// `S::memory_space` names the space, `s.allocate(bytes, alignment)` returns `void*`,
/// `s.deallocate(p, bytes, alignment)` releases it.
template <class S>
concept storage_policy =
    memory_space<typename S::memory_space> &&
    requires(S& s, void* p, std::size_t bytes, std::size_t alignment) {
      { s.allocate(bytes, alignment) } -> std::same_as<void*>;
      { s.deallocate(p, bytes, alignment) } -> std::same_as<void>;
    };

/// A storage policy whose memory the CPU can dereference.
template <class S>
concept host_storage = storage_policy<S> && std::same_as<typename S::memory_space, host_space>;

/// A storage policy whose memory lives on a CUDA device.
template <class S>
concept device_storage = storage_policy<S> && std::same_as<typename S::memory_space, device_space>;

/// A non-owning view: exposes `V::memory_space`, `V::element_type`, `data()` and `size()`.
template <class V>
concept view = memory_space<typename V::memory_space> && requires(const V& v) {
  typename V::element_type;
  { v.data() } -> std::same_as<typename V::element_type*>;
  { v.size() } -> std::convertible_to<std::size_t>;
};

/// A view over host memory.
template <class V>
concept host_view = view<V> && std::same_as<typename V::memory_space, host_space>;

/// A view over device memory.
template <class V>
concept device_view = view<V> && std::same_as<typename V::memory_space, device_space>;

namespace detail {
/// `false`, but only once `T...` is known: lets a `static_assert` fire on instantiation only.
template <class...>
inline constexpr bool dependent_false = false;

/// The generic form of the missing-backend error, for code that cannot name its header; the
/// library's own fallbacks use `HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND`, whose message names
/// the exact `.cuh` to include.
template <class View>
constexpr void require_device_backend() {
  static_assert(dependent_false<View>,
                "hybridcache: this argument is a device_space view, but no CUDA backend for this "
                "algorithm is visible. Include the matching <hybridcache/cuda/...cuh> header "
                "(kernels/hybridcache/cuda/, target hybridcache::cuda) and compile this file with "
                "nvcc. hybridcache never runs device memory through host code.");
}
}  // namespace detail

HYBRIDCACHE_NAMESPACE_END

/// The body of a host algorithm's unconstrained device overload: a `static_assert`, dependent on
/// `View` so it fires only when that overload is chosen, whose message names `Header` (a string
/// literal such as "hybridcache/cuda/state/compose.cuh") and says to compile with nvcc.
/// (stdexec's `_WHAT_/_WHY_` diagnostics: the message tells the user what to do.)
#define HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(View, Header)                                   \
  static_assert(::hybridcache::detail::dependent_false<View>,                                     \
                "hybridcache: a device_space view reached this algorithm, but no CUDA backend "   \
                "for this algorithm is visible. Include <" Header "> (kernels/hybridcache/cuda/, " \
                "target hybridcache::cuda) and compile this file with nvcc. hybridcache never "   \
                "runs device memory through host code.")
