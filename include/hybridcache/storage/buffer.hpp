#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `buffer<T, Storage>`: an owning, fixed-size array of trivially copyable `T` allocated through a
/// storage policy. Host buffers value-initialise their elements; device buffers leave them
/// uninitialised (the CPU cannot touch them).

#include <cstddef>
#include <cstring>
#include <span>
#include <type_traits>
#include <utility>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/host_heap.hpp"
#include "hybridcache/storage/view.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// An owning array of `size()` elements in `Storage::memory_space`, aligned to 64 bytes.
/// Move-only; moving leaves the source empty.
template <class T, storage_policy Storage = host_heap>
  requires std::is_trivially_copyable_v<T>
class buffer {
 public:
  using value_type = T;
  using element_type = T;
  using memory_space = typename Storage::memory_space;
  static constexpr std::size_t alignment = alignof(T) > 64 ? alignof(T) : 64;

  buffer() = default;
  /// Allocates `n` elements (zero-filled for host storage).
  /// @throws invalid_argument if n·sizeof(T) exceeds `max_allocation_bytes` (checked before the
  ///         byte count is formed, so it cannot wrap).
  explicit buffer(std::size_t n, Storage storage = Storage{})
      : storage_(std::move(storage)), size_(checked_count<T>(n, "n")) {
    data_ = static_cast<T*>(storage_.allocate(n * sizeof(T), alignment));
    if constexpr (std::is_same_v<memory_space, host_space>) {
      if (n != 0) std::memset(static_cast<void*>(data_), 0, n * sizeof(T));
    }
  }
  buffer(const buffer&) = delete;
  buffer& operator=(const buffer&) = delete;
  buffer(buffer&& o) noexcept
      : storage_(std::move(o.storage_)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  buffer& operator=(buffer&& o) noexcept {
    if (this != &o) {
      release();
      storage_ = std::move(o.storage_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  ~buffer() { release(); }

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t size() const noexcept { return size_; }
  [[nodiscard]] bool empty() const noexcept { return size_ == 0; }

  /// A rank-1 view of the whole buffer.
  [[nodiscard]] vector_view<T, memory_space> view() noexcept { return {data_, {size_}}; }
  [[nodiscard]] vector_view<const T, memory_space> view() const noexcept { return {data_, {size_}}; }

  /// Host buffers only: the elements as a span.
  std::span<T> span() noexcept
    requires std::is_same_v<memory_space, host_space>
  {
    return {data_, size_};
  }
  std::span<const T> span() const noexcept
    requires std::is_same_v<memory_space, host_space>
  {
    return {data_, size_};
  }
  T& operator[](std::size_t i) noexcept
    requires std::is_same_v<memory_space, host_space>
  {
    HYBRIDCACHE_ASSERT(i < size_, "buffer index out of range");
    return data_[i];
  }
  const T& operator[](std::size_t i) const noexcept
    requires std::is_same_v<memory_space, host_space>
  {
    HYBRIDCACHE_ASSERT(i < size_, "buffer index out of range");
    return data_[i];
  }

 private:
  void release() noexcept {
    if (data_ != nullptr) storage_.deallocate(data_, size_ * sizeof(T), alignment);
    data_ = nullptr;
    size_ = 0;
  }
  [[no_unique_address]] Storage storage_{};
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
