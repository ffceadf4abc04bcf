#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Deprecated path, kept so existing includes compile: `refresh_policy` (the estimate → re-plan
/// loop) lives in <hybridcache/placement/refresh_policy.hpp>. It drives the planner, and
/// overlap/ sits below placement/ (DESIGN.md §2; docs/placement.md "Layering"), so the loop is a
/// client of both and belongs to placement/. Include the new path.

#include "hybridcache/placement/refresh_policy.hpp"
