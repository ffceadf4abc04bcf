#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Umbrella header: every host library component. Never pulls in CUDA. Components that need an
/// optional third-party library (OpenSSL for the SHA-256 key policy) are included on their own,
/// and so is the trace simulator, <hybridcache/sim.hpp>: it is a client of the library (the
/// `hybridcache simulate` engine), not part of it, and would cost every includer its compile time.

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/dispatch.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/numeric.hpp"
#include "hybridcache/overlap.hpp"
#include "hybridcache/placement.hpp"
#include "hybridcache/rope.hpp"
#include "hybridcache/segment.hpp"
#include "hybridcache/select.hpp"
#include "hybridcache/state.hpp"
#include "hybridcache/storage.hpp"
#include "hybridcache/store.hpp"
#include "hybridcache/tree.hpp"
#include "hybridcache/version.hpp"
