#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// A minimal std::thread parallel-for for the batched (multi-head) paths: no new dependency,
/// dynamic scheduling through one atomic counter, the first exception rethrown in the caller.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace state::detail {

/// Number of worker threads for `requested` (0: hardware concurrency), never more than `work`.
inline std::size_t thread_count(std::size_t requested, std::size_t work) noexcept {
  std::size_t t = requested != 0 ? requested : std::max<std::size_t>(1, std::thread::hardware_concurrency());
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

}  // namespace state::detail
HYBRIDCACHE_NAMESPACE_END
