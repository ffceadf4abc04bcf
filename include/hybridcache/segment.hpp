#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Segment keys with namespaces and the verified segment index (docs/segments.md):
/// token ids, 128-bit digests, injective namespace keys, hash policies (keyed XXH3-128 by
/// default, a constant policy for tests), segmentation at a separator token, position-
/// independent segment keys and chained prefix block keys, and `segment_index`.
/// The SHA-256/HMAC policy needs OpenSSL and is included on its own:
/// <hybridcache/segment/sha256_hash.hpp> (link `hybridcache::openssl`).

#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/index.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/segment/split.hpp"
#include "hybridcache/segment/verified_key.hpp"
#include "hybridcache/types.hpp"
