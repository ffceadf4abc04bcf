// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>

#include <cstddef>
#include <cstdint>
#include <hybridcache/storage.hpp>

namespace hc = hybridcache;

namespace {
// A well-formed device storage policy (never dereferenced: it only hands out fake addresses).
struct fake_device_storage {
  using memory_space = hc::device_space;
  void* allocate(std::size_t, std::size_t) { return nullptr; }
  void deallocate(void*, std::size_t, std::size_t) {}
};
struct no_space {
  void* allocate(std::size_t, std::size_t) { return nullptr; }
  void deallocate(void*, std::size_t, std::size_t) {}
};
struct bad_space {
  using memory_space = int;
  void* allocate(std::size_t, std::size_t) { return nullptr; }
  void deallocate(void*, std::size_t, std::size_t) {}
};
struct no_deallocate {
  using memory_space = hc::host_space;
  void* allocate(std::size_t, std::size_t) { return nullptr; }
};
struct wrong_allocate_result {
  using memory_space = hc::host_space;
  int* allocate(std::size_t, std::size_t) { return nullptr; }
  void deallocate(void*, std::size_t, std::size_t) {}
};
}  // namespace

// Positive cases.
static_assert(hc::memory_space<hc::host_space>);
static_assert(hc::memory_space<hc::device_space>);
static_assert(hc::storage_policy<hc::host_heap>);
static_assert(hc::host_storage<hc::host_heap>);
static_assert(hc::storage_policy<fake_device_storage>);
static_assert(hc::device_storage<fake_device_storage>);
static_assert(hc::host_view<hc::vector_view<const float>>);
static_assert(hc::host_view<hc::matrix_view<double>>);
static_assert(hc::device_view<hc::matrix_view<float, hc::device_space>>);
static_assert(!hc::view<hc::buffer<int>>);  // owning containers are not views

// Negative cases: the concepts reject what they must.
static_assert(!hc::memory_space<int>);
static_assert(!hc::device_storage<hc::host_heap>);
static_assert(!hc::host_storage<fake_device_storage>);
static_assert(!hc::storage_policy<no_space>);
static_assert(!hc::storage_policy<bad_space>);
static_assert(!hc::storage_policy<no_deallocate>);
static_assert(!hc::storage_policy<wrong_allocate_result>);
static_assert(!hc::device_view<hc::vector_view<float>>);
static_assert(!hc::host_view<hc::vector_view<float, hc::device_space>>);
static_assert(!hc::view<int*>);

// Subsumption: an overload constrained by the refined concept wins over the base one.
namespace {
template <hc::view V>
constexpr int which(const V&) {
  return 0;
}
template <hc::device_view V>
constexpr int which(const V&) {
  return 2;
}
template <hc::host_view V>
constexpr int which(const V&) {
  return 1;
}
}  // namespace

TEST_CASE("overloads are chosen by memory space, not by fallback") {
  float x = 0;
  CHECK(which(hc::vector_view<float>(&x, {1})) == 1);
  CHECK(which(hc::vector_view<float, hc::device_space>(nullptr, {0})) == 2);
}

TEST_CASE("host_heap allocates aligned memory and buffer owns it") {
  hc::host_heap heap;
  void* p = heap.allocate(100, 256);
  REQUIRE(p != nullptr);
  CHECK(reinterpret_cast<std::uintptr_t>(p) % 256 == 0);
  heap.deallocate(p, 100, 256);

  hc::buffer<double> b(10);
  CHECK(b.size() == 10);
  CHECK(reinterpret_cast<std::uintptr_t>(b.data()) % 64 == 0);
  for (std::size_t i = 0; i < b.size(); ++i) CHECK(b[i] == 0.0);  // zero-filled
  b[3] = 2.5;
  hc::buffer<double> moved(std::move(b));
  CHECK(moved.size() == 10);
  CHECK(moved[3] == 2.5);
  CHECK(b.empty());  // NOLINT(bugprone-use-after-move): moved-from state is specified
  hc::buffer<double> assigned;
  assigned = std::move(moved);
  CHECK(assigned.span()[3] == 2.5);
  hc::buffer<double> zero(0);
  CHECK(zero.empty());
}
