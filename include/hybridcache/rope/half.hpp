#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Forwarding header: `half` and `bfloat16` (and their conversions) are library-wide vocabulary
/// and live in `<hybridcache/numeric.hpp>`. Kept so existing includes compile; new code includes
/// numeric.hpp.

#include "hybridcache/numeric.hpp"  // IWYU pragma: export
