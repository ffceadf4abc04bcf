#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Overlap-depth estimation: the empirical and exponentially weighted histograms of §4.2 of the
/// sparse prefix caching paper, the conditioned law and the safeguard, the plain-text weights
/// format, and synthetic laws shaped like the paper's data sets. The refresh policy that re-plans
/// checkpoints from them is in placement (<hybridcache/placement/refresh_policy.hpp>).

#include "hybridcache/overlap/conditioned_law.hpp"
#include "hybridcache/overlap/empirical_histogram.hpp"
#include "hybridcache/overlap/ew_histogram.hpp"
#include "hybridcache/overlap/joint_placement.hpp"
#include "hybridcache/overlap/safeguard.hpp"
#include "hybridcache/overlap/synthetic.hpp"
#include "hybridcache/overlap/weights_io.hpp"
