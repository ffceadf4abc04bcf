#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Overlap-depth estimation: the empirical and exponentially weighted histograms of §4.2 of the
/// sparse prefix caching paper, and the refresh policy that re-plans checkpoints from them.

#include "hybridcache/overlap/empirical_histogram.hpp"
#include "hybridcache/overlap/ew_histogram.hpp"
#include "hybridcache/overlap/refresh_policy.hpp"
