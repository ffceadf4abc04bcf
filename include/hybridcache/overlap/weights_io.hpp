#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// The plain-text overlap-weights format read by `hybridcache plan` / `baselines` and by engines
/// that keep their histogram outside C++.
///
/// Format: numbers separated by any whitespace (spaces, tabs, newlines); the i-th number
/// (0-based) is the weight of overlap depth i+1, so the count of numbers is the prefix length N.
/// `#` starts a comment that runs to the end of the line. Weights need not sum to 1 (they are
/// normalised) but must be finite and ≥ 0. Example (N = 5, most requests reuse all 5 tokens):
/// @code{.txt}
///   # depth 1..5
///   0 0.1 0 0.2
///   0.7
/// @endcode

#include <charconv>
#include <cmath>
#include <cstddef>
#include <istream>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Parses the weights format of the file comment from `text`.
/// A NUL or any other byte outside the format is part of a token and makes it "not a number"
/// (nothing after it is silently ignored); error messages quote at most 32 bytes of the token,
/// escaped (`detail::excerpt`).
/// @throws invalid_argument naming `weights[i]` for a token that is not a finite number ≥ 0,
///         and `weights` when there is no number at all.
inline std::vector<double> parse_weights(std::string_view text) {
  std::vector<double> w;
  std::size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    if (ch == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v') {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < text.size() && text[end] != '#' && text[end] != ' ' && text[end] != '\t' &&
           text[end] != '\n' && text[end] != '\r' && text[end] != '\f' && text[end] != '\v') {
      ++end;
    }
    const std::string_view token = text.substr(i, end - i);
    double x = 0.0;
    const char* first = token.data();
    if (!token.empty() && token.front() == '+') ++first;  // from_chars rejects a leading '+'
    const auto [ptr, ec] = std::from_chars(first, token.data() + token.size(), x);
    const std::string name = detail::indexed("weights", w.size());
    if (ec == std::errc::result_out_of_range && ptr == token.data() + token.size()) {
      throw invalid_argument(name, detail::excerpt(token), "out of the range of a double");
    }
    if (ec != std::errc() || ptr != token.data() + token.size()) {
      // The token is caller bytes (possibly binary, possibly huge): bounded and escaped.
      throw invalid_argument(name, detail::excerpt(token), "not a number");
    }
    if (!std::isfinite(x) || x < 0.0)
      detail::throw_invalid(name, x, "weights must be finite and >= 0");
    w.push_back(x);
    i = end;
  }
  if (w.empty()) detail::throw_invalid("weights", "[]", "no numbers in the input");
  return w;
}

/// Reads the whole stream and parses it with `parse_weights`.
inline std::vector<double> read_weights(std::istream& in) {
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_weights(text);
}

HYBRIDCACHE_NAMESPACE_END
