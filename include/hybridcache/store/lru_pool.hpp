#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `lru_pool<Key, Value>`: a byte-budgeted, thread-safe LRU pool with reference-counted
/// pins, release callbacks and a COMB-style reserved budget.
///
/// Model (the reference model in tests/support/store_reference.hpp implements exactly this):
/// - Capacity C bytes, of which R are *reserved* for `entry_class::reserved` entries (COMB §4:
///   "the PIC manager reserves a portion of GPU memory" for position-independent caches).
///   Ordinary entries never use more than C − R bytes in total, so reserved entries always have
///   at least R bytes; reserved entries may borrow free shared space (up to C in total) and give
///   it back when ordinary entries need it.
/// - `used() + free() == capacity()` always; `used()` counts every entry whose memory is still
///   live: indexed entries, and erased entries that are still pinned.
/// - A pin (a `handle`) keeps its entry alive and unevictable. Only unpinned entries are in the
///   LRU lists (one per class); an entry goes to the most-recently-used end when its last pin
///   drops. So LRU order is "time since last use ended".
/// - `insert` makes room by evicting least-recently-used unpinned entries: for an ordinary entry
///   of b bytes, ordinary entries until used_ordinary + b ≤ C − R, then (only) reserved
///   entries that are borrowing until used + b ≤ C; for a reserved entry, reserved entries until
///   used + b ≤ C (it never evicts ordinary entries). If that cannot succeed because of pins,
///   nothing is evicted and the status is `no_space`. HYPIC §4.4 uses one such LRU pool per kind
///   of state ("each pool maintains an independent capacity budget and follows an LRU policy").
/// - The release callback runs exactly once per entry, when its memory can be freed: when it is
///   evicted, or when it was erased/cleared and its last pin is dropped. It runs after the
///   pool's lock is released (so it may call the pool), in the thread that caused the release,
///   before that call returns. The entry's bytes are returned to the budget at that moment.
///   The value itself is destroyed after the callback and after every handle is gone — exactly
///   once (it lives in a reference-counted node).
///
/// Thread safety: every member and every handle operation may be used concurrently; one mutex
/// per pool. A handle may outlive its pool (the shared state stays alive while handles exist).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Budget class of an entry.
enum class entry_class : std::uint8_t {
  ordinary = 0,  ///< uses the shared budget C − R
  reserved = 1,  ///< position-independent entries with the reserved budget R (COMB)
};

/// Why an entry's memory was released.
enum class release_reason : std::uint8_t {
  evicted,  ///< chosen by LRU to make room
  erased,   ///< removed by `erase` (or by a frozen pool's resize)
  cleared,  ///< removed by `clear` or by the pool's destruction
};

/// Outcome of `lru_pool::insert`.
enum class insert_status : std::uint8_t {
  inserted,  ///< a new entry was created (the handle pins it)
  exists,    ///< an equal key was present; the handle pins the existing entry
  no_space,  ///< pinned entries prevent making room; nothing changed, the handle is empty
};

/// A snapshot of a pool's accounting.
struct pool_stats {
  std::size_t capacity = 0;
  std::size_t reserved = 0;           ///< R
  std::size_t used = 0;               ///< bytes of live entries (indexed or pinned-after-erase)
  std::size_t used_reserved = 0;      ///< part of `used` in `entry_class::reserved`
  std::size_t entries = 0;            ///< indexed entries
  std::size_t pinned_entries = 0;     ///< live entries with at least one pin
  std::uint64_t evictions = 0;        ///< entries released with `release_reason::evicted`
  std::uint64_t releases = 0;         ///< all releases (callbacks run)
  [[nodiscard]] std::size_t free() const noexcept { return capacity - used; }
};

/// Byte-budgeted LRU pool (file comment).
template <class Key, class Value, class KeyHash = std::hash<Key>,
          class KeyEqual = std::equal_to<Key>>
class lru_pool {
  struct node;
  struct state;

 public:
  using key_type = Key;
  using value_type = Value;
  /// Called once per released entry, outside the pool's lock.
  using release_callback = std::function<void(const Key&, Value&, release_reason)>;

  /// A pin on one entry: keeps it alive and unevictable until destroyed or `reset`. Copying a
  /// handle adds a pin. An empty handle (default, or from a miss) tests false.
  class handle {
   public:
    handle() = default;
    handle(const handle& o) : st_(o.st_), n_(o.n_) {
      if (n_) st_->add_pin(*n_);
    }
    handle(handle&& o) noexcept : st_(std::move(o.st_)), n_(std::move(o.n_)) {}
    handle& operator=(const handle& o) {
      if (this != &o) {
        handle tmp(o);
        swap(tmp);
      }
      return *this;
    }
    handle& operator=(handle&& o) noexcept {
      if (this != &o) {
        reset();
        st_ = std::move(o.st_);
        n_ = std::move(o.n_);
      }
      return *this;
    }
    ~handle() { reset(); }

    /// Drops the pin (the entry may then be evicted; if it was erased, it is released now).
    void reset() noexcept {
      if (n_) {
        auto st = std::move(st_);
        auto n = std::move(n_);
        st->drop_pin(std::move(n));
      }
    }
    void swap(handle& o) noexcept {
      std::swap(st_, o.st_);
      std::swap(n_, o.n_);
    }

    explicit operator bool() const noexcept { return n_ != nullptr; }
    [[nodiscard]] Value& value() const noexcept {
      HYBRIDCACHE_ASSERT(n_, "value() on an empty handle");
      return n_->value;
    }
    Value& operator*() const noexcept { return value(); }
    Value* operator->() const noexcept { return &value(); }
    [[nodiscard]] const Key& key() const noexcept {
      HYBRIDCACHE_ASSERT(n_, "key() on an empty handle");
      return n_->key;
    }
    [[nodiscard]] std::size_t bytes() const noexcept { return n_ ? n_->bytes : 0; }
    /// False once the entry was erased or cleared from the pool (it stays valid through this
    /// handle; a new entry with the same key is a different entry).
    [[nodiscard]] bool attached() const {
      if (!n_) return false;
      std::lock_guard lock(st_->mutex);
      return n_->attached;
    }
    /// True if both handles pin the same entry (identity, not key equality: an entry erased and
    /// re-inserted under the same key is a different entry). Two empty handles compare equal.
    [[nodiscard]] bool same_entry(const handle& o) const noexcept { return n_ == o.n_; }

   private:
    friend class lru_pool;
    handle(std::shared_ptr<state> st, std::shared_ptr<node> n)
        : st_(std::move(st)), n_(std::move(n)) {}  // pin already counted by the caller
    std::shared_ptr<state> st_;
    std::shared_ptr<node> n_;
  };

  /// Result of `insert`.
  struct insert_result {
    handle pin;
    insert_status status = insert_status::no_space;
  };

  /// A pool of `capacity` bytes with `reserved` of them reserved for `entry_class::reserved`.
  /// @throws invalid_argument if `reserved > capacity`.
  explicit lru_pool(std::size_t capacity, std::size_t reserved = 0,
                    release_callback on_release = {})
      : st_(std::make_shared<state>()) {
    if (reserved > capacity)
      hybridcache::detail::throw_invalid("reserved", reserved, "exceeds the pool capacity");
    st_->capacity = capacity;
    st_->reserved = reserved;
    st_->on_release = std::move(on_release);
  }
  lru_pool(const lru_pool&) = delete;
  lru_pool& operator=(const lru_pool&) = delete;
  /// Clears the pool (entries still pinned are released when their last handle goes).
  ~lru_pool() { clear(); }

  /// Inserts `key → value` charging `bytes`, evicting LRU entries as the file comment says.
  /// @returns a pin on the new (or existing) entry and the status.
  /// @throws invalid_argument if `bytes` can never fit its class (> C − R for ordinary, > C for
  /// reserved).
  insert_result insert(Key key, Value value, std::size_t bytes,
                       entry_class cls = entry_class::ordinary) {
    const std::size_t limit =
        cls == entry_class::ordinary ? st_->capacity - st_->reserved : st_->capacity;
    if (bytes > limit)
      hybridcache::detail::throw_invalid("bytes", bytes,
                                         cls == entry_class::ordinary
                                             ? "larger than the pool's unreserved capacity"
                                             : "larger than the pool's capacity");
    std::vector<std::shared_ptr<node>> released;
    insert_result result;
    try {  // evictions already made must still get their callbacks if the insert throws
      std::lock_guard lock(st_->mutex);
      auto it = st_->map.find(key);
      if (it != st_->map.end()) {
        st_->pin_locked(*it->second);
        result.pin = handle(st_, it->second);
        result.status = insert_status::exists;
        return result;
      }
      if (!st_->make_room(bytes, cls, released)) {
        result.status = insert_status::no_space;
        return result;
      }
      auto n = std::make_shared<node>(std::move(key), std::move(value), bytes, cls);
      st_->map.emplace(n->key, n);  // may throw: account only afterwards
      st_->used += bytes;
      if (cls == entry_class::reserved) st_->used_reserved += bytes;
      n->pins = 1;
      ++st_->pinned;
      result.pin = handle(st_, std::move(n));
      result.status = insert_status::inserted;
    } catch (...) {
      st_->run_callbacks(released);
      throw;
    }
    st_->run_callbacks(released);
    return result;
  }

  /// Pins and returns the entry for `key` (marks it used), or an empty handle.
  template <class K>
  [[nodiscard]] handle find(const K& key) {
    std::lock_guard lock(st_->mutex);
    auto it = st_->map.find(key);
    if (it == st_->map.end()) return handle{};
    st_->pin_locked(*it->second);
    return handle(st_, it->second);
  }

  /// True if `key` is indexed (does not pin or touch).
  template <class K>
  [[nodiscard]] bool contains(const K& key) const {
    std::lock_guard lock(st_->mutex);
    return st_->map.find(key) != st_->map.end();
  }

  /// Number of pins on the entry for `key` (0 if absent or unpinned).
  template <class K>
  [[nodiscard]] std::size_t pins(const K& key) const {
    std::lock_guard lock(st_->mutex);
    auto it = st_->map.find(key);
    return it == st_->map.end() ? 0 : it->second->pins;
  }

  /// Removes `key` from the index. Its memory is released (callback, bytes) now if unpinned,
  /// else when the last pin drops. @returns whether it was indexed.
  template <class K>
  bool erase(const K& key) {
    std::vector<std::shared_ptr<node>> released;
    {
      std::lock_guard lock(st_->mutex);
      auto it = st_->map.find(key);
      if (it == st_->map.end()) return false;
      st_->detach_locked(it, release_reason::erased, released);
    }
    st_->run_callbacks(released);
    return true;
  }

  /// Removes the entry `h` pins from the index, if it is still indexed; a different entry that
  /// now holds the same key is left alone (identity, not key). Memory is released as for
  /// `erase(key)`. @returns whether `h`'s entry was indexed.
  bool erase(const handle& h) {
    if (!h || h.st_ != st_) return false;
    std::vector<std::shared_ptr<node>> released;
    {
      std::lock_guard lock(st_->mutex);
      if (!h.n_->attached) return false;
      auto it = st_->map.find(h.n_->key);
      HYBRIDCACHE_ASSERT(it != st_->map.end() && it->second == h.n_, "attached entry not indexed");
      st_->detach_locked(it, release_reason::erased, released);
    }
    st_->run_callbacks(released);
    return true;
  }

  /// Removes every entry (pinned ones are released when their last pin drops).
  void clear() {
    std::vector<std::shared_ptr<node>> released;
    {
      std::lock_guard lock(st_->mutex);
      while (!st_->map.empty())
        st_->detach_locked(st_->map.begin(), release_reason::cleared, released);
    }
    st_->run_callbacks(released);
  }

  /// Evicts LRU unpinned entries (ordinary first, then reserved) until `used() <= target`, or
  /// nothing evictable is left. @returns the number evicted.
  std::size_t shrink_to(std::size_t target) {
    std::vector<std::shared_ptr<node>> released;
    {
      std::lock_guard lock(st_->mutex);
      for (auto cls : {entry_class::ordinary, entry_class::reserved}) {
        auto& lru = st_->lru[static_cast<int>(cls)];
        while (st_->used > target && !lru.empty())
          st_->detach_locked(st_->map.find(lru.back()->key), release_reason::evicted, released);
      }
    }
    const std::size_t n = released.size();
    st_->run_callbacks(released);
    return n;
  }

  [[nodiscard]] pool_stats stats() const {
    std::lock_guard lock(st_->mutex);
    pool_stats s;
    s.capacity = st_->capacity;
    s.reserved = st_->reserved;
    s.used = st_->used;
    s.used_reserved = st_->used_reserved;
    s.entries = st_->map.size();
    s.pinned_entries = st_->pinned;
    s.evictions = st_->evictions;
    s.releases = st_->releases;
    return s;
  }
  [[nodiscard]] std::size_t capacity() const noexcept { return st_->capacity; }
  [[nodiscard]] std::size_t reserved() const noexcept { return st_->reserved; }
  [[nodiscard]] std::size_t used() const {
    std::lock_guard lock(st_->mutex);
    return st_->used;
  }
  [[nodiscard]] std::size_t free() const { return capacity() - used(); }
  [[nodiscard]] std::size_t size() const {
    std::lock_guard lock(st_->mutex);
    return st_->map.size();
  }
  /// used / capacity (0 for a zero-capacity pool).
  [[nodiscard]] double utilisation() const {
    std::lock_guard lock(st_->mutex);
    return st_->capacity == 0 ? 0.0
                              : static_cast<double>(st_->used) /
                                    static_cast<double>(st_->capacity);
  }

 private:
  struct node {
    node(Key k, Value v, std::size_t b, entry_class c)
        : key(std::move(k)), value(std::move(v)), bytes(b), cls(c) {}
    Key key;
    Value value;
    std::size_t bytes;
    entry_class cls;
    std::size_t pins = 0;
    bool attached = true;   // indexed in the map
    bool released = false;  // bytes returned, callback scheduled
    bool in_lru = false;
    release_reason reason = release_reason::evicted;
    node* lru_prev = nullptr;  // towards the most recently used end
    node* lru_next = nullptr;  // towards the least recently used end
  };

  // Intrusive doubly linked LRU list (no allocation on pin/unpin): head = most recently used.
  struct lru_list {
    node* head = nullptr;
    node* tail = nullptr;
    [[nodiscard]] bool empty() const noexcept { return head == nullptr; }
    [[nodiscard]] node* back() const noexcept { return tail; }
    void erase(node& n) noexcept {
      (n.lru_prev ? n.lru_prev->lru_next : head) = n.lru_next;
      (n.lru_next ? n.lru_next->lru_prev : tail) = n.lru_prev;
      n.lru_prev = n.lru_next = nullptr;
    }
    void push_front(node& n) noexcept {
      n.lru_prev = nullptr;
      n.lru_next = head;
      (head ? head->lru_prev : tail) = &n;
      head = &n;
    }
  };

  struct state {
    mutable std::mutex mutex;
    std::unordered_map<Key, std::shared_ptr<node>, KeyHash, KeyEqual> map;
    lru_list lru[2];  // per class; only attached, unpinned entries
    std::size_t capacity = 0;
    std::size_t reserved = 0;
    std::size_t used = 0;
    std::size_t used_reserved = 0;
    std::size_t pinned = 0;  // live entries with pins > 0
    std::uint64_t evictions = 0;
    std::uint64_t releases = 0;
    release_callback on_release;

    void lru_remove(node& n) noexcept {
      if (n.in_lru) {
        lru[static_cast<int>(n.cls)].erase(n);
        n.in_lru = false;
      }
    }
    void lru_push_front(node& n) {
      lru[static_cast<int>(n.cls)].push_front(n);
      n.in_lru = true;
    }

    void pin_locked(node& n) {
      if (n.pins++ == 0) {
        ++pinned;
        lru_remove(n);
      }
    }
    void add_pin(node& n) {
      std::lock_guard lock(mutex);
      pin_locked(n);
    }

    void release_locked(const std::shared_ptr<node>& n,
                        std::vector<std::shared_ptr<node>>& released) {
      n->released = true;
      used -= n->bytes;
      if (n->cls == entry_class::reserved) used_reserved -= n->bytes;
      ++releases;
      if (n->reason == release_reason::evicted) ++evictions;
      released.push_back(n);
    }

    // Removes the entry at `it` from the index; releases it now if unpinned.
    void detach_locked(typename decltype(map)::iterator it, release_reason why,
                       std::vector<std::shared_ptr<node>>& released) {
      std::shared_ptr<node> n = std::move(it->second);
      map.erase(it);
      n->attached = false;
      n->reason = why;
      lru_remove(*n);
      if (n->pins == 0) release_locked(n, released);
    }

    void drop_pin(std::shared_ptr<node> n) noexcept {
      std::vector<std::shared_ptr<node>> released;
      {
        std::lock_guard lock(mutex);
        HYBRIDCACHE_ASSERT(n->pins > 0, "pin count underflow");
        if (--n->pins == 0) {
          --pinned;
          if (n->attached) {
            lru_push_front(*n);
          } else if (!n->released) {
            release_locked(n, released);
          }
        }
      }
      run_callbacks(released);
    }

    // Plans evictions for an insert of `bytes` of class `cls`; commits them only if the insert
    // will then fit. See the file comment for the rule.
    bool make_room(std::size_t bytes, entry_class cls,
                   std::vector<std::shared_ptr<node>>& released) {
      const std::size_t shared_cap = capacity - reserved;
      std::size_t free_ord = 0;  // ordinary bytes to evict
      std::size_t n_ord = 0;     // number of ordinary victims (LRU prefix from the back)
      // Invariants used_ord ≤ C − R and used ≤ C make `cap − used` exact; comparing `bytes`
      // against the free space (never `used + bytes`, which wraps for bytes near 2⁶⁴) keeps the
      // budget arithmetic exact for every size.
      if (cls == entry_class::ordinary) {
        const std::size_t used_ord = used - used_reserved;
        if (bytes > shared_cap - used_ord) {
          const std::size_t need = bytes - (shared_cap - used_ord);
          for (node* it = lru[0].tail; it != nullptr && free_ord < need; it = it->lru_prev) {
            free_ord += it->bytes;
            ++n_ord;
          }
          if (free_ord < need) return false;
        }
      }
      std::size_t free_res = 0;
      std::size_t n_res = 0;
      const std::size_t used_after = used - free_ord;
      if (bytes > capacity - used_after) {
        const std::size_t need = bytes - (capacity - used_after);
        for (node* it = lru[1].tail; it != nullptr && free_res < need; it = it->lru_prev) {
          free_res += it->bytes;
          ++n_res;
        }
        if (free_res < need) return false;
      }
      for (std::size_t i = 0; i < n_ord; ++i)
        detach_locked(map.find(lru[0].back()->key), release_reason::evicted, released);
      for (std::size_t i = 0; i < n_res; ++i)
        detach_locked(map.find(lru[1].back()->key), release_reason::evicted, released);
      return true;
    }

    void run_callbacks(std::vector<std::shared_ptr<node>>& released) noexcept {
      if (on_release) {
        for (auto& n : released) {
          try {
            on_release(n->key, n->value, n->reason);
          } catch (...) {
            // A throwing callback must not corrupt the pool; its exception is dropped.
          }
        }
      }
      released.clear();
    }
  };

  std::shared_ptr<state> st_;
};

HYBRIDCACHE_NAMESPACE_END
