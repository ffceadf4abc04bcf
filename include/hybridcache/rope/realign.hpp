#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Delta-RoPE re-alignment of cached keys: K' = R(Δ)·K, V unchanged (SparseX §3.1,
/// Align_Δ; HYPIC §4.3 "KV RoPE re-rotation"; DESIGN.md §3 RoPE).
///
/// A segment cached at positions p..p+|S|−1 and reused at p'..p'+|S|−1 moves every key by the
/// same Δ = p' − p, since R_{p'+j} k = R_Δ R_{p+j} k. Two entry points:
///  - `realign_keys`: a contiguous run of keys `[tokens, heads, head_dim]`, out of place or in
///    place;
///  - `realign_blocks`: SparseX's fused copy-align over a paged cache `[blocks, block_size, heads,
///    head_dim]` — read each old block, rotate its keys, write the new block, copy its values — so
///    the cached (public) copy stays at its original positions while the request's private copy is
///    aligned (HYPIC's two-pool layout).
///
/// Both take views; these host overloads are constrained by `host_view`. A `device_space` view
/// selects the CUDA backend when `<hybridcache/cuda/rope/realign.cuh>` is included (the fallback
/// here is a compile error that says so). The per-element math is `detail::rope_rotate_row`,
/// shared with that backend. Cost: one read and one write of the keys (and values), O(|S|·d).

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/rope/detail/rotate.hpp"
#include "hybridcache/numeric.hpp"
#include "hybridcache/rope/params.hpp"
#include "hybridcache/storage/concepts.hpp"
#include "hybridcache/storage/view.hpp"

// Host builds targeting x86 with F16C (-mf16c, -march=haswell or later) convert fp16 rows with
// the hardware instructions, which round exactly like `detail::float_to_half_bits`.
#if defined(__F16C__) && !defined(__CUDACC__)
#include <immintrin.h>
#define HYBRIDCACHE_DETAIL_F16C 1
#else
#define HYBRIDCACHE_DETAIL_F16C 0
#endif

HYBRIDCACHE_NAMESPACE_BEGIN

namespace detail {

/// cos/sin of Δ·θ_i for every pair (double-precision angle, range-reduced).
struct rope_delta_table {
  std::vector<float> cs, sn;
  rope_delta_table(const rope_params& p, std::int64_t delta) : cs(p.rotary_dim / 2), sn(p.rotary_dim / 2) {
    const rope_frequency f = p.frequency_params();
    for (std::size_t i = 0; i < cs.size(); ++i) {
      rope_delta_sincos(static_cast<double>(delta), rope_theta(f, static_cast<double>(i)), &cs[i],
                        &sn[i]);
    }
  }
};

template <class T>
struct rope_load {
  HYBRIDCACHE_HOST_DEVICE float operator()(const T& v) const noexcept { return load_float(v); }
};
template <class T>
struct rope_store {
  HYBRIDCACHE_HOST_DEVICE T operator()(float f) const noexcept { return store_float<T>(f); }
};

/// Widens n 16-bit (or other) values to float: F16C for `half` where the target has it.
template <class T>
inline void rope_widen(const T* src, float* out, std::size_t n) {
  std::size_t j0 = 0;
#if HYBRIDCACHE_DETAIL_F16C
  if constexpr (std::is_same_v<T, half>) {
    for (; j0 + 8 <= n; j0 += 8) {
      _mm256_storeu_ps(out + j0,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j0))));
    }
  }
#endif
  for (std::size_t j = j0; j < n; ++j) out[j] = load_float(src[j]);
}

/// Narrows n floats to `T`, rounding to nearest even (F16C for `half` where available).
template <class T>
inline void rope_narrow(const float* in, T* dst, std::size_t n) {
  std::size_t j0 = 0;
#if HYBRIDCACHE_DETAIL_F16C
  if constexpr (std::is_same_v<T, half>) {
    for (; j0 + 8 <= n; j0 += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j0),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + j0),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  }
#endif
  for (std::size_t j = j0; j < n; ++j) dst[j] = store_float<T>(in[j]);
}

/// Rows per chunk of the host driver: 16-bit rows are widened, rotated and narrowed a chunk at a
/// time. One row (a 128-element head vector is already a long enough loop) measured best: larger
/// chunks spill the float scratch out of L1.
inline constexpr std::size_t rope_chunk_rows = 1;

/// Host driver of the row rotation for `rows` consecutive rows starting at `src`/`dst` (rows are
/// `head_dim` apart; pass 1 for a lone row). Rows that do not overlap their destination are
/// rotated in one pass with the conversions inline (float, bfloat16 and other types); fp16 rows,
/// and rows rotated in place, go through float scratch of 2·rope_chunk_rows·head_dim floats
/// (widen, rotate, narrow — with F16C where available, which the fused form cannot use).
/// Results equal `rope_rotate_row` applied to the storage type (same arithmetic; the
/// conversions round identically).
template <class T>
inline void rope_rotate_rows_host(const T* src, T* dst, std::size_t rows, const rope_params& p,
                                  bool interleaved, const rope_delta_table& table,
                                  float* scratch) {
  const std::size_t d = p.head_dim;
  float* in = scratch;
  float* out = scratch + rope_chunk_rows * d;
  for (std::size_t r0 = 0; r0 < rows; r0 += rope_chunk_rows) {
    const std::size_t n = std::min(rope_chunk_rows, rows - r0);
    const T* s = src + r0 * d;
    T* o = dst + r0 * d;
    const bool disjoint = s + n * d <= o || o + n * d <= s;
    if (disjoint && !std::is_same_v<T, half>) {
      for (std::size_t r = 0; r < n; ++r) {
        rope_rotate_row_disjoint(s + r * d, o + r * d, d, p.rotary_dim, interleaved,
                                 table.cs.data(), table.sn.data(), rope_load<T>{},
                                 rope_store<T>{});
      }
      continue;
    }
    rope_widen(s, in, n * d);
    for (std::size_t r = 0; r < n; ++r) {
      rope_rotate_row_disjoint(in + r * d, out + r * d, d, p.rotary_dim, interleaved,
                               table.cs.data(), table.sn.data(), rope_load<float>{},
                               rope_store<float>{});
    }
    rope_narrow(out, o, n * d);
  }
}

template <class Src, class Dst, std::size_t Rank>
concept rope_view_pair =
    Src::rank == Rank && Dst::rank == Rank &&
    std::same_as<typename Src::value_type, typename Dst::value_type> &&
    !std::is_const_v<typename Dst::element_type>;

template <class V>
void check_head_axis(const V& v, const char* name, std::size_t head_dim) {
  constexpr std::size_t last = V::rank - 1;
  if (v.extent(last) != head_dim) {
    throw_invalid(std::string(name) + ".extent(" + std::to_string(last) + ")", v.extent(last),
                  "must equal head_dim = " + std::to_string(head_dim));
  }
  if (v.extent(last) > 1 && v.stride(last) != 1) {
    throw_invalid(std::string(name) + ".stride(" + std::to_string(last) + ")", v.stride(last),
                  "head vectors must be contiguous (stride 1)");
  }
}

}  // namespace detail

/// Moves `tokens × heads` cached keys by `delta` positions: dst = R(delta)·src.
///
/// @param params RoPE of the layer (validated).
/// @param src    keys `[tokens, heads, head_dim]` rotated at their old positions.
/// @param dst    output of the same shape; may be the same memory as `src` (in place). The
///               dimensions beyond `rotary_dim` are copied unchanged.
/// @param delta  new position − old position (any sign).
/// @throws invalid_argument for invalid params, mismatched extents, a last extent other than
///         head_dim, or a non-unit stride on the head axis.
///
/// ```cpp
/// hybridcache::rope_params p{.head_dim = 128, .rotary_dim = 128, .base = 500000.0};
/// hybridcache::realign_keys(p, cached, request_slots, /*delta=*/new_pos - old_pos);
/// ```
template <host_view Src, host_view Dst>
  requires detail::rope_view_pair<Src, Dst, 3>
void realign_keys(const rope_params& params, Src src, Dst dst, std::int64_t delta) {
  params.validate();
  detail::check_head_axis(src, "src", params.head_dim);
  detail::check_head_axis(dst, "dst", params.head_dim);
  for (std::size_t r = 0; r < 2; ++r) {
    if (src.extent(r) != dst.extent(r)) {
      detail::throw_invalid("dst.extent(" + std::to_string(r) + ")", dst.extent(r),
                            "must equal src.extent(" + std::to_string(r) + ") = " +
                                std::to_string(src.extent(r)));
    }
  }
  using T = typename Dst::value_type;
  const detail::rope_delta_table table(params, delta);
  const bool interleaved = params.layout == rope_layout::interleaved;
  std::vector<float> scratch(2 * detail::rope_chunk_rows * params.head_dim);
  const std::size_t tokens = src.extent(0), heads = src.extent(1), d = params.head_dim;
  if (src.is_contiguous() && dst.is_contiguous()) {  // one run of tokens·heads rows
    detail::rope_rotate_rows_host<T>(src.data(), dst.data(), tokens * heads, params, interleaved,
                                     table, scratch.data());
    return;
  }
  const bool heads_packed = (heads <= 1 || (src.stride(1) == d && dst.stride(1) == d));
  for (std::size_t t = 0; t < tokens; ++t) {
    if (heads_packed) {  // the heads of one token are one run of rows
      if (heads > 0)
        detail::rope_rotate_rows_host<T>(&src(t, 0, 0), &dst(t, 0, 0), heads, params,
                                         interleaved, table, scratch.data());
      continue;
    }
    for (std::size_t h = 0; h < heads; ++h) {
      detail::rope_rotate_rows_host<T>(&src(t, h, 0), &dst(t, h, 0), 1, params, interleaved,
                                       table, scratch.data());
    }
  }
}

/// Device views need the CUDA backend: including `<hybridcache/cuda/rope/realign.cuh>` adds the
/// overload that handles them; without it this is a compile error, never a host fallback.
template <view Src, view Dst>
  requires(device_view<Src> || device_view<Dst>)
void realign_keys(const rope_params&, Src, Dst, std::int64_t) {
  HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(Src, "hybridcache/cuda/rope/realign.cuh");
}

/// Fused copy-align over a paged KV cache (SparseX's copy-Delta-RoPE kernel): for logical block b
/// of a segment, reads block `old_blocks[b]` of the source pools, writes block `new_blocks[b]` of
/// the destination pools with keys rotated by `delta` and values copied bit for bit. Only the
/// first `num_tokens` token slots of the table are touched (the last block may be partial).
///
/// @param k_src,v_src source pools `[num_blocks, block_size, heads, head_dim]` (keys/values).
/// @param k_dst,v_dst destination pools, same block shape (may be the same pools as the source).
/// @param old_blocks,new_blocks block tables (integral ids), equal length, covering `num_tokens`.
/// @throws invalid_argument for invalid params, mismatched shapes, a table shorter than
///         ceil(num_tokens/block_size), a negative or out-of-range block id, a repeated new
///         block, or — when source and destination are the same pool — a new block that is also
///         the old block of a different entry (the result would depend on the order of copies).
template <host_view KSrc, host_view VSrc, host_view KDst, host_view VDst, host_view Table>
  requires detail::rope_view_pair<KSrc, KDst, 4> && detail::rope_view_pair<VSrc, VDst, 4> &&
           (Table::rank == 1) && std::integral<typename Table::value_type>
void realign_blocks(const rope_params& params, KSrc k_src, VSrc v_src, KDst k_dst, VDst v_dst,
                    Table old_blocks, Table new_blocks, std::size_t num_tokens,
                    std::int64_t delta) {
  params.validate();
  detail::check_head_axis(k_src, "k_src", params.head_dim);
  detail::check_head_axis(k_dst, "k_dst", params.head_dim);
  const std::size_t bs = k_src.extent(1), heads = k_src.extent(2);
  auto same_block_shape = [&](const auto& v, const char* name, std::size_t last) {
    const std::size_t want[3] = {bs, heads, last};
    for (std::size_t r = 1; r < 4; ++r) {
      if (v.extent(r) != want[r - 1]) {
        detail::throw_invalid(std::string(name) + ".extent(" + std::to_string(r) + ")",
                              v.extent(r), "must equal " + std::to_string(want[r - 1]));
      }
    }
  };
  same_block_shape(k_dst, "k_dst", params.head_dim);
  same_block_shape(v_src, "v_src", v_src.extent(3));
  same_block_shape(v_dst, "v_dst", v_src.extent(3));
  if (old_blocks.extent(0) != new_blocks.extent(0)) {
    detail::throw_invalid("new_blocks.extent(0)", new_blocks.extent(0),
                          "must equal old_blocks.extent(0) = " + std::to_string(old_blocks.extent(0)));
  }
  if (bs == 0) detail::throw_invalid("k_src.extent(1)", bs, "block_size must be > 0");
  // ⌈num_tokens / bs⌉ without num_tokens + bs − 1, which wraps for absurd num_tokens.
  const std::size_t nb = num_tokens / bs + (num_tokens % bs != 0 ? 1 : 0);
  if (nb > old_blocks.extent(0)) {
    detail::throw_invalid("num_tokens", num_tokens,
                          "needs " + std::to_string(nb) + " blocks but the tables hold " +
                              std::to_string(old_blocks.extent(0)));
  }
  auto check_id = [](auto id, std::size_t limit, const char* name, std::size_t b) {
    bool negative = false;
    if constexpr (std::is_signed_v<decltype(id)>) negative = id < 0;
    if (negative || static_cast<std::size_t>(id) >= limit) {
      detail::throw_invalid(detail::indexed(name, b), id,
                            "block id out of range for a pool of " + std::to_string(limit));
    }
  };
  std::vector<std::size_t> olds(nb), news(nb);
  for (std::size_t b = 0; b < nb; ++b) {
    check_id(old_blocks(b), k_src.extent(0), "old_blocks", b);
    check_id(old_blocks(b), v_src.extent(0), "old_blocks", b);
    check_id(new_blocks(b), k_dst.extent(0), "new_blocks", b);
    check_id(new_blocks(b), v_dst.extent(0), "new_blocks", b);
    olds[b] = static_cast<std::size_t>(old_blocks(b));
    news[b] = static_cast<std::size_t>(new_blocks(b));
  }
  {
    std::vector<std::size_t> sorted = news;
    std::sort(sorted.begin(), sorted.end());
    const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
    if (dup != sorted.end()) {
      const auto at = static_cast<std::size_t>(std::find(news.begin(), news.end(), *dup) - news.begin());
      detail::throw_invalid(detail::indexed("new_blocks", at), *dup, "block written twice");
    }
    const bool same_pool = static_cast<const void*>(k_src.data()) == static_cast<const void*>(k_dst.data()) ||
                           static_cast<const void*>(v_src.data()) == static_cast<const void*>(v_dst.data());
    if (same_pool) {
      for (std::size_t b = 0; b < nb; ++b) {
        const auto it = std::find(olds.begin(), olds.end(), news[b]);
        if (it != olds.end() && static_cast<std::size_t>(it - olds.begin()) != b) {
          detail::throw_invalid(detail::indexed("new_blocks", b), news[b],
                                "overwrites the old block of another entry in the same pool");
        }
      }
    }
  }
  using KT = typename KDst::value_type;
  using VT = typename VDst::value_type;
  const detail::rope_delta_table table(params, delta);
  const bool interleaved = params.layout == rope_layout::interleaved;
  std::vector<float> scratch(2 * detail::rope_chunk_rows * params.head_dim);
  const std::size_t vdim = v_src.extent(3);
  const bool v_rows_contiguous = vdim <= 1 || (v_src.stride(3) == 1 && v_dst.stride(3) == 1);
  for (std::size_t b = 0; b < nb; ++b) {
    const std::size_t tokens = std::min(bs, num_tokens - b * bs);
    for (std::size_t t = 0; t < tokens; ++t) {
      for (std::size_t h = 0; h < heads; ++h) {
        detail::rope_rotate_rows_host<KT>(&k_src(olds[b], t, h, 0), &k_dst(news[b], t, h, 0), 1,
                                          params, interleaved, table, scratch.data());
        if (vdim == 0) continue;
        const auto* vs = &v_src(olds[b], t, h, 0);
        auto* vd = &v_dst(news[b], t, h, 0);
        if (static_cast<const void*>(vs) == static_cast<const void*>(vd)) continue;
        if (v_rows_contiguous) {
          std::memcpy(static_cast<void*>(vd), static_cast<const void*>(vs), vdim * sizeof(VT));
        } else {
          for (std::size_t j = 0; j < vdim; ++j) v_dst(news[b], t, h, j) = v_src(olds[b], t, h, j);
        }
      }
    }
  }
}

/// Device pools need the CUDA backend (see `realign_keys`).
template <view KSrc, view VSrc, view KDst, view VDst, view Table>
  requires(device_view<KSrc> || device_view<KDst> || device_view<VSrc> || device_view<VDst>)
void realign_blocks(const rope_params&, KSrc, VSrc, KDst, VDst, Table, Table, std::size_t,
                    std::int64_t) {
  HYBRIDCACHE_DETAIL_REQUIRE_DEVICE_BACKEND(KSrc, "hybridcache/cuda/rope/realign.cuh");
}

HYBRIDCACHE_NAMESPACE_END
