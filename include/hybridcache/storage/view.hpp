#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Non-owning strided views tagged with a memory space (pointer + extents + strides, like a
/// minimal `mdspan` with a layout_stride mapping). Views are cheap to copy and are what kernels
/// and algorithms take by value.

#include <array>
#include <cstddef>
#include <span>
#include <type_traits>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/memory_space.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// A rank-`Rank` view of `T` in `Space`. Element (i0, …, i{R-1}) lives at
/// `data()[Σ i_r · stride(r)]`. Strides are in elements. Indexing does not check bounds unless
/// `HYBRIDCACHE_ASSERTIONS` is on; `at()` always checks (host views only).
template <class T, std::size_t Rank, class Space = host_space>
  requires memory_space<Space> && (Rank >= 1)
class strided_view {
 public:
  using element_type = T;
  using value_type = std::remove_cv_t<T>;
  using memory_space = Space;
  using index_type = std::size_t;
  static constexpr std::size_t rank = Rank;

  constexpr strided_view() noexcept = default;

  /// A view with explicit extents and strides.
  HYBRIDCACHE_HOST_DEVICE constexpr strided_view(T* data, std::array<std::size_t, Rank> extents,
                                                 std::array<std::size_t, Rank> strides) noexcept
      : data_(data), extents_(extents), strides_(strides) {}

  /// A contiguous row-major view (the last index varies fastest).
  HYBRIDCACHE_HOST_DEVICE constexpr strided_view(T* data,
                                                 std::array<std::size_t, Rank> extents) noexcept
      : data_(data), extents_(extents) {
    std::size_t s = 1;
    for (std::size_t r = Rank; r-- > 0;) {
      strides_[r] = s;
      s *= extents_[r];
    }
  }

  /// Views of `T` convert to views of `const T`.
  template <class U>
    requires std::is_same_v<const U, T> && (!std::is_same_v<U, T>)
  HYBRIDCACHE_HOST_DEVICE constexpr strided_view(const strided_view<U, Rank, Space>& other) noexcept
      : data_(other.data()), extents_(other.extents()), strides_(other.strides()) {}

  HYBRIDCACHE_HOST_DEVICE constexpr T* data() const noexcept { return data_; }
  HYBRIDCACHE_HOST_DEVICE constexpr std::size_t extent(std::size_t r) const noexcept {
    return extents_[r];
  }
  HYBRIDCACHE_HOST_DEVICE constexpr std::size_t stride(std::size_t r) const noexcept {
    return strides_[r];
  }
  HYBRIDCACHE_HOST_DEVICE constexpr const std::array<std::size_t, Rank>& extents() const noexcept {
    return extents_;
  }
  HYBRIDCACHE_HOST_DEVICE constexpr const std::array<std::size_t, Rank>& strides() const noexcept {
    return strides_;
  }
  /// Number of elements (product of extents).
  HYBRIDCACHE_HOST_DEVICE constexpr std::size_t size() const noexcept {
    std::size_t n = 1;
    for (std::size_t r = 0; r < Rank; ++r) n *= extents_[r];
    return n;
  }
  HYBRIDCACHE_HOST_DEVICE constexpr bool empty() const noexcept { return size() == 0; }

  /// True when the elements are dense in row-major order.
  HYBRIDCACHE_HOST_DEVICE constexpr bool is_contiguous() const noexcept {
    std::size_t s = 1;
    for (std::size_t r = Rank; r-- > 0;) {
      if (extents_[r] > 1 && strides_[r] != s) return false;
      s *= extents_[r];
    }
    return true;
  }

  /// Unchecked element access (checked under HYBRIDCACHE_ASSERTIONS).
  template <class... I>
    requires(sizeof...(I) == Rank && (std::is_convertible_v<I, std::size_t> && ...))
  HYBRIDCACHE_HOST_DEVICE constexpr T& operator()(I... idx) const noexcept {
    const std::array<std::size_t, Rank> i{static_cast<std::size_t>(idx)...};
    std::size_t off = 0;
    for (std::size_t r = 0; r < Rank; ++r) {
      HYBRIDCACHE_ASSERT(i[r] < extents_[r], "strided_view index out of range");
      off += i[r] * strides_[r];
    }
    return data_[off];
  }

  /// Bounds-checked element access for host views.
  /// @throws invalid_argument naming the offending index.
  template <class... I>
    requires(sizeof...(I) == Rank && std::is_same_v<Space, host_space>)
  T& at(I... idx) const {
    const std::array<std::size_t, Rank> i{static_cast<std::size_t>(idx)...};
    std::size_t off = 0;
    for (std::size_t r = 0; r < Rank; ++r) {
      if (i[r] >= extents_[r]) {
        detail::throw_invalid(detail::indexed("index", r), i[r],
                              "out of range for extent " + std::to_string(extents_[r]));
      }
      off += i[r] * strides_[r];
    }
    return data_[off];
  }

  /// The contiguous elements as a span (host views only).
  /// @throws invalid_argument if the view is not contiguous.
  std::span<T> span() const
    requires std::is_same_v<Space, host_space>
  {
    if (!is_contiguous()) detail::throw_invalid("view", "strided", "span() needs a contiguous view");
    return {data_, size()};
  }

 private:
  T* data_ = nullptr;
  std::array<std::size_t, Rank> extents_{};
  std::array<std::size_t, Rank> strides_{};
};

/// A rank-1 view.
template <class T, class Space = host_space>
using vector_view = strided_view<T, 1, Space>;
/// A rank-2 view (rows × cols).
template <class T, class Space = host_space>
using matrix_view = strided_view<T, 2, Space>;

/// A contiguous host vector view of a span.
template <class T>
constexpr vector_view<T> make_view(std::span<T> s) noexcept {
  return vector_view<T>(s.data(), {s.size()});
}

/// A contiguous row-major host matrix view over `rows * cols` elements.
/// @throws invalid_argument when `s.size() != rows * cols`.
template <class T>
matrix_view<T> make_view(std::span<T> s, std::size_t rows, std::size_t cols) {
  const std::size_t n = checked_mul(rows, cols, "rows", "cols");  // a wrapped product could match
  if (s.size() != n) {
    detail::throw_invalid("span.size()", s.size(), "expected rows*cols = " + std::to_string(n));
  }
  return matrix_view<T>(s.data(), {rows, cols});
}

static_assert(host_view<vector_view<float>>);
static_assert(device_view<vector_view<float, device_space>>);

HYBRIDCACHE_NAMESPACE_END
