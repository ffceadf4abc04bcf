#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Recurrent states in a prefix tree (docs/tree.md): `state_policy`, the online policy
/// that decides where to snapshot, what to evict, where to resume and when to re-plan, on top
/// of the exact tree planner of <hybridcache/placement/tree.hpp>, and `leader_safeguard`
/// (tree/safeguard.hpp), the rule by which the library's row follows the best of the candidate
/// policies it runs in shadow.

#include "hybridcache/placement/tree.hpp"
#include "hybridcache/tree/policy.hpp"
#include "hybridcache/tree/safeguard.hpp"
