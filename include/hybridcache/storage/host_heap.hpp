#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `host_heap`: the default host storage policy (aligned global `operator new`).

#include <cstddef>
#include <new>

#include "hybridcache/config.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/memory_space.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Host storage from aligned `operator new`. Stateless; every instance compares equal.
struct host_heap {
  using memory_space = host_space;

  /// @returns `bytes` bytes aligned to `alignment` (a power of two); a non-null pointer even for 0.
  /// @throws std::bad_alloc when the system is out of memory.
  [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment) {
    return ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{alignment});
  }
  /// Releases memory from `allocate` with the same `alignment`.
  void deallocate(void* p, std::size_t /*bytes*/, std::size_t alignment) noexcept {
    ::operator delete(p, std::align_val_t{alignment});
  }
  friend constexpr bool operator==(const host_heap&, const host_heap&) noexcept { return true; }
};

static_assert(host_storage<host_heap>);

HYBRIDCACHE_NAMESPACE_END
