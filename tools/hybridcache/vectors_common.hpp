// SPDX-License-Identifier: Apache-2.0
// Shared pieces of `hybridcache vectors` / `verify`: the portable PRNG and exact input grids, the
// case writer (npy files + manifest entries, written without following symbolic links below the
// output directory: write_below) and the manifest's tolerance description.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <hybridcache/error.hpp>
#include <hybridcache/numeric.hpp>
#include <hybridcache/state/npy.hpp>
#include <hybridcache/state/tolerance.hpp>
#include <nlohmann/json.hpp>

namespace hybridcache_cli::vectors {

/// 3 (hybridcache 0.2): every file says what it is — inputs `<case>/in_<name>.npy`, references
/// `<case>/ref_<key>.npy`, bound weights `<case>/bound_<key>.npy`, and the candidate outputs
/// `verify` reads are `<case>/out_<key>.npy` (candidate_file). The arrays are those of format 2.
/// 2 (hybridcache 0.1): adds sparse-Q scores/selection/layer plans and segment/namespace keys,
/// and the "exact" comparison (byte equality) for integer and key arrays; inputs had plain names
/// (`keys.npy`) that a 0.1 candidate output could share (the RoPE cases' realigned `keys.npy`).
inline constexpr int format_version = 3;
/// The oldest manifest format `verify` reads: 2, whose references and bound weights it finds
/// through the manifest's paths as in format 3 (deprecated: `verify` prints a note).
inline constexpr int oldest_format_version = 2;

/// File-name prefixes: no vectors file is named like a candidate output, in any case, because
/// every vectors file but manifest.json starts with one of the first three and every candidate
/// output with the fourth (tested by tools/tests/scripts/vector_names.cmake).
inline constexpr std::string_view input_prefix = "in_";
inline constexpr std::string_view reference_prefix = "ref_";
inline constexpr std::string_view bound_prefix = "bound_";
inline constexpr std::string_view candidate_prefix = "out_";

/// The candidate output of expected array `key` of case `case_name`, relative to the candidate
/// directory: `<case>/out_<key>.npy` (e.g.
/// `rope/realign/half_split/full/unscaled/bf16/out_keys.npy`).
inline std::string candidate_file(std::string_view case_name, std::string_view key) {
  std::string f(case_name);
  f += '/';
  f += candidate_prefix;
  f += key;
  f += ".npy";
  return f;
}

/// `dir / candidate_file(case_name, key)`: where `--candidate-out` writes a candidate output.
inline std::filesystem::path candidate_path(const std::filesystem::path& dir,
                                            std::string_view case_name, std::string_view key) {
  return dir / candidate_file(case_name, key);
}

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

/// Writes `bytes` to the file `file` below the directory `root` (`file` = root / relative path),
/// creating the directories in between, without following a symbolic link anywhere below `root`
/// (issue #21 item 11): each directory is entered with openat(O_NOFOLLOW | O_DIRECTORY) from its
/// parent's descriptor and the file is opened with O_NOFOLLOW | O_NONBLOCK, so a link planted
/// inside `root` — to a file or to a directory — is refused, never written through, and so is a
/// special file (a FIFO, a device) or a file with other hard links. `root` itself may be a link
/// (the user named it). `option` ("--out", "--candidate-out") labels the messages.
/// @throws hybridcache::invalid_argument naming `option` and the offending path.
inline void write_below(const std::filesystem::path& root, const std::filesystem::path& file,
                        std::string_view bytes, std::string_view option) {
  namespace fs = std::filesystem;
  const auto refuse = [&](const fs::path& at, std::string_view why) {
    throw hybridcache::invalid_argument(option, hybridcache::detail::excerpt(at.string(), 512),
                                        why);
  };
  const auto sys = [&](const fs::path& at, const char* what) {
    refuse(at, std::string(what) + ": " + std::strerror(errno));
  };
  const fs::path rel = file.lexically_relative(root);
  if (rel.empty() || rel.begin()->string() == ".." || rel.filename().empty())
    refuse(file, "is not a file below " + root.string());
  struct fd_guard {
    int fd = -1;
    ~fd_guard() {
      if (fd >= 0) ::close(fd);
    }
  } dir;
  dir.fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir.fd < 0) sys(root, "cannot be opened as a directory");
  fs::path at = root;
  const fs::path parent = rel.parent_path();
  const auto is_link = [&](const std::string& name) {
    struct stat st {};
    return fstatat(dir.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
  };
  for (const auto& part : parent) {
    const std::string name = part.string();
    if (name.empty() || name == ".") continue;
    at /= part;
    if (::mkdirat(dir.fd, name.c_str(), 0777) != 0 && errno != EEXIST) sys(at, "cannot be created");
    const int next =
        ::openat(dir.fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) {
      if (is_link(name)) refuse(at, "is a symbolic link; refusing to write through it");
      sys(at, "cannot be opened as a directory");
    }
    ::close(dir.fd);
    dir.fd = next;
  }
  at = file;
  const std::string name = rel.filename().string();
  fd_guard out;
  out.fd = ::openat(dir.fd, name.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC,
                    0666);
  if (out.fd < 0) {
    if (is_link(name)) refuse(at, "is a symbolic link; refusing to write through it");
    sys(at, "cannot be opened for writing");
  }
  struct stat st {};
  if (::fstat(out.fd, &st) != 0) sys(at, "cannot be inspected");
  if (!S_ISREG(st.st_mode)) refuse(at, "is not a regular file; refusing to write to it");
  if (st.st_nlink > 1)
    refuse(at, "has " + std::to_string(st.st_nlink) +
                   " hard links; refusing to overwrite a file shared with another path");
  if (::ftruncate(out.fd, 0) != 0) sys(at, "cannot be truncated");
  while (!bytes.empty()) {
    const ssize_t w = ::write(out.fd, bytes.data(), bytes.size());
    if (w < 0) {
      if (errno == EINTR) continue;
      sys(at, "write failed");
    }
    bytes.remove_prefix(static_cast<std::size_t>(w));
  }
  const int fd = std::exchange(out.fd, -1);
  if (::close(fd) != 0) sys(at, "write failed on close");
}

/// Writes `values` with `shape` as a .npy file (npy::encode) through `write_below`.
template <class T>
void save_below(const std::filesystem::path& root, const std::filesystem::path& file,
                const std::vector<T>& values, std::vector<std::size_t> shape,
                std::string_view option) {
  write_below(root, file, hybridcache::npy::encode<T>(values, shape), option);
}

/// The output directory (`--out`) and the manifest under construction. Files are written only
/// through `input`, `reference` and `bound`, which prefix their names (in_, ref_, bound_), so no
/// vectors file can be named like a candidate output (out_).
struct writer {
  std::filesystem::path dir;
  nlohmann::json cases = nlohmann::json::array();

  /// Writes input `name` of case `case_dir` as `<case>/in_<name>.npy` (float inputs are exact by
  /// construction; integer and byte inputs as int64 / uint8) and returns the relative path.
  template <class T>
  std::string input(const std::string& case_dir, const std::string& name,
                    const std::vector<double>& values, std::vector<std::size_t> shape) {
    return array<T>(case_dir, input_prefix, name, values, std::move(shape));
  }
  /// Writes the reference of expected array `key` as `<case>/ref_<key>.npy` (float64, or int64 /
  /// uint8 for exact entries) and returns the relative path.
  template <class T>
  std::string reference(const std::string& case_dir, const std::string& key,
                        const std::vector<double>& values, std::vector<std::size_t> shape) {
    return array<T>(case_dir, reference_prefix, key, values, std::move(shape));
  }
  /// Writes the bound weights of expected array `key` as `<case>/bound_<key>.npy` (float64) and
  /// returns the relative path.
  std::string bound(const std::string& case_dir, const std::string& key,
                    const std::vector<double>& values, std::vector<std::size_t> shape) {
    return array<double>(case_dir, bound_prefix, key, values, std::move(shape));
  }

 private:
  template <class T>
  std::string array(const std::string& case_dir, std::string_view prefix, const std::string& name,
                    const std::vector<double>& values, std::vector<std::size_t> shape) {
    const std::string rel = case_dir + "/" + std::string(prefix) + name + ".npy";
    std::vector<T> v(values.begin(), values.end());
    save_below<T>(dir, dir / rel, v, std::move(shape), "--out");
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
                                      const hybridcache::error_model& m) {
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
    tol[i] = hybridcache::element_tolerance(weight[i], per * t + extra, t, ref[i], m);
  }
  return tol;
}

}  // namespace hybridcache_cli::vectors
