#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `hybridcache::token_id`: the type of one token id everywhere in the library (a vocabulary
/// index; 32 bits cover every tokenizer in use). Keys hash token ids as 4-byte little-endian
/// words, so a key does not depend on the host's byte order.

#include <cstdint>
#include <span>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// One token id (vocabulary index).
using token_id = std::uint32_t;

HYBRIDCACHE_NAMESPACE_END
