// SPDX-License-Identifier: Apache-2.0
// Shared pieces of `hybridcache vectors` / `verify`: the portable PRNG and exact input grids, the
// case writer (npy files + manifest entries) and the manifest's tolerance description.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include <hybridcache/numeric.hpp>
#include <hybridcache/state/npy.hpp>
#include <hybridcache/state/tolerance.hpp>
#include <nlohmann/json.hpp>

namespace hybridcache_cli::vectors {

/// 2: adds sparse-Q scores/selection/layer plans and segment/namespace keys, and the "exact"
/// comparison (byte equality) for integer and key arrays.
inline constexpr int format_version = 2;

/// SplitMix64 (Steele, Lea & Flood 2014): state += 2⁶⁴/φ, output splitmix64_mix(state) — the
/// library's one mixer (numeric.hpp), so the stream is specified bit for bit on every platform
/// (std distributions are implementation-defined).
class prng {
 public:
  explicit prng(std::uint64_t seed) noexcept : state_(seed) {}
  std::uint64_t next() noexcept {
    return hybridcache::splitmix64_mix(state_ += hybridcache::splitmix64_gamma);
  }
  /// Uniform integer in [lo, hi] by rejection (no modulo bias, no floating point).
  std::int64_t between(std::int64_t lo, std::int64_t hi) noexcept {
    const std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % span;
    std::uint64_t x;
    do x = next();
    while (x >= limit);
    return lo + static_cast<std::int64_t>(x % span);
  }

 private:
  std::uint64_t state_;
};

/// Errors a candidate writer can inject (negative controls of `verify`).
enum class injection {
  none,
  transposed_state,
  gate_after_update,
  no_q_scale,
  beta_placement,
  ulp,
  score_offset,    ///< one sparse-Q score moved past its bound
  selection_swap,  ///< two key tokens of a selection swapped
  key_byte,        ///< one byte of a chained block key flipped
  non_finite       ///< one output element NaN, another +inf
};

/// Where a candidate goes and which error it carries.
struct candidate_spec {
  std::filesystem::path dir;
  injection inj = injection::none;
};

/// An input grid: values j·2^{−shift} with j an integer in [lo, hi]. Every value is an exact
/// dyadic rational with at most `bits` significant bits, so it is exactly representable in the
/// input dtype (8 bits for bf16, 21 for fp32) and in double, on every machine.
struct grid {
  std::int64_t lo, hi;
  int shift;
  double draw(prng& g) const { return std::ldexp(static_cast<double>(g.between(lo, hi)), -shift); }
  std::vector<double> draw(prng& g, std::size_t n) const {
    std::vector<double> x(n);
    for (auto& e : x) e = draw(g);
    return x;
  }
};

/// The two input precisions: "bf16" (|j| < 2^7, exact in bf16, fp16, fp32) and "fp32" (|j| < 2^20).
struct input_grids {
  const char* dtype;
  int bits;  // magnitude bits of j
  /// j ∈ [−(2^bits − 1), 2^bits − 1]·2^{−(bits + extra)}: |x| < 2^{−extra}.
  [[nodiscard]] grid symmetric(int extra) const {
    const std::int64_t m = (std::int64_t{1} << bits) - 1;
    return {-m, m, bits + extra};
  }
  /// j·2^{−bits−extra} for j ∈ [lo·2^bits, hi·2^bits] (lo, hi fractions of 2^{−extra}).
  [[nodiscard]] grid range(double lo, double hi, int extra) const {
    const double s = std::ldexp(1.0, bits);
    return {static_cast<std::int64_t>(std::ceil(lo * s)),
            static_cast<std::int64_t>(std::floor(hi * s)), bits + extra};
  }
};
inline constexpr input_grids grids[] = {{"bf16", 7}, {"fp32", 20}};

/// The output directory and the manifest under construction.
struct writer {
  std::filesystem::path dir;
  nlohmann::json cases = nlohmann::json::array();

  /// Writes `values` as `<case>/<name>.npy` in double (references, weights) or float (inputs,
  /// exact by construction) and returns the relative path.
  template <class T>
  std::string array(const std::string& case_dir, const std::string& name,
                    const std::vector<double>& values, std::vector<std::size_t> shape) {
    std::filesystem::create_directories(dir / case_dir);
    const std::string rel = case_dir + "/" + name + ".npy";
    std::vector<T> v(values.begin(), values.end());
    hybridcache::state::npy::save<T>((dir / rel).string(), v, std::move(shape));
    return rel;
  }
};

/// Manifest entry for one expected array: the reference file (float64), its bound weights
/// (float64, the condition-like sums M) and the depth model: depth(i) = per_token·t(i) + extra,
/// t(i) = 1 + the index along `time_axis` (or `steps` when the array has no time axis), and
/// store_steps(i) = t(i).
inline nlohmann::json expected_entry(const std::string& ref, const std::string& weight,
                                     std::vector<std::size_t> shape, double per_token, double extra,
                                     int time_axis, std::size_t steps) {
  nlohmann::json j = {{"reference", ref},     {"bound_weight", weight},
                      {"shape", shape},       {"depth_per_token", per_token},
                      {"depth_extra", extra}, {"steps", steps}};
  j["time_axis"] = time_axis < 0 ? nlohmann::json(nullptr) : nlohmann::json(time_axis);
  return j;
}

/// Manifest entry for an array compared exactly (integers, bytes, index lists): every element of
/// the candidate must equal the reference (after conversion to double, exact for integers below
/// 2⁵³), with the same element count.
inline nlohmann::json exact_entry(const std::string& ref, std::vector<std::size_t> shape) {
  return {{"reference", ref}, {"compare", "exact"}, {"shape", shape}};
}

/// True for an entry compared exactly (no bound weights).
inline bool is_exact(const nlohmann::json& e) {
  return e.contains("compare") && e.at("compare") == "exact";
}

/// The derived tolerance of every element of one expected array (manifest entry `e`, reference
/// values `ref`, bound weights `weight`) under the candidate's error model.
inline std::vector<double> tolerances(const nlohmann::json& e, std::span<const double> ref,
                                      std::span<const double> weight,
                                      const hybridcache::state::error_model& m) {
  const auto shape = e.at("shape").get<std::vector<std::size_t>>();
  const double per = e.at("depth_per_token").get<double>();
  const double extra = e.at("depth_extra").get<double>();
  const auto steps = e.at("steps").get<std::size_t>();
  std::size_t inner = 1, extent = 1;
  const bool timed = !e.at("time_axis").is_null();
  if (timed) {
    const auto ax = e.at("time_axis").get<std::size_t>();
    extent = shape.at(ax);
    for (std::size_t i = ax + 1; i < shape.size(); ++i) inner *= shape[i];
  }
  std::vector<double> tol(ref.size());
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double t =
        timed ? static_cast<double>((i / inner) % extent + 1) : static_cast<double>(steps);
    tol[i] = hybridcache::state::element_tolerance(weight[i], per * t + extra, t, ref[i], m);
  }
  return tol;
}

}  // namespace hybridcache_cli::vectors
