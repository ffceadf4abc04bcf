// SPDX-License-Identifier: Apache-2.0
// Host tests of what the CUDA kernels share with the host: the launch plans (shared-memory
// budgets) and host replays of the kernels' use of the HYBRIDCACHE_HOST_DEVICE math — the RoPE
// warp (32 lanes' shares of a row, rope_rotate_row_lane, in place; table from rope_theta +
// rope_delta_sincos) and the element-wise summary steps (decay_factor, affine_scalar per
// element, compose_log_decay per entry) — against independent references.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <hybridcache/cuda/detail/rope_plan.cuh>
#include <hybridcache/cuda/detail/scores_plan.cuh>
#include <hybridcache/rope.hpp>
#include <hybridcache/state/detail/elementwise.hpp>
#include <initializer_list>
#include <limits>
#include <random>
#include <vector>

#include "support/rope_reference.hpp"

namespace hc = hybridcache;
namespace cd = hybridcache::cuda::detail;

TEST_CASE("ceil_div and align_up") {
  CHECK(cd::ceil_div(0, 4) == 0);
  CHECK(cd::ceil_div(1, 4) == 1);
  CHECK(cd::ceil_div(8, 4) == 2);
  CHECK(cd::ceil_div(9, 4) == 3);
  CHECK(cd::align_up(0) == 0);
  CHECK(cd::align_up(1) == 256);
  CHECK(cd::align_up(256) == 256);
  CHECK(cd::align_up(257) == 512);
}

TEST_CASE("RoPE row plan: the cos/sin table fits shared memory, and one that cannot is refused") {
  for (std::size_t rd = 0; rd <= 4096; rd += 2) {
    CAPTURE(rd);
    const auto p = cd::make_rope_row_plan(rd + 6, rd, hc::detail::rope_lane_group);
    CHECK(p.fits);
    CHECK(p.shared_bytes >= rd / 2 * 2 * sizeof(float));
    CHECK(p.shared_bytes % 256 == 0);
    CHECK(p.shared_bytes <= 48 * 1024);
  }
  // 40 KiB holds 5,120 angles (cos and sin): rotary_dim 10,240 fits, 10,242 does not.
  CHECK(cd::make_rope_row_plan(10240, 10240, 8).fits);
  CHECK_FALSE(cd::make_rope_row_plan(10242, 10242, 8).fits);
  // Lanes per row: a power of two in [8, 32] that divides the warp, and the largest one that
  // still gives every lane a full group when any does.
  for (std::size_t rd = 0; rd <= 2048; rd += 2) {
    for (const unsigned group : {1u, 4u, 8u}) {
      CAPTURE(rd);
      CAPTURE(group);
      const unsigned L = cd::rope_lanes_per_row(rd, group);
      CHECK((L == 8 || L == 16 || L == 32));
      const std::size_t pairs = rd / 2;
      if (L > 8) CHECK(pairs >= std::size_t{L} * group);      // each lane a full group
      if (L < 32) CHECK(pairs < std::size_t{2} * L * group);  // twice as many would not
    }
  }
  CHECK(cd::rope_lanes_per_row(128, 8) == 8);   // 64 pairs: 8 lanes, 4 rows per warp
  CHECK(cd::rope_lanes_per_row(512, 8) == 32);  // 256 pairs: a warp per row
  CHECK(cd::rope_lanes_per_row(128, 4) == 16);  // the default group: 16 lanes, 2 rows per warp
}

TEST_CASE("scoring kernel shared memory stays within an opt-in-free block for common head dims") {
  CHECK(cd::scores_shared_bytes(128, sizeof(float)) <= 48 * 1024);
  CHECK(cd::scores_shared_bytes(256, sizeof(float)) >
        48 * 1024);  // needs the opt-in the entry point makes
  CHECK(cd::scores_q_per_warp * (cd::scores_threads / 32) == cd::scores_queries);
}

namespace {
template <class T>
double tolerance() {
  if constexpr (std::is_same_v<T, float>)
    return 1e-6;
  else if constexpr (std::is_same_v<T, hc::half>)
    return 2e-3;
  else
    return 1.6e-2;
}
}  // namespace

// The realign kernels' lanes, replayed on the host: the block's cos/sin table built exactly as
// rope_fill_table does, then the shares of each row's lanes (rope_rotate_row_lane, as many lanes
// as the plan gives a row) run one lane after another in place, in a scrambled lane order,
// against the long-double reference.
TEST_CASE_TEMPLATE("host replay of the RoPE lanes equals rotation at the new position", T, float,
                   hc::half, hc::bfloat16) {
  std::mt19937_64 rng(9);
  std::normal_distribution<double> n;
  struct cfg {
    std::size_t hd, rd;
    bool interleaved;
  };
  for (const cfg c : {cfg{128, 128, false}, cfg{128, 128, true}, cfg{96, 32, false},
                      cfg{5, 4, true}, cfg{576, 512, false}, cfg{300, 290, true}}) {
    hc::rope_params params{
        .head_dim = c.hd,
        .rotary_dim = c.rd,
        .base = 500000.0,
        .layout = c.interleaved ? hc::rope_layout::interleaved : hc::rope_layout::half_split};
    hcref::rope_ref_config ref{c.hd, c.rd, 500000.0L, c.interleaved, 0};
    const std::size_t rows = 40;
    for (const long long delta : {1LL, -77LL, 1000000LL}) {
      const long long p0 = 12345;
      std::vector<std::vector<double>> raw(rows, std::vector<double>(c.hd));
      std::vector<T> keys(rows * c.hd);
      for (std::size_t r = 0; r < rows; ++r) {
        for (auto& x : raw[r]) x = n(rng);
        const auto k = hcref::rope_at(ref, raw[r], static_cast<long double>(p0 + r));
        for (std::size_t j = 0; j < c.hd; ++j) keys[r * c.hd + j] = T(static_cast<float>(k[j]));
      }
      const auto f = params.frequency_params();
      std::vector<float> cs(c.rd / 2), sn(c.rd / 2);
      for (std::size_t i = 0; i < cs.size(); ++i)
        hc::detail::rope_delta_sincos(static_cast<double>(delta),
                                      hc::detail::rope_theta(f, static_cast<double>(i)), &cs[i],
                                      &sn[i]);
      const unsigned L =
          cd::make_rope_row_plan(c.hd, c.rd, hc::detail::rope_lane_group).lanes_per_row;
      for (std::size_t r = 0; r < rows; ++r) {
        T* row = &keys[r * c.hd];
        for (unsigned l = 0; l < L; ++l) {
          const unsigned lane = (l * 5 + 3) % L;  // a permutation of 0..L-1 (L a power of two)
          hc::detail::rope_rotate_row_lane(row, row, c.hd, c.rd, c.interleaved, cs.data(),
                                           sn.data(), hc::detail::rope_load<T>{},
                                           hc::detail::rope_store<T>{}, lane, L);
        }
      }
      std::size_t bad = 0;
      for (std::size_t r = 0; r < rows; ++r) {
        const auto want = hcref::rope_at(ref, raw[r], static_cast<long double>(p0 + r + delta));
        for (std::size_t j = 0; j < c.hd; ++j) {
          const std::size_t q = hcref::rope_partner(ref, j);
          const double norm = static_cast<double>(std::sqrt(want[j] * want[j] + want[q] * want[q]));
          const double err = std::fabs(static_cast<double>(static_cast<float>(keys[r * c.hd + j])) -
                                       static_cast<double>(want[j]));
          if (err > tolerance<T>() * std::max(norm, 1e-3)) ++bad;
        }
      }
      CHECK(bad == 0);
    }
  }
}

namespace {
// Counts, per element, the reads and writes a lane's share makes (float rows: Load/Store see the
// element through its address).
struct counting_load {
  const float* base;
  std::vector<int>* reads;
  float operator()(const float& v) const {
    ++(*reads)[static_cast<std::size_t>(&v - base)];
    return v;
  }
};
struct identity_store {
  float operator()(float f) const { return f; }
};
}  // namespace

TEST_CASE(
    "the lanes' shares of a row are disjoint, cover it, and each lane reads before it writes") {
  for (const unsigned lanes : {1u, 7u, 8u, 16u, 32u}) {
    for (const bool interleaved : {false, true}) {
      for (const std::size_t hd :
           {std::size_t{2}, std::size_t{6}, std::size_t{64}, std::size_t{130}, std::size_t{577}}) {
        for (const std::size_t rd :
             {std::size_t{2}, hd / 2 * 2, hd > 8 ? std::size_t{8} : std::size_t{2}}) {
          CAPTURE(lanes);
          CAPTURE(interleaved);
          CAPTURE(hd);
          CAPTURE(rd);
          std::vector<float> src(hd), dst(hd, std::numeric_limits<float>::quiet_NaN());
          for (std::size_t j = 0; j < hd; ++j) src[j] = static_cast<float>(j + 1);
          std::vector<int> reads(hd, 0);
          std::vector<float> cs(rd / 2, 0.0f), sn(rd / 2, 1.0f);  // a quarter turn: x' = −y
          for (unsigned lane = 0; lane < lanes; ++lane) {
            std::vector<int> before = reads;
            hc::detail::rope_rotate_row_lane(src.data(), dst.data(), hd, rd, interleaved, cs.data(),
                                             sn.data(), counting_load{src.data(), &reads},
                                             identity_store{}, lane, lanes);
            // Lane `lane` read exactly the pairs i ≡ lane (mod lanes), both members each.
            for (std::size_t i = 0; i < rd / 2; ++i) {
              std::size_t a, b;
              hc::rope_pair(interleaved, rd, i, &a, &b);
              const int want = i % lanes == lane ? 1 : 0;
              CHECK(reads[a] - before[a] == want);
              CHECK(reads[b] - before[b] == want);
            }
          }
          // Every rotated element read once in all; a quarter turn maps (x, y) to (−y, x).
          for (std::size_t i = 0; i < rd / 2; ++i) {
            std::size_t a, b;
            hc::rope_pair(interleaved, rd, i, &a, &b);
            CHECK(reads[a] == 1);
            CHECK(reads[b] == 1);
            CHECK(dst[a] == -src[b]);
            CHECK(dst[b] == src[a]);
          }
          for (std::size_t j = rd; j < hd; ++j) CHECK(dst[j] == src[j]);  // passed through once
        }
      }
    }
  }
}

// The vector path of the realign kernels (rope_rotate_row_chunks), replayed on the host with
// element-wise IO in a scrambled lane order, in place and out of place: every chunk side is one
// contiguous run read before it is written, the row is rotated exactly once (against a quarter
// turn's closed form, x' = −y, y' = x, with counted reads), and on random keys the bits equal the
// element-at-a-time lanes' (rope_rotate_row_lane), which the replay above checks against the
// long-double reference.
namespace {
struct run_io {  // records the runs io.load/io.store move, on float rows
  const float* base;
  std::vector<int>* reads;
  std::vector<int>* writes;
  std::vector<std::size_t>* run_lengths;
  template <unsigned N>
  void load(const float* p, float (&out)[N]) const {
    run_lengths->push_back(N);
    for (unsigned k = 0; k < N; ++k) {
      ++(*reads)[static_cast<std::size_t>(p + k - base)];
      out[k] = p[k];
    }
  }
  template <unsigned N>
  void store(float* p, const float (&in)[N]) const {
    for (unsigned k = 0; k < N; ++k) {
      CHECK((*reads)[static_cast<std::size_t>(p + k - base)] == 1);  // read before written
      ++(*writes)[static_cast<std::size_t>(p + k - base)];
      p[k] = in[k];
    }
  }
  template <unsigned N>
  void table(const float* p, float (&out)[N]) const {
    for (unsigned k = 0; k < N; ++k) out[k] = p[k];
  }
};
}  // namespace

namespace {
template <unsigned C>
void check_chunk_partition(std::initializer_list<std::size_t> rotary_dims) {
  for (const unsigned lanes : {1u, 3u, 8u, 16u, 32u}) {
    for (const bool interleaved : {false, true}) {
      for (const std::size_t rd : rotary_dims) {
        CAPTURE(C);
        CAPTURE(lanes);
        CAPTURE(interleaved);
        CAPTURE(rd);
        REQUIRE((rd / 2) % C == 0);
        const std::size_t hd = rd + 6;
        std::vector<float> row(hd);
        for (std::size_t j = 0; j < hd; ++j) row[j] = static_cast<float>(j + 1);
        const std::vector<float> src = row;
        std::vector<int> reads(hd, 0), writes(hd, 0);
        std::vector<std::size_t> runs;
        const std::vector<float> cs(rd / 2, 0.0f), sn(rd / 2, 1.0f);
        for (unsigned l = 0; l < lanes; ++l) {
          const unsigned lane = (l * 7 + 1) % lanes;  // a permutation (lanes is odd or 2^k)
          hc::detail::rope_rotate_row_chunks<C>(
              row.data(), row.data(), hd, rd, interleaved, cs.data(), sn.data(),
              run_io{row.data(), &reads, &writes, &runs}, lane, lanes);
        }
        for (const std::size_t n : runs) CHECK(n == (interleaved ? 2 * C : C));
        CHECK(runs.size() == (interleaved ? rd / 2 / C : rd / C));
        for (std::size_t i = 0; i < rd / 2; ++i) {
          std::size_t a, b;
          hc::rope_pair(interleaved, rd, i, &a, &b);
          CHECK(reads[a] == 1);
          CHECK(reads[b] == 1);
          CHECK(writes[a] == 1);
          CHECK(writes[b] == 1);
          CHECK(row[a] == -src[b]);
          CHECK(row[b] == src[a]);
        }
        for (std::size_t j = rd; j < hd; ++j) {  // in place: the tail is not touched
          CHECK(reads[j] == 0);
          CHECK(row[j] == src[j]);
        }
        // Out of place: the tail is copied.
        std::vector<float> out(hd, -1.0f);
        std::vector<int> r2(hd, 0), w2(hd, 0);
        std::vector<std::size_t> runs2;
        for (unsigned lane = 0; lane < lanes; ++lane)
          hc::detail::rope_rotate_row_chunks<C>(
              src.data(), out.data(), hd, rd, interleaved, cs.data(), sn.data(),
              hc::detail::rope_elementwise_io<float, identity_store, identity_store>{}, lane,
              lanes);
        for (std::size_t j = rd; j < hd; ++j) CHECK(out[j] == src[j]);
        for (std::size_t j = 0; j < rd; ++j) CHECK(out[j] == row[j]);
      }
    }
  }
}
}  // namespace

TEST_CASE("the vector path's chunks rotate every pair once, reading each run before writing it") {
  check_chunk_partition<4>({8, 48, 128, 512});   // 4 pairs per chunk: fp32 keys, value-less
  check_chunk_partition<8>({16, 32, 128, 512});  // 8 pairs: 16-bit keys of realign_keys
}

TEST_CASE_TEMPLATE("the vector path's rows equal the element-wise lanes' bit for bit", T, float,
                   hc::half, hc::bfloat16) {
  std::mt19937_64 rng(17);
  std::normal_distribution<float> n;
  for (const std::size_t rd :
       {std::size_t{8}, std::size_t{32}, std::size_t{48}, std::size_t{128}, std::size_t{512}}) {
    for (const bool interleaved : {false, true}) {
      const std::size_t hd = rd + 4;
      hc::rope_params params{
          .head_dim = hd,
          .rotary_dim = rd,
          .base = 10000.0,
          .layout = interleaved ? hc::rope_layout::interleaved : hc::rope_layout::half_split};
      const auto f = params.frequency_params();
      std::vector<float> cs(rd / 2), sn(rd / 2);
      for (std::size_t i = 0; i < cs.size(); ++i)
        hc::detail::rope_delta_sincos(-4321.0, hc::detail::rope_theta(f, static_cast<double>(i)),
                                      &cs[i], &sn[i]);
      std::vector<T> src(hd);
      for (auto& x : src) x = T(n(rng));
      using io =
          hc::detail::rope_elementwise_io<T, hc::detail::rope_load<T>, hc::detail::rope_store<T>>;
      // As the kernels run it: the plan's lanes for the chunk size (8 pairs only where they fit).
      auto compare = [&]<unsigned C>() {
        if ((rd / 2) % C != 0) return;
        const unsigned L = cd::make_rope_row_plan(hd, rd, C).lanes_per_row;
        std::vector<T> by_chunks(hd), by_lanes(hd);
        for (unsigned lane = 0; lane < L; ++lane) {
          hc::detail::rope_rotate_row_chunks<C>(src.data(), by_chunks.data(), hd, rd, interleaved,
                                                cs.data(), sn.data(), io{}, lane, L);
          hc::detail::rope_rotate_row_lane(src.data(), by_lanes.data(), hd, rd, interleaved,
                                           cs.data(), sn.data(), hc::detail::rope_load<T>{},
                                           hc::detail::rope_store<T>{}, lane, L);
        }
        CAPTURE(C);
        CAPTURE(rd);
        CAPTURE(interleaved);
        CHECK(std::memcmp(by_chunks.data(), by_lanes.data(), hd * sizeof(T)) == 0);
      };
      compare.template operator()<4>();
      compare.template operator()<8>();
    }
  }
}

// The element-wise summary kernel: thread (b, r, c) computes f = (Real)decay_factor(ℓ_r) once per
// row and calls affine_scalar on one element; the log-decay kernel calls compose_log_decay on one
// entry with broadcasting resolved by index. Checked against e^ℓ·prev + add in long double.
TEST_CASE_TEMPLATE("host replay of the element-wise summary kernels equals the definitions", Real,
                   float, double) {
  namespace sd = hybridcache::detail;
  std::mt19937_64 rng(4);
  std::normal_distribution<double> n;
  std::uniform_real_distribution<double> u(-40.0, 0.0);
  const std::size_t dk = 7, dv = 5;
  std::vector<double> ld(dk);
  for (auto& x : ld) x = u(rng);
  ld[2] = -std::numeric_limits<double>::infinity();  // hard reset row
  std::vector<Real> prev(dk * dv), add(dk * dv), out(dk * dv);
  for (auto& x : prev) x = static_cast<Real>(n(rng) * 1e6);
  for (auto& x : add) x = static_cast<Real>(n(rng));
  for (std::size_t r = 0; r < dk; ++r) {
    const Real f = static_cast<Real>(sd::decay_factor(ld[r]));
    for (std::size_t c = 0; c < dv; ++c)
      sd::affine_scalar(&out[r * dv + c], &prev[r * dv + c], &add[r * dv + c], 1, f);
  }
  for (std::size_t r = 0; r < dk; ++r)
    for (std::size_t c = 0; c < dv; ++c) {
      const long double scaled = std::exp(static_cast<long double>(ld[r])) * prev[r * dv + c];
      const long double want = scaled + add[r * dv + c];
      const long double mag =
          std::fabs(scaled) + std::fabs(static_cast<long double>(add[r * dv + c]));
      const double tol = std::is_same_v<Real, float> ? 2e-7 : 4e-16;
      CHECK(static_cast<double>(std::fabs(out[r * dv + c] - want)) <=
            tol * static_cast<double>(mag) * 2);
    }
  for (std::size_t c = 0; c < dv; ++c)
    CHECK(out[2 * dv + c] == add[2 * dv + c]);  // e^{−∞}·x = 0 exactly
  // Same map as the host's whole-matrix affine_diagonal, element for element.
  std::vector<Real> whole(dk * dv);
  sd::affine_diagonal(whole.data(), prev.data(), add.data(), ld.data(), dk, dv);
  CHECK(whole == out);

  // compose_log_decay, one entry per thread, scalar side broadcast by index.
  const double scalar_first = -0.5;
  std::vector<double> per_entry(dk);
  for (std::size_t i = 0; i < dk; ++i)
    sd::compose_log_decay(&per_entry[i], &scalar_first, 1, &ld[i], 1);
  std::vector<double> whole_log(dk);
  sd::compose_log_decay(whole_log.data(), &scalar_first, 1, ld.data(), dk);
  for (std::size_t i = 0; i < dk; ++i) {
    CHECK(per_entry[i] == whole_log[i]);
    CHECK(per_entry[i] == scalar_first + ld[i]);
  }
  CHECK(std::isinf(per_entry[2]));
}
