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
/// always give the same file. Reading accepts any 1.0/2.0/3.0 header numpy writes for those dtypes
/// and converts to double. Big-endian or Fortran-order files are rejected with a message.
///
/// Files are untrusted (issue #21): `load` and `from_bytes` check every size in the header with
/// checked arithmetic against the bytes actually present before allocating anything, so a
/// hostile header can neither wrap the element count nor make the reader allocate more than the
/// file (see `from_bytes` for the limits); every rejection is `hybridcache::invalid_argument`
/// naming the file.

#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "hybridcache/checked.hpp"
#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/numeric.hpp"

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

/// Largest header length `load` accepts, in bytes (numpy.load's default `max_header_size`).
inline constexpr std::size_t max_header_bytes = 10000;
/// Most dimensions a shape may have (numpy's NPY_MAXDIMS since numpy 2.0).
inline constexpr std::size_t max_dims = 64;

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

[[noreturn]] inline void bad_file(std::string_view path, std::string_view why) {
  throw ::hybridcache::invalid_argument("npy file", ::hybridcache::detail::excerpt(path, 512), why);
}

/// What `parse_header` found: the dtype, shape and element count, where the data start and how
/// many bytes each element takes.
struct header_info {
  std::string descr;
  std::vector<std::size_t> shape;
  std::size_t count = 1;        ///< ∏ shape (1 for shape ()), checked
  std::size_t data_offset = 0;  ///< bytes before the data
  std::size_t element_bytes = 0;
};

/// Bytes per element of a supported dtype, 0 for any other.
inline std::size_t element_bytes_of(std::string_view descr) noexcept {
  if (descr == "<f8" || descr == "<i8" || descr == "<u8") return 8;
  if (descr == "<f4") return 4;
  if (descr == "<f2") return 2;
  if (descr == "|u1" || descr == "<u1") return 1;
  return 0;
}

/// A strict reader of the header's Python-literal dict (what `numpy.lib.format` accepts for the
/// supported dtypes): exactly the keys 'descr' (a string), 'fortran_order' (True/False) and
/// 'shape' (a tuple of non-negative decimal integers: "()", "(n,)", "(a, b)", "(a, b,)"), each
/// once, in any order, quoted with ' or ", separated by commas (a trailing one allowed); spaces,
/// tabs and newlines between tokens; nothing but them after the closing brace.
class header_parser {
 public:
  header_parser(std::string_view text, std::string_view path) : s_(text), path_(path) {}

  void parse(header_info& out) {
    bool have_descr = false, have_fortran = false, have_shape = false, fortran = false;
    expect('{', "the header dictionary must start with '{'");
    skip_ws();
    while (peek() != '}') {
      const std::string_view key = string_literal("a quoted key");
      skip_ws();
      expect(':', "expected ':' after a key");
      skip_ws();
      const auto once = [&](bool& seen) {
        if (seen)
          fail("has the key " + ::hybridcache::detail::excerpt(key) + " twice in its header");
        seen = true;
      };
      if (key == "descr") {
        once(have_descr);
        out.descr = std::string(string_literal("a quoted dtype"));
      } else if (key == "fortran_order") {
        once(have_fortran);
        fortran = boolean();
      } else if (key == "shape") {
        once(have_shape);
        shape(out.shape);
      } else {
        fail("has an unexpected key " + ::hybridcache::detail::excerpt(key) +
             " in its header (expected 'descr', 'fortran_order' and 'shape')");
      }
      skip_ws();
      if (peek() == ',') {
        ++i_;
        skip_ws();
      } else if (peek() != '}') {
        fail_at("expected ',' or '}' in the header dictionary");
      }
    }
    ++i_;  // '}'
    skip_ws();
    if (i_ != s_.size()) fail_at("has bytes after the dictionary in its header");
    if (!have_descr) fail("header lacks 'descr'");
    if (!have_fortran) fail("header lacks 'fortran_order'");
    if (!have_shape) fail("header lacks 'shape'");
    if (fortran) fail("is Fortran-ordered; save C-ordered arrays");
  }

 private:
  [[noreturn]] void fail(std::string_view why) const { bad_file(path_, why); }
  [[noreturn]] void fail_at(std::string_view why) const {
    std::string w(why);
    w.append(" at header byte ")
        .append(std::to_string(i_))
        .append(", near ")
        .append(::hybridcache::detail::excerpt(s_.substr(i_ < s_.size() ? i_ : s_.size())));
    bad_file(path_, w);
  }
  [[nodiscard]] char peek() const noexcept { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip_ws() noexcept {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r'))
      ++i_;
  }
  void expect(char c, std::string_view why) {
    if (i_ >= s_.size() || s_[i_] != c) fail_at(why);
    ++i_;
  }
  std::string_view string_literal(std::string_view what) {
    const char q = peek();
    if (q != '\'' && q != '"') fail_at(std::string("expected ") + std::string(what));
    const std::size_t b = ++i_;
    while (i_ < s_.size() && s_[i_] != q) {
      if (s_[i_] == '\\' || s_[i_] == '\n')
        fail_at("escapes and newlines are not allowed in a key");
      ++i_;
    }
    if (i_ >= s_.size()) fail_at("unterminated string in the header");
    return s_.substr(b, i_++ - b);
  }
  bool boolean() {
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    fail_at("'fortran_order' must be True or False");
  }
  void shape(std::vector<std::size_t>& dims) {
    expect('(', "malformed shape: expected '('");
    skip_ws();
    bool trailing_comma = false;
    while (peek() != ')') {
      if (dims.size() == max_dims)
        fail("has a shape of more than " + std::to_string(max_dims) + " dimensions");
      const std::size_t b = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      const std::string name = "shape[" + std::to_string(dims.size()) + "]";
      if (i_ == b) fail_at("malformed shape: " + name + " is not a non-negative integer");
      const std::string_view digits = s_.substr(b, i_ - b);
      if (digits.size() > 1 && digits[0] == '0')
        fail_at("malformed shape: " + name + " has a leading zero");
      std::size_t v = 0;
      const auto r = std::from_chars(digits.data(), digits.data() + digits.size(), v);
      if (r.ec != std::errc{})
        fail("has " + name + " = " + ::hybridcache::detail::excerpt(digits) +
             ", above the largest size " + std::to_string(SIZE_MAX));
      dims.push_back(v);
      skip_ws();
      trailing_comma = false;
      if (peek() == ',') {
        ++i_;
        trailing_comma = true;
        skip_ws();
      } else if (peek() != ')') {
        fail_at("malformed shape: expected ',' or ')'");
      }
    }
    // Python: "(3)" is the integer 3, not a tuple.
    if (dims.size() == 1 && !trailing_comma) fail_at("malformed shape: a 1-tuple needs a comma");
    ++i_;  // ')'
  }

  std::string_view s_;
  std::string_view path_;
  std::size_t i_ = 0;
};

/// Parses and checks the header of the .npy file `file` (its complete bytes): magic, version,
/// header length (≤ `max_header_bytes` and ≤ the bytes present), the dict (header_parser), the
/// dtype, and ∏ shape · element size (checked) = exactly the bytes after the header.
/// @throws invalid_argument naming `path` on any violation; allocates at most the header's
///         shape vector and dtype string.
inline header_info parse_header(std::string_view file, std::string_view path) {
  if (file.size() < 10)
    bad_file(path, "is truncated (" + std::to_string(file.size()) +
                       " bytes; a .npy file has at least 10)");
  if (file.substr(0, 6) != std::string_view("\x93NUMPY", 6))
    bad_file(path, "is not a .npy file (bad magic)");
  const auto u = [&](std::size_t i) {
    return static_cast<std::size_t>(static_cast<unsigned char>(file[i]));
  };
  std::size_t hlen = 0, off = 0;
  if (u(6) == 1) {
    hlen = u(8) | (u(9) << 8);
    off = 10;
  } else if (u(6) == 2 || u(6) == 3) {
    if (file.size() < 12) bad_file(path, "is truncated (no room for a 4-byte header length)");
    hlen = u(8) | (u(9) << 8) | (u(10) << 16) | (u(11) << 24);
    off = 12;
  } else {
    bad_file(path, "has an unsupported .npy version " + std::to_string(u(6)) + "." +
                       std::to_string(u(7)) + " (1.0, 2.0 and 3.0 are read)");
  }
  if (hlen > file.size() - off)
    bad_file(path, "has header length " + std::to_string(hlen) + " but only " +
                       std::to_string(file.size() - off) + " bytes follow the prefix");
  if (hlen > max_header_bytes)
    bad_file(path, "has header length " + std::to_string(hlen) + ", above the limit of " +
                       std::to_string(max_header_bytes) + " bytes (numpy.load's default)");
  header_info h;
  header_parser(file.substr(off, hlen), path).parse(h);
  h.element_bytes = element_bytes_of(h.descr);
  if (h.element_bytes == 0)
    bad_file(path, "has unsupported dtype " + ::hybridcache::detail::excerpt(h.descr) +
                       " (use <f2, <f4, <f8, <i8, <u8 or |u1)");
  h.data_offset = off + hlen;
  std::size_t need = 0;
  try {
    h.count = 1;
    for (std::size_t i = 0; i < h.shape.size(); ++i)
      h.count =
          checked_mul(h.count, h.shape[i], "count", ::hybridcache::detail::indexed("shape", i));
    need = checked_mul(h.count, h.element_bytes, "count", "element bytes");
  } catch (const invalid_argument& e) {
    std::string why = "has shape (";
    for (std::size_t i = 0; i < h.shape.size(); ++i)
      why.append(i == 0 ? "" : ", ").append(std::to_string(h.shape[i]));
    why.append(") of ").append(h.descr).append(" whose size overflows: ");
    why.append(e.argument()).append(" = ").append(e.value());
    bad_file(path, why);
  }
  const std::size_t have = file.size() - h.data_offset;
  if (need > have)
    bad_file(path, "needs " + std::to_string(need) + " data bytes for its shape and dtype " +
                       h.descr + " but has " + std::to_string(have));
  if (need < have)
    bad_file(path, "has " + std::to_string(have - need) +
                       " bytes after its data (a concatenated or corrupt file?)");
  return h;
}

template <class T>
void append_le(std::vector<double>& out, const char* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    T x;
    std::memcpy(&x, p + i * sizeof(T), sizeof(T));
    if constexpr (std::is_same_v<T, std::uint16_t>)
      out[i] = static_cast<double>(::hybridcache::detail::half_bits_to_float(x));
    else
      out[i] = static_cast<double>(x);
  }
}
}  // namespace detail

/// The bytes of a .npy file holding `values` with `shape` (numpy.save's layout; see the file
/// comment).
/// @throws invalid_argument if the shape's product overflows or does not match the value count.
template <class T>
[[nodiscard]] std::string encode(std::span<const T> values, const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t i = 0; i < shape.size(); ++i)
    n = checked_mul(n, shape[i], "shape product", ::hybridcache::detail::indexed("shape", i));
  if (n != values.size())
    ::hybridcache::detail::throw_invalid(
        "values.size()", values.size(),
        "must equal the product of the shape = " + std::to_string(n));
  std::string out = detail::header(detail::descr_of<T>(), shape);
  const std::size_t h = out.size();
  out.resize(checked_add(h, checked_mul(values.size(), sizeof(T), "values.size()", "sizeof(T)"),
                         "header bytes", "data bytes"));
  if (!values.empty()) std::memcpy(out.data() + h, values.data(), values.size() * sizeof(T));
  return out;
}

template <class T>
[[nodiscard]] std::string encode(const std::vector<T>& values,
                                 const std::vector<std::size_t>& shape) {
  return encode(std::span<const T>(values), shape);
}

/// Writes `values` with `shape` to `path` (numpy.save byte layout, `encode`).
/// @throws invalid_argument if the shape does not match the value count or the file cannot be
///         written.
template <class T>
void save(const std::string& path, std::span<const T> values, std::vector<std::size_t> shape) {
  const std::string bytes = encode(values, shape);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) detail::bad_file(path, "cannot be opened for writing");
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) detail::bad_file(path, "write failed");
}

template <class T>
void save(const std::string& path, const std::vector<T>& values, std::vector<std::size_t> shape) {
  save(path, std::span<const T>(values), std::move(shape));
}

/// Reads a complete .npy file held in memory (`bytes`) of a supported dtype (see the file
/// comment) into doubles. `name` labels the messages (a file name). Untrusted input is safe: the
/// header is parsed strictly (detail::header_parser), every size is checked arithmetic and is
/// compared with the bytes present before anything is allocated, so the result is at most
/// 8 doubles per byte of `bytes` and the largest other allocation is the header's shape.
/// Limits: header length ≤ `max_header_bytes`, at most `max_dims` dimensions, each dimension and
/// the element count ≤ SIZE_MAX, and exactly ∏ shape · element size data bytes.
/// @throws invalid_argument naming `name` on a truncated or malformed file, an unsupported dtype,
///         Fortran order, a size that overflows, or missing or extra data bytes.
inline array from_bytes(std::string_view bytes, std::string_view name) {
  const detail::header_info h = detail::parse_header(bytes, name);
  array a;
  a.descr = h.descr;
  a.shape = h.shape;
  a.values.resize(h.count);
  const char* p = bytes.data() + h.data_offset;
  if (a.descr == "<f4")
    detail::append_le<float>(a.values, p, h.count);
  else if (a.descr == "<f8")
    detail::append_le<double>(a.values, p, h.count);
  else if (a.descr == "<f2")
    detail::append_le<std::uint16_t>(a.values, p, h.count);
  else if (a.descr == "<i8")
    detail::append_le<std::int64_t>(a.values, p, h.count);
  else if (a.descr == "<u8")
    detail::append_le<std::uint64_t>(a.values, p, h.count);
  else
    detail::append_le<std::uint8_t>(a.values, p, h.count);
  return a;
}

/// Reads a `.npy` file of a supported dtype (see the file comment) into doubles: the file must be
/// a regular file; its bytes (as many as it has, whatever its header says) are read and handed
/// to `from_bytes`.
/// @throws invalid_argument naming the file on a missing or non-regular file, a read error, and
///         everything `from_bytes` rejects.
inline array load(const std::string& path) {
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) detail::bad_file(path, "cannot be opened (missing?)");
  if (!std::filesystem::is_regular_file(st)) detail::bad_file(path, "is not a regular file");
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) detail::bad_file(path, "cannot be opened: " + ec.message());
  if (size > max_allocation_bytes) detail::bad_file(path, "is larger than max_allocation_bytes");
  std::ifstream f(path, std::ios::binary);
  if (!f) detail::bad_file(path, "cannot be opened for reading");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<std::uintmax_t>(f.gcount()) != size)
    detail::bad_file(path, "changed size while being read");
  return from_bytes(bytes, path);
}

}  // namespace npy

HYBRIDCACHE_NAMESPACE_END
