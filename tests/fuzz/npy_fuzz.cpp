// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the .npy reader (npy::from_bytes, the in-memory form of npy::load, and the
// header check npy::detail::parse_header that `hybridcache verify`'s memory-mapped fast path
// shares; issue #21 item 6). Run by scripts/test.d/fuzz.sh. The input is the whole file.
//
// Properties (the target aborts when one fails): from_bytes either returns or throws
// `hybridcache::invalid_argument` — no other exception, no crash, no sanitizer report, no
// allocation beyond libFuzzer's -malloc_limit_mb — with a printable, bounded message; when it
// returns, the element count is ∏ shape computed independently in 128-bit arithmetic, count ·
// element size is exactly the bytes after the header, parse_header agrees, and float64 and uint8
// data re-encode (npy::encode) to the same data bytes.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <hybridcache/error.hpp>
#include <hybridcache/state/npy.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace npy = hybridcache::npy;

[[noreturn]] void die(const char* what, std::string_view msg) {
  std::fprintf(stderr, "npy_fuzz: %s: %.*s\n", what,
               static_cast<int>(msg.size() > 2000 ? 2000 : msg.size()), msg.data());
  std::abort();
}

void check_message(std::string_view msg) {
  if (msg.size() > 1024) die("message too long", msg);
  for (const char c : msg)
    if (c < 0x20 || c > 0x7e) die("non-printable byte in message", msg);
}

void check_accepted(std::string_view bytes, const npy::array& a) {
  __extension__ using u128 = unsigned __int128;
  u128 count = 1;
  for (const std::size_t d : a.shape) {
    count *= d;
    if (count > SIZE_MAX) die("accepted a shape whose count overflows", a.descr);
  }
  if (count != a.values.size()) die("value count != product of the shape", a.descr);
  const auto h = npy::detail::parse_header(bytes, "fuzz.npy");
  if (h.count != a.values.size() || h.shape != a.shape || h.descr != a.descr)
    die("parse_header disagrees with from_bytes", a.descr);
  if (static_cast<u128>(h.count) * h.element_bytes != bytes.size() - h.data_offset)
    die("data bytes != count * element size", a.descr);
  const std::string_view data = bytes.substr(h.data_offset);
  std::string again;
  if (a.descr == "<f8") {
    std::vector<double> v(a.values.size());
    if (!data.empty())  // shape (0,): no bytes, and memcpy may not take v.data() == nullptr
      std::memcpy(v.data(), data.data(), data.size());  // bit patterns, NaN payloads included
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!(v[i] != v[i]) && v[i] != a.values[i]) die("a float64 value changed", a.descr);
    again = npy::encode<double>(v, a.shape);
  } else if (a.descr == "|u1" || a.descr == "<u1") {
    const std::vector<std::uint8_t> v(a.values.begin(), a.values.end());
    again = npy::encode<std::uint8_t>(v, a.shape);
  } else {
    return;
  }
  const auto h2 = npy::detail::parse_header(again, "again");
  if (std::string_view(again).substr(h2.data_offset) != data)
    die("re-encoded data differ", a.descr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    const auto a = npy::from_bytes(bytes, "fuzz.npy");
    check_accepted(bytes, a);
  } catch (const hybridcache::invalid_argument& e) {
    check_message(e.what());
  } catch (const std::exception& e) {
    die("untyped exception", e.what());
  }
  return 0;
}
