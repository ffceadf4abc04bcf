// SPDX-License-Identifier: Apache-2.0
// The fast path of `hybridcache verify` for the large arrays: .npy files memory-mapped in place
// (no copy, no conversion pass, no allocation) and one fused, vectorisable pass computing each
// element's tolerance and checking it — the same arithmetic as element_tolerance and
// check_close, so the verdicts are identical (tested by the CLI controls).
#pragma once

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <hybridcache/state/npy.hpp>
#include <hybridcache/state/tolerance.hpp>
#include <nlohmann/json.hpp>

namespace hybridcache_cli::vectors {

/// A read-only memory map of a C-order little-endian `<f4` or `<f8` .npy file (format 1.0-3.0),
/// its header checked by npy::detail::parse_header (the same checks as npy::load, so the fast
/// path accepts exactly what npy::load accepts). `open` returns nullopt for other dtypes, which
/// the caller then reads with npy::load.
class mapped_npy {
 public:
  mapped_npy(const mapped_npy&) = delete;
  mapped_npy& operator=(const mapped_npy&) = delete;
  mapped_npy(mapped_npy&& o) noexcept
      : base_(std::exchange(o.base_, nullptr)),
        bytes_(o.bytes_),
        data_(o.data_),
        n_(o.n_),
        f8_(o.f8_) {}
  ~mapped_npy() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }

  /// Maps `path` if it is a regular `<f4` or `<f8` file; nullopt for other dtypes, files that
  /// cannot be mapped and data not aligned for in-place use (npy::load reads those).
  /// @throws hybridcache::invalid_argument naming the file for a malformed .npy file (the same
  ///         checks as npy::load: npy::detail::parse_header).
  static std::optional<mapped_npy> open(const std::string& path) {
    // O_NONBLOCK: a FIFO planted in place of a file must not block the open.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    struct stat st {};
    void* base = nullptr;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 16)
      base = mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (base == nullptr || base == MAP_FAILED) return std::nullopt;
    mapped_npy m(base, static_cast<std::size_t>(st.st_size));
    if (!m.parse(path)) return std::nullopt;
    madvise(base, m.bytes_, MADV_SEQUENTIAL);
    return m;
  }

  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  [[nodiscard]] bool is_f8() const noexcept { return f8_; }
  [[nodiscard]] const double* f8() const noexcept { return static_cast<const double*>(data_); }
  [[nodiscard]] const float* f4() const noexcept { return static_cast<const float*>(data_); }

 private:
  mapped_npy(void* base, std::size_t bytes) : base_(base), bytes_(bytes) {}

  bool parse(const std::string& path) {
    const auto* p = static_cast<const char*>(base_);
    const auto h = hybridcache::npy::detail::parse_header(std::string_view(p, bytes_), path);
    if (h.descr != "<f8" && h.descr != "<f4") return false;
    if (h.data_offset % h.element_bytes != 0) return false;  // unaligned: npy::load copies
    f8_ = h.descr == "<f8";
    data_ = p + h.data_offset;
    n_ = h.count;
    return true;
  }

  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  const void* data_ = nullptr;
  std::size_t n_ = 0;
  bool f8_ = false;
};

/// The per-time-step tolerance factors of entry `e`: tol_i = g[t(i)]·weight_i + u_out·|ref_i|,
/// g[t] = γ(depth(t)·u_acc + t·u_store)·(1 + 2⁻³⁰) — element_tolerance with its constant parts
/// hoisted. Returns g (one entry when the array has no time axis), `inner` and `extent`.
struct tolerance_plan {
  std::vector<double> g;
  std::size_t inner = 1, extent = 1;
  double u_out = 0;
};

inline tolerance_plan plan_tolerance(const nlohmann::json& e, const hybridcache::error_model& m) {
  namespace hc = hybridcache;
  tolerance_plan p;
  const auto shape = e.at("shape").get<std::vector<std::size_t>>();
  const double per = e.at("depth_per_token").get<double>();
  const double extra = e.at("depth_extra").get<double>();
  const auto steps = e.at("steps").get<std::size_t>();
  std::size_t count = 1;
  for (const auto d : shape) count *= d;  // checked by parse_manifest
  // An empty array has no time steps to plan (and a zero extent must not size g).
  const bool timed = !e.at("time_axis").is_null() && count != 0;
  if (timed) {
    const auto ax = e.at("time_axis").get<std::size_t>();
    p.extent = shape.at(ax);
    for (std::size_t i = ax + 1; i < shape.size(); ++i) p.inner *= shape[i];
  }
  const double ua = hc::unit_roundoff(m.accumulate);
  const double us = m.state_storage == m.accumulate ? 0.0 : hc::unit_roundoff(m.state_storage);
  p.u_out = m.output == hc::precision::fp64 ? 0.0 : hc::unit_roundoff(m.output);
  const std::size_t nt = timed ? p.extent : 1;
  p.g.resize(nt);
  for (std::size_t k = 0; k < nt; ++k) {
    const double t = timed ? static_cast<double>(k + 1) : static_cast<double>(steps);
    p.g[k] = hc::gamma_of((per * t + extra) * ua + t * us) * (1.0 + 0x1p-30);
  }
  return p;
}

/// One fused pass: |cand − ref| against g·weight + u_out·|ref| for every element, in blocks of
/// 4096 whose inner loop is branch-free (the compiler vectorises it); a block whose maximum ratio
/// beats the running one is rescanned for the index. Same verdict as check_close(tolerances(...)).
template <class C>
hybridcache::check_report fused_check(const C* cand, const double* ref, const double* weight,
                                      std::size_t n, const tolerance_plan& p, double* worst_tol) {
  hybridcache::check_report r;
  r.count = n;
  constexpr std::size_t block = 4096;
  const double uo = p.u_out;
  constexpr double max_finite = std::numeric_limits<double>::max();
  std::size_t fails = 0;
  double max_err = 0, max_ratio = 0;
  const auto tol_at = [&](std::size_t i) {
    const double g = p.g.size() == 1 ? p.g[0] : p.g[(i / p.inner) % p.extent];
    return g * weight[i] + uo * std::fabs(ref[i]);
  };
  for (std::size_t b = 0; b < n; b += block) {
    const std::size_t e = std::min(n, b + block);
    double bmax = 0, berr = 0;
    std::size_t bfail = 0;
    if (p.g.size() == 1) {
      const double g = p.g[0];
      for (std::size_t i = b; i < e; ++i) {
        const double err = std::fabs(static_cast<double>(cand[i]) - ref[i]);
        const double tol = g * weight[i] + uo * std::fabs(ref[i]);
        bfail += !(err <= tol);
        const double ratio = err == 0 ? 0.0 : err / tol;
        bmax = ratio > bmax ? ratio : bmax;
        const double fin = err <= max_finite ? err : 0.0;  // as check_close: finite errors only
        berr = fin > berr ? fin : berr;
      }
    } else {
      for (std::size_t i = b; i < e; ++i) {
        const double err = std::fabs(static_cast<double>(cand[i]) - ref[i]);
        const double tol = tol_at(i);
        bfail += !(err <= tol);
        const double ratio = err == 0 ? 0.0 : err / tol;
        bmax = ratio > bmax ? ratio : bmax;
        const double fin = err <= max_finite ? err : 0.0;  // as check_close: finite errors only
        berr = fin > berr ? fin : berr;
      }
    }
    fails += bfail;
    if (berr > max_err) max_err = berr;
    if (bfail != 0 || bmax > max_ratio) {
      // Rescan: non-finite candidates count as ratio ∞ (as check_close) and set the index.
      for (std::size_t i = b; i < e; ++i) {
        const double c = static_cast<double>(cand[i]);
        const double err = std::fabs(c - ref[i]);
        const double tol = tol_at(i);
        double ratio;
        if (!std::isfinite(c) || !(err == err))
          ratio = std::numeric_limits<double>::infinity();
        else
          ratio = err == 0 ? 0.0 : (tol > 0 ? err / tol : std::numeric_limits<double>::infinity());
        if (ratio > max_ratio) {
          max_ratio = ratio;
          r.worst = i;
        }
      }
    }
  }
  r.failures = fails;
  r.max_abs_error = max_err;
  r.max_ratio = max_ratio;
  *worst_tol = n == 0 ? 0.0 : tol_at(r.worst);
  return r;
}

}  // namespace hybridcache_cli::vectors
