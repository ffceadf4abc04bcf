#pragma once
// SPDX-License-Identifier: Apache-2.0

/// @file
/// Python bindings of store/ as the submodule `hybridcache.store`: the byte-budgeted LRU pool
/// with pins (`lru_pool`), the frozen-block pool over it, virtual-block views, HYPIC's
/// public/private `pic_store` and the last-K cache. Values are arbitrary Python objects; keys of
/// `lru_pool` are `bytes` or a `segment.digest` (its 16 bytes), so a namespaced segment or block
/// key from `hybridcache.segment` is a pool key as it is. Pins are `handle` objects: a handle
/// keeps its entry alive and unevictable until `release()`, the end of a `with` block, or its
/// garbage collection. Not bound: the Redis shared index (it would make the wheel depend on
/// hiredis and OpenSSL).
///
/// Every call holds the GIL for its whole duration (values are Python objects), so calls are
/// serialised; release callbacks run before the call that caused the release returns.

#include <hybridcache/segment.hpp>
#include <hybridcache/store.hpp>

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "bind_segment.hpp"
#include "common.hpp"

// last_k_cache owns a deque of unique_ptr: std::is_copy_constructible reports true for the deque,
// but the copy does not compile. Tell nanobind (its documented customisation point).
namespace nanobind::detail {
template <>
struct is_copy_constructible<hybridcache::last_k_cache> : std::false_type {};
}  // namespace nanobind::detail

namespace hybridcache_python {

namespace store_detail {

namespace hc = hybridcache;

using pool_t = hc::lru_pool<std::string, nb::object>;
using handle_t = pool_t::handle;
using frozen_t = hc::frozen_pool<std::string, nb::object>;
using virtual_t = hc::virtual_block_index<pool_t, hc::xxh3_hash>;
using pic_t = hc::pic_store<nb::object, nb::object, hc::xxh3_hash>;
using pic_handle_t = pic_t::public_handle;
static_assert(std::is_same_v<pic_t::public_handle, pic_t::private_handle>);

/// A pool key: bytes as they are, a segment.digest as its 16 bytes (lo then hi, little-endian).
inline std::string to_key(nb::handle k, const char* name = "key") {
  if (nb::isinstance<nb::bytes>(k)) {
    nb::bytes b = nb::borrow<nb::bytes>(k);
    return std::string(b.c_str(), b.size());
  }
  if (nb::isinstance<hc::digest>(k)) {
    const auto b = nb::cast<const hc::digest&>(k).to_bytes();
    return std::string(reinterpret_cast<const char*>(b.data()), b.size());
  }
  hc::detail::throw_invalid(name, std::string(nb::repr(k.type()).c_str()),
                            "must be bytes or a segment.digest");
}

inline nb::bytes key_bytes(const std::string& k) { return nb::bytes(k.data(), k.size()); }

/// The Python-facing pool: an `lru_pool` whose release callback lives in a slot the garbage
/// collector can see (tp_traverse) and break (tp_clear), so a callback that refers back to its
/// pool (a closure over it) is a collectable cycle. Handles share the slot, so a callback cleared
/// by the collector simply stops being called.
struct py_pool : pool_t {
  std::shared_ptr<nb::object> callback;
  py_pool(std::size_t capacity, std::size_t reserved, std::shared_ptr<nb::object> cb)
      : pool_t(capacity, reserved, make_callback(cb)), callback(std::move(cb)) {}

  static pool_t::release_callback make_callback(const std::shared_ptr<nb::object>& slot) {
    if (!slot) return {};
    return [slot](const std::string& k, nb::object& v, hc::release_reason why) {
      nb::object f = *slot;  // kept alive for the call even if the slot is cleared meanwhile
      if (!f.is_valid() || f.is_none()) return;
      try {
        f(key_bytes(k), v, why);
      } catch (nb::python_error& e) {
        e.discard_as_unraisable("hybridcache.store release callback");
      }
    };
  }
};

inline int pool_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (!nb::inst_ready(self)) return 0;
  auto* p = nb::inst_ptr<py_pool>(self);
  if (p->callback && p->callback->is_valid()) Py_VISIT(p->callback->ptr());
  return 0;
}

inline int pool_clear(PyObject* self) {
  if (!nb::inst_ready(self)) return 0;
  auto* p = nb::inst_ptr<py_pool>(self);
  if (p->callback) *p->callback = nb::object();
  return 0;
}

inline PyType_Slot pool_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(pool_traverse)},
                                   {Py_tp_clear, reinterpret_cast<void*>(pool_clear)},
                                   {0, nullptr}};

inline const hc::namespace_key& ns_or_shared(const std::optional<hc::namespace_key>& ns) {
  static const hc::namespace_key shared = hc::namespace_key::shared();
  return ns ? *ns : shared;
}

template <class Handle>
const nb::object& value_of(const Handle& h) {
  if (!h) hc::detail::throw_invalid("handle", "empty", "an empty handle (a miss) has no value");
  return h.value();
}

/// The methods every pin type shares: truth value, value, bytes, attached, release, `with`.
template <class Handle>
void bind_handle(nb::class_<Handle>& c) {
  using namespace nb::literals;
  c.def(
       "__bool__", [](const Handle& h) { return static_cast<bool>(h); },
       "False for an empty handle (a miss).")
      .def_prop_ro("value", &value_of<Handle>, "The entry's value (InvalidArgument if empty).")
      .def_prop_ro("nbytes", &Handle::bytes, "Bytes charged for the entry (0 if empty).")
      .def_prop_ro("attached", &Handle::attached,
                   "False once the entry was erased or cleared from its pool.")
      .def("release", &Handle::reset, "Drops the pin (idempotent).")
      .def("same_entry", &Handle::same_entry, "other"_a,
           "True if both pin the same entry (identity, not key equality).")
      .def(
          "__enter__", [](Handle& h) -> Handle& { return h; }, nb::rv_policy::reference)
      .def(
          "__exit__", [](Handle& h, nb::handle, nb::handle, nb::handle) { h.reset(); },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none());
}

/// pic_store.lookup's `segments`: (role, begin, end) triples, role 'leading' | 'reusable' |
/// 'query'.
inline hc::segmentation to_segmentation(nb::handle segments) {
  hc::segmentation seg;
  std::size_t i = 0;
  for (nb::handle item : segments) {
    const std::string name = hc::detail::indexed("segments", i++);
    std::tuple<std::string, std::int64_t, std::int64_t> t;
    if (!nb::try_cast(item, t))
      hc::detail::throw_invalid(name, std::string(nb::repr(item.type()).c_str()),
                                "must be a (role, begin, end) tuple");
    const auto& [role, b, e] = t;
    hc::segment_range r;
    if (role == "leading")
      r.role = hc::segment_role::leading;
    else if (role == "reusable")
      r.role = hc::segment_role::reusable;
    else if (role == "query")
      r.role = hc::segment_role::query;
    else
      hc::detail::throw_invalid(name + ".role", role, "must be 'leading', 'reusable' or 'query'");
    if (b < 0 || e < b)
      hc::detail::throw_invalid(name, std::to_string(b) + ".." + std::to_string(e),
                                "needs 0 <= begin <= end");
    r.begin = static_cast<std::size_t>(b);
    r.end = static_cast<std::size_t>(e);
    r.padded_length = r.end - r.begin;
    seg.segments.push_back(r);
  }
  return seg;
}

}  // namespace store_detail

inline void bind_store(nb::module_& m) {
  namespace hc = hybridcache;
  namespace sd = store_detail;
  using namespace nb::literals;
  using sd::handle_t;

  nb::module_ s = m.def_submodule(
      "store",
      "Cache stores: byte-budgeted LRU pool with pins, frozen pool, virtual blocks, HYPIC's "
      "public/private pic_store, last-K cache. Values are Python objects.");

  nb::enum_<hc::entry_class>(s, "entry_class", "Budget class of an entry (COMB reservation).")
      .value("ordinary", hc::entry_class::ordinary, "uses the shared budget C - R")
      .value("reserved", hc::entry_class::reserved, "may use the reserved budget R");
  nb::enum_<hc::release_reason>(s, "release_reason")
      .value("evicted", hc::release_reason::evicted)
      .value("erased", hc::release_reason::erased)
      .value("cleared", hc::release_reason::cleared);
  nb::enum_<hc::insert_status>(s, "insert_status")
      .value("inserted", hc::insert_status::inserted)
      .value("exists", hc::insert_status::exists)
      .value("no_space", hc::insert_status::no_space);

  nb::class_<hc::pool_stats>(s, "pool_stats", "A snapshot of a pool's accounting.")
      .def_ro("capacity", &hc::pool_stats::capacity)
      .def_ro("reserved", &hc::pool_stats::reserved)
      .def_ro("used", &hc::pool_stats::used)
      .def_ro("used_reserved", &hc::pool_stats::used_reserved)
      .def_ro("entries", &hc::pool_stats::entries)
      .def_ro("pinned_entries", &hc::pool_stats::pinned_entries)
      .def_ro("evictions", &hc::pool_stats::evictions)
      .def_ro("releases", &hc::pool_stats::releases)
      .def_prop_ro("free", &hc::pool_stats::free);

  nb::class_<handle_t> handle_cls(
      s, "handle",
      "A pin on one lru_pool entry: keeps it alive and unevictable until "
      "release(), the end of a `with` block, or garbage collection.");
  sd::bind_handle(handle_cls);
  handle_cls.def_prop_ro("key", [](const handle_t& h) {
    if (!h) hc::detail::throw_invalid("handle", "empty", "an empty handle (a miss) has no key");
    return sd::key_bytes(h.key());
  });

  nb::class_<sd::py_pool>(
      s, "lru_pool", nb::type_slots(sd::pool_slots),
      "Byte-budgeted LRU pool: capacity C bytes, R of them reserved for entry_class.reserved "
      "entries; pinned entries are never evicted; LRU order is the time since a use ended. "
      "on_release(key, value, reason) runs once per entry when its memory is freed.")
      .def(
          "__init__",
          [](sd::py_pool* self, std::size_t capacity, std::size_t reserved, nb::handle on_release) {
            new (self) sd::py_pool(capacity, reserved,
                                   on_release.is_none()
                                       ? nullptr
                                       : std::make_shared<nb::object>(nb::borrow(on_release)));
          },
          "capacity"_a, "reserved"_a = 0, "on_release"_a = nb::none())
      .def(
          "insert",
          [](sd::py_pool& p, nb::handle key, nb::object value, std::size_t nbytes,
             hc::entry_class cls) {
            return p.insert(sd::to_key(key), std::move(value), nbytes, cls).status;
          },
          "key"_a, "value"_a.none(), "nbytes"_a, "cls"_a = hc::entry_class::ordinary,
          "Inserts key -> value charging nbytes, evicting LRU unpinned entries; the new entry is\n"
          "unpinned at once (most recently used). Returns insert_status (no_space: pins prevent\n"
          "making room, nothing changed). Raises InvalidArgument if nbytes can never fit.")
      .def(
          "insert_pinned",
          [](sd::py_pool& p, nb::handle key, nb::object value, std::size_t nbytes,
             hc::entry_class cls) {
            auto r = p.insert(sd::to_key(key), std::move(value), nbytes, cls);
            return std::make_tuple(r.status, std::move(r.pin));
          },
          "key"_a, "value"_a.none(), "nbytes"_a, "cls"_a = hc::entry_class::ordinary,
          "As insert, returning (status, handle): the handle pins the new (or existing) entry.")
      .def(
          "find", [](sd::py_pool& p, nb::handle key) { return p.find(sd::to_key(key)); }, "key"_a,
          "Pins and returns the entry (marks it used); an empty (falsy) handle on a miss.")
      .def(
          "get",
          [](sd::py_pool& p, nb::handle key, nb::object default_) -> nb::object {
            handle_t h = p.find(sd::to_key(key));
            return h ? h.value() : default_;
          },
          "key"_a, "default"_a.none() = nb::none(), "The value (marks it used) or default.")
      .def("__getitem__",
           [](sd::py_pool& p, nb::handle key) -> nb::object {
             handle_t h = p.find(sd::to_key(key));
             if (!h) throw nb::key_error(nb::repr(key).c_str());
             return h.value();
           })
      .def("__contains__",
           [](const sd::py_pool& p, nb::handle key) { return p.contains(sd::to_key(key)); })
      .def("__len__", [](const sd::py_pool& p) { return p.size(); })
      .def("__delitem__",
           [](sd::py_pool& p, nb::handle key) {
             if (!p.erase(sd::to_key(key))) throw nb::key_error(nb::repr(key).c_str());
           })
      .def(
          "erase", [](sd::py_pool& p, nb::handle key) { return p.erase(sd::to_key(key)); }, "key"_a,
          "Removes key; memory is released now if unpinned, else when the last pin drops.")
      .def(
          "erase_entry", [](sd::py_pool& p, const handle_t& h) { return p.erase(h); }, "pin"_a,
          "Removes the entry `pin` holds if still indexed (identity, not key).")
      .def(
          "pins", [](const sd::py_pool& p, nb::handle key) { return p.pins(sd::to_key(key)); },
          "key"_a, "Number of pins on the entry (0 if absent).")
      .def("clear", [](sd::py_pool& p) { p.clear(); })
      .def(
          "shrink_to", [](sd::py_pool& p, std::size_t target) { return p.shrink_to(target); },
          "target"_a,
          "Evicts LRU unpinned entries (ordinary first) until used <= target; returns the count.")
      .def("stats", [](const sd::py_pool& p) { return p.stats(); })
      .def_prop_ro("capacity", [](const sd::py_pool& p) { return p.capacity(); })
      .def_prop_ro("reserved", [](const sd::py_pool& p) { return p.reserved(); })
      .def_prop_ro("used", [](const sd::py_pool& p) { return p.used(); })
      .def_prop_ro("free", [](const sd::py_pool& p) { return p.free(); })
      .def_prop_ro("utilisation", [](const sd::py_pool& p) { return p.utilisation(); });

  nb::class_<sd::frozen_t>(
      s, "frozen_pool",
      "SparseX frozen blocks over an lru_pool: frozen entries stay pinned; resize() deletes "
      "the least-referenced (ties: earliest frozen) while utilisation > threshold. The pool's "
      "on_release callback must not call the frozen pool (it may run under its lock).")
      .def(
          "__init__",
          [](sd::frozen_t* self, sd::py_pool& pool, double threshold) {
            new (self) sd::frozen_t(pool, threshold);
          },
          "pool"_a, "threshold"_a = 0.9, nb::keep_alive<1, 2>())
      .def(
          "insert",
          [](sd::frozen_t& f, nb::handle key, nb::object value, std::size_t nbytes) {
            return f.insert(sd::to_key(key), std::move(value), nbytes);
          },
          "key"_a, "value"_a.none(), "nbytes"_a, "Pool insert + freeze + resize.")
      .def(
          "freeze", [](sd::frozen_t& f, nb::handle key) { return f.freeze(sd::to_key(key)); },
          "key"_a)
      .def(
          "unfreeze", [](sd::frozen_t& f, nb::handle key) { return f.unfreeze(sd::to_key(key)); },
          "key"_a)
      .def(
          "remove", [](sd::frozen_t& f, nb::handle key) { return f.remove(sd::to_key(key)); },
          "key"_a, "Unfreezes key and erases it from the pool.")
      .def(
          "hit", [](sd::frozen_t& f, nb::handle key) { return f.hit(sd::to_key(key)); }, "key"_a,
          "Pool find (a pin for the caller), counting one reference if the entry is frozen.")
      .def("resize", &sd::frozen_t::resize)
      .def("__len__", &sd::frozen_t::size)
      .def(
          "is_frozen",
          [](const sd::frozen_t& f, nb::handle key) { return f.is_frozen(sd::to_key(key)); },
          "key"_a)
      .def(
          "references",
          [](const sd::frozen_t& f, nb::handle key) { return f.references(sd::to_key(key)); },
          "key"_a)
      .def_prop_ro("frozen_bytes", &sd::frozen_t::frozen_bytes)
      .def_prop_ro("threshold", &sd::frozen_t::threshold);

  nb::class_<sd::virtual_t>(
      s, "virtual_block_index",
      "SparseX virtual blocks: verified (ns, tokens) views onto physical blocks of an lru_pool; "
      "hit() pins the block while copy(block, source_position) runs and returns its result.")
      .def(
          "__init__",
          [](sd::virtual_t* self, sd::py_pool& pool, std::optional<hc::xxh3_hash> hash) {
            new (self) sd::virtual_t(pool, hash ? std::move(*hash) : hc::xxh3_hash{});
          },
          "pool"_a, "hash"_a = nb::none(), nb::keep_alive<1, 2>())
      .def(
          "add_view",
          [](sd::virtual_t& v, const hc::namespace_key& ns, nb::handle tokens, nb::handle physical,
             std::size_t source_position) {
            const token_ids t = to_token_ids(tokens);
            return v.add_view(ns, t.view, sd::to_key(physical, "physical"), source_position);
          },
          "ns"_a, "tokens"_a, "physical"_a, "source_position"_a = 0,
          "Adds the view (ns, tokens) -> pool key `physical`; False if that view exists.")
      .def(
          "remove_view",
          [](sd::virtual_t& v, const hc::namespace_key& ns, nb::handle tokens) {
            const token_ids t = to_token_ids(tokens);
            return v.remove_view(ns, t.view);
          },
          "ns"_a, "tokens"_a)
      .def(
          "hit",
          [](sd::virtual_t& v, const hc::namespace_key& ns, nb::handle tokens,
             nb::handle copy) -> std::optional<nb::object> {
            const token_ids t = to_token_ids(tokens);
            return v.hit(ns, t.view, [&](const nb::object& block, std::size_t pos) {
              return nb::object(copy(block, pos));
            });
          },
          "ns"_a, "tokens"_a, "copy"_a,
          "copy(block, source_position) on a verified hit whose block is still pooled; None\n"
          "otherwise (a view whose block was evicted is dropped).")
      .def("__len__", &sd::virtual_t::size);

  nb::class_<hc::last_k_match>(s, "last_k_match")
      .def_ro("depth", &hc::last_k_match::depth)
      .def_ro("entry_length", &hc::last_k_match::entry_length)
      .def_ro("entry_id", &hc::last_k_match::entry_id)
      .def_prop_ro("hit", &hc::last_k_match::hit);
  nb::class_<hc::last_k_overlap>(s, "last_k_overlap")
      .def_ro("entry_id", &hc::last_k_overlap::entry_id)
      .def_ro("depth", &hc::last_k_overlap::depth)
      .def_ro("entry_length", &hc::last_k_overlap::entry_length);
  nb::class_<hc::last_k_cache>(
      s, "last_k_cache",
      "The last K requests (oldest leaves first); depth = longest common prefix with a "
      "retained entry of the same namespace. ns=None is the shared namespace.")
      .def(nb::init<std::size_t>(), "k"_a)
      .def(
          "observe",
          [](hc::last_k_cache& c, nb::handle tokens, std::optional<hc::namespace_key> ns) {
            const token_ids t = to_token_ids(tokens);
            return c.observe(sd::ns_or_shared(ns), t.view);
          },
          "tokens"_a, "ns"_a = nb::none(), "Matches, then retains tokens as the newest entry.")
      .def(
          "match",
          [](const hc::last_k_cache& c, nb::handle tokens, std::optional<hc::namespace_key> ns) {
            const token_ids t = to_token_ids(tokens);
            return c.match(sd::ns_or_shared(ns), t.view);
          },
          "tokens"_a, "ns"_a = nb::none())
      .def(
          "insert",
          [](hc::last_k_cache& c, nb::handle tokens, std::optional<hc::namespace_key> ns) {
            const token_ids t = to_token_ids(tokens);
            return c.insert(sd::ns_or_shared(ns), t.view);
          },
          "tokens"_a, "ns"_a = nb::none(), "Retains tokens; returns the entry id.")
      .def(
          "overlaps",
          [](const hc::last_k_cache& c, nb::handle tokens, std::optional<hc::namespace_key> ns) {
            const token_ids t = to_token_ids(tokens);
            std::vector<hc::last_k_overlap> out;
            c.overlaps(sd::ns_or_shared(ns), t.view, out);
            return out;
          },
          "tokens"_a, "ns"_a = nb::none(),
          "Every retained entry of ns sharing >= 1 leading token, with its common-prefix length.")
      .def("__len__", &hc::last_k_cache::size)
      .def_prop_ro("capacity", &hc::last_k_cache::capacity)
      .def("clear", &hc::last_k_cache::clear);

  nb::class_<sd::pic_handle_t> pic_handle(s, "pic_handle", "A pin on one pic_store entry.");
  sd::bind_handle(pic_handle);

  using lookup_t = sd::pic_t::lookup_result;
  using hit_t = sd::pic_t::segment_hit;
  nb::class_<hit_t>(s, "pic_segment_hit", "One looked-up segment (entry is empty on a miss).")
      .def_ro("index", &hit_t::index)
      .def_prop_ro(
          "entry", [](hit_t& h) -> sd::pic_handle_t& { return h.entry; },
          nb::rv_policy::reference_internal);
  nb::class_<lookup_t>(
      s, "pic_lookup",
      "HYPIC lookup result: the private prefix hit (prefix_depth tokens) and the public "
      "segment lookups; every handle pins its entry until released (`with` releases all).")
      .def_ro("prefix_depth", &lookup_t::prefix_depth)
      .def_prop_ro(
          "prefix", [](lookup_t& r) -> sd::pic_handle_t& { return r.prefix; },
          nb::rv_policy::reference_internal)
      .def("__len__", [](const lookup_t& r) { return r.segments.size(); })
      .def(
          "__getitem__",
          [](lookup_t& r, std::size_t i) -> hit_t& {
            if (i >= r.segments.size()) throw nb::index_error("segment lookup index");
            return r.segments[i];
          },
          nb::rv_policy::reference_internal)
      .def("hits", &lookup_t::hits)
      .def("misses", &lookup_t::misses)
      .def("release",
           [](lookup_t& r) {
             r.prefix.reset();
             for (auto& h : r.segments) h.entry.reset();
           })
      .def(
          "__enter__", [](lookup_t& r) -> lookup_t& { return r; }, nb::rv_policy::reference)
      .def(
          "__exit__",
          [](lookup_t& r, nb::handle, nb::handle, nb::handle) {
            r.prefix.reset();
            for (auto& h : r.segments) h.entry.reset();
          },
          "exc_type"_a.none(), "exc"_a.none(), "tb"_a.none());

  nb::class_<sd::pic_t>(
      s, "pic_store",
      "HYPIC's two pools: public segment entries keyed K(ns, tokens) (reserved class by "
      "default) and private running states keyed by the chained block key of a block-aligned "
      "prefix; each its own byte budget and LRU. Every hit is verified (namespace + tokens).")
      .def(
          "__init__",
          [](sd::pic_t* self, std::size_t public_capacity, std::size_t private_capacity,
             std::size_t public_reserved, std::size_t block_size,
             std::optional<hc::xxh3_hash> hash) {
            hc::pic_store_options o;
            o.public_capacity = public_capacity;
            o.private_capacity = private_capacity;
            o.public_reserved = public_reserved;
            o.block_size = block_size;
            new (self) sd::pic_t(o, hash ? std::move(*hash) : hc::xxh3_hash{});
          },
          "public_capacity"_a, "private_capacity"_a, "public_reserved"_a = 0, "block_size"_a = 64,
          "hash"_a = nb::none())
      .def(
          "put_segment",
          [](sd::pic_t& p, const hc::namespace_key& ns, nb::handle tokens, nb::object value,
             std::size_t nbytes, hc::segment_kind kind, hc::entry_class cls) {
            const token_ids t = to_token_ids(tokens);
            return p.put_segment(ns, t.view, std::move(value), nbytes, kind, cls).status;
          },
          "ns"_a, "tokens"_a, "value"_a.none(), "nbytes"_a,
          "kind"_a = hc::segment_kind::position_independent, "cls"_a = hc::entry_class::reserved,
          "Stores a segment entry (public pool) under K(ns, tokens); returns insert_status.")
      .def(
          "put_prefix",
          [](sd::pic_t& p, const hc::namespace_key& ns, nb::handle prefix, nb::object value,
             std::size_t nbytes) {
            const token_ids t = to_token_ids(prefix);
            return p.put_prefix(ns, t.view, std::move(value), nbytes).status;
          },
          "ns"_a, "prefix"_a, "value"_a.none(), "nbytes"_a,
          "Stores a running state after prefix (a positive multiple of block_size tokens).")
      .def(
          "lookup",
          [](sd::pic_t& p, const hc::namespace_key& ns, nb::handle tokens, nb::handle segments) {
            const token_ids t = to_token_ids(tokens);
            const hc::segmentation seg = sd::to_segmentation(segments);
            return p.lookup(ns, t.view, seg);
          },
          "ns"_a, "tokens"_a, "segments"_a,
          "Deepest private prefix hit, then every cacheable segment at or after it in the public\n"
          "pool. segments: (role, begin, end) triples in request order, role 'leading' (looked\n"
          "up by its anchored key), 'reusable' (position-independent key) or 'query' (never).")
      .def("public_stats", [](sd::pic_t& p) { return p.public_entries().stats(); })
      .def("private_stats", [](sd::pic_t& p) { return p.private_entries().stats(); })
      .def_prop_ro("block_size", [](const sd::pic_t& p) { return p.options().block_size; });
}

}  // namespace hybridcache_python
