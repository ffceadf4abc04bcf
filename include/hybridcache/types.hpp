#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The library's shared vocabulary types, defined once here and included by every component that
/// uses them (STYLE.md §8 "One vocabulary"):
///  - `token_id`: one token id (a vocabulary index);
///  - `token_range`: a half-open range [begin, end) of token positions;
///  - `segment_role`: where a segment sits in a request (leading / reusable / query).
///
/// (`segment/token.hpp`, the 0.1 path of `token_id`, is gone since 0.2; the 0.1 component-qualified
/// spellings of these types are in the opt-in <hybridcache/compat/v0_1.hpp>.)

#include <cstddef>
#include <cstdint>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// One token id (vocabulary index). 32 bits cover every tokenizer in use; keys hash token ids as
/// 4-byte little-endian words, so a key does not depend on the host's byte order.
using token_id = std::uint32_t;

/// Half-open token range [begin, end). `size()` is `end − begin`; a range with `end < begin` is
/// invalid, and the functions that take ranges reject it.
struct token_range {
  std::size_t begin = 0;
  std::size_t end = 0;
  [[nodiscard]] constexpr std::size_t size() const noexcept { return end - begin; }
  [[nodiscard]] constexpr bool empty() const noexcept { return end == begin; }
  friend constexpr bool operator==(const token_range&, const token_range&) = default;
};

/// Where a segment sits in its request (HYPIC §4.3, §5; SparseX §5):
///  - `leading`: the first piece (e.g. the system prompt), anchored at position 0 and cached
///    whole, without seam exclusion;
///  - `reusable`: a position-independent piece between two separators, cached without its seams;
///  - `query`: the trailing piece (the user query), whose prefix varies per request: never cached,
///    recomputed end to end.
/// `middle` and `trailing` are the former `segment_role` spellings of `reusable` and
/// `query` (same values), kept so existing code compiles; new code uses `reusable` / `query`.
enum class segment_role : std::uint8_t {
  leading = 0,
  reusable = 1,
  query = 2,
  middle = reusable,  ///< deprecated spelling of `reusable`
  trailing = query,   ///< deprecated spelling of `query`
};

HYBRIDCACHE_NAMESPACE_END
