#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Independent reference model of `frozen_pool` over the `lru_reference` model of the
/// underlying pool (tests/support/store_reference.hpp). A frozen block is an *entry* — the value
/// id the model gives every insert — never a key:
/// - every mutating call first forgets frozen ids whose entry is no longer indexed (erased from
///   the pool directly), dropping their pins;
/// - `freeze(k)` pins the entry indexed under k; if that id is already frozen the extra pin drops;
/// - `resize()`: while the estimated use exceeds threshold·C, the frozen id with the fewest
///   references (ties: earliest frozen) is forgotten, its entry erased and its pin dropped; the
///   estimate subtracts that entry's bytes (memory pinned by requests counts as freed);
/// - `is_frozen(k)`, `references(k)`: the entry indexed under k is a frozen id;
/// - `size()`, `frozen_bytes()`: over frozen ids whose entry is indexed.
/// Written as plain scans over a vector; shares nothing with the implementation.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/store_reference.hpp"

namespace hc_test {

class frozen_reference {
 public:
  frozen_reference(std::size_t capacity, double threshold)
      : pool(capacity, 0), c_(capacity), threshold_(threshold) {}

  struct frozen_t {
    int id;
    std::uint64_t references;
    std::uint64_t sequence;
  };

  lru_reference pool;
  std::vector<frozen_t> frozen;

  // --- the pool used directly (ordinary chat entries, pins dropped at once) ---
  int pool_insert(int key, int id, std::size_t bytes) {
    int got = -1;
    const int st = pool.insert(key, id, bytes, false, got);
    if (st != 2) pool.unpin(got);
    return st;
  }
  bool pool_erase(int key) { return pool.erase(key); }

  // --- the frozen pool ---
  int insert(int key, int id, std::size_t bytes) {
    purge();
    int got = -1;
    const int st = pool.insert(key, id, bytes, false, got);
    if (st != 2) freeze_id(got);
    resize_body();
    return st;
  }
  bool freeze(int key) {
    purge();
    const int id = pool.find(key);
    if (id < 0) return false;
    freeze_id(id);
    return true;
  }
  bool unfreeze(int key) {
    purge();
    const std::size_t i = frozen_index_of_key(key);
    if (i == frozen.size()) return false;
    const int id = frozen[i].id;
    frozen.erase(frozen.begin() + static_cast<std::ptrdiff_t>(i));
    pool.unpin(id);
    return true;
  }
  bool remove(int key) {
    purge();
    const std::size_t i = frozen_index_of_key(key);
    if (i != frozen.size()) {
      const int id = frozen[i].id;
      frozen.erase(frozen.begin() + static_cast<std::ptrdiff_t>(i));
      pool.erase(key);
      pool.unpin(id);
      return true;
    }
    return pool.erase(key);
  }
  /// A hit whose handle the caller drops at once. @returns whether the pool had `key`.
  bool hit(int key) {
    const int id = pool.find(key);
    if (id < 0) return false;
    for (auto& f : frozen)
      if (f.id == id) {
        ++f.references;
        break;
      }
    pool.unpin(id);
    return true;
  }
  std::size_t resize() {
    purge();
    return resize_body();
  }

  bool is_frozen(int key) { return frozen_index_of_key(key) != frozen.size(); }
  std::uint64_t references(int key) {
    const std::size_t i = frozen_index_of_key(key);
    return i == frozen.size() ? 0 : frozen[i].references;
  }
  std::size_t size() {
    std::size_t n = 0;
    for (const auto& f : frozen) n += entry(f.id) && entry(f.id)->attached ? 1 : 0;
    return n;
  }
  std::size_t frozen_bytes() {
    std::size_t b = 0;
    for (const auto& f : frozen)
      if (const ref_entry* e = entry(f.id); e && e->attached) b += e->bytes;
    return b;
  }

 private:
  const ref_entry* entry(int id) const {
    for (const auto& e : pool.live)
      if (e.id == id) return &e;
    return nullptr;
  }
  std::size_t frozen_index_of_key(int key) {
    const ref_entry* e = pool.attached(key);
    if (!e) return frozen.size();
    for (std::size_t i = 0; i < frozen.size(); ++i)
      if (frozen[i].id == e->id) return i;
    return frozen.size();
  }
  void purge() {
    for (std::size_t i = 0; i < frozen.size();) {
      const ref_entry* e = entry(frozen[i].id);
      if (e == nullptr || !e->attached) {
        const int id = frozen[i].id;
        frozen.erase(frozen.begin() + static_cast<std::ptrdiff_t>(i));
        pool.unpin(id);
      } else {
        ++i;
      }
    }
  }
  void freeze_id(int id) {
    for (const auto& f : frozen)
      if (f.id == id) {
        pool.unpin(id);  // already frozen: the extra pin drops
        return;
      }
    frozen.push_back({id, 0, ++sequence_});
  }
  std::size_t resize_body() {
    std::size_t used = pool.used();
    std::size_t deleted = 0;
    while (!frozen.empty() && static_cast<double>(used) > threshold_ * static_cast<double>(c_)) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < frozen.size(); ++i)
        if (frozen[i].references < frozen[best].references ||
            (frozen[i].references == frozen[best].references &&
             frozen[i].sequence < frozen[best].sequence))
          best = i;
      const int id = frozen[best].id;
      const ref_entry* e = entry(id);
      used -= e->bytes < used ? e->bytes : used;
      const int key = e->key;
      frozen.erase(frozen.begin() + static_cast<std::ptrdiff_t>(best));
      pool.erase(key);  // indexed (purged above), so the entry under `key` is this one
      pool.unpin(id);
      ++deleted;
    }
    return deleted;
  }

  std::size_t c_;
  double threshold_;
  std::uint64_t sequence_ = 0;
};

}  // namespace hc_test
