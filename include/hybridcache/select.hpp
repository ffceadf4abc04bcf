#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// SparseX's sparse-Q token selection: attention scores of the non-reuse queries (Eigen GEMMs),
/// top-k key tokens among reused ones, overflow blocks, the 64-token tail fallback, and the
/// layer-threshold plan with per-layer recompute masks. See docs/select.md.

#include "hybridcache/select/layer_plan.hpp"
#include "hybridcache/select/scores.hpp"
#include "hybridcache/select/selection.hpp"
