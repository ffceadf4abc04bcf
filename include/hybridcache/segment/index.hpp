#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// `segment_index<Value, Hash>`: a concurrent map from (namespace, token ids) to
/// `Value` — the hash table of COMB's PIC manager (COMB §3, "looks up whether their PICaches
/// exist through a hash table") and the lookup step of SparseX's virtual-hash match (SparseX
/// §4.3: "reusable only when both token IDs and the extra key match").
///
/// The digest K(ns, x) (keys.hpp, `segment_key`) only *addresses* a slot. A hit is reported only
/// after the stored namespace bytes and token ids compare equal to the query's, so a forged or
/// accidental digest collision can make a lookup slower, never wrong: with `constant_hash` every
/// entry shares one digest and every lookup is still exact (tested).
///
/// Structure: 64 shards chosen by the digest's high bits, each an open-addressing table with
/// linear probing and backward-shift deletion (no tombstones), guarded by a `std::shared_mutex`
/// (finds share it; insert/erase take it exclusively). Each entry is one allocation holding its
/// digest, namespace (shared encoding) and a copy of its token ids, so a verified find touches
/// the slot array and one node.
///
/// Thread safety: every member function may be called concurrently. `find` returns a *copy* of
/// the value (use a `std::shared_ptr` or a pool handle as `Value` to share large blocks; the copy
/// keeps the block alive after a concurrent `erase`). `visit` runs a callback under the shard's
/// shared lock instead of copying.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "hybridcache/config.hpp"
#include "hybridcache/error.hpp"
#include "hybridcache/segment/digest.hpp"
#include "hybridcache/segment/hash.hpp"
#include "hybridcache/segment/keys.hpp"
#include "hybridcache/segment/namespace_key.hpp"
#include "hybridcache/types.hpp"

HYBRIDCACHE_NAMESPACE_BEGIN

/// Verified concurrent index keyed by (namespace, tokens). See the file comment.
/// @tparam Value the stored value (copyable for `find`; movable for `insert`).
/// @tparam Hash  a `hash_policy` (default `xxh3_hash`, randomly keyed per index).
template <class Value, hash_policy Hash = xxh3_hash>
class segment_index {
 public:
  using value_type = Value;
  using hash_type = Hash;
  static constexpr std::size_t shard_count = 64;

  /// An index with a default-constructed policy (for `xxh3_hash`: a fresh random secret).
  segment_index() = default;
  /// An index using `hash` (e.g. `constant_hash` in tests, or a shared-secret policy).
  explicit segment_index(Hash hash) : hash_(std::move(hash)) {}

  segment_index(const segment_index&) = delete;
  segment_index& operator=(const segment_index&) = delete;
  ~segment_index() {
    for (auto& sh : shards_) sh.destroy_all();
  }

  /// The digest this index uses for (ns, tokens): `segment_key(hash, ns, tokens, kind)`.
  [[nodiscard]] digest key_of(const namespace_key& ns, std::span<const token_id> tokens,
                              segment_kind kind = segment_kind::position_independent) const {
    return segment_key(hash_, ns, tokens, kind);
  }

  /// Inserts (ns, tokens) → value if absent.
  /// @returns true if inserted, false if an equal (ns, tokens) entry already existed (then the
  /// stored value is left unchanged and `value` is dropped).
  bool insert(const namespace_key& ns, std::span<const token_id> tokens, Value value) {
    return insert_at(key_of(ns, tokens), ns, tokens, std::move(value), false);
  }
  /// Inserts or replaces. @returns true if a new entry was created.
  bool insert_or_assign(const namespace_key& ns, std::span<const token_id> tokens, Value value) {
    return insert_at(key_of(ns, tokens), ns, tokens, std::move(value), true);
  }

  /// @returns a copy of the value stored for exactly (ns, tokens), or nothing.
  [[nodiscard]] std::optional<Value> find(const namespace_key& ns,
                                          std::span<const token_id> tokens) const {
    return find_at(key_of(ns, tokens), ns, tokens);
  }
  /// As `find`, with the digest precomputed by `key_of` (a wrong digest only causes a miss).
  [[nodiscard]] std::optional<Value> find_at(const digest& d, const namespace_key& ns,
                                             std::span<const token_id> tokens) const {
    const shard& sh = shard_of(d);
    std::shared_lock lock(sh.mutex);
    const node* n = sh.lookup(d, ns, tokens);
    if (n == nullptr) return std::nullopt;
    return n->value;
  }
  /// Calls `f(const Value&)` under the shard's shared lock if (ns, tokens) is present.
  /// `f` must not call back into this index. @returns whether it was found.
  template <class F>
  bool visit(const namespace_key& ns, std::span<const token_id> tokens, F&& f) const {
    const digest d = key_of(ns, tokens);
    const shard& sh = shard_of(d);
    std::shared_lock lock(sh.mutex);
    const node* n = sh.lookup(d, ns, tokens);
    if (n == nullptr) return false;
    f(n->value);
    return true;
  }
  /// True if (ns, tokens) is present.
  [[nodiscard]] bool contains(const namespace_key& ns, std::span<const token_id> tokens) const {
    return visit(ns, tokens, [](const Value&) {});
  }

  /// Removes (ns, tokens). @returns true if it was present.
  bool erase(const namespace_key& ns, std::span<const token_id> tokens) {
    const digest d = key_of(ns, tokens);
    shard& sh = shard_of(d);
    node* victim = nullptr;
    {
      std::unique_lock lock(sh.mutex);
      victim = sh.remove(d, ns, tokens);
    }
    if (victim == nullptr) return false;
    node::destroy(victim);  // outside the lock: the value's destructor may be heavy
    return true;
  }

  /// Number of entries (a snapshot under concurrent modification).
  [[nodiscard]] std::size_t size() const noexcept {
    std::size_t n = 0;
    for (const auto& sh : shards_) n += sh.count.load(std::memory_order_relaxed);
    return n;
  }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }

  /// Removes every entry.
  void clear() {
    for (auto& sh : shards_) {
      std::unique_lock lock(sh.mutex);
      sh.destroy_all();
    }
  }

  /// The hash policy (e.g. to compute `block_keys` with the same secret).
  [[nodiscard]] const Hash& hash() const noexcept { return hash_; }

 private:
  // One entry: header followed in the same allocation by the token ids.
  struct node {
    digest key;
    std::shared_ptr<const std::string> ns;
    std::size_t n_tokens;
    Value value;

    node(const digest& d, std::shared_ptr<const std::string> nsb, std::size_t n, Value&& v)
        : key(d), ns(std::move(nsb)), n_tokens(n), value(std::move(v)) {}

    static constexpr std::size_t header_bytes =
        (sizeof(node) + alignof(token_id) - 1) / alignof(token_id) * alignof(token_id);

    [[nodiscard]] const token_id* tokens() const noexcept {
      return reinterpret_cast<const token_id*>(reinterpret_cast<const unsigned char*>(this) +
                                               header_bytes);
    }
    [[nodiscard]] token_id* tokens() noexcept {
      return reinterpret_cast<token_id*>(reinterpret_cast<unsigned char*>(this) + header_bytes);
    }

    static node* create(const digest& d, const namespace_key& nsk,
                        std::span<const token_id> toks, Value&& v) {
      const std::size_t bytes = header_bytes + toks.size() * sizeof(token_id);
      void* raw = ::operator new(bytes, std::align_val_t{alignof(node)});
      node* n = nullptr;
      try {
        n = ::new (raw) node(d, nsk.shared_bytes(), toks.size(), std::move(v));
      } catch (...) {
        ::operator delete(raw, std::align_val_t{alignof(node)});
        throw;
      }
      token_id* dst = n->tokens();
      for (std::size_t i = 0; i < toks.size(); ++i) ::new (dst + i) token_id(toks[i]);
      return n;
    }
    static void destroy(node* n) noexcept {
      n->~node();
      ::operator delete(static_cast<void*>(n), std::align_val_t{alignof(node)});
    }

    [[nodiscard]] bool matches(const digest& d, const namespace_key& nsk,
                               std::span<const token_id> toks) const noexcept {
      if (key != d || n_tokens != toks.size()) return false;
      if (ns != nsk.shared_bytes() && *ns != nsk.bytes()) return false;
      const token_id* mine = tokens();
      for (std::size_t i = 0; i < n_tokens; ++i)
        if (mine[i] != toks[i]) return false;
      return true;
    }
  };

  struct slot {
    digest key;
    node* entry = nullptr;  // nullptr: empty
  };

  struct alignas(64) shard {
    mutable std::shared_mutex mutex;
    std::vector<slot> slots;  // size 0 or a power of two
    std::atomic<std::size_t> count{0};

    [[nodiscard]] std::size_t mask() const noexcept { return slots.size() - 1; }
    [[nodiscard]] static std::size_t home(const digest& d) noexcept {
      return static_cast<std::size_t>(d.lo);
    }

    [[nodiscard]] const node* lookup(const digest& d, const namespace_key& ns,
                                     std::span<const token_id> toks) const noexcept {
      if (slots.empty()) return nullptr;
      for (std::size_t i = home(d) & mask();; i = (i + 1) & mask()) {
        const slot& s = slots[i];
        if (s.entry == nullptr) return nullptr;
        if (s.key == d && s.entry->matches(d, ns, toks)) return s.entry;
      }
    }

    // Exclusive lock held. Returns the slot index of a match or of the empty slot ending the
    // probe run.
    std::size_t probe(const digest& d, const namespace_key& ns, std::span<const token_id> toks,
                      bool& found) const noexcept {
      for (std::size_t i = home(d) & mask();; i = (i + 1) & mask()) {
        const slot& s = slots[i];
        if (s.entry == nullptr) {
          found = false;
          return i;
        }
        if (s.key == d && s.entry->matches(d, ns, toks)) {
          found = true;
          return i;
        }
      }
    }

    void grow() {  // strong guarantee: a failed allocation leaves the table unchanged
      std::vector<slot> bigger(slots.empty() ? 16 : slots.size() * 2, slot{});
      const std::size_t m = bigger.size() - 1;
      for (const slot& s : slots) {
        if (s.entry == nullptr) continue;
        std::size_t i = home(s.key) & m;
        while (bigger[i].entry != nullptr) i = (i + 1) & m;
        bigger[i] = s;
      }
      slots.swap(bigger);
    }

    // Backward-shift deletion keeps every probe run contiguous without tombstones.
    node* remove(const digest& d, const namespace_key& ns, std::span<const token_id> toks) {
      if (slots.empty()) return nullptr;
      bool found = false;
      std::size_t i = probe(d, ns, toks, found);
      if (!found) return nullptr;
      node* victim = slots[i].entry;
      std::size_t hole = i;
      for (std::size_t j = (hole + 1) & mask(); slots[j].entry != nullptr; j = (j + 1) & mask()) {
        const std::size_t h = home(slots[j].key) & mask();
        // Move j into the hole unless its home lies cyclically in (hole, j].
        const bool stays = hole <= j ? (hole < h && h <= j) : (hole < h || h <= j);
        if (!stays) {
          slots[hole] = slots[j];
          hole = j;
        }
      }
      slots[hole] = slot{};
      count.fetch_sub(1, std::memory_order_relaxed);
      return victim;
    }

    void destroy_all() noexcept {
      for (slot& s : slots) {
        if (s.entry != nullptr) node::destroy(s.entry);
        s = slot{};
      }
      count.store(0, std::memory_order_relaxed);
    }
  };

  [[nodiscard]] static std::size_t shard_index(const digest& d) noexcept {
    return static_cast<std::size_t>(d.hi >> 58);  // top 6 bits: 64 shards
  }
  [[nodiscard]] shard& shard_of(const digest& d) noexcept { return shards_[shard_index(d)]; }
  [[nodiscard]] const shard& shard_of(const digest& d) const noexcept {
    return shards_[shard_index(d)];
  }

  bool insert_at(const digest& d, const namespace_key& ns, std::span<const token_id> tokens,
                 Value&& value, bool assign) {
    shard& sh = shard_of(d);
    node* fresh = node::create(d, ns, tokens, std::move(value));
    node* old = nullptr;
    bool created = false;
    {
      std::unique_lock lock(sh.mutex);
      if ((sh.count.load(std::memory_order_relaxed) + 1) * 2 > sh.slots.size()) sh.grow();
      bool found = false;
      const std::size_t i = sh.probe(d, ns, tokens, found);
      if (found) {
        if (assign) {
          old = sh.slots[i].entry;
          sh.slots[i].entry = fresh;
        } else {
          old = fresh;  // keep the stored value; drop the new one
        }
      } else {
        sh.slots[i] = slot{d, fresh};
        sh.count.fetch_add(1, std::memory_order_relaxed);
        created = true;
      }
    }
    if (old != nullptr) node::destroy(old);
    return created;
  }

  static_assert(shard_count == 64, "shard_index uses the top 6 bits");

  Hash hash_{};
  std::array<shard, shard_count> shards_;
};

HYBRIDCACHE_NAMESPACE_END
