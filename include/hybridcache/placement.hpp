#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Checkpoint placement for sparse prefix caching (arXiv 2605.05219): the exact planner
/// (`place_optimal`, `optimal_frontier`), the deterministic baselines of the paper's Table 1, and
/// the metrics (`expected_recompute`, `savings`, `reduction`, Theorem 1's closed form), and the
/// shadow systems of joint placement on a chain cache (`shadow_leader`, `handover_selector`).

#include "hybridcache/placement/baselines.hpp"
#include "hybridcache/placement/block_planner.hpp"
#include "hybridcache/placement/frontier.hpp"
#include "hybridcache/placement/metrics.hpp"
#include "hybridcache/placement/optimal.hpp"
#include "hybridcache/placement/options.hpp"
#include "hybridcache/placement/refresh_policy.hpp"
#include "hybridcache/placement/shadow.hpp"
#include "hybridcache/placement/strategies.hpp"
#include "hybridcache/placement/tree.hpp"
