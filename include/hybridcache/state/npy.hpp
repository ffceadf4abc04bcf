#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// NumPy `.npy` (format 1.0) files for the reference kit's golden vectors and candidates:
/// little-endian, C-order arrays of float16 (`<f2`), float32 (`<f4`), float64 (`<f8`),
/// int64 (`<i8`), uint64 (`<u8`), uint16 (`<u2`, bf16 bit patterns) and uint8 (`|u1`).
///
/// Writing is deterministic: the header is exactly what `numpy.save` writes for the same array
/// ("{'descr': ..., 'fortran_order': False, 'shape': (...), }" padded with spaces to a multiple of
/// 64 bytes and ended by '\n'), and the data are the raw little-endian bytes, so the same values
/// always give the same file. Reading accepts any 1.0/2.0 header numpy writes for those dtypes and
/// converts to double. Big-endian or Fortran-order files are rejected with a message.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/rope/half.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN
namespace npy {

static_assert(std::endian::native == std::endian::little,
              "npy.hpp writes little-endian files by copying memory; port it for big-endian hosts");

/// An array read from a `.npy` file: its dtype string, shape, and the values as double.
struct array {
  std::string descr;               ///< e.g. "<f4"
  std::vector<std::size_t> shape;  ///< C order
  std::vector<double> values;      ///< every element converted exactly to double
  [[nodiscard]] std::size_t size() const noexcept { return values.size(); }
};

namespace detail {

template <class T>
constexpr std::string_view descr_of() noexcept {
  if constexpr (std::is_same_v<T, float>)
    return "<f4";
  else if constexpr (std::is_same_v<T, double>)
    return "<f8";
  else if constexpr (std::is_same_v<T, std::int64_t>)
    return "<i8";
  else if constexpr (std::is_same_v<T, std::uint64_t>)
    return "<u8";
  else if constexpr (std::is_same_v<T, std::uint16_t>)
    return "<u2";
  else if constexpr (std::is_same_v<T, std::uint8_t>)
    return "|u1";
  else
    static_assert(sizeof(T) == 0, "npy: unsupported element type");
}

inline std::string header(std::string_view descr, std::span<const std::size_t> shape) {
  std::string d = "{'descr': '" + std::string(descr) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    d += std::to_string(shape[i]);
    d += (shape.size() == 1 || i + 1 < shape.size()) ? ", " : "";
  }
  if (shape.size() == 1) d.pop_back();  // numpy writes "(n,)"
  d += "), }";
  const std::size_t total = 10 + d.size() + 1;
  d.append((64 - total % 64) % 64, ' ');
  d += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  const auto len = static_cast<std::uint16_t>(d.size());
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>(len >> 8);
  return out + d;
}

[[noreturn]] inline void bad_file(const std::string& path, std::string_view why) {
  ::hybridcache::detail::throw_invalid("npy file", path, why);
}

}  // namespace detail

/// Writes `values` with `shape` to `path` (numpy.save byte layout).
/// @throws invalid_argument if the shape does not match the value count or the file cannot be
///         written.
template <class T>
void save(const std::string& path, std::span<const T> values, std::vector<std::size_t> shape) {
  std::size_t n = 1;
  for (auto s : shape) n *= s;
  if (n != values.size())
    ::hybridcache::detail::throw_invalid(
        "values.size()", values.size(),
        "must equal the product of the shape = " + std::to_string(n));
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) detail::bad_file(path, "cannot be opened for writing");
  const std::string h = detail::header(detail::descr_of<T>(), shape);
  f.write(h.data(), static_cast<std::streamsize>(h.size()));
  f.write(reinterpret_cast<const char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(T)));
  if (!f) detail::bad_file(path, "write failed");
}

template <class T>
void save(const std::string& path, const std::vector<T>& values, std::vector<std::size_t> shape) {
  save(path, std::span<const T>(values), std::move(shape));
}

/// Reads a `.npy` file of a supported dtype (see the file comment) into doubles.
/// @throws invalid_argument naming the file on a missing file, a malformed header, an unsupported
///         dtype, Fortran order or truncated data.
inline array load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) detail::bad_file(path, "cannot be opened (missing?)");
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    detail::bad_file(path, "is not a .npy file (bad magic)");
  std::size_t hlen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    f.read(reinterpret_cast<char*>(b), 2);
    hlen = b[0] | (std::size_t{b[1]} << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    hlen = b[0] | (std::size_t{b[1]} << 8) | (std::size_t{b[2]} << 16) | (std::size_t{b[3]} << 24);
  } else {
    detail::bad_file(path, "has an unsupported .npy version");
  }
  std::string h(hlen, '\0');
  if (!f.read(h.data(), static_cast<std::streamsize>(hlen)))
    detail::bad_file(path, "truncated header");
  array a;
  const auto field = [&](std::string_view key) -> std::size_t {
    const auto p = h.find(key);
    if (p == std::string::npos) detail::bad_file(path, "header lacks " + std::string(key));
    return p + key.size();
  };
  {
    std::size_t p = h.find('\'', field("'descr':"));
    const std::size_t q = h.find('\'', p + 1);
    a.descr = h.substr(p + 1, q - p - 1);
  }
  if (h.find("True", field("'fortran_order':")) < h.find(',', field("'fortran_order':")))
    detail::bad_file(path, "is Fortran-ordered; save C-ordered arrays");
  {
    std::size_t p = h.find('(', field("'shape':"));
    const std::size_t q = h.find(')', p);
    std::string s = h.substr(p + 1, q - p - 1);
    std::size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && (s[i] == ' ' || s[i] == ',')) ++i;
      if (i >= s.size()) break;
      std::size_t j = i;
      while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
      if (j == i) detail::bad_file(path, "has a malformed shape");
      a.shape.push_back(std::stoull(s.substr(i, j - i)));
      i = j;
    }
  }
  std::size_t n = 1;
  for (auto s : a.shape) n *= s;
  const auto read_as = [&]<class T>(T) {
    std::vector<T> raw(n);
    if (!f.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(n * sizeof(T))))
      detail::bad_file(path, "has fewer data bytes than its shape needs");
    a.values.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, std::uint16_t>) {
        a.values[i] = static_cast<double>(::hybridcache::detail::half_bits_to_float(raw[i]));
      } else {
        a.values[i] = static_cast<double>(raw[i]);
      }
    }
  };
  if (a.descr == "<f4")
    read_as(float{});
  else if (a.descr == "<f8")
    read_as(double{});
  else if (a.descr == "<f2")
    read_as(std::uint16_t{});
  else if (a.descr == "<i8")
    read_as(std::int64_t{});
  else if (a.descr == "<u8")
    read_as(std::uint64_t{});
  else if (a.descr == "|u1" || a.descr == "<u1")
    read_as(std::uint8_t{});
  else
    detail::bad_file(path,
                     "has unsupported dtype " + a.descr + " (use <f2, <f4, <f8, <i8, <u8 or |u1)");
  return a;
}

}  // namespace npy

namespace state {  // deprecated spellings (docs/design/namespaces.md): use hybridcache::X
namespace detail = ::hybridcache::detail;
namespace npy = ::hybridcache::npy;
}  // namespace state
HYBRIDCACHE_NAMESPACE_END
