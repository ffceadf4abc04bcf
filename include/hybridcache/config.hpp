#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Compiler and configuration macros shared by every header.
///
/// - `HYBRIDCACHE_NAMESPACE_BEGIN/END` open `hybridcache::v0` (an inline ABI namespace, as fmt's
///   `fmt::v12`), so a later incompatible release can coexist in one binary.
/// - `HYBRIDCACHE_HOST_DEVICE` marks math shared by host code and CUDA kernels; it is empty unless
///   the translation unit is compiled by nvcc (`__CUDACC__`).
/// - `HYBRIDCACHE_ASSERT(cond, msg)` checks preconditions of `noexcept` hot paths when
///   `HYBRIDCACHE_ASSERTIONS` is defined to 1 (the test builds do); otherwise it compiles to
///   nothing. A failed assertion prints the condition and aborts.

#include <cstdio>
#include <cstdlib>

#include "hybridcache/version.hpp"

#define HYBRIDCACHE_NAMESPACE_BEGIN \
  namespace hybridcache {           \
  inline namespace v0 {
#define HYBRIDCACHE_NAMESPACE_END \
  }                               \
  }

#if defined(__CUDACC__)
#define HYBRIDCACHE_HOST_DEVICE __host__ __device__
#else
#define HYBRIDCACHE_HOST_DEVICE
#endif

#ifndef HYBRIDCACHE_ASSERTIONS
#define HYBRIDCACHE_ASSERTIONS 0
#endif

#if HYBRIDCACHE_ASSERTIONS && !defined(__CUDA_ARCH__)
#define HYBRIDCACHE_ASSERT(cond, msg)                                                     \
  ((cond) ? static_cast<void>(0)                                                          \
          : (std::fprintf(stderr, "%s:%d: hybridcache assertion failed: %s (%s)\n",       \
                          __FILE__, __LINE__, #cond, msg),                                \
             std::abort()))
#else
#define HYBRIDCACHE_ASSERT(cond, msg) static_cast<void>(0)
#endif

#if defined(__GNUC__) || defined(__clang__)
#define HYBRIDCACHE_DETAIL_LIKELY(x) __builtin_expect(!!(x), 1)
#define HYBRIDCACHE_DETAIL_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define HYBRIDCACHE_DETAIL_LIKELY(x) (x)
#define HYBRIDCACHE_DETAIL_UNLIKELY(x) (x)
#endif
