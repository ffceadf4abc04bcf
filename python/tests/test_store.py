# SPDX-License-Identifier: Apache-2.0
"""The stores against dict-based models written here (LRU order, byte budget, pins, eviction
callbacks; the frozen pool's least-referenced rule; the last-K cache's longest common prefix by
brute force), and namespace isolation for every store."""

import collections
import gc
import sys

import numpy as np
import pytest

import hybridcache as hc
from checks import check_raises
from hybridcache import segment as sg
from hybridcache import store

SECRET = bytes((i * 53 + 7) % 256 for i in range(sg.xxh3_hash.secret_size))


class LruModel:
    """A byte-budgeted LRU with pins (no reservation): an OrderedDict of unpinned entries, oldest
    first; pinned entries are out of the LRU order and never evicted."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.entries = {}  # key -> (value, nbytes)
        self.lru = collections.OrderedDict()  # unpinned keys, oldest first
        self.pins = collections.Counter()
        self.used = 0
        self.released = []  # (key, reason) in order
        self.detached = {}  # erased while pinned: key -> nbytes

    def _touch(self, key):
        self.lru.pop(key, None)
        self.lru[key] = True

    def insert(self, key, value, nbytes):
        if key in self.entries:
            if not self.pins[key]:  # the insert's own pin drops at once: most recently used
                self._touch(key)
            return "exists"
        need = nbytes - (self.capacity - self.used)
        victims, freed = [], 0
        for k in self.lru:  # oldest first
            if freed >= need:
                break
            victims.append(k)
            freed += self.entries[k][1]
        if freed < need:
            return "no_space"
        for k in victims:
            self._drop(k, "evicted")
        self.entries[key] = (value, nbytes)
        self.used += nbytes
        self._touch(key)
        return "inserted"

    def _drop(self, key, reason):
        _, nbytes = self.entries.pop(key)
        self.lru.pop(key, None)
        if self.pins[key]:
            self.detached[key] = nbytes
        else:
            self.used -= nbytes
            self.released.append((key, reason))

    def pin(self, key):
        if key not in self.entries:
            return False
        self.pins[key] += 1
        self.lru.pop(key, None)
        return True

    def unpin(self, key):
        self.pins[key] -= 1
        if self.pins[key] == 0:
            if key in self.detached:
                self.used -= self.detached.pop(key)
                self.released.append((key, "erased"))
            elif key in self.entries:
                self._touch(key)

    def erase(self, key):
        if key not in self.entries:
            return False
        self._drop(key, "erased")
        return True


@pytest.mark.parametrize("seed", range(6))
def test_lru_pool_matches_the_dict_model(seed):
    rng = np.random.default_rng(seed)
    released = []
    pool = store.lru_pool(100, on_release=lambda k, v, why: released.append((k, why.name)))
    model = LruModel(100)
    held = []  # (key, handle)
    keys = [bytes([i]) * 3 for i in range(12)]
    for _ in range(400):
        op = rng.integers(0, 6)
        key = keys[rng.integers(0, len(keys))]
        if op <= 1:
            nbytes = int(rng.integers(1, 40))
            assert pool.insert(key, ("v", key), nbytes).name == model.insert(key, ("v", key), nbytes)
        elif op == 2:
            assert pool.get(key) == (model.entries[key][0] if key in model.entries else None)
            if model.pin(key):
                model.unpin(key)
        elif op == 3 and len(held) < 4:
            h = pool.find(key)
            assert bool(h) == model.pin(key)
            if h:
                assert h.key == key and h.value == ("v", key)
                held.append((key, h))
        elif op == 4 and held:
            k, h = held.pop(int(rng.integers(0, len(held))))
            h.release()
            h.release()  # idempotent
            model.unpin(k)
        elif op == 5 and all(k != key for k, _ in held):  # erase-while-pinned: tested below
            assert pool.erase(key) == model.erase(key)
        assert len(pool) == len(model.entries)
        assert pool.used == model.used
        assert released == model.released
        for k in keys:
            assert (k in pool) == (k in model.entries)
            assert pool.pins(k) == (model.pins[k] if k in model.entries else 0)
    s = pool.stats()
    assert s.used == model.used and s.entries == len(model.entries)
    assert s.evictions == sum(1 for _, why in model.released if why == "evicted")


def test_handles_are_context_managers_and_pins_block_eviction():
    pool = store.lru_pool(10)
    assert pool.insert(b"a", "A", 6) == store.insert_status.inserted
    with pool.find(b"a") as h:
        assert h and h.value == "A" and h.nbytes == 6 and h.attached
        assert pool.pins(b"a") == 1
        # the pinned entry cannot be evicted: no room, nothing changes
        assert pool.insert(b"b", "B", 6) == store.insert_status.no_space
        assert b"a" in pool and b"b" not in pool
        del pool[b"a"]  # erased while pinned: stays alive through the handle
        assert not h.attached and h.value == "A" and pool.used == 6
    assert pool.used == 0 and pool.pins(b"a") == 0
    miss = pool.find(b"zzz")
    assert not miss
    with pytest.raises(ValueError):
        miss.value
    status, pin = pool.insert_pinned(b"c", [1, 2], 4)
    assert status == store.insert_status.inserted and pin.value == [1, 2] and pool.pins(b"c") == 1
    status2, pin2 = pool.insert_pinned(b"c", "other", 4)
    assert status2 == store.insert_status.exists and pin2.same_entry(pin) and pin2.value == [1, 2]
    del pin, pin2
    gc.collect()
    assert pool.pins(b"c") == 0  # garbage-collected handles drop their pins
    with pytest.raises(KeyError):
        pool[b"missing"]
    with pytest.raises(KeyError):
        del pool[b"missing"]
    assert pool[b"c"] == [1, 2]


def test_a_handle_outlives_its_pool():
    released = []
    pool = store.lru_pool(10, on_release=lambda k, v, why: released.append((k, v, why.name)))
    _, pin = pool.insert_pinned(b"k", "value", 3)
    pool.insert(b"j", "other", 3)
    del pool
    gc.collect()
    assert released == [(b"j", "other", "cleared")]  # unpinned entries go with the pool
    assert pin.value == "value" and not pin.attached
    pin.release()  # the pinned one when its last pin drops
    assert released[-1] == (b"k", "value", "cleared")


def test_reserved_budget_follows_comb():
    released = []
    pool = store.lru_pool(10, reserved=4, on_release=lambda k, v, why: released.append(k))
    assert pool.insert(b"o1", 1, 6) == store.insert_status.inserted  # ordinary: at most C - R = 6
    assert pool.insert(b"r1", 2, 4, store.entry_class.reserved) == store.insert_status.inserted
    assert pool.insert(b"o2", 3, 3) == store.insert_status.inserted  # evicts o1, not r1
    assert released == [b"o1"] and b"r1" in pool
    # a reserved entry borrowing shared space is given back to an ordinary one
    assert pool.insert(b"r2", 4, 3, store.entry_class.reserved) == store.insert_status.inserted
    assert released == [b"o1"] and pool.used == 10
    assert pool.insert(b"o3", 5, 3) == store.insert_status.inserted  # evicts reserved r1 (LRU)
    assert released == [b"o1", b"r1"]
    s = pool.stats()
    assert (s.capacity, s.reserved, s.used, s.used_reserved) == (10, 4, 9, 3)
    assert pool.shrink_to(0) == 3 and len(pool) == 0 and pool.used == 0


def test_release_callback_errors_do_not_corrupt_the_pool():
    def bad(k, v, why):
        raise RuntimeError("boom")

    pool = store.lru_pool(5, on_release=bad)
    pool.insert(b"a", 1, 5)
    seen = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u.exc_value)
    try:
        pool.insert(b"b", 2, 5)  # evicts a; the callback's error is reported, not raised
        assert len(seen) == 1 and "boom" in str(seen[0])
        assert b"b" in pool and b"a" not in pool and pool.used == 5
        pool.clear()
        assert len(seen) == 2 and len(pool) == 0 and pool.used == 0
    finally:
        sys.unraisablehook = old_hook


def test_a_callback_closing_over_its_pool_is_collected():
    freed = []

    class Marker:
        def __del__(self):
            freed.append(True)

    class Callback:
        def __call__(self, key, value, why):
            pass  # (its attributes may already be cleared when the collector frees the pool)

    def make():
        cb = Callback()
        cb.marker = Marker()
        cb.pool = store.lru_pool(10, on_release=cb)  # pool -> callback -> pool: a cycle
        cb.pool.insert(b"a", cb.marker, 1)

    make()
    gc.collect()
    assert freed == [True]


def test_frozen_pool_deletes_least_referenced_first():
    pool = store.lru_pool(100)
    frozen = store.frozen_pool(pool, threshold=0.6)
    for i, k in enumerate([b"k0", b"k1", b"k2"]):
        assert frozen.insert(k, i, 15) == store.insert_status.inserted
    assert len(frozen) == 3 and frozen.frozen_bytes == 45
    # frozen entries are pinned: unpinned entries are evicted around them
    assert pool.insert(b"x", "x", 55) == store.insert_status.inserted
    assert pool.insert(b"y", "y", 50) == store.insert_status.inserted
    assert b"x" not in pool and all(k in pool for k in (b"k0", b"k1", b"k2"))
    pool.erase(b"y")
    for _ in range(2):
        with frozen.hit(b"k0"):
            pass
    with frozen.hit(b"k2"):
        pass
    assert [frozen.references(k) for k in (b"k0", b"k1", b"k2")] == [2, 0, 1]
    # model: while used > 0.6 * 100, delete the least referenced (ties: earliest frozen)
    pool.insert(b"z", "z", 40)  # used 85
    assert frozen.resize() == 2  # k1 (0 refs) then k2 (1 ref): used 85 -> 70 -> 55 <= 60
    assert frozen.is_frozen(b"k0") and not frozen.is_frozen(b"k1") and not frozen.is_frozen(b"k2")
    assert b"k1" not in pool and b"k2" not in pool and pool.used == 55
    assert frozen.unfreeze(b"k0") and not frozen.is_frozen(b"k0") and b"k0" in pool
    assert frozen.freeze(b"k0") and frozen.remove(b"k0") and b"k0" not in pool


def test_last_k_cache_matches_brute_force_lcp():
    rng = np.random.default_rng(4)
    K = 5
    cache = store.last_k_cache(K)
    retained = collections.deque()  # (ns bytes, tokens, id)
    spaces = [None, sg.namespace_key().with_tenant("a")]
    next_id = 0
    for _ in range(120):
        ns = spaces[int(rng.integers(0, 2))]
        nsb = (ns or sg.namespace_key.shared()).to_bytes()
        tokens = rng.integers(0, 3, size=int(rng.integers(1, 7))).tolist()

        def lcp(a, b):
            n = 0
            while n < min(len(a), len(b)) and a[n] == b[n]:
                n += 1
            return n

        depths = {i: lcp(t, tokens) for (s, t, i) in retained if s == nsb}
        best = max(depths.values(), default=0)
        assert cache.match(tokens, ns=ns).depth == best
        got = {o.entry_id: o.depth for o in cache.overlaps(tokens, ns=ns)}
        assert got == {i: d for i, d in depths.items() if d > 0}
        m = cache.observe(tokens, ns=ns)
        assert m.depth == best and m.hit == (best > 0)
        if best:
            assert depths[m.entry_id] == best
        next_id += 1
        retained.append((nsb, tokens, next_id))
        if len(retained) > K:
            retained.popleft()
        assert len(cache) == len(retained)


def test_pic_store_prefix_then_segments():
    h = sg.xxh3_hash(SECRET)
    pic = store.pic_store(public_capacity=1000, private_capacity=1000, block_size=4, hash=h)
    ns = sg.namespace_key().with_tenant("org")
    tokens = list(range(100, 116))
    assert pic.put_prefix(ns, tokens[:8], "S8", 10) == store.insert_status.inserted
    assert pic.put_segment(ns, tokens[8:12], "seg8", 10) == store.insert_status.inserted
    assert pic.put_segment(ns, tokens[0:4], "lead", 10, kind=sg.segment_kind.anchored) \
        == store.insert_status.inserted
    segs = [("leading", 0, 4), ("reusable", 4, 8), ("reusable", 8, 12), ("query", 12, 16)]
    with pic.lookup(ns, tokens, segs) as r:
        assert r.prefix_depth == 8 and r.prefix.value == "S8"
        assert len(r) == 1 and r[0].index == 2 and r[0].entry.value == "seg8"
        assert r.hits() == 1 and r.misses() == 0
        assert pic.public_stats().pinned_entries == 1
    assert pic.public_stats().pinned_entries == 0 and pic.private_stats().pinned_entries == 0
    # no private prefix: the leading segment is found by its anchored key
    r = pic.lookup(ns, [1, 2] + tokens[2:], segs)
    assert r.prefix_depth == 0 and not r.prefix
    assert [bool(r[i].entry) for i in range(len(r))] == [False, False, True]
    r.release()
    r2 = pic.lookup(ns, tokens[:4] + [9] * 12, segs)
    assert r2[0].entry.value == "lead"


def test_virtual_blocks_copy_on_hit_and_drop_stale_views():
    pool = store.lru_pool(10)
    views = store.virtual_block_index(pool, hash=sg.xxh3_hash(SECRET))
    ns = sg.namespace_key().with_knowledge_base("kb")
    pool.insert(b"phys", np.arange(4.0), 4)
    assert views.add_view(ns, [5, 6], b"phys", source_position=32)
    assert not views.add_view(ns, [5, 6], b"phys")
    got = views.hit(ns, [5, 6], lambda block, pos: (block.sum(), pos, pool.pins(b"phys")))
    assert got == (6.0, 32, 1)  # pinned while the copy runs
    assert pool.pins(b"phys") == 0
    pool.insert(b"other", None, 10)  # evicts the physical block
    assert views.hit(ns, [5, 6], lambda b, p: 1) is None and len(views) == 0
    assert views.add_view(ns, [1], b"other") and views.remove_view(ns, [1]) and len(views) == 0


def test_namespaces_never_leak_in_any_store():
    h = sg.xxh3_hash(SECRET)
    a = sg.namespace_key().with_tenant("a")
    b = sg.namespace_key().with_tenant("b")
    tokens = [7, 8, 9, 10]
    key_a, key_b = sg.segment_key(h, a, tokens), sg.segment_key(h, b, tokens)
    # lru_pool keyed by namespaced digests
    pool = store.lru_pool(100)
    pool.insert(key_a, "secret of a", 1)
    assert key_a in pool and key_b not in pool and not pool.find(key_b)
    assert pool.get(key_b) is None and pool.get(key_a.to_bytes()) == "secret of a"
    # frozen_pool over it
    frozen = store.frozen_pool(pool)
    frozen.insert(sg.segment_key(h, a, [1]), "frozen a", 1)
    assert not frozen.hit(sg.segment_key(h, b, [1])) and frozen.hit(sg.segment_key(h, a, [1]))
    assert not frozen.is_frozen(sg.segment_key(h, b, [1]))
    # virtual blocks: a view of namespace a is not visible from b (nor the shared namespace)
    views = store.virtual_block_index(pool, hash=h)
    views.add_view(a, tokens, key_a.to_bytes())
    assert views.hit(b, tokens, lambda blk, pos: blk) is None
    assert views.hit(sg.namespace_key(), tokens, lambda blk, pos: blk) is None
    assert views.hit(a, tokens, lambda blk, pos: blk) == "secret of a"
    # pic_store: public and private pools
    pic = store.pic_store(100, 100, block_size=2, hash=h)
    pic.put_segment(a, tokens, "seg a", 1)
    pic.put_prefix(a, tokens, "state a", 1)
    r = pic.lookup(b, tokens, [("reusable", 0, 4)])
    assert r.prefix_depth == 0 and len(r) == 1 and not r[0].entry
    r = pic.lookup(a, tokens + [1], [("reusable", 0, 2), ("query", 4, 5)])
    assert r.prefix_depth == 4
    r = pic.lookup(a, tokens, [("reusable", 0, 4)])
    assert r.prefix_depth == 4 and len(r) == 0  # covered by the prefix: not looked up
    r = store.pic_store(100, 100, block_size=8, hash=h)
    r.put_segment(a, tokens, "seg a", 1)
    assert r.lookup(a, tokens, [("reusable", 0, 4)])[0].entry.value == "seg a"
    assert not r.lookup(b, tokens, [("reusable", 0, 4)])[0].entry
    # last_k_cache
    last = store.last_k_cache(4)
    last.observe(tokens, ns=a)
    assert last.match(tokens, ns=b).depth == 0 and last.match(tokens).depth == 0
    assert last.overlaps(tokens, ns=b) == [] and last.match(tokens, ns=a).depth == 4


def test_bad_input_raises_value_error_naming_the_argument():
    check_raises(lambda: store.lru_pool(4, reserved=5), "reserved")
    pool = store.lru_pool(10, reserved=2)
    check_raises(lambda: pool.insert(b"k", 1, 9), "bytes")
    check_raises(lambda: pool.insert("text key", 1, 1), "key")
    check_raises(lambda: pool.find(3), "key")
    check_raises(lambda: store.frozen_pool(pool, threshold=0.0), "threshold")
    check_raises(lambda: store.last_k_cache(0), "k")
    check_raises(lambda: store.last_k_cache(2).observe([-1]), "tokens[0]")
    ns = sg.namespace_key()
    pic = store.pic_store(10, 10, block_size=4)
    check_raises(lambda: pic.put_prefix(ns, [1, 2, 3], "s", 1), "prefix.size()")
    check_raises(lambda: pic.lookup(ns, [1, 2], [("middle", 0, 1)]), "segments[0].role")
    check_raises(lambda: pic.lookup(ns, [1, 2], [("reusable", 0, 5)]), "seg.segments[0]")
    check_raises(lambda: pic.lookup(ns, [1, 2], [("reusable", 2, 1)]), "segments[0]")
    check_raises(lambda: store.pic_store(10, 10, block_size=0), "opts.block_size")
    views = store.virtual_block_index(pool)
    check_raises(lambda: views.add_view(ns, [1], "phys"), "physical")
