#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The library's exception types. Every public function that can reject its input throws
/// `hybridcache::error` or a subtype, with a message that names the argument and its value,
/// e.g. `hybridcache: invalid argument 'weights[3]' = nan: weights must be finite and >= 0`.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "hybridcache/config.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Base of every exception the library throws.
class error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An argument was rejected. `argument()` names it (e.g. `"weights[3]"`), `value()` is its value
/// as text, and `what()` adds the reason.
class invalid_argument : public error {
 public:
  invalid_argument(std::string_view argument, std::string_view value, std::string_view why)
      : error(compose(argument, value, why)), argument_(argument), value_(value) {}

  [[nodiscard]] const std::string& argument() const noexcept { return argument_; }
  [[nodiscard]] const std::string& value() const noexcept { return value_; }

 private:
  static std::string compose(std::string_view argument, std::string_view value,
                             std::string_view why) {
    std::string s = "hybridcache: invalid argument '";
    s.append(argument).append("' = ").append(value);
    if (!why.empty()) s.append(": ").append(why);
    return s;
  }
  std::string argument_;
  std::string value_;
};

/// A bounded resource (a pool, a budget) cannot satisfy the request.
class capacity_error : public error {
 public:
  using error::error;
};

/// A lookup named something that does not exist (an unknown namespace, a missing entry that the
/// caller required to exist).
class not_found_error : public error {
 public:
  using error::error;
};

/// A handle the library returned earlier no longer names a live object: the object was removed
/// and its slot may hold another one now (`state_policy` node ids, DESIGN §7). `argument()`
/// and `value()` as for `invalid_argument` (the handle, in decimal); `slot()` and `generation()`
/// are the handle's two parts, `current_generation()` the slot's generation now.
class stale_handle_error : public invalid_argument {
 public:
  stale_handle_error(std::string_view argument, std::uint64_t handle, std::uint64_t slot,
                     std::uint64_t generation, std::uint64_t current_generation)
      : invalid_argument(argument, std::to_string(handle),
                         "stale handle (slot " + std::to_string(slot) + ", generation " +
                             std::to_string(generation) + "; the slot is at generation " +
                             std::to_string(current_generation) +
                             " now): its object was removed and the slot may have been reused"),
        slot_(slot),
        generation_(generation),
        current_(current_generation) {}

  [[nodiscard]] std::uint64_t slot() const noexcept { return slot_; }
  [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
  [[nodiscard]] std::uint64_t current_generation() const noexcept { return current_; }

 private:
  std::uint64_t slot_;
  std::uint64_t generation_;
  std::uint64_t current_;
};

namespace detail {

/// Renders a value for an error message: numbers with full precision ("nan", "inf" spelled out),
/// strings quoted.
template <class T>
std::string to_display(const T& value) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    std::ostringstream os;
    os.precision(17);
    os << value;
    return os.str();
  } else if constexpr (std::is_same_v<T, bool>) {
    return value ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(value);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    std::string s = "\"";
    s.append(std::string_view(value)).append("\"");
    return s;
  } else {
    std::ostringstream os;
    os << value;
    return os.str();
  }
}

/// Throws `invalid_argument` for `argument` with `value` and the reason `why`.
template <class T>
[[noreturn]] void throw_invalid(std::string_view argument, const T& value, std::string_view why) {
  throw invalid_argument(argument, to_display(value), why);
}

/// Caller text for an error message, bounded and escaped: at most `max_chars` input bytes,
/// quoted, printable ASCII kept, `"` and `\` backslash-escaped, every other byte (control
/// characters, NUL, bytes ≥ 0x80) as `\xNN`, and `...` after the quote when the text was cut.
/// Never echoes raw binary or an unbounded input into a message.
inline std::string excerpt(std::string_view text, std::size_t max_chars = 32) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string s = "\"";
  const std::size_t n = text.size() < max_chars ? text.size() : max_chars;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      s.push_back('\\');
      s.push_back(static_cast<char>(c));
    } else if (c >= 0x20 && c < 0x7f) {
      s.push_back(static_cast<char>(c));
    } else {
      s.append("\\x").push_back(hex[c >> 4]);
      s.push_back(hex[c & 15]);
    }
  }
  s.push_back('"');
  if (n < text.size()) s.append("...");
  return s;
}

/// `name[index]`, for messages about one element of a sequence.
inline std::string indexed(std::string_view name, std::size_t index) {
  std::string s(name);
  s.append("[").append(std::to_string(index)).append("]");
  return s;
}

}  // namespace detail

HYBRIDCACHE_NAMESPACE_END
