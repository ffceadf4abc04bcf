#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Argument checks and overload constraints of the batched apply/compose entry points, shared by
/// the host overloads (state/compose_views.hpp) and the CUDA ones
/// (kernels/hybridcache/cuda/state/compose.cuh), so both accept the same views and report the
/// same errors. Plain C++ without Eigen: nvcc sees it too.

#include <concepts>
#include <cstddef>
#include <string>
#include <type_traits>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Checks a `[batches, rows, cols]` view with unit stride on its last axis. Shared with the CUDA
/// backend, so both report the same errors.
/// @throws invalid_argument naming `name.extent(r)` or `name.stride(2)`.
template <class V>
void check_batch_rank3(const V& v, const char* name, std::size_t batches, std::size_t rows,
                       std::size_t cols) {
  const std::size_t want[3] = {batches, rows, cols};
  for (std::size_t r = 0; r < 3; ++r) {
    if (v.extent(r) != want[r])
      hybridcache::detail::throw_invalid(std::string(name) + ".extent(" + std::to_string(r) + ")",
                                         v.extent(r), "must equal " + std::to_string(want[r]));
  }
  if (cols > 1 && v.stride(2) != 1)
    hybridcache::detail::throw_invalid(std::string(name) + ".stride(2)", v.stride(2),
                                       "rows must be contiguous (stride 1)");
}

/// Checks a `[batches, n]` log-decay view (n = 1 or dk, contiguous entries); returns n.
/// @throws invalid_argument naming the bad extent or stride.
template <class V>
std::size_t check_batch_log_decay(const V& v, const char* name, std::size_t batches,
                                  std::size_t dk) {
  if (v.extent(0) != batches)
    hybridcache::detail::throw_invalid(std::string(name) + ".extent(0)", v.extent(0),
                                       "must equal the batch size " + std::to_string(batches));
  if (v.extent(1) != 1 && v.extent(1) != dk)
    hybridcache::detail::throw_invalid(
        std::string(name) + ".extent(1)", v.extent(1),
        "must be 1 (scalar family) or dk = " + std::to_string(dk) + " (diagonal family)");
  if (v.extent(1) > 1 && v.stride(1) != 1)
    hybridcache::detail::throw_invalid(std::string(name) + ".stride(1)", v.stride(1),
                                       "log-decays of an entry must be contiguous");
  return v.extent(1);
}

/// Checks the output log-decays of `compose_elementwise`: `[B, no]`, contiguous entries.
template <class V>
void check_batch_log_out(const V& v, std::size_t batches, std::size_t no) {
  if (v.extent(0) != batches || v.extent(1) != no || (no > 1 && v.stride(1) != 1))
    hybridcache::detail::throw_invalid("out_log.extent(1)", v.extent(1),
                                       "must be [B, max(n_first, n_then)] = [" +
                                           std::to_string(batches) + ", " + std::to_string(no) +
                                           "], contiguous");
}

/// float or double, the same for every view.
template <class... V>
concept same_real_views = (std::same_as<typename V::value_type, float> && ...) ||
                          (std::same_as<typename V::value_type, double> && ...);

/// Argument shapes of `apply_elementwise` (both backends).
template <class LogDecay, class Prev, class Add, class Out>
concept apply_elementwise_views =
    LogDecay::rank == 2 && Prev::rank == 3 && Add::rank == 3 && Out::rank == 3 &&
    std::same_as<typename LogDecay::value_type, double>&& same_real_views<Prev, Add, Out> &&
    !std::is_const_v<typename Out::element_type>;

/// Argument shapes of `compose_elementwise` (both backends).
template <class Log1, class S1, class Log2, class S2, class LogOut, class SOut>
concept compose_elementwise_views =
    Log1::rank == 2 && Log2::rank == 2 && LogOut::rank == 2 && S1::rank == 3 && S2::rank == 3 &&
    SOut::rank == 3 &&
    std::same_as<typename Log1::value_type, double>&&
        std::same_as<typename Log2::value_type, double>&&
            std::same_as<typename LogOut::element_type, double>&& same_real_views<S1, S2, SOut> &&
    !std::is_const_v<typename SOut::element_type>;

/// Argument shapes of `apply_dense` (both backends).
template <class Trans, class Prev, class Add, class Out>
concept apply_dense_views =
    Trans::rank == 3 && Prev::rank == 3 && Add::rank == 3 && Out::rank == 3 &&
    same_real_views<Trans, Prev, Add, Out> && !std::is_const_v<typename Out::element_type>;

/// Argument shapes of `compose_dense` (both backends).
template <class T1, class S1, class T2, class S2, class TOut, class SOut>
concept compose_dense_views =
    T1::rank == 3 && S1::rank == 3 && T2::rank == 3 && S2::rank == 3 && TOut::rank == 3 &&
    SOut::rank == 3 && same_real_views<T1, S1, T2, S2, TOut, SOut> &&
    !std::is_const_v<typename TOut::element_type> && !std::is_const_v<typename SOut::element_type>;

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
