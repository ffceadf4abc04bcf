#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `cuda::device_heap`: the device storage policy (`cudaMalloc` / `cudaFree`), the device-side
/// twin of `host_heap`; device view aliases; and explicit host↔device copies.
///
/// `buffer<T, cuda::device_heap>` is an owning device array; its `view()` is a
/// `vector_view<T, device_space>`, which only device overloads accept (a host algorithm given it
/// is a compile error naming the `.cuh` to include, see storage/concepts.hpp). Allocation
/// happens only where the caller constructs such a buffer: kernels never allocate.
///
/// ```cpp
/// hybridcache::buffer<float, hybridcache::cuda::device_heap> d(n);   // cudaMalloc
/// hybridcache::cuda::copy_to_device(std::span<const float>(host), d); // cudaMemcpy
/// auto keys = hybridcache::cuda::make_view(d.data(), {tokens, heads, head_dim});
/// ```

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <type_traits>

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/storage/buffer.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/memory_space.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda {

/// Device storage from `cudaMalloc` on the current device. Stateless; all instances compare
/// equal. `cudaMalloc` returns 256-byte aligned memory, so alignments up to 256 are honoured.
struct device_heap {
  using memory_space = device_space;

  /// @returns `bytes` bytes of device memory (a distinct non-null pointer even for 0 bytes).
  /// @throws invalid_argument when `alignment` exceeds 256 or is not a power of two;
  ///         cuda_error when `cudaMalloc` fails (no device, out of memory).
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > 256) {
      hybridcache::detail::throw_invalid("alignment", alignment,
                                         "device_heap supports powers of two up to 256");
    }
    void* p = nullptr;
    throw_on_error(cudaMalloc(&p, bytes == 0 ? 1 : bytes),
                   "cudaMalloc of " + std::to_string(bytes) + " bytes");
    return p;
  }
  /// Releases memory from `allocate` (errors, e.g. at process teardown, are ignored).
  void deallocate(void* p, std::size_t /*bytes*/, std::size_t /*alignment*/) noexcept {
    if (p != nullptr) (void)cudaFree(p);
  }
  friend constexpr bool operator==(const device_heap&, const device_heap&) noexcept { return true; }
};

static_assert(device_storage<device_heap>);
static_assert(!host_storage<device_heap>);

/// Device views: the host view templates tagged with `device_space`.
template <class T, std::size_t Rank>
using strided_view = hybridcache::strided_view<T, Rank, device_space>;
template <class T>
using vector_view = hybridcache::vector_view<T, device_space>;
template <class T>
using matrix_view = hybridcache::matrix_view<T, device_space>;

/// A contiguous row-major device view of rank `Rank` over `data` (a device pointer).
template <class T, std::size_t Rank>
constexpr strided_view<T, Rank> make_view(T* data, const std::size_t (&extents)[Rank]) noexcept {
  std::array<std::size_t, Rank> e{};
  for (std::size_t r = 0; r < Rank; ++r) e[r] = extents[r];
  return strided_view<T, Rank>(data, e);
}

/// An owning device array (alias of `buffer<T, device_heap>`).
template <class T>
using device_buffer = hybridcache::buffer<T, device_heap>;

/// Copies `src.size()` elements from host to the start of `dst` (synchronous `cudaMemcpy`).
/// @throws invalid_argument when `dst` is smaller than `src`; cuda_error on a CUDA failure.
template <class T>
void copy_to_device(std::span<const T> src, device_buffer<std::remove_const_t<T>>& dst) {
  if (dst.size() < src.size())
    hybridcache::detail::throw_invalid("dst.size()", dst.size(),
                                       "smaller than src.size() = " + std::to_string(src.size()));
  throw_on_error(cudaMemcpy(dst.data(), src.data(), src.size_bytes(), cudaMemcpyHostToDevice),
                 "cudaMemcpy host->device");
}

/// Copies the first `dst.size()` elements of `src` to the host (synchronous `cudaMemcpy`).
/// @throws invalid_argument when `src` is smaller than `dst`; cuda_error on a CUDA failure.
template <class T>
void copy_to_host(const device_buffer<T>& src, std::span<T> dst) {
  if (src.size() < dst.size())
    hybridcache::detail::throw_invalid("src.size()", src.size(),
                                       "smaller than dst.size() = " + std::to_string(dst.size()));
  throw_on_error(cudaMemcpy(dst.data(), src.data(), dst.size_bytes(), cudaMemcpyDeviceToHost),
                 "cudaMemcpy device->host");
}

}  // namespace cuda
HYBRIDCACHE_NAMESPACE_END
