#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Storage-policy and view concepts. Algorithms are overloaded on these: the host implementation
/// is constrained by `host_storage` / `host_view`, a CUDA backend adds a `device_*` overload that
/// subsumption prefers, and a device argument with no backend included is a readable
/// `static_assert` (see `detail::require_device_backend`), never a silent host fallback.

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
template <class...>
inline constexpr bool dependent_false = false;

/// Called from the unconstrained device overload of a host-only algorithm. Instantiating it is a
/// compile error that says which CUDA header to include; `Header` is a string literal type
/// carrier (use a lambda returning the header name is not possible in a static_assert message, so
/// the message is generic and the algorithm name is in the enclosing function's signature).
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
