#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `frozen_pool`: SparseX's frozen-block pool (SparseX §4.1–4.2) over an `lru_pool`.
///
/// A frozen block is an ordinary pool entry (same memory, same accounting — SparseX: "does not
/// correspond to an independently preallocated GPU memory region; it shares the same physical
/// KV blocks") that the frozen pool keeps pinned, so it is never evicted when no request uses
/// it. The frozen pool records which entries are frozen and how often each was referenced
/// (`hit`). `resize()` implements the dynamic policy: while the underlying pool's utilisation
/// exceeds `threshold` (default 0.90, SparseX: "KV block utilization exceeding 90%"), the
/// least-referenced frozen blocks (ties: the earliest frozen) are deleted from the frozen pool
/// and erased from the underlying pool, releasing their memory (immediately, or when requests
/// that still pin them finish). Blocks can also be added and removed at run time (`freeze`,
/// `unfreeze`, `remove`), as SparseX's online APIs allow. `insert` = pool insert + freeze +
/// resize, the usual way to load knowledge-base blocks.
///
/// Identity: a frozen block is a pool *entry* (held by its pin), never just a key. If the entry
/// is erased from the pool directly and a fresh entry is inserted under the same key, the fresh
/// entry is not frozen (`is_frozen` says false, `freeze` pins it, `resize` never erases it); the
/// stale pin is dropped at the next mutating call, returning its bytes.
///
/// Thread safety: all members may be called concurrently; each runs entirely under this pool's
/// mutex (freeze, resize and is_frozen are atomic with respect to each other). Lock order: this
/// pool's mutex, then the underlying pool's (pins may be dropped while holding ours, so the
/// underlying pool's release callback must not call this object).

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/store/lru_pool.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Frozen-block pool over `lru_pool<Key, Value, KeyHash, KeyEqual>` (file comment).
template <class Key, class Value, class KeyHash = std::hash<Key>,
          class KeyEqual = std::equal_to<Key>>
class frozen_pool {
 public:
  using pool_type = lru_pool<Key, Value, KeyHash, KeyEqual>;
  using handle = typename pool_type::handle;

  /// @param pool the shared block pool (must outlive this object).
  /// @param threshold utilisation above which `resize` deletes frozen blocks, in (0, 1].
  /// @throws invalid_argument if `threshold` is not in (0, 1].
  explicit frozen_pool(pool_type& pool, double threshold = 0.9) : pool_(pool), threshold_(threshold) {
    if (!(threshold > 0.0 && threshold <= 1.0))
      hybridcache::detail::throw_invalid("threshold", threshold, "must be in (0, 1]");
  }
  frozen_pool(const frozen_pool&) = delete;
  frozen_pool& operator=(const frozen_pool&) = delete;

  /// Inserts a knowledge-base block into the pool, freezes it and runs `resize`, all under this
  /// pool's lock (no other frozen-pool call interleaves).
  /// @returns the pool's insert status (a frozen block that already existed stays frozen).
  insert_status insert(Key key, Value value, std::size_t bytes) {
    std::vector<handle> dropped;  // unpinned after the lock is released (declared before it)
    std::lock_guard lock(mutex_);
    purge_locked();
    auto r = pool_.insert(std::move(key), std::move(value), bytes);
    if (r.pin) freeze_locked(std::move(r.pin), dropped);
    resize_locked(dropped);
    return r.status;
  }

  /// Freezes the pool entry now indexed under `key` (pins it for as long as it stays frozen). A
  /// frozen entry that was erased from the pool and replaced by a fresh entry under the same key
  /// does not count: the fresh entry is frozen.
  /// @returns false if the pool has no such entry.
  template <class K>
  bool freeze(const K& key) {
    std::vector<handle> dropped;
    std::lock_guard lock(mutex_);
    purge_locked();
    handle h = pool_.find(key);  // under our lock: nothing between the lookup and the pin
    if (!h) return false;
    freeze_locked(std::move(h), dropped);
    return true;
  }

  /// Unfreezes `key`: the entry stays in the pool but becomes evictable by LRU.
  /// @returns whether it was frozen.
  template <class K>
  bool unfreeze(const K& key) {
    std::vector<handle> dropped;
    std::lock_guard lock(mutex_);
    purge_locked();
    auto it = find_frozen(key);
    if (it == frozen_.end()) return false;
    dropped.push_back(std::move(it->pin));
    frozen_.erase(it);
    return true;
  }

  /// Deletes `key` from the frozen pool and erases it from the underlying pool.
  /// @returns whether `key` was frozen or indexed.
  template <class K>
  bool remove(const K& key) {
    std::vector<handle> dropped;
    std::lock_guard lock(mutex_);
    purge_locked();
    auto it = find_frozen(key);
    if (it != frozen_.end()) {
      pool_.erase(it->pin);  // this entry, by identity
      dropped.push_back(std::move(it->pin));
      frozen_.erase(it);
      return true;
    }
    return pool_.erase(key);
  }

  /// Looks `key` up in the underlying pool (pinning it for the caller) and, if that entry is the
  /// frozen one, counts one reference.
  template <class K>
  [[nodiscard]] handle hit(const K& key) {
    std::lock_guard lock(mutex_);
    handle h = pool_.find(key);
    if (h) {
      for (auto& f : frozen_)
        if (f.pin.same_entry(h)) {
          ++f.references;
          break;
        }
    }
    return h;
  }

  /// While the pool's utilisation exceeds the threshold, deletes the least-referenced frozen
  /// block (ties: earliest frozen) and erases that entry (by identity) from the pool. Memory
  /// still pinned by requests counts as freed for this loop (it is released when they finish).
  /// Runs entirely under this pool's lock. @returns blocks deleted.
  std::size_t resize() {
    std::vector<handle> dropped;
    std::lock_guard lock(mutex_);
    purge_locked();
    return resize_locked(dropped);
  }

  /// Number of frozen blocks (entries still indexed in the pool).
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const auto& f : frozen_) n += f.pin.attached() ? 1 : 0;
    return n;
  }
  /// Whether the entry now indexed under `key` is frozen.
  template <class K>
  [[nodiscard]] bool is_frozen(const K& key) const {
    std::lock_guard lock(mutex_);
    return find_frozen(key) != frozen_.end();
  }
  /// References counted for a frozen `key` (0 if not frozen).
  template <class K>
  [[nodiscard]] std::uint64_t references(const K& key) const {
    std::lock_guard lock(mutex_);
    auto it = find_frozen(key);
    return it == frozen_.end() ? 0 : it->references;
  }
  /// Bytes held by frozen blocks (entries still indexed in the pool).
  [[nodiscard]] std::size_t frozen_bytes() const {
    std::lock_guard lock(mutex_);
    std::size_t b = 0;
    for (const auto& f : frozen_)
      if (f.pin.attached()) b += f.pin.bytes();
    return b;
  }
  [[nodiscard]] double threshold() const noexcept { return threshold_; }

 private:
  struct frozen_entry {
    handle pin;
    std::uint64_t references = 0;
    std::uint64_t sequence = 0;
  };

  // A linear scan: frozen pools hold knowledge-base blocks of one deployment (hundreds to a
  // few thousand), and resize needs the minimum over all of them anyway. Only entries still
  // indexed in the pool match: indexed keys are unique, so a key match among them is the entry
  // itself. A stale pin (its entry erased from the pool behind our back) never matches a key.
  template <class K>
  typename std::vector<frozen_entry>::iterator find_frozen(const K& key) {
    KeyEqual eq;
    for (auto it = frozen_.begin(); it != frozen_.end(); ++it)
      if (eq(it->pin.key(), key) && it->pin.attached()) return it;
    return frozen_.end();
  }
  template <class K>
  typename std::vector<frozen_entry>::const_iterator find_frozen(const K& key) const {
    KeyEqual eq;
    for (auto it = frozen_.begin(); it != frozen_.end(); ++it)
      if (eq(it->pin.key(), key) && it->pin.attached()) return it;
    return frozen_.end();
  }

  // Drops pins on entries that were erased from the pool directly (pool.erase/clear): they are
  // no longer frozen blocks, and keeping their pins would keep their bytes charged. Runs first in
  // every mutating call; the pins are released at once (allowed under our lock: the pool's mutex
  // comes second in the lock order).
  void purge_locked() {
    std::erase_if(frozen_, [](const frozen_entry& f) { return !f.pin.attached(); });
  }

  // `h` pins the pool's current entry for its key. Identity decides "already frozen".
  void freeze_locked(handle h, std::vector<handle>& dropped) {
    for (const auto& f : frozen_)
      if (f.pin.same_entry(h)) {
        dropped.push_back(std::move(h));  // already frozen: the extra pin goes
        return;
      }
    frozen_.push_back(frozen_entry{std::move(h), 0, ++sequence_});
  }

  std::size_t resize_locked(std::vector<handle>& dropped) {
    const pool_stats s = pool_.stats();
    const double cap = static_cast<double>(s.capacity);
    std::size_t used = s.used;
    std::size_t deleted = 0;
    while (!frozen_.empty() && static_cast<double>(used) > threshold_ * cap) {
      std::size_t best = 0;
      for (std::size_t i = 1; i < frozen_.size(); ++i) {
        const auto& a = frozen_[i];
        const auto& b = frozen_[best];
        if (a.references < b.references ||
            (a.references == b.references && a.sequence < b.sequence))
          best = i;
      }
      const std::size_t bytes = frozen_[best].pin.bytes();
      used = bytes < used ? used - bytes : 0;
      pool_.erase(frozen_[best].pin);  // this entry by identity, never a newer one with its key
      dropped.push_back(std::move(frozen_[best].pin));
      frozen_.erase(frozen_.begin() + static_cast<std::ptrdiff_t>(best));
      ++deleted;
    }
    return deleted;
  }

  pool_type& pool_;
  double threshold_;
  mutable std::mutex mutex_;
  std::vector<frozen_entry> frozen_;
  std::uint64_t sequence_ = 0;
};

HYBRIDCACHE_NAMESPACE_END
