#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The parallel-for of the batched (multi-head) paths. Who runs the work is the caller's choice:
///  - a caller-supplied executor (an engine's own thread pool) runs every index;
///  - otherwise `threads` says how many std::threads (the caller's included) share the indices by
///    dynamic scheduling through one atomic counter: 1 — the default of `batch_options` — runs
///    serially on the calling thread and starts none; 0 means hardware concurrency.
/// Either way the first exception is rethrown in the caller once every index has been handed out.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace detail {

/// Number of worker threads for `requested` (0: hardware concurrency), never more than `work`.
inline std::size_t thread_count(std::size_t requested, std::size_t work) noexcept {
  std::size_t t =
      requested != 0 ? requested : std::max<std::size_t>(1, std::thread::hardware_concurrency());
  return std::max<std::size_t>(1, std::min(t, work));
}

/// Calls f(i) for every i < n on up to `threads` threads (the caller's thread included).
template <class F>
void parallel_for(std::size_t n, std::size_t threads, F&& f) {
  const std::size_t t = thread_count(threads, n);
  if (t <= 1) {
    for (std::size_t i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1, std::memory_order_relaxed);
      if (i >= n) return;
      try {
        f(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next.store(n, std::memory_order_relaxed);  // stop handing out work
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  for (std::size_t w = 1; w < t; ++w) pool.emplace_back(worker);
  worker();
  for (auto& th : pool) th.join();
  if (failure) std::rethrow_exception(failure);
}

/// Calls f(i) for every i < n through `executor(n, task)` when the executor is set (it must call
/// task(i) once for every i < n and return when all calls have returned, from any threads), else
/// as `parallel_for(n, threads, f)`. An exception thrown by f on an executor's thread is caught
/// there and the first one is rethrown here, so executors need not forward exceptions.
template <class Executor, class F>
void parallel_for(std::size_t n, std::size_t threads, const Executor& executor, F&& f) {
  if (!executor) {
    parallel_for(n, threads, f);
    return;
  }
  std::exception_ptr failure;
  std::mutex failure_mutex;
  const std::function<void(std::size_t)> task = [&](std::size_t i) {
    try {
      f(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
    }
  };
  executor(n, task);
  if (failure) std::rethrow_exception(failure);
}

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
