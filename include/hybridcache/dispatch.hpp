#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Cold-segment dispatch (HYPIC §4.4): LPT over identical or related workers, the prefill cost
/// model, hit affinity, pipelined send order with the combine node's wait, and an exact
/// branch-and-bound solver for small instances. See docs/dispatch.md.

#include "hybridcache/dispatch/affinity.hpp"
#include "hybridcache/dispatch/cost_model.hpp"
#include "hybridcache/dispatch/exact.hpp"
#include "hybridcache/dispatch/lpt.hpp"
#include "hybridcache/dispatch/pipeline.hpp"
