#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `store::frozen_pool`: SparseX's frozen-block pool (SparseX §4.1–4.2) over an `lru_pool`.
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
/// Thread safety: all members may be called concurrently. Lock order: this pool's mutex, then
/// the underlying pool's. The underlying pool's release callback must not call this object.

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
namespace store {

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

  /// Inserts a knowledge-base block into the pool, freezes it and runs `resize`.
  /// @returns the pool's insert status (a frozen block that already existed stays frozen).
  insert_status insert(Key key, Value value, std::size_t bytes) {
    auto r = pool_.insert(std::move(key), std::move(value), bytes);
    if (r.pin) {
      std::lock_guard lock(mutex_);
      freeze_locked(std::move(r.pin));
    }
    resize();
    return r.status;
  }

  /// Freezes the pool entry for `key` (pins it for as long as it stays frozen).
  /// @returns false if the pool has no such entry.
  template <class K>
  bool freeze(const K& key) {
    handle h = pool_.find(key);
    if (!h) return false;
    std::lock_guard lock(mutex_);
    freeze_locked(std::move(h));
    return true;
  }

  /// Unfreezes `key`: the entry stays in the pool but becomes evictable by LRU.
  /// @returns whether it was frozen.
  template <class K>
  bool unfreeze(const K& key) {
    handle dropped;
    std::lock_guard lock(mutex_);
    auto it = find_frozen(key);
    if (it == frozen_.end()) return false;
    dropped = std::move(it->pin);
    frozen_.erase(it);
    return true;  // `dropped` unpins after the lock is released (declared before the guard)
  }

  /// Deletes `key` from the frozen pool and erases it from the underlying pool.
  template <class K>
  bool remove(const K& key) {
    handle dropped;
    bool was = false;
    {
      std::lock_guard lock(mutex_);
      auto it = find_frozen(key);
      if (it != frozen_.end()) {
        dropped = std::move(it->pin);
        frozen_.erase(it);
        was = true;
      }
    }
    dropped.reset();
    return pool_.erase(key) || was;
  }

  /// Looks `key` up in the underlying pool (pinning it for the caller) and, if it is frozen,
  /// counts one reference.
  template <class K>
  [[nodiscard]] handle hit(const K& key) {
    handle h = pool_.find(key);
    if (h) {
      std::lock_guard lock(mutex_);
      auto it = find_frozen(key);
      if (it != frozen_.end()) ++it->references;
    }
    return h;
  }

  /// While the pool's utilisation exceeds the threshold, deletes the least-referenced frozen
  /// block (ties: earliest frozen) and erases it from the pool. Memory still pinned by requests
  /// counts as freed for this loop (it is released when they finish). @returns blocks deleted.
  std::size_t resize() {
    std::vector<handle> dropped;
    std::vector<Key> victims;
    {
      std::lock_guard lock(mutex_);
      const pool_stats s = pool_.stats();
      const double cap = static_cast<double>(s.capacity);
      std::size_t used = s.used;
      while (!frozen_.empty() && static_cast<double>(used) > threshold_ * cap) {
        std::size_t best = 0;
        for (std::size_t i = 1; i < frozen_.size(); ++i) {
          const auto& a = frozen_[i];
          const auto& b = frozen_[best];
          if (a.references < b.references ||
              (a.references == b.references && a.sequence < b.sequence))
            best = i;
        }
        used -= frozen_[best].pin.bytes();
        victims.push_back(frozen_[best].pin.key());
        dropped.push_back(std::move(frozen_[best].pin));
        frozen_.erase(frozen_.begin() + static_cast<std::ptrdiff_t>(best));
      }
    }
    dropped.clear();
    for (const Key& k : victims) pool_.erase(k);
    return victims.size();
  }

  /// Number of frozen blocks.
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(mutex_);
    return frozen_.size();
  }
  /// Whether `key` is frozen.
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
  /// Bytes held by frozen blocks.
  [[nodiscard]] std::size_t frozen_bytes() const {
    std::lock_guard lock(mutex_);
    std::size_t b = 0;
    for (const auto& f : frozen_) b += f.pin.bytes();
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
  // few thousand), and resize needs the minimum over all of them anyway.
  template <class K>
  typename std::vector<frozen_entry>::iterator find_frozen(const K& key) {
    KeyEqual eq;
    for (auto it = frozen_.begin(); it != frozen_.end(); ++it)
      if (eq(it->pin.key(), key)) return it;
    return frozen_.end();
  }
  template <class K>
  typename std::vector<frozen_entry>::const_iterator find_frozen(const K& key) const {
    KeyEqual eq;
    for (auto it = frozen_.begin(); it != frozen_.end(); ++it)
      if (eq(it->pin.key(), key)) return it;
    return frozen_.end();
  }

  void freeze_locked(handle h) {
    auto it = find_frozen(h.key());
    if (it != frozen_.end()) return;  // already frozen; `h` unpins on return (lock held: the
                                      // pool's mutex is taken after ours, the documented order)
    frozen_.push_back(frozen_entry{std::move(h), 0, ++sequence_});
  }

  pool_type& pool_;
  double threshold_;
  mutable std::mutex mutex_;
  std::vector<frozen_entry> frozen_;
  std::uint64_t sequence_ = 0;
};

}  // namespace store
HYBRIDCACHE_NAMESPACE_END
