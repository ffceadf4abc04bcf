#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// CUDA backend of the key-token step of `<hybridcache/select/selection.hpp>` (SparseX eq. 3,
/// Algorithm 1 line 15): the `top_k` reused tokens with the largest sparse-Q score, best first,
/// ties to the lower index — the same order as the host `select_tokens`' `key` list.
///
/// Built on CUB (CCCL): a kernel writes (key, index) pairs with key = s_j for reused tokens and
/// −∞ for the others, `cub::DeviceRadixSort::SortPairsDescending` orders them (radix sort is
/// stable, so equal scores keep ascending indices), and a gather kernel writes the first k
/// indices. O(T) work and memory bandwidth, no host round trip; the overflow/tail sets are cheap
/// interval arithmetic and stay on the host.
///
/// Workspace: CUB's two-phase protocol. Call with `workspace == nullptr` to get the byte count in
/// `workspace_bytes` (nothing is enqueued), allocate it, call again.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include <cub/device/device_radix_sort.cuh>

#include "hybridcache/cuda/config.cuh"
#include "hybridcache/error.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace cuda {
namespace detail {

template <class Key, class Score, class Mask>
__global__ void top_k_keys_kernel(const Score* scores, std::size_t score_stride, const Mask* mask,
                                  std::size_t mask_stride, Key* keys, std::uint32_t* idx,
                                  std::size_t t_len) {
  for (std::size_t j = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; j < t_len;
       j += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const bool reused = mask[j * mask_stride] != Mask(0);
    keys[j] = reused ? static_cast<Key>(scores[j * score_stride]) : -static_cast<Key>(INFINITY);
    idx[j] = static_cast<std::uint32_t>(j);
  }
}

template <class Key, class Out>
__global__ void top_k_gather_kernel(const Key* keys, const std::uint32_t* idx, Out* out,
                                    std::size_t out_stride, std::size_t k, std::size_t t_len) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < k;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const bool valid = i < t_len && keys[i] != -static_cast<Key>(INFINITY);
    out[i * out_stride] = static_cast<Out>(valid ? idx[i] : t_len);
  }
}

/// Layout of the workspace: four arrays of T entries, then CUB's temporary storage.
template <class Key>
struct top_k_layout {
  std::size_t keys_in = 0, keys_out = 0, idx_in = 0, idx_out = 0, cub = 0, cub_bytes = 0, total = 0;
};

template <class Key>
cudaError_t make_top_k_layout(std::size_t t_len, top_k_layout<Key>& l) {
  std::size_t cub_bytes = 0;
  HYBRIDCACHE_DETAIL_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
      nullptr, cub_bytes, static_cast<const Key*>(nullptr), static_cast<Key*>(nullptr),
      static_cast<const std::uint32_t*>(nullptr), static_cast<std::uint32_t*>(nullptr),
      static_cast<std::int64_t>(t_len)));
  const std::size_t kb = align_up(t_len * sizeof(Key)),
                    ib = align_up(t_len * sizeof(std::uint32_t));
  l.keys_in = 0;
  l.keys_out = kb;
  l.idx_in = 2 * kb;
  l.idx_out = 2 * kb + ib;
  l.cub = 2 * kb + 2 * ib;
  l.cub_bytes = cub_bytes;
  l.total = l.cub + align_up(cub_bytes);
  return cudaSuccess;
}

}  // namespace detail

/// Key tokens S_key on the device: `out[i]` = index of the i-th best reused token (largest score,
/// ties to the lower index) for i < min(k, #reused); later slots hold `T` (no such token).
///
/// @param scores    device view `[T]` of non-negative finite scores (float or double), e.g. from
///                  the device `sparse_q_scores`.
/// @param reused    device view `[T]` of integers, non-zero where token j is reused (cached).
/// @param out       device view `[k]` of integers: k = out.extent(0), the key-token budget.
/// @param workspace null to query: `workspace_bytes` receives the size and nothing is enqueued.
/// @returns the first CUDA error (from CUB's size query or the enqueued work).
/// @throws invalid_argument when extents differ, T ≥ 2³², or the workspace is too small.
template <device_view Scores, device_view Mask, device_view Out>
requires(Scores::rank == 1 && Mask::rank == 1 && Out::rank == 1 &&
         std::is_floating_point_v<typename Scores::value_type> &&
         std::is_integral_v<typename Mask::value_type> &&
         std::is_integral_v<typename Out::value_type> &&
         !std::is_const_v<typename Out::element_type>) cudaError_t
    select_key_tokens(Scores scores, Mask reused, Out out, void* workspace,
                      std::size_t& workspace_bytes, cudaStream_t stream) {
  using key_t = std::remove_cv_t<typename Scores::value_type>;
  using mask_t = std::remove_cv_t<typename Mask::value_type>;
  using out_t = typename Out::value_type;
  const std::size_t t_len = scores.extent(0), k = out.extent(0);
  if (reused.extent(0) != t_len)
    hybridcache::detail::throw_invalid("reused.extent(0)", reused.extent(0),
                                       "must equal scores.extent(0) = " + std::to_string(t_len));
  if (t_len >= (std::size_t{1} << 32))
    hybridcache::detail::throw_invalid("scores.extent(0)", t_len, "must be < 2^32");
  detail::top_k_layout<key_t> l;
  HYBRIDCACHE_DETAIL_CUDA_TRY(detail::make_top_k_layout<key_t>(t_len, l));
  if (workspace == nullptr) {
    workspace_bytes = l.total;
    return cudaSuccess;
  }
  if (workspace_bytes < l.total)
    hybridcache::detail::throw_invalid("workspace_bytes", workspace_bytes,
                                       "select_key_tokens needs " + std::to_string(l.total) +
                                           " bytes (query with workspace = nullptr)");
  if (k == 0) return cudaSuccess;
  auto* base = static_cast<unsigned char*>(workspace);
  auto* keys_in = reinterpret_cast<key_t*>(base + l.keys_in);
  auto* keys_out = reinterpret_cast<key_t*>(base + l.keys_out);
  auto* idx_in = reinterpret_cast<std::uint32_t*>(base + l.idx_in);
  auto* idx_out = reinterpret_cast<std::uint32_t*>(base + l.idx_out);
  const auto blocks = [](std::size_t n) {
    return static_cast<unsigned>(
        n == 0 ? 1 : (detail::ceil_div(n, 256) < 4096 ? detail::ceil_div(n, 256) : 4096));
  };
  if (t_len != 0) {
    detail::top_k_keys_kernel<key_t, typename Scores::value_type, mask_t>
        <<<blocks(t_len), 256, 0, stream>>>(scores.data(), scores.stride(0), reused.data(),
                                            reused.stride(0), keys_in, idx_in, t_len);
    HYBRIDCACHE_DETAIL_CUDA_TRY(detail::last_launch_error());
    std::size_t cub_bytes = l.cub_bytes;
    HYBRIDCACHE_DETAIL_CUDA_TRY(cub::DeviceRadixSort::SortPairsDescending(
        base + l.cub, cub_bytes, keys_in, keys_out, idx_in, idx_out,
        static_cast<std::int64_t>(t_len), 0, static_cast<int>(sizeof(key_t) * 8), stream));
  }
  detail::top_k_gather_kernel<key_t, out_t>
      <<<blocks(k), 256, 0, stream>>>(keys_out, idx_out, out.data(), out.stride(0), k, t_len);
  return detail::last_launch_error();
}

}  // namespace cuda
HYBRIDCACHE_NAMESPACE_END
