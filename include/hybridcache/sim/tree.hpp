#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The tree scenario of `hybridcache simulate` (DESIGN §7): recurrent states in a prefix tree.
///
/// - sim/tree/trace.hpp: tree-shaped traces over a namespace-aware block trie, the synthetic
///   multi-turn generator, conversion of the text traces;
/// - sim/tree/replay.hpp: the replay engine (radix tree, state pool under a budget, metrics);
/// - sim/tree/policies.hpp: vLLM, SGLang, Marconi and llama.cpp state policies and an offline
///   Belady reference;
/// - sim/tree/library.hpp: the library's state_policy through its public API;
/// - sim/tree/simulate.hpp: the sweep over policies and budgets.

#include "hybridcache/sim/tree/library.hpp"
#include "hybridcache/sim/tree/policies.hpp"
#include "hybridcache/sim/tree/replay.hpp"
#include "hybridcache/sim/tree/simulate.hpp"
#include "hybridcache/sim/tree/trace.hpp"
