#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How much a KV eviction order other than LRU could matter on a block-hash trace: a diagnostic,
not a replay of any row of `simulate --scenario tree`.

Model: a prefix cache of C blocks and no recurrent states. Each request's blocks (`hash_ids`, a
path from the root) are looked up first: its hit is the number of leading blocks cached. Then
the whole path is inserted. Then leaves that are not on this path are evicted until C blocks
remain. Cached blocks stay closed under parents, so a hit is a prefix. The orders:

  lru         the least recently used leaf (every engine row's KV order);
  once_first  LRU among the leaves used once, then LRU among the rest (2Q's idea, no constant);
  lfu         the fewest uses, ties by LRU (no constant);
  offline     the leaf whose next use is farthest, or never (Belady's MIN; it reads the future).

Under this model `offline` is optimal. `--self-test` checks that against an exhaustive search
over every eviction choice on small random traces, and checks LRU on a hand-worked trace.

Usage:
  scripts/dev/kv_order_headroom.py [--trace PATH] [--capacity C[,C...]]
  scripts/dev/kv_order_headroom.py --self-test
PATH defaults to $HYBRIDCACHE_DATA_DIR/mooncake/conversation_trace.jsonl, else
../shared/data/mooncake/conversation_trace.jsonl beside the source tree. When it is absent the
script says so and exits 0.
"""
import argparse
import bisect
import heapq
import json
import os
import random
import sys
from collections import defaultdict

ORDERS = ("lru", "once_first", "lfu", "offline")


def replay(paths, capacity, order):
    """Σ over requests of the leading blocks cached at lookup, under `order` (see the file
    comment). Blocks are named by their ids; a block's parent is the block before it on a path."""
    parent, uses_at = {}, defaultdict(list)
    for t, p in enumerate(paths):
        for i, b in enumerate(p):
            parent[b] = p[i - 1] if i else None
            uses_at[b].append(t)
    cached, kids = set(), defaultdict(int)
    uses, last = defaultdict(int), {}
    clock = 0

    def key(b):  # `now` is the request being replayed (the loop below)
        if order == "lru":
            return (last[b],)
        if order == "once_first":
            return (uses[b] > 1, last[b])
        if order == "lfu":
            return (uses[b], last[b])
        u = uses_at[b]  # offline: farthest next use first; never used again is farthest
        k = bisect.bisect_right(u, now)
        return (-(u[k] if k < len(u) else len(paths)), -last[b])

    heap, hits = [], 0
    for now, p in enumerate(paths):
        m = 0
        while m < len(p) and p[m] in cached:
            m += 1
        hits += m
        for i, b in enumerate(p):
            clock += 1
            uses[b] += 1
            last[b] = clock
            if b not in cached:
                cached.add(b)
                if i:
                    kids[p[i - 1]] += 1
        on_path = set(p)
        for b in p:
            if kids[b] == 0:
                heapq.heappush(heap, (key(b), b))
        kept = []  # leaves of this path met while evicting: back in the heap afterwards
        while len(cached) > capacity and heap:
            k, b = heapq.heappop(heap)
            if b not in cached or kids[b]:
                continue  # stale: evicted, or no longer a leaf (pushed again when it is)
            if b in on_path:
                kept.append((k, b))
                continue
            if key(b) != k:
                heapq.heappush(heap, (key(b), b))
                continue
            cached.discard(b)
            q = parent[b]
            if q is not None:
                kids[q] -= 1
                if kids[q] == 0 and q in cached:
                    heapq.heappush(heap, (key(q), q))
        for e in kept:
            heapq.heappush(heap, e)
    return hits


def exhaustive(paths, capacity):
    """The most hits any eviction choices give (every choice tried; small traces only)."""
    parent = {}
    for p in paths:
        for i, b in enumerate(p):
            parent[b] = p[i - 1] if i else None

    def leaves(cached, on_path):
        has_kid = {parent[b] for b in cached if parent[b] is not None}
        return [b for b in cached if b not in has_kid and b not in on_path]

    best = {}

    def go(t, cached):
        if t == len(paths):
            return 0
        memo = (t, cached)
        if memo in best:
            return best[memo]
        p = paths[t]
        m = 0
        while m < len(p) and p[m] in cached:
            m += 1
        full = cached | frozenset(p)

        def trim(s):
            if len(s) <= capacity:
                return go(t + 1, s)
            choices = leaves(s, set(p))
            if not choices:
                return go(t + 1, s)
            return max(trim(s - {b}) for b in choices)

        best[memo] = m + trim(full)
        return best[memo]

    return go(0, frozenset())


def self_test():
    # Hand-worked LRU, C = 2: [a] [b], then [a] hits 1; [c] evicts b (a was used later); [a]
    # hits 1; [b] misses and evicts c.
    paths = [["a"], ["b"], ["a"], ["c"], ["a"], ["b"]]
    assert replay(paths, 2, "lru") == 2, replay(paths, 2, "lru")
    # Leaves only: x is not evictable while y is cached. C = 2: [z] evicts y, [w] evicts x, so
    # [x y] hits 0. C = 3: [w] evicts y only, so [x y] hits x. C = 4: both.
    paths = [["x", "y"], ["z"], ["w"], ["x", "y"]]
    assert replay(paths, 2, "lru") == 0
    assert replay(paths, 3, "lru") == 1
    assert replay(paths, 4, "lru") == 2
    # The offline order against every eviction choice, on random small prefix trees.
    rng = random.Random(7)
    trials = 0
    for _ in range(300):
        # A block is named by its whole prefix (root, then a branch per level), so its id
        # implies its parent, as a block hash does.
        fixed = []
        for _ in range(rng.randint(3, 7)):
            prefix = (rng.randrange(rng.randint(1, 3)),)
            path = [prefix]
            for _ in range(rng.randint(0, 2)):
                prefix = prefix + (rng.randrange(2),)
                path.append(prefix)
            fixed.append(path)
        cap = rng.randint(max(len(p) for p in fixed), 6)
        want = exhaustive(fixed, cap)
        got = replay(fixed, cap, "offline")
        assert got == want, (fixed, cap, got, want)
        for o in ORDERS:
            assert replay(fixed, cap, o) <= want, (o, fixed, cap)
        trials += 1
    print(f"kv_order_headroom: self-test passed ({trials} random traces against exhaustive search)")


def default_trace():
    d = os.environ.get("HYBRIDCACHE_DATA_DIR")
    if d:
        return os.path.join(d, "mooncake", "conversation_trace.jsonl")
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "..", "..", "shared", "data", "mooncake",
                        "conversation_trace.jsonl")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--trace", default=default_trace())
    ap.add_argument("--capacity", default="2080", help="blocks, comma-separated")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        self_test()
        return 0
    if not os.path.exists(a.trace):
        print(f"kv_order_headroom: no trace at {a.trace}, nothing to do")
        return 0
    paths = [json.loads(line)["hash_ids"] for line in open(a.trace) if line.strip()]
    blocks = sum(len(p) for p in paths)
    print(f"{len(paths)} requests, {blocks} blocks")
    print("| capacity (blocks) | " + " | ".join(ORDERS) + " |")
    print("|---:|" + "---:|" * len(ORDERS))
    for c in (int(x) for x in a.capacity.split(",")):
        h = {o: replay(paths, c, o) for o in ORDERS}
        cells = [f"{h[o]} ({h[o] / max(h['lru'], 1):.2f}x)" for o in ORDERS]
        print(f"| {c} | " + " | ".join(cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
