#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The composition-law state algebra for linear-attention layers (HYPIC §3.1, §4.2–4.3):
/// segment summaries (T_C, S_C|0) for the scalar, diagonal and dense transition families,
/// `summarize`, `compose`, `apply` (eq. 6), `fold`, `run_recurrence`, seam/conv bookkeeping and
/// `splice`, RoPE re-rotation of scalar-family states (eq. 7), the naive-addition baseline
/// (eq. 5, Table 2), bf16 storage and batched multi-head paths. See docs/state.md.

#include "hybridcache/state/batch.hpp"
#include "hybridcache/state/bf16.hpp"
#include "hybridcache/state/compose.hpp"
#include "hybridcache/state/delta_product.hpp"
#include "hybridcache/state/dplr.hpp"
#include "hybridcache/state/eigen.hpp"
#include "hybridcache/state/fla.hpp"
#include "hybridcache/state/naive.hpp"
#include "hybridcache/state/outputs.hpp"
#include "hybridcache/state/recurrence.hpp"
#include "hybridcache/state/rope.hpp"
#include "hybridcache/state/seam.hpp"
#include "hybridcache/state/selective.hpp"
#include "hybridcache/state/summarize.hpp"
#include "hybridcache/state/summary.hpp"
#include "hybridcache/state/token_inputs.hpp"
