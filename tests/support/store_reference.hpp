#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Independent reference model of `lru_pool` (docs/store.md's rules written as a plain
/// scan over a vector — no lists, no maps, no sharing with the implementation) and an
/// interpreter that drives the real pool and the model with the same operation sequence decoded
/// from bytes, checking after every step:
/// - the same entries are indexed, with the same pin counts, and `used`, `used_reserved`,
///   entry counts equal; used + free == capacity; ordinary bytes ≤ C − R; used ≤ C;
/// - a pinned entry is never evicted (the model never picks one, and the pool must agree);
/// - every release callback fires exactly once per entry, with the model's reason;
/// - every stored value object is destroyed exactly once, and never while the entry is live.
/// Used by tests/store/model_test.cpp (random sequences) and tests/fuzz/store_fuzz.cpp
/// (libFuzzer).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hybridcache/store/lru_pool.hpp"

namespace hc_test {

/// One entry of the reference model.
struct ref_entry {
  int key = 0;
  int id = 0;  // value identity
  std::size_t bytes = 0;
  bool reserved = false;
  int pins = 0;
  bool attached = true;
  std::uint64_t last_unpin = 0;  // LRU clock; only meaningful when pins == 0
};

enum class ref_reason { evicted, erased, cleared };

/// The reference model of lru_pool.
class lru_reference {
 public:
  lru_reference(std::size_t capacity, std::size_t reserved) : c_(capacity), r_(reserved) {}

  struct released_t {
    int key;
    int id;
    ref_reason reason;
  };

  std::vector<ref_entry> live;  // attached entries and detached-but-pinned ones
  std::vector<released_t> released;

  std::size_t used() const {
    std::size_t u = 0;
    for (const auto& e : live) u += e.bytes;
    return u;
  }
  std::size_t used_reserved() const {
    std::size_t u = 0;
    for (const auto& e : live) u += e.reserved ? e.bytes : 0;
    return u;
  }
  ref_entry* attached(int key) {
    for (auto& e : live)
      if (e.attached && e.key == key) return &e;
    return nullptr;
  }

  /// @returns 0 inserted, 1 exists, 2 no_space; `id_out` is the pinned entry's value id.
  int insert(int key, int id, std::size_t bytes, bool reserved, int& id_out) {
    if (ref_entry* e = attached(key)) {
      ++e->pins;
      id_out = e->id;
      return 1;
    }
    // Candidate victims of one class, least recently unpinned first.
    auto victims = [&](bool cls) {
      std::vector<std::size_t> v;
      for (std::size_t i = 0; i < live.size(); ++i)
        if (live[i].attached && live[i].pins == 0 && live[i].reserved == cls) v.push_back(i);
      std::sort(v.begin(), v.end(),
                [&](std::size_t a, std::size_t b) { return live[a].last_unpin < live[b].last_unpin; });
      return v;
    };
    std::vector<std::size_t> chosen;
    std::size_t u = used();
    if (!reserved) {
      std::size_t uo = u - used_reserved();
      for (std::size_t i : victims(false)) {
        if (uo + bytes <= c_ - r_) break;
        uo -= live[i].bytes;
        u -= live[i].bytes;
        chosen.push_back(i);
      }
      if (uo + bytes > c_ - r_) return 2;
    }
    for (std::size_t i : victims(true)) {
      if (u + bytes <= c_) break;
      u -= live[i].bytes;
      chosen.push_back(i);
    }
    if (u + bytes > c_) return 2;
    // Commit: release the chosen entries in choice order (ordinary LRU-first, then reserved).
    std::vector<int> ids;
    for (std::size_t i : chosen) ids.push_back(live[i].id);
    for (int vid : ids) {
      auto it = std::find_if(live.begin(), live.end(), [&](const ref_entry& x) { return x.id == vid; });
      released.push_back({it->key, it->id, ref_reason::evicted});
      live.erase(it);
    }
    ref_entry e;
    e.key = key;
    e.id = id;
    e.bytes = bytes;
    e.reserved = reserved;
    e.pins = 1;
    live.push_back(e);
    id_out = id;
    return 0;
  }

  /// Pins `key` if attached. @returns the value id or -1.
  int find(int key) {
    ref_entry* e = attached(key);
    if (!e) return -1;
    ++e->pins;
    return e->id;
  }

  /// Drops one pin on the entry with value id `id`.
  void unpin(int id) {
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (live[i].id != id) continue;
      if (--live[i].pins == 0) {
        if (live[i].attached) {
          live[i].last_unpin = ++clock_;
        } else {
          released.push_back({live[i].key, live[i].id, reason_of(id)});
          live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        }
      }
      return;
    }
  }

  bool erase(int key, ref_reason why = ref_reason::erased) {
    for (std::size_t i = 0; i < live.size(); ++i) {
      if (!live[i].attached || live[i].key != key) continue;
      live[i].attached = false;
      detached_reason_[live[i].id] = why;
      if (live[i].pins == 0) {
        released.push_back({live[i].key, live[i].id, why});
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
      }
      return true;
    }
    return false;
  }

  void clear() {
    std::vector<int> keys;
    for (const auto& e : live)
      if (e.attached) keys.push_back(e.key);
    for (int k : keys) erase(k, ref_reason::cleared);
  }

  /// Evicts LRU unpinned ordinary, then reserved, entries until used ≤ target.
  void shrink_to(std::size_t target) {
    for (bool cls : {false, true}) {
      for (;;) {
        if (used() <= target) return;
        std::size_t best = live.size();
        for (std::size_t i = 0; i < live.size(); ++i)
          if (live[i].attached && live[i].pins == 0 && live[i].reserved == cls &&
              (best == live.size() || live[i].last_unpin < live[best].last_unpin))
            best = i;
        if (best == live.size()) break;
        released.push_back({live[best].key, live[best].id, ref_reason::evicted});
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(best));
      }
    }
  }

 private:
  ref_reason reason_of(int id) const {
    auto it = detached_reason_.find(id);
    return it == detached_reason_.end() ? ref_reason::erased : it->second;
  }
  std::size_t c_, r_;
  std::uint64_t clock_ = 0;
  std::map<int, ref_reason> detached_reason_;
};

/// Counts constructions/destructions of value objects by id.
struct value_registry {
  std::map<int, int> destroyed;
};

/// A move-only value that records its destruction (moved-from objects record nothing).
class probe_value {
 public:
  probe_value(int id, value_registry* reg) : id_(id), reg_(reg) {}
  probe_value(probe_value&& o) noexcept : id_(std::exchange(o.id_, -1)), reg_(o.reg_) {}
  probe_value& operator=(probe_value&&) = delete;
  probe_value(const probe_value&) = delete;
  ~probe_value() {
    if (id_ >= 0) ++reg_->destroyed[id_];
  }
  int id() const noexcept { return id_; }

 private:
  int id_;
  value_registry* reg_;
};

/// Interprets `ops` against a real pool and the model. `fail(msg)` is called on the first
/// disagreement (and the run stops). @returns true if everything agreed.
template <class Fail>
bool run_store_ops(std::span<const std::uint8_t> ops, Fail&& fail) {
  namespace hc = hybridcache;
  if (ops.size() < 2) return true;
  const std::size_t capacity = 16 + ops[0] % 112;             // 16..127 bytes
  const std::size_t reserved = (ops[1] % 4) * capacity / 8;   // 0, 1/8, 2/8, 3/8 of C
  value_registry reg;
  struct cb_record {
    int key;
    int id;
    hc::release_reason reason;
  };
  auto records = std::make_shared<std::vector<cb_record>>();
  lru_reference model(capacity, reserved);
  bool ok = true;
  auto check = [&](bool cond, const std::string& msg) {
    if (!cond && ok) {
      ok = false;
      fail(msg);
    }
  };
  {
    using pool_t = hc::lru_pool<int, probe_value>;
    pool_t pool(capacity, reserved,
                [records](const int& k, probe_value& v, hc::release_reason why) {
                  records->push_back({k, v.id(), why});
                });
    std::vector<std::pair<pool_t::handle, int>> pins;  // real handle, model value id
    int next_id = 0;
    std::size_t i = 2;
    while (ok && i < ops.size()) {
      const std::uint8_t op = ops[i++];
      const std::uint8_t arg = i < ops.size() ? ops[i++] : 0;
      const std::uint8_t arg2 = i < ops.size() ? ops[i++] : 0;
      const int key = arg % 12;
      switch (op % 8) {
        case 0:
        case 1: {  // insert
          const bool res = (arg2 & 0x80) != 0;
          const std::size_t limit = res ? capacity : capacity - reserved;
          const std::size_t bytes = limit == 0 ? 0 : (arg2 & 0x7f) % (limit / 2 + 1);
          const int id = next_id++;
          int mid = -1;
          const int mstatus = model.insert(key, id, bytes, res, mid);
          auto r = pool.insert(key, probe_value(id, &reg), bytes,
                               res ? hc::entry_class::reserved : hc::entry_class::ordinary);
          check(static_cast<int>(r.status) == mstatus, "insert status differs for key " +
                                                           std::to_string(key));
          if (r.pin) {
            check(r.pin->id() == mid, "insert pinned a different value");
            pins.emplace_back(std::move(r.pin), mid);
          }
          break;
        }
        case 2: {  // find
          const int mid = model.find(key);
          auto h = pool.find(key);
          check(static_cast<bool>(h) == (mid >= 0), "find hit/miss differs");
          if (h) {
            check(h->id() == mid, "find returned a different value");
            pins.emplace_back(std::move(h), mid);
          }
          break;
        }
        case 3:
        case 4: {  // drop a pin
          if (pins.empty()) break;
          const std::size_t j = arg % pins.size();
          model.unpin(pins[j].second);
          pins.erase(pins.begin() + static_cast<std::ptrdiff_t>(j));
          break;
        }
        case 5: {  // erase
          const bool m = model.erase(key);
          check(pool.erase(key) == m, "erase result differs");
          break;
        }
        case 6: {  // shrink_to
          const std::size_t target = arg2 % (capacity + 1);
          model.shrink_to(target);
          pool.shrink_to(target);
          break;
        }
        case 7: {  // clear (rarely)
          if (arg % 8 == 0) {
            model.clear();
            pool.clear();
          }
          break;
        }
      }
      // Invariants and agreement.
      const auto s = pool.stats();
      check(s.used == model.used(), "used differs");
      check(s.used_reserved == model.used_reserved(), "used_reserved differs");
      check(s.used + s.free() == s.capacity, "used + free != capacity");
      check(s.used <= capacity, "used exceeds capacity");
      check(s.used - s.used_reserved <= capacity - reserved, "ordinary bytes exceed C - R");
      std::size_t attached = 0;
      for (const auto& e : model.live) attached += e.attached ? 1 : 0;
      check(s.entries == attached, "entry count differs");
      for (int k = 0; k < 12; ++k) {
        const ref_entry* e = model.attached(k);
        check(pool.contains(k) == (e != nullptr), "contains differs for key " + std::to_string(k));
        check(pool.pins(k) == (e ? static_cast<std::size_t>(e->pins) : 0u),
              "pin count differs for key " + std::to_string(k));
      }
      check(records->size() == model.released.size(), "release callback count differs");
      // Same releases (order within one operation is unspecified, e.g. for clear()).
      if (records->size() == model.released.size()) {
        auto a = *records;
        auto b = model.released;
        std::sort(a.begin(), a.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
        std::sort(b.begin(), b.end(), [](const auto& x, const auto& y) { return x.id < y.id; });
        for (std::size_t r = 0; ok && r < a.size(); ++r)
          check(a[r].key == b[r].key && a[r].id == b[r].id &&
                    static_cast<int>(a[r].reason) == static_cast<int>(b[r].reason),
                "release differs: pool (key " + std::to_string(a[r].key) + ", id " +
                    std::to_string(a[r].id) + ", reason " +
                    std::to_string(static_cast<int>(a[r].reason)) + "), model (key " +
                    std::to_string(b[r].key) + ", id " + std::to_string(b[r].id) + ", reason " +
                    std::to_string(static_cast<int>(b[r].reason)) + ")");
      }
      for (const auto& e : model.live)
        check(reg.destroyed.count(e.id) == 0, "a live value was destroyed");
    }
    pins.clear();
  }  // pool destroyed: everything released
  // Every value ever created is destroyed exactly once (dropped duplicates included).
  for (const auto& [id, n] : reg.destroyed) check(n == 1, "value destroyed twice");
  std::map<int, int> cb_count;
  for (const auto& r : *records) ++cb_count[r.id];
  for (const auto& [id, n] : cb_count) check(n == 1, "release callback ran twice for a value");
  return ok;
}

}  // namespace hc_test
