// SPDX-License-Identifier: Apache-2.0
// Device storage policy, device views, and which overload a view selects. The static_asserts
// here are the part that runs without a GPU: they are checked every time nvcc compiles this file.
#include <doctest/doctest.h>

#include <cstdint>
#include <hybridcache/cuda.cuh>
#include <hybridcache/rope.hpp>
#include <hybridcache/storage.hpp>
#include <numeric>
#include <type_traits>
#include <vector>

#include "common.cuh"

namespace hc = hybridcache;

namespace {

// --- storage concepts --------------------------------------------------------------------------
static_assert(hc::device_storage<hc::cuda::device_heap>);
static_assert(!hc::host_storage<hc::cuda::device_heap>);
static_assert(std::is_same_v<hc::cuda::device_buffer<float>::memory_space, hc::device_space>);
static_assert(hc::device_view<decltype(std::declval<hc::cuda::device_buffer<float>&>().view())>);
static_assert(hc::device_view<hc::cuda::strided_view<const hc::half, 4>>);
static_assert(!hc::host_view<hc::cuda::vector_view<int>>);

// --- overload selection: device views pick the CUDA backend, host views the host code ----------
using dkeys = hc::cuda::strided_view<hc::half, 3>;
using hkeys = hc::strided_view<hc::half, 3>;
using dpool = hc::cuda::strided_view<float, 4>;
using hpool = hc::strided_view<float, 4>;
using dtable = hc::cuda::vector_view<const std::int32_t>;
using htable = hc::vector_view<const std::int32_t>;

template <class V>
V some() {
  return V{};
}

static_assert(std::is_same_v<decltype(hc::realign_keys(hc::rope_params{}, some<dkeys>(),
                                                       some<dkeys>(), 1, cudaStream_t{})),
                             cudaError_t>);
static_assert(
    std::is_same_v<decltype(hc::realign_keys(hc::rope_params{}, some<dkeys>(), some<dkeys>(), 1)),
                   cudaError_t>);
static_assert(
    std::is_same_v<decltype(hc::realign_keys(hc::rope_params{}, some<hkeys>(), some<hkeys>(), 1)),
                   void>);
static_assert(
    std::is_same_v<decltype(hc::realign_blocks(hc::rope_params{}, some<dpool>(), some<dpool>(),
                                               some<dpool>(), some<dpool>(), some<dtable>(),
                                               some<dtable>(), 1, 1, cudaStream_t{})),
                   cudaError_t>);
static_assert(std::is_same_v<decltype(hc::realign_blocks(
                                 hc::rope_params{}, some<hpool>(), some<hpool>(), some<hpool>(),
                                 some<hpool>(), some<htable>(), some<htable>(), 1, 1)),
                             void>);

using dq = hc::cuda::strided_view<const float, 3>;
using hq = hc::strided_view<const float, 3>;
using dout = hc::cuda::vector_view<float>;
using hout = hc::vector_view<float>;
using hpos = hc::vector_view<const std::int64_t>;
static_assert(std::is_same_v<decltype(hc::sparse_q_scores(some<dq>(), some<hpos>(), some<dq>(),
                                                          some<dout>(), hc::sparse_q_options{},
                                                          nullptr, 0, cudaStream_t{})),
                             cudaError_t>);
static_assert(
    std::is_same_v<
        decltype(hc::sparse_q_scores(some<hq>(), some<hpos>(), some<hq>(), some<hout>())), void>);

}  // namespace

TEST_CASE("device_heap: allocate, copy round trip, free") {
  HC_REQUIRE_GPU();
  std::vector<std::uint16_t> h(1000);
  std::iota(h.begin(), h.end(), std::uint16_t{7});
  auto d = hc_cuda_test::upload(h);
  CHECK(d.size() == h.size());
  CHECK(hc_cuda_test::download(d) == h);
  hc::cuda::device_buffer<std::uint16_t> moved = std::move(d);
  CHECK(d.empty());
  CHECK(hc_cuda_test::download(moved) == h);
}

TEST_CASE("device_heap: bad alignment and undersized copies are errors") {
  HC_REQUIRE_GPU();
  hc::cuda::device_heap heap;
  CHECK_THROWS_AS((void)heap.allocate(16, 512), hc::invalid_argument);
  CHECK_THROWS_AS((void)heap.allocate(16, 3), hc::invalid_argument);
  hc::cuda::device_buffer<int> small(2);
  std::vector<int> big(3, 1);
  CHECK_THROWS_AS(hc::cuda::copy_to_device(std::span<const int>(big), small), hc::invalid_argument);
  CHECK_THROWS_AS(hc::cuda::copy_to_host(small, std::span<int>(big)), hc::invalid_argument);
}

TEST_CASE("device_count never throws and is stable") {
  // Runs everywhere: without a driver or a device it reports 0 (this is what the skips rely on).
  const int n = hc::cuda::device_count();
  CHECK(n >= 0);
  CHECK(hc::cuda::device_count() == n);
}
