#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The cache pools (docs/store.md): the byte-budgeted LRU pool with pins, release callbacks
/// and a reserved budget; HYPIC's public/private store; SparseX's frozen-block pool and virtual
/// blocks; the sparse prefix caching paper's last-K entry cache.

#include "hybridcache/store/frozen_pool.hpp"
#include "hybridcache/store/last_k_cache.hpp"
#include "hybridcache/store/lru_pool.hpp"
#include "hybridcache/store/pic_store.hpp"
#include "hybridcache/store/virtual_blocks.hpp"
