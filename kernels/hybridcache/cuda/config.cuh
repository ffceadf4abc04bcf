#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Common ground of the CUDA backend (`kernels/hybridcache/cuda/`, target `hybridcache::cuda`).
///
/// Every `.cuh` here is a CUDA header: it must be compiled by nvcc (or clang in CUDA mode); a
/// host-only compiler gets the `#error` below instead of a half-working header. The backend's
/// conventions (STYLE.md §4; FlashInfer's plan/run, CUB's two-phase temporary storage):
///  - device overloads take views whose `memory_space` is `device_space`; subsumption picks them
///    over the host components' unconstrained device fallbacks (which are `static_assert`s);
///  - entry points take `cudaStream_t` last and return `cudaError_t` (launch errors, and
///    `cudaErrorInvalidValue` when a launch cannot be configured); bad *arguments* that the host
///    can see (shapes, parameters) throw `hybridcache::invalid_argument` exactly like the host
///    overloads, before anything is enqueued;
///  - scratch memory is passed in by the caller, sized by an explicit `*_workspace_bytes()` query
///    or CUB's two-phase call (null workspace → write the size, return): no hidden `cudaMalloc`;
///  - math shared with the host is in `HYBRIDCACHE_HOST_DEVICE` functions of the host headers,
///    so the host tests exercise the code the kernels run.

#if !defined(__CUDACC__)
#error \
    "hybridcache/cuda/*.cuh are CUDA headers: compile this file with nvcc (CMake: a .cu source, or LANGUAGE CUDA) and link hybridcache::cuda"
#endif

#include <cuda_runtime.h>

#include <cstddef>
#include <string>

#include "hybridcache/config.hpp"
#include "hybridcache/cuda/detail/launch.cuh"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda {

/// A CUDA runtime failure in one of the backend's owning helpers (allocation, copies). Entry
/// points never throw this; they return the `cudaError_t`.
class cuda_error : public hybridcache::error {
 public:
  cuda_error(cudaError_t code, const std::string& what)
      : hybridcache::error("hybridcache::cuda: " + what + ": " + cudaGetErrorName(code) + " (" +
                           cudaGetErrorString(code) + ")"),
        code_(code) {}
  [[nodiscard]] cudaError_t code() const noexcept { return code_; }

 private:
  cudaError_t code_;
};

/// Throws `cuda_error` when `code` is not `cudaSuccess`.
inline void throw_on_error(cudaError_t code, const std::string& what) {
  if (code != cudaSuccess) throw cuda_error(code, what);
}

/// Number of visible CUDA devices; 0 when the driver or a device is missing. Never throws. (Without
/// a driver the runtime's initialisation error is sticky: later CUDA calls keep failing, so
/// callers should test this first — the device tests do.)
inline int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) return 0;
  return n;
}

namespace detail {

/// The launch error of the kernel just enqueued (configuration errors surface here).
inline cudaError_t last_launch_error() noexcept { return cudaGetLastError(); }

}  // namespace detail
}  // namespace cuda
HYBRIDCACHE_NAMESPACE_END

/// Returns from the enclosing function with the error when `expr` is not `cudaSuccess`.
#define HYBRIDCACHE_DETAIL_CUDA_TRY(expr)                                             \
  do {                                                                                \
    const cudaError_t hybridcache_detail_status_ = (expr);                            \
    if (hybridcache_detail_status_ != cudaSuccess) return hybridcache_detail_status_; \
  } while (0)
