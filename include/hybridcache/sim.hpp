#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Trace replay and strategy comparison — the engine of `hybridcache simulate`.
///
/// - sim/trace.hpp: the trace model (requests over shared token pieces);
/// - sim/tokenize.hpp: whitespace-word and byte tokenizers, block-hash expansion;
/// - sim/builders.hpp: Poisson/Zipf trace builders from documents, prompts, passages, block hashes;
/// - sim/synthetic.hpp: embedded synthetic workloads (no files needed);
/// - sim/model.hpp: model shapes (state bytes) and the prefill cost model (time);
/// - sim/sparse_prefix.hpp: last-K sparse-prefix-caching simulation of every placement strategy;
/// - sim/segment_reuse.hpp: segment index hits per namespace, TTFT of four methods, LPT dispatch.

#include "hybridcache/sim/builders.hpp"
#include "hybridcache/sim/model.hpp"
#include "hybridcache/sim/segment_reuse.hpp"
#include "hybridcache/sim/sparse_prefix.hpp"
#include "hybridcache/sim/synthetic.hpp"
#include "hybridcache/sim/tokenize.hpp"
#include "hybridcache/sim/trace.hpp"
