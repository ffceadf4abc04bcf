#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Memory spaces, storage-policy concepts, the host storage policy, owning buffers and
/// non-owning views.

#include "hybridcache/storage/buffer.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/host_heap.hpp"
#include "hybridcache/storage/memory_space.hpp"
#include "hybridcache/storage/view.hpp"
