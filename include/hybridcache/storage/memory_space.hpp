#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Memory-space tags (modelled on `cuda::mr` memory-resource properties). A view or a storage
/// policy names the space its bytes live in; overloads are constrained on that space so a device
/// pointer can never reach host code by accident.

#include <concepts>
#include <type_traits>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Ordinary host memory, dereferenceable by the CPU.
struct host_space {
  static constexpr const char* name = "host";
};

/// CUDA device memory, dereferenceable only by kernels (or through explicit copies).
struct device_space {
  static constexpr const char* name = "device";
};

/// True for the memory-space tags the library knows.
template <class Space>
concept memory_space = std::same_as<Space, host_space> || std::same_as<Space, device_space>;

HYBRIDCACHE_NAMESPACE_END
