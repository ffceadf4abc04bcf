// SPDX-License-Identifier: Apache-2.0
// npy::load / npy::from_bytes on untrusted files (issue #21 item 6). Every file is built byte for
// byte here from the .npy format specification (magic, version, little-endian header length, a
// Python-literal dict, raw data), independent of npy::save, and every rejection must be a
// hybridcache::invalid_argument naming the file, raised before any allocation larger than the
// file: this binary replaces the global operator new to record the largest single request (and
// refuses any above 64 MiB, so a regression fails the check instead of taking the memory).
#include <doctest/doctest.h>

#include <hybridcache/error.hpp>
#include <hybridcache/state/npy.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <vector>

namespace {
std::atomic<std::size_t> largest_request{0};
constexpr std::size_t refuse_above = std::size_t{64} << 20;

void* counted_alloc(std::size_t n) {
  std::size_t prev = largest_request.load(std::memory_order_relaxed);
  while (n > prev && !largest_request.compare_exchange_weak(prev, n)) {
  }
  if (n > refuse_above) throw std::bad_alloc();
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t n) { return counted_alloc(n); }
void* operator new[](std::size_t n) { return counted_alloc(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

namespace {

namespace npy = hybridcache::npy;

// A .npy file: magic, version `major`.0, the header length (2 bytes for 1.0, 4 for 2.0/3.0, or
// `hlen_override`), the header text, then `data`.
std::string npy_bytes(int major, const std::string& header, const std::string& data,
                      std::uint64_t hlen_override = UINT64_MAX) {
  std::string s = "\x93NUMPY";
  s += static_cast<char>(major);
  s += '\0';
  const std::uint64_t hlen = hlen_override == UINT64_MAX ? header.size() : hlen_override;
  const int width = major == 1 ? 2 : 4;
  for (int i = 0; i < width; ++i) s += static_cast<char>((hlen >> (8 * i)) & 0xff);
  return s + header + data;
}

std::string dict(const std::string& descr, const std::string& shape,
                 const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }\n";
}

std::string floats(std::size_t n) {
  std::string d(n * 4, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    const float f = static_cast<float>(i) + 0.5f;
    std::memcpy(d.data() + 4 * i, &f, 4);
  }
  return d;
}

std::string write_file(const std::string& name, const std::string& bytes) {
  const auto p = (std::filesystem::temp_directory_path() / ("hc_npy_test_" + name)).string();
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return p;
}

// load(path) must throw invalid_argument whose message contains the file name and `expect`, and
// allocate nothing larger than the file plus a small constant.
void check_rejected(const std::string& name, const std::string& bytes, const std::string& expect) {
  CAPTURE(name);
  const std::string p = write_file(name, bytes);
  largest_request = 0;
  std::string msg;
  try {
    (void)npy::load(p);
    msg = "(no exception)";
  } catch (const hybridcache::invalid_argument& e) {
    msg = std::string("invalid_argument: ") + e.what();
  } catch (const std::exception& e) {
    msg = std::string("untyped: ") + e.what();
  }
  const std::size_t largest = largest_request.load();
  INFO(msg);
  CHECK(msg.rfind("invalid_argument: ", 0) == 0);
  CHECK(msg.find("hc_npy_test_" + name) != std::string::npos);
  CHECK(msg.find(expect) != std::string::npos);
  CAPTURE(largest);
  CHECK(largest <= bytes.size() + 16384);  // + the stream buffer
  std::filesystem::remove(p);
}

}  // namespace

TEST_CASE("npy: a shape whose element count wraps is rejected (#21 item 6)") {
  // (2^63 + 512, 2): the product 2^64 + 1024 wraps to 1024, exactly the 1024 floats present.
  check_rejected("wrap.npy", npy_bytes(1, dict("<f4", "(9223372036854776320, 2)"), floats(1024)),
                 "overflows");
  // (2^62, 4) of <f8: elements fit (2^64 wraps only in bytes: 2^64 * 8).
  check_rejected("wrap_bytes.npy",
                 npy_bytes(1, dict("<f8", "(4611686018427387904, 2)"), std::string(64, '\0')),
                 "overflows");
}

TEST_CASE("npy: declared sizes are checked against the bytes present before allocating") {
  // A 4 KB file declaring 2^28 floats (1 GiB).
  check_rejected("big.npy", npy_bytes(1, dict("<f4", "(268435456,)"), floats(1000)),
                 "needs 1073741824 data bytes");
  // Format 2.0, header length 0xFFFFFFF0 (4 GiB) in a 100-byte file.
  check_rejected("hlen.npy", npy_bytes(2, dict("<f4", "(2,)"), floats(2), 0xFFFFFFF0u),
                 "header length 4294967280");
  // Header length within the file but past numpy's 10000-byte limit.
  check_rejected("hlen_cap.npy",
                 npy_bytes(2, dict("<f4", "(2,)") + std::string(20000, ' '), floats(2)), "10000");
  check_rejected("short_data.npy", npy_bytes(1, dict("<f8", "(3,)"), std::string(23, '\0')),
                 "needs 24 data bytes");
  check_rejected("trailing.npy", npy_bytes(1, dict("<f4", "(2,)"), floats(3)),
                 "4 bytes after its data");
}

TEST_CASE("npy: malformed dimensions are typed errors, never std::out_of_range or a scalar") {
  // 23 digits: above 2^64 (std::stoull threw std::out_of_range before).
  check_rejected("digits.npy", npy_bytes(1, dict("<f4", "(12345678901234567890123,)"), floats(1)),
                 "shape[0]");
  // '(a, b)' was read as shape () — a scalar — and the file's first float returned.
  check_rejected("letters.npy", npy_bytes(1, dict("<f4", "(a, b)"), floats(1)), "shape");
  check_rejected("minus.npy", npy_bytes(1, dict("<f4", "(-1,)"), floats(1)), "shape");
  check_rejected("no_comma.npy", npy_bytes(1, dict("<f4", "(3)"), floats(3)), "shape");
  check_rejected("unclosed.npy",
                 npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,", floats(3)),
                 "shape");
  std::string deep = "(";
  for (int i = 0; i < 65; ++i) deep += "1, ";
  check_rejected("ndim.npy", npy_bytes(1, dict("<f4", deep + ")"), floats(1)), "64 dimensions");
}

TEST_CASE("npy: header dictionary checks") {
  check_rejected("magic.npy", std::string("\x93NUMPZ\x01\x00\x02\x00{}", 12), "bad magic");
  check_rejected("version.npy", npy_bytes(4, dict("<f4", "(1,)"), floats(1)), "version 4");
  check_rejected("empty.npy", std::string("\x93NUMPY\x01", 7), "truncated");
  check_rejected("no_shape.npy",
                 npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, }\n", floats(1)),
                 "lacks 'shape'");
  check_rejected(
      "dup.npy",
      npy_bytes(1, "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (1,), }\n",
                floats(1)),
      "twice");
  check_rejected(
      "extra_key.npy",
      npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n", floats(1)),
      "unexpected key");
  check_rejected("dtype.npy", npy_bytes(1, dict(">f4", "(1,)"), floats(1)), "unsupported dtype");
  check_rejected("fortran.npy", npy_bytes(1, dict("<f4", "(1,)", "True"), floats(1)), "Fortran");
  check_rejected(
      "after.npy",
      npy_bytes(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x\n", floats(1)),
      "after the dictionary");
  check_rejected("binary.npy", npy_bytes(1, dict("\x01\xff", "(1,)"), floats(1)), "\\x01\\xff");
}

TEST_CASE("npy: valid headers numpy writes are read, from a file and from memory") {
  // Version 1.0 as numpy.save writes it, version 2.0, scalar shape (), a zero-size array, and the
  // keys in another order with double quotes and no trailing comma.
  const std::string cases[][3] = {
      {"v1", dict("<f4", "(2, 3)"), "6"},
      {"v2", dict("<f4", "(6,)"), "6"},
      {"scalar", dict("<f4", "()"), "1"},
      {"empty", dict("<f4", "(0, 5)"), "0"},
      {"order", "{\"shape\": (3, 2), \"fortran_order\": False, \"descr\": \"<f4\"}  \n", "6"}};
  for (const auto& c : cases) {
    CAPTURE(c[0]);
    const std::size_t n = std::stoul(c[2]);
    const std::string bytes = npy_bytes(c[0] == "v2" ? 2 : 1, c[1], floats(n));
    const std::string p = write_file(c[0] + ".npy", bytes);
    const auto a = npy::load(p);
    const auto b = npy::from_bytes(bytes, "memory");
    REQUIRE(a.size() == n);
    CHECK(a.descr == "<f4");
    CHECK(a.values == b.values);
    CHECK(a.shape == b.shape);
    for (std::size_t i = 0; i < n; ++i) CHECK(a.values[i] == static_cast<double>(i) + 0.5);
    std::filesystem::remove(p);
  }
  // An in-memory rejection names the caller's label.
  CHECK_THROWS_WITH_AS(npy::from_bytes(npy_bytes(1, dict("<f4", "(a, b)"), ""), "label.npy"),
                       doctest::Contains("label.npy"), hybridcache::invalid_argument);
  // encode() is save()'s bytes: numpy.save(np.zeros(3)), checked against numpy 2.4.
  const std::string e = npy::encode<double>(std::vector<double>(3, 0.0), {3});
  CHECK(e.size() == 128 + 24);
  CHECK(e.substr(0, 10) == std::string("\x93NUMPY\x01\x00\x76\x00", 10));
  // A directory is not a file.
  CHECK_THROWS_WITH_AS(npy::load(std::filesystem::temp_directory_path().string()),
                       doctest::Contains("not a regular file"), hybridcache::invalid_argument);
}
