#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Forwarding header: `hybridcache::token_id` is library-wide vocabulary and lives in
/// `<hybridcache/types.hpp>`. Kept so existing includes compile; new code includes types.hpp.

#include "hybridcache/types.hpp"  // IWYU pragma: export
