#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Checked size arithmetic for sizes that come from callers.
///
/// Every public function that computes a size, an index bound or an allocation from caller input
/// (`dk * dv`, `length * dk`, `max_budget + 1`, a block count rounded up) does it through these
/// helpers, so an absurd input becomes a `hybridcache::invalid_argument` naming the operands and
/// their values before any loop or allocation uses the wrapped result:
///
/// - `checked_add(a, b, "a", "b")` = a + b, or throws if a + b > max(T);
/// - `checked_mul(a, b, "a", "b")` = a · b, or throws if a · b > max(T);
/// - `checked_size({{"n", n}, {"dk", dk}, ...})` = ∏ extents as `std::size_t`, or throws;
/// - `checked_round_up(n, block, "n", "block")` = ⌈n / block⌉ · block (block ≥ 1), or throws;
/// - `checked_count<T>(n, "n")` = n if n elements of `T` fit in `max_allocation_bytes`, else
///   throws (an allocation that cannot exist is rejected before `std::vector` turns it into
///   `std::length_error` or `std::bad_alloc`).
///
/// `max_allocation_bytes` = 2⁴⁷ bytes (128 TiB): the user address space of x86-64 and AArch64
/// with 48-bit virtual addresses. No single buffer above it can be allocated on any host the
/// library supports, so a request above it is certainly a bad size, not a low-memory condition.
///
/// Example:
/// @code
///   const std::size_t cells = hybridcache::checked_size({{"dk", dk}, {"dv", dv}});
///   std::vector<float> s(hybridcache::checked_count<float>(cells, "dk * dv"));
/// @endcode

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Largest single buffer, in bytes, the library agrees to allocate (file comment): 2⁴⁷.
inline constexpr std::size_t max_allocation_bytes = std::size_t{1} << 47;

namespace detail {

template <class T>
concept checked_integer = std::integral<T> && !std::same_as<T, bool>;

template <checked_integer T>
[[noreturn]] inline void throw_overflow(std::string_view a_name, T a, char op,
                                        std::string_view b_name, T b) {
  std::string arg(a_name);
  arg.append(" ").append(1, op).append(" ").append(b_name);
  std::string value = std::to_string(a);
  value.append(" ").append(1, op).append(" ").append(std::to_string(b));
  std::string why = "overflows the size type (max ";
  why.append(std::to_string(std::numeric_limits<T>::max())).append(")");
  throw invalid_argument(arg, value, why);
}

/// Unsigned 128-bit integer for exact intermediate products of two `std::size_t` values.
__extension__ using uint128 = unsigned __int128;

/// The quotient and remainder of a division.
struct divmod_result {
  std::size_t quotient;
  std::size_t remainder;
};

/// (N + 1) = q·k + ρ with 0 ≤ ρ < k, computed without forming N + 1 (which wraps for
/// N = SIZE_MAX). `k` must be ≥ 1, and ≥ 2 when N = SIZE_MAX (else q = N + 1 itself wraps).
[[nodiscard]] constexpr divmod_result divmod_succ(std::size_t n, std::size_t k) noexcept {
  std::size_t q = n / k;
  std::size_t r = n % k + 1;  // n % k ≤ k − 1, so r ≤ k
  if (r == k) {
    ++q;  // q = (N + 1)/k ≤ SIZE_MAX under the precondition
    r = 0;
  }
  return {q, r};
}

}  // namespace detail

/// a + b, checked.
/// @throws invalid_argument naming `a_name + b_name` and both values if the sum overflows `T`.
template <detail::checked_integer T>
[[nodiscard]] constexpr T checked_add(T a, T b, std::string_view a_name = "a",
                                      std::string_view b_name = "b") {
  T r{};
  if (__builtin_add_overflow(a, b, &r)) detail::throw_overflow(a_name, a, '+', b_name, b);
  return r;
}

/// a · b, checked.
/// @throws invalid_argument naming `a_name * b_name` and both values if the product overflows `T`.
template <detail::checked_integer T>
[[nodiscard]] constexpr T checked_mul(T a, T b, std::string_view a_name = "a",
                                      std::string_view b_name = "b") {
  T r{};
  if (__builtin_mul_overflow(a, b, &r)) detail::throw_overflow(a_name, a, '*', b_name, b);
  return r;
}

/// A named extent for `checked_size`.
struct extent {
  std::string_view name;
  std::size_t value;
};

/// ∏ extents, checked (1 for an empty list). A zero extent makes the product 0 whatever the
/// others are (an empty tensor is valid).
/// @throws invalid_argument naming the running product and the extent that overflowed it.
[[nodiscard]] inline std::size_t checked_size(std::initializer_list<extent> extents) {
  for (const extent& e : extents)
    if (e.value == 0) return 0;
  std::size_t r = 1;
  std::string names;
  for (const extent& e : extents) {
    std::size_t next = 0;
    if (__builtin_mul_overflow(r, e.value, &next))
      detail::throw_overflow(std::string_view(names), r, '*', e.name, e.value);
    r = next;
    if (!names.empty()) names.append(" * ");
    names.append(e.name);
  }
  return r;
}

/// ⌈n / block⌉ · block, checked. `block` must be ≥ 1.
/// @throws invalid_argument if `block == 0` or the rounded value overflows `T`.
template <detail::checked_integer T>
[[nodiscard]] constexpr T checked_round_up(T n, T block, std::string_view n_name = "n",
                                           std::string_view block_name = "block") {
  if (block == 0) detail::throw_invalid(block_name, block, "must be >= 1");
  const T rem = static_cast<T>(n % block);
  if (rem == 0) return n;
  return checked_add(n, static_cast<T>(block - rem), n_name, block_name);
}

/// `n`, if `n` elements of `T` fit in `max_allocation_bytes` (file comment).
/// @throws invalid_argument naming `name` and `n` otherwise.
template <class T>
[[nodiscard]] constexpr std::size_t checked_count(std::size_t n, std::string_view name = "n") {
  constexpr std::size_t elem = sizeof(T) == 0 ? 1 : sizeof(T);
  if (n > max_allocation_bytes / elem) {
    std::string why = "needs more than ";
    why.append(std::to_string(max_allocation_bytes))
        .append(" bytes (")
        .append(std::to_string(elem))
        .append(" bytes per element)");
    detail::throw_invalid(name, n, why);
  }
  return n;
}

HYBRIDCACHE_NAMESPACE_END
