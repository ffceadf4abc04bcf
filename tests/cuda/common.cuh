#pragma once
// SPDX-License-Identifier: Apache-2.0
// Helpers of the device tests: GPU detection with a ctest-visible skip, and device copies.

#include <doctest/doctest.h>

#include <cstdio>
#include <hybridcache/cuda/storage/device_heap.cuh>
#include <span>
#include <vector>

namespace hc_cuda_test {

/// True when a CUDA device is visible; otherwise prints the skip marker ctest looks for.
inline bool have_gpu() {
  static const int n = hybridcache::cuda::device_count();
  if (n == 0) std::printf("HYBRIDCACHE_SKIP: no CUDA device visible, test skipped\n");
  return n > 0;
}

/// Skips the current test case when there is no GPU.
#define HC_REQUIRE_GPU()                   \
  do {                                     \
    if (!hc_cuda_test::have_gpu()) return; \
  } while (0)

template <class T>
hybridcache::cuda::device_buffer<T> upload(const std::vector<T>& h) {
  hybridcache::cuda::device_buffer<T> d(h.size());
  hybridcache::cuda::copy_to_device(std::span<const T>(h), d);
  return d;
}

template <class T>
std::vector<T> download(const hybridcache::cuda::device_buffer<T>& d) {
  std::vector<T> h(d.size());
  hybridcache::cuda::copy_to_host(d, std::span<T>(h));
  return h;
}

inline void sync_ok(cudaError_t launched) {
  REQUIRE(launched == cudaSuccess);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

}  // namespace hc_cuda_test
