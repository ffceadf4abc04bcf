# SPDX-License-Identifier: Apache-2.0
"""hybridcache tree bindings: the exact planner against a brute force over every subset, the
policy's bookkeeping against hand-derived values, typed errors, and the radix-cache example."""

import itertools
import math
import pathlib
import random
import runpy

import numpy as np
import pytest

import hybridcache as hc
from hybridcache import segment, tree

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "radix_cache_hooks.py"


def brute_force(parent, depth, weight, budget):
    """min over subsets of {1..n-1} with <= budget nodes of sum w(v)(d(v) - d(anchor(v)))/sum w."""
    n = len(parent)
    total = sum(weight)
    best = math.inf
    for k in range(0, min(budget, n - 1) + 1):
        for s in itertools.combinations(range(1, n), k):
            ck = set(s)
            cost = 0.0
            for v in range(n):
                a = v
                while a != 0 and a not in ck:
                    a = parent[a]
                cost += weight[v] * (depth[v] - depth[a])
            best = min(best, cost / total)
    return best


def random_tree(rng, n):
    parent = [0] + [rng.randrange(v) for v in range(1, n)]
    depth = [0.0] * n
    for v in range(1, n):
        depth[v] = depth[parent[v]] + rng.choice([1, 2, 0.5, 3.25])
    weight = [float(rng.randrange(4)) if rng.random() < 0.7 else 0.0 for _ in range(n)]
    weight[-1] += 1.0
    return parent, depth, weight


def test_planner_matches_brute_force():
    rng = random.Random(3)
    for _ in range(40):
        n = rng.randrange(1, 9)
        parent, depth, weight = random_tree(rng, n)
        frontier = hc.optimal_tree_frontier(parent, depth, weight, n)
        assert len(frontier) == n + 1
        for m in range(n + 1):
            ref = brute_force(parent, depth, weight, m)
            assert frontier[m] == pytest.approx(ref, rel=1e-12, abs=1e-12)
            plan = hc.place_optimal_tree(parent, depth, weight, m)
            assert plan.expected_recompute == pytest.approx(ref, rel=1e-12, abs=1e-12)
            cps = plan.checkpoints
            assert cps.dtype == np.int64 and len(cps) <= m and (len(cps) == 0 or cps.min() >= 1)
            assert hc.expected_recompute_tree(parent, depth, weight, cps) == pytest.approx(ref)


def test_victim_log_by_hand():
    """tests/tree/policy_test.cpp's hand-worked pool (B = 2, no KV charge): matches end at a1
    (observation 1, mass 1/g) and a3 (observation 2, mass 1/g^2). a1 goes first: gap 2 tokens,
    Delta E[r] = 2 * W(a1) / sum w = 2g/(1 + g), a3 below it; then a3, 6 tokens below the root,
    6 * W(a3) / sum w = 6/(1 + g)."""
    g = 0.99
    pol = tree.state_policy(tree.policy_options(
        block_size=2, state_bytes=1, capacity_bytes=4, replan_every=0, fresh_prior=False,
        repeat_discount=False, age_value=False, prefill_prior=False, fill_free=False,
        branch_prior=False, admit_by_value=False))
    log = tree.victim_log()
    pol.set_victim_log(log)
    ns = segment.namespace_key()
    a = pol.insert(ns, [1, 2, 3, 4, 5, 6])
    root = pol.match(ns, [1, 2]).resume_node
    pol.unpin(root)
    pol.unpin(pol.match(ns, [1, 2, 3, 4, 5, 6]).resume_node)
    assert pol.admit(int(a[0]), 1).admitted and pol.admit(int(a[2]), 1).admitted
    assert len(log) == 0
    assert pol.evict(1) == [int(a[0])] and pol.evict(1) == [int(a[2])]
    assert len(log) == 2
    first, second = log[0], log[-1]
    assert (first.node, first.up, first.gap_tokens, first.states_below) == (int(a[0]), root, 2, 1)
    assert first.expected_tokens == pytest.approx(2 * g / (1 + g))
    assert first.value == pytest.approx(2 * g / (1 + g))  # 1 byte, h = 1 without age_value
    assert (second.node, second.up, second.gap_tokens, second.states_below) == (
        int(a[2]), root, 6, 0)
    assert second.expected_tokens == pytest.approx(6 / (1 + g))
    assert (second.bytes, second.age, second.planned, second.prior) == (1, 0, False, False)
    with pytest.raises(IndexError):
        log[2]
    pol.set_victim_log(None)
    assert pol.admit(int(a[1]), 1).admitted and pol.evict(1) == [int(a[1])]
    assert len(log) == 2
    log.clear()
    assert len(log) == 0


def test_planner_errors_name_the_argument():
    with pytest.raises(hc.InvalidArgument, match="tree.parent\\[2\\]"):
        hc.place_optimal_tree([0, 0, 2], [0, 1, 2], [1, 1, 1], 1)
    with pytest.raises(hc.InvalidArgument, match="tree.parent\\[1\\]"):
        hc.place_optimal_tree([0, -1], [0, 1], [1, 1], 1)
    with pytest.raises(hc.InvalidArgument, match="tree.weight\\[1\\]"):
        hc.optimal_tree_frontier([0, 0], [0, 1], [1, float("nan")], 1)
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError too
        hc.expected_recompute_tree([0, 0], [0, 1], [1, 1], [5])


def test_policy_resume_replay_and_pool():
    pol = tree.state_policy(tree.policy_options(block_size=4, state_bytes=10, capacity_bytes=20,
                                                replan_every=0))
    ns = segment.namespace_key().with_tenant("a")
    toks = list(range(1, 17))  # 4 blocks
    path = pol.insert(ns, toks)
    assert len(path) == 4 and path.dtype == np.uint64
    assert pol.admit(int(path[1]), 10).admitted
    m = pol.match(ns, toks)
    assert (m.matched_tokens, m.resume_tokens, m.replay_tokens) == (16, 8, 8)
    assert m.resume_node == path[1] and pol.pinned(int(path[1]))
    plan = pol.prefill_plan(m, 24, [12, 14, 16, 20, 24])
    assert list(plan) == [16, 24]  # junction (the prompt goes on past the match) + tail
    assert pol.admit(int(path[3]), 10).victims == []
    # Full. No match ended at path[2] and path[3] holds its own state, so a state there would
    # save nothing: admission by value refuses it and evicts nothing (path[3] holds the match).
    r = pol.admit(int(path[2]), 10)
    assert not r.admitted and r.victims == []
    assert pol.has_state(int(path[3]))
    assert pol.evict(10) == [int(path[3])]  # path[1] is pinned
    assert pol.admit(int(path[2]), 10).admitted  # room again
    pol.unpin(m.resume_node)
    assert pol.used_bytes == 20 <= pol.capacity_bytes
    other = pol.match(segment.namespace_key().with_tenant("b"), toks)
    assert other.matched_tokens == 0  # namespaces never share nodes
    pol.unpin(other.resume_node)
    assert math.isfinite(pol.expected_recompute())



def test_policy_admit_path_is_admit_for_each():
    opts = tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=3, replan_every=0)
    a, b = tree.state_policy(opts), tree.state_policy(opts)
    ns = segment.namespace_key()
    pa, pb = a.insert(ns, [1, 2, 3, 4, 5]), b.insert(ns, [1, 2, 3, 4, 5])
    assert list(pa) == list(pb)
    snaps = [int(pa[0]), int(pa[2]), int(pa[4])]
    assert b.admit_path(snaps, 1)
    for v in snaps:
        assert a.admit(v, 1).admitted
    assert [b.has_state(int(v)) for v in pb] == [a.has_state(int(v)) for v in pa]
    assert not b.admit_path([int(pb[1]), int(pb[3])], 1)  # no room for two more: nothing changes
    assert b.used_bytes == 3 and not b.has_state(int(pb[1]))
    with pytest.raises(hc.InvalidArgument, match="path"):
        b.admit_path([int(pb[3]), int(pb[1])], 1)  # not below the node before
    with pytest.raises(hc.InvalidArgument, match="path\\[0\\]"):
        b.admit_path([-1], 1)


def _same_match(x, y):
    return (x.node, x.matched_tokens, x.resume_node, x.resume_tokens, x.replay_tokens,
            list(x.path)) == (y.node, y.matched_tokens, y.resume_node, y.resume_tokens,
                              y.replay_tokens, list(y.path))


def test_policy_by_keys_is_policy_by_tokens():
    # Two policies, the same requests: `a` gets tokens (match / insert hash them itself), `b`
    # gets the chained keys of segment.block_keys (match_keys / insert_keys / extend_keys, the
    # calls of an engine that hashes its blocks already). Every node id, match, plan and victim
    # must be the same. (One secret for both, to test the constructor that takes it.)
    B = 4
    opts = tree.policy_options(block_size=B, state_bytes=1, capacity_bytes=6, replan_every=7)
    secret = bytes(random.Random(5).randrange(256) for _ in range(segment.xxh3_hash.secret_size))
    a = tree.state_policy(opts, segment.xxh3_hash(secret))
    b = tree.state_policy(opts, segment.xxh3_hash(secret))
    assert isinstance(b.hash, segment.xxh3_hash)
    root = segment.namespace_key()
    k = segment.block_keys(b.hash, root, [1] * B, B)[0]
    assert k == segment.block_keys(segment.xxh3_hash(secret), root, [1] * B, B)[0]
    assert k != segment.block_keys(tree.state_policy(opts).hash, root, [1] * B, B)[0]
    rng = random.Random(11)
    spaces = [segment.namespace_key(), segment.namespace_key().with_tenant("t")]
    prompts = [[rng.randrange(50) for _ in range(B * rng.randrange(1, 9))] for _ in range(6)]
    block_nodes = {}  # b's engine table: tuple(prefix tokens) -> node from extend_keys
    for step in range(300):
        ns = spaces[rng.randrange(2)]
        p = list(prompts[rng.randrange(len(prompts))])
        p = p[: B * rng.randrange(0, len(p) // B + 1)] + [rng.randrange(50) for _ in
                                                         range(rng.randrange(0, 3 * B))]
        keys = segment.block_keys(b.hash, ns, p, B)
        assert len(keys) == len(p) // B
        # hints: right, wrong (another block's node), stale or none, by chance
        hints = []
        for i in range(len(keys)):
            r = rng.random()
            known = block_nodes.get((str(ns), tuple(p[: (i + 1) * B])))
            if r < 0.5 and known is not None:
                hints.append(known)
            elif r < 0.7 and block_nodes:
                hints.append(rng.choice(list(block_nodes.values())))
            else:
                hints.append(tree.no_node)
        ma = a.match(ns, p)
        mb = b.match_keys(ns, keys, hints) if step % 2 else b.match_keys(ns, keys)
        assert _same_match(ma, mb)
        ends = list(range(B, len(p) + 1, B))
        assert list(a.prefill_plan(ma, len(p), ends)) == list(b.prefill_plan(mb, len(p), ends))
        if step % 3 == 0:
            pa, pb = a.insert(ns, p), b.insert_keys(ns, keys)
        else:  # the causal engine: after the prefill, from the match's path, then the end
            pa = a.insert(ns, p)
            if step % 3 == 1:
                pb = b.extend_keys(ns, mb.path, keys)
            else:
                pb = b.extend_keys(ns, tree.no_node, keys[:1])  # [] too: the root's work
                if len(keys) > 1:
                    pb = list(pb) + list(b.extend_keys(ns, int(pb[0]), keys[1:]))
            if len(keys):
                b.note_sequence_end(int(pb[-1]))
        assert list(pa) == [int(v) for v in pb]
        for i, v in enumerate(pb):
            block_nodes[(str(ns), tuple(p[: (i + 1) * B]))] = int(v)
        for j in a.prefill_plan(ma, len(p), ends):
            ra, rb = a.admit(int(pa[j // B - 1]), 1), b.admit(int(pb[j // B - 1]), 1)
            assert (ra.admitted, list(ra.victims)) == (rb.admitted, list(rb.victims))
            for v in ra.victims:  # the engine also drops evicted leaves' KV now and then
                if rng.random() < 0.2 and a.contains(v) and not a.pinned(v):
                    try:
                        a.erase(v)
                    except hc.InvalidArgument:  # not a leaf: both refuse alike
                        with pytest.raises(hc.InvalidArgument):
                            b.erase(v)
                        continue
                    b.erase(v)
                    block_nodes = {k: n for k, n in block_nodes.items() if b.contains(n)}
        a.unpin(ma.resume_node)
        b.unpin(mb.resume_node)
        assert a.expected_recompute() == b.expected_recompute()
        assert (a.state_count, a.node_count, a.observations) == (
            b.state_count, b.node_count, b.observations)
    d = b.extend_key(spaces[0], tree.no_node, segment.block_keys(b.hash, spaces[0], [1] * B, B)[0])
    assert int(a.insert(spaces[0], [1] * B)[0]) == d
    with pytest.raises(hc.InvalidArgument, match="prefix.size\\(\\)"):
        b.extend_keys(spaces[0], [d, d], [segment.digest()])
    with pytest.raises(hc.InvalidArgument, match="parent"):
        b.extend_keys(spaces[0], 12345, [segment.digest()])
    with pytest.raises(TypeError, match="keys: expected a sequence of segment.digest"):
        b.match_keys(spaces[0], [1, 2])
    with pytest.raises(TypeError, match="or an \\(n, 2\\) uint64 array"):
        b.insert_keys(spaces[0], "keys")
    with pytest.raises(OverflowError):
        b.match_keys(spaces[0], [segment.digest()], [-1])
    # a parent may be a NumPy integer (an element of a returned path); a one-element sequence is
    # a prefix, not a parent; anything else is a typed error
    two = segment.block_keys(b.hash, spaces[0], [1] * (2 * B), B)
    below = b.extend_keys(spaces[0], np.uint64(d), two[1:])
    assert list(below) == list(b.extend_keys(spaces[0], [d], two))[1:]
    assert list(b.extend_keys(spaces[0], [d], two)) == [d] + list(below)
    with pytest.raises(hc.InvalidArgument, match="parent"):
        b.extend_keys(spaces[0], -1, two)
    with pytest.raises(hc.InvalidArgument, match="'hints.ndim' = 2"):
        b.match_keys(spaces[0], two, np.zeros((2, 1), dtype=np.uint64))
    with pytest.raises(hc.InvalidArgument, match="'path.ndim' = 2"):
        b.admit_path(np.zeros((2, 2), dtype=np.int64), 1)
    with pytest.raises(hc.InvalidArgument, match="'tokens.ndim' = 2"):
        b.match(spaces[0], [[1, 2], [3, 4]])


def test_policy_keys_as_an_array_are_the_digests():
    # An (n, 2) uint64 array of (lo, hi) rows is the list of digests it spells: segment's
    # block_keys_array against block_keys, and every key call given either form (two policies
    # with one secret, the same requests) returns the same nodes and matches.
    B = 4
    opts = tree.policy_options(block_size=B, state_bytes=1, capacity_bytes=5, replan_every=5)
    secret = bytes(range(segment.xxh3_hash.secret_size))
    a = tree.state_policy(opts, segment.xxh3_hash(secret))
    b = tree.state_policy(opts, segment.xxh3_hash(secret))
    rng = random.Random(23)
    spaces = [segment.namespace_key(), segment.namespace_key().with_adapter("lora")]
    bases = [[rng.randrange(30) for _ in range(B * 6)] for _ in range(4)]
    for step in range(200):
        ns = spaces[rng.randrange(2)]
        p = bases[rng.randrange(4)][: B * rng.randrange(0, 7)]
        p = p + [rng.randrange(30) for _ in range(rng.randrange(0, 2 * B + 1))]
        keys = segment.block_keys(a.hash, ns, p, B)
        arr = segment.block_keys_array(b.hash, ns, p, B)
        assert arr.dtype == np.uint64 and arr.shape == (len(keys), 2)
        assert [(int(lo), int(hi)) for lo, hi in arr] == [(k.lo, k.hi) for k in keys]
        # the rows are the digests' 16 bytes read as two little-endian uint64 (lo, then hi)
        raw = np.frombuffer(b"".join(k.to_bytes() for k in keys), dtype="<u8").reshape(-1, 2)
        assert np.array_equal(raw, arr)
        if step % 4 == 3:  # another layout and dtype of the same bits: converted, same keys
            arr = np.asfortranarray(arr.astype(np.int64))
        ma = a.match_keys(ns, keys, None if step % 2 else [tree.no_node] * len(keys))
        mb = b.match_keys(ns, arr, None if step % 2 else [tree.no_node] * len(keys))
        assert _same_match(ma, mb)
        if step % 3 == 0:
            pa, pb = a.insert_keys(ns, keys), b.insert_keys(ns, arr)
        else:
            pa, pb = a.extend_keys(ns, ma.path, keys), b.extend_keys(ns, mb.path, arr)
            if len(keys):
                a.note_sequence_end(int(pa[-1]))
                b.note_sequence_end(int(pb[-1]))
        assert list(pa) == list(pb)
        ends = list(range(B, len(p) + 1, B))
        for j in a.prefill_plan(ma, len(p), ends):
            ra, rb = a.admit(int(pa[j // B - 1]), 1), b.admit(int(pb[j // B - 1]), 1)
            assert (ra.admitted, list(ra.victims)) == (rb.admitted, list(rb.victims))
        a.unpin(ma.resume_node)
        b.unpin(mb.resume_node)
    assert (a.node_count, a.state_count) == (b.node_count, b.state_count)
    # Keys put in as an array are found as digests (the rows are read as (lo, hi)), and a
    # mutation the test must catch: one bit of one key changes the node it names.
    arr = segment.block_keys_array(b.hash, spaces[0], bases[0], B)
    put = b.insert_keys(spaces[0], arr)
    whole = b.match_keys(spaces[0], segment.block_keys(b.hash, spaces[0], bases[0], B))
    b.unpin(whole.resume_node)
    assert whole.matched_tokens == len(bases[0]) and whole.node == int(put[-1])
    arr[2, 1] ^= np.uint64(1)
    cut = b.match_keys(spaces[0], arr)
    b.unpin(cut.resume_node)
    assert whole.matched_tokens > 2 * B and cut.matched_tokens == 2 * B
    # Empty inputs, and the shape errors.
    assert segment.block_keys_array(b.hash, spaces[0], [1] * (B - 1), B).shape == (0, 2)
    assert b.match_keys(spaces[0], np.zeros((0, 2), dtype=np.uint64)).matched_tokens == 0
    with pytest.raises(hc.InvalidArgument, match="'keys.shape\\[1\\]' = 3"):
        b.match_keys(spaces[0], np.zeros((2, 3), dtype=np.uint64))
    with pytest.raises(hc.InvalidArgument, match="'keys.ndim' = 1"):
        b.insert_keys(spaces[0], np.zeros(4, dtype=np.uint64))


def test_policy_capacity_reserve_and_bookkeeping():
    # set_capacity_bytes sheds exactly what evict would; reserve changes no decision.
    opts = tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=6, replan_every=0)
    a, b = tree.state_policy(opts), tree.state_policy(opts)
    b.reserve(1000)
    ns = segment.namespace_key()
    rng = random.Random(2)
    for _ in range(40):
        p = [rng.randrange(4) for _ in range(rng.randrange(1, 7))]
        ma, mb = a.match(ns, p), b.match(ns, p)
        assert _same_match(ma, mb)
        pa, pb = a.insert(ns, p), b.insert(ns, p)
        for j in a.prefill_plan(ma, len(p), list(range(1, len(p) + 1))):
            ra, rb = a.admit(int(pa[j - 1]), 1), b.admit(int(pb[j - 1]), 1)
            assert list(ra.victims) == list(rb.victims)
        a.unpin(ma.resume_node)
        b.unpin(mb.resume_node)
    assert a.state_count == 6
    shed = list(a.set_capacity_bytes(2))
    assert shed == list(b.evict(4))  # the same four victims, in the same order
    assert a.capacity_bytes == 2 and a.used_bytes == 2 == b.used_bytes
    assert a.set_capacity_bytes(10) == [] and a.capacity_bytes == 10
    with pytest.raises(hc.InvalidArgument, match="bytes"):
        a.set_capacity_bytes(0)
    # 48-byte records and 4-byte index slots at load <= 1/2: at most 64 bytes a node, plus the
    # state records and side tables.
    assert 48 * a.node_count <= a.bookkeeping_bytes
    assert b.bookkeeping_bytes >= a.bookkeeping_bytes  # reserved room is counted


def test_policy_stale_ids_raise_after_slot_reuse():
    # Issue #21: tenant A's erased leaf must not address tenant B's node that reuses its slot.
    pol = tree.state_policy(tree.policy_options(block_size=1, capacity_bytes=4, replan_every=0))
    a_ns, b_ns = (segment.namespace_key().with_tenant(t) for t in ("a", "b"))
    pol.insert(b_ns, [5])  # B's namespace exists first
    a = pol.insert(a_ns, [1, 2])
    held = int(a[1])
    pol.erase(held)
    b = pol.insert(b_ns, [7, 8])
    assert int(b[0]) & 0xFFFFFFFF == held & 0xFFFFFFFF  # the slot was reused ...
    assert int(b[0]) != held  # ... at the next generation
    with pytest.raises(hc.StaleHandleError, match="stale handle"):
        pol.admit(held, 1)
    with pytest.raises(hc.InvalidArgument):  # StaleHandleError is an InvalidArgument
        pol.pin(held)
    assert not pol.contains(held) and pol.contains(int(b[0]))
    assert pol.used_bytes == 0
    assert pol.admit(int(b[0]), 1).admitted
    o = tree.policy_options(capacity_bytes=20, state_bytes=10, gamma=0.5, repeat_discount=False,
                            age_value=False, fill_free=False)
    assert (o.gamma, o.repeat_discount, o.age_value, o.fill_free) == (0.5, False, False, False)
    # The options removed in 0.2 (docs/tree_simulation.md, "Fewer knobs (issue #24)") are gone
    # (admit_by_value came back after 0.2.1 with another rule: test_admit_by_value_option).
    for gone in ("junction_prior", "junction_strength", "memory_per_state", "memory_floor"):
        assert not hasattr(o, gone)
        with pytest.raises(TypeError):
            tree.policy_options(**{gone: 0})
    assert not hasattr(tree.state_policy(o), "effective_gamma")


def test_policy_errors():
    with pytest.raises(hc.InvalidArgument, match="opts.gamma"):
        tree.state_policy(tree.policy_options(gamma=0.0))
    pol = tree.state_policy(tree.policy_options(block_size=2, capacity_bytes=8))
    with pytest.raises(hc.InvalidArgument, match="node"):
        pol.admit(12345, 1)
    path = pol.insert(segment.namespace_key(), [1, 2, 3, 4])
    with pytest.raises(hc.InvalidArgument, match="bytes"):
        pol.admit(int(path[0]), 0)
    with pytest.raises(hc.InvalidArgument):
        pol.unpin(int(path[0]))
    with pytest.raises(hc.InvalidArgument):
        pol.insert(segment.namespace_key(), [1, -2])


def test_radix_cache_example_runs(capsys):
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "radix cache hooks:" in out
    assert "junction [1]" in out


def test_age_value_option_and_hit_chance():
    # gamma = 1, B = 1, no prior: one resume at age 0 (a hit in bucket 0), then the state is
    # dropped 2 observations later (an end at age 2, bucket 2). A new state is 0 old:
    # P = (H + Pbar) / (N + 1) with H = 1, N = 2, Pbar = (1 + 1/2) / (2 + 1) = 0.5 -> 0.5.
    o = tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=2, gamma=1.0,
                            replan_every=0, fresh_prior=False, age_value=True)
    assert o.age_value
    pol = tree.state_policy(o)
    ns = segment.namespace_key()
    a = pol.insert(ns, [1, 2])
    assert pol.admit(int(a[1]), 1).admitted
    assert pol.hit_chance(int(a[1])) == pytest.approx(0.5)  # no events yet
    pol.unpin(pol.match(ns, [1, 2]).resume_node)
    pol.unpin(pol.match(ns, [9]).resume_node)
    pol.drop(int(a[1]))
    assert pol.admit(int(a[0]), 1).admitted
    assert pol.hit_chance(int(a[0])) == pytest.approx((1 + 0.5) / (2 + 1))
    assert tree.policy_options().age_value is True  # the default since 0.2


def test_prefill_prior_option():
    # gamma = 1/2, B = 1, legacy laws (no repeat discount, no age value): insert 1 2 3 gives the
    # turn end a2 the prior 1/3; noting a0 as a prefill end gives it p_P = (0 + 1)/(1 + 2) = 1/3,
    # so a0 and a2 hold half the weight each; a match at a0 then counts a hit on the prefill books
    # only: p_P = (1 + 1)/(1 + 2) = 2/3 before the next prefill end is noted.
    o = tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=2, gamma=0.5,
                            replan_every=0, repeat_discount=False, age_value=False,
                            prefill_prior=True)
    assert o.prefill_prior
    pol = tree.state_policy(o)
    ns = segment.namespace_key()
    a = pol.insert(ns, [1, 2, 3])
    pol.note_prefill_end(int(a[0]))
    assert pol.match_share(int(a[0])) == pytest.approx(0.5)
    assert pol.prefill_share() == pytest.approx(1 / 3)
    pol.unpin(pol.match(ns, [1]).resume_node)
    assert pol.prefill_share() == pytest.approx(2 / 3)
    assert tree.policy_options().prefill_prior is True  # the default since 0.2


def test_branch_point_option():
    # B = 1, documents of 20 tokens, questions of 3: two questions on document 1 teach the law of
    # where requests leave a cached prompt (D = 2 blocks); the first question on document 2 then
    # gets the branch point u - 3 = 19 (prompt 23 tokens, u = 22), and the second question on
    # document 2 resumes there (tests/tree/policy_test.cpp has the brute force).
    o = tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=64, replan_every=0,
                            fill_free=False, prefill_prior=False, branch_prior=True)
    assert o.branch_prior
    pol = tree.state_policy(o)
    ns = segment.namespace_key()

    def ask(d, q):
        p = [d * 100 + i for i in range(20)] + [1000 + q, 2000 + q, 3000 + q]
        m = pol.match(ns, p[:-1])
        chunks = list(range(m.resume_tokens + 1, len(p) + 1))
        bp = pol.branch_point(m, len(p), chunks)
        path = pol.insert(ns, p)
        if bp is not None:
            pol.note_branch_point(int(path[bp - 1]))
            pol.admit(int(path[bp - 1]), 1)
        pol.unpin(m.resume_node)
        return m, bp

    assert ask(1, 1)[1] is None  # no law yet
    ask(1, 2)
    assert pol.divergence_within(2) > 0
    m, bp = ask(2, 1)
    assert bp == 19
    before = pol.branch_share()
    m, bp = ask(2, 2)
    assert (m.matched_tokens, m.resume_tokens) == (20, 19)
    assert pol.branch_share() > before
    with pytest.raises(hc.InvalidArgument):
        pol.branch_point(m, 5, [6])
    assert tree.policy_options().branch_prior is True  # the default, added after 0.2.0


def test_message_branch_point():
    # B = 4, a 10-token system prompt then a user message at 10: the start floors to block 2
    # (token 8); a second user's request on the same system prompt resumes there once the state
    # is admitted. A start in the prompt's last usable block, or before the resume, is no point.
    o = tree.policy_options(block_size=4, state_bytes=1, capacity_bytes=64, replan_every=0,
                            fill_free=False)
    pol = tree.state_policy(o)
    ns = segment.namespace_key()
    system = list(range(10))
    a = system + [100 + i for i in range(12)]
    m = pol.match(ns, a[:-1])
    assert pol.message_branch_point(m, len(a), [10]) == 8
    assert pol.message_branch_point(m, len(a), [1, 10, 21]) == 8  # 21 is in block 5 = u
    path = pol.insert(ns, a)
    pol.note_branch_point(int(path[8 // 4 - 1]))
    assert pol.admit(int(path[8 // 4 - 1]), 1).admitted
    pol.unpin(m.resume_node)
    b = system + [200 + i for i in range(12)]
    m = pol.match(ns, b[:-1])
    assert m.resume_tokens == 8
    assert pol.message_branch_point(m, len(b), [10]) is None  # not past the resume
    with pytest.raises(hc.InvalidArgument):
        pol.message_branch_point(m, len(b), [22])  # not below the prompt's length
    pol.unpin(m.resume_node)
    off = tree.state_policy(tree.policy_options(block_size=4, state_bytes=1, capacity_bytes=64,
                                                branch_prior=False))
    m = off.match(ns, a[:-1])
    assert off.message_branch_point(m, len(a), [10]) is None


def test_prefill_end():
    # B = 4: a re-ask of a 12-token prompt resumes at most at floor(11/4)*4 = 8, a 13-token one
    # at 12; past the resume only, and only with the prefill-end prior on (the default).
    pol = tree.state_policy(tree.policy_options(block_size=4, state_bytes=1, capacity_bytes=64,
                                                fill_free=False))
    ns = segment.namespace_key()
    p = list(range(1, 13))
    m = pol.match(ns, p[:-1])
    assert pol.prefill_end(m, 12) == 8
    assert pol.prefill_end(m, 13) == 12
    assert pol.prefill_end(m, 4) is None  # floor(3/4) = 0: nothing past the resume
    path = pol.insert(ns, p)
    pol.note_prefill_end(int(path[8 // 4 - 1]))
    assert pol.admit(int(path[8 // 4 - 1]), 1).admitted
    pol.unpin(m.resume_node)
    m = pol.match(ns, p[:-1])  # the same prompt again
    assert m.resume_tokens == 8
    assert pol.prefill_end(m, 12) is None  # the state is there already
    pol.unpin(m.resume_node)
    off = tree.state_policy(tree.policy_options(block_size=4, state_bytes=1, capacity_bytes=64,
                                                prefill_prior=False))
    assert off.prefill_end(off.match(ns, p[:-1]), 12) is None


def test_kv_block_bytes_option():
    # The joint KV charge (tests/tree/eviction_test.cpp has the brute force): 0 by default, set
    # by keyword or attribute; a policy builds from it.
    assert tree.policy_options().kv_block_bytes == 0
    o = tree.policy_options(block_size=4, state_bytes=8, capacity_bytes=64, kv_block_bytes=96)
    assert o.kv_block_bytes == 96 and o.branch_prior is True
    o.kv_block_bytes = 3
    assert o.kv_block_bytes == 3
    assert tree.state_policy(o).capacity_bytes == 64


def test_admit_by_value_option():
    # On by default (added after 0.2.1). Off, a state worth nothing still displaces the cheapest
    # held one (the rule of 0.2.0 and 0.2.1); on, it is refused (tests/tree/policy_test.cpp has
    # the hand-worked values and the model-based check).
    assert tree.policy_options().admit_by_value is True
    for on in (True, False):
        o = tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=1, replan_every=0,
                                admit_by_value=on)
        assert o.admit_by_value is on
        pol = tree.state_policy(o)
        ns = segment.namespace_key()
        a = pol.insert(ns, [1, 2, 3])
        pol.unpin(pol.match(ns, [1, 2, 3]).resume_node)
        assert pol.admit(int(a[2]), 1).admitted
        c = pol.insert(ns, [5])
        r = pol.admit(int(c[0]), 1)
        assert r.admitted is not on
        assert r.victims == ([] if on else [int(a[2])])
        assert pol.has_state(int(a[2])) is on


def test_age_classes_option():
    # Off by default (the library's row turns it on in its long-memory candidate). With it, a
    # state's P(hit | age) reads its class's law: here the state admitted at a node where a match
    # ended (class 0) has one resume and no end, the one admitted at a fresh end (a prior, class
    # 1) one end and no resume, so class 0 reads (1 + 3/4)/(1 + 1) or 3/4 and class 1 reads
    # (1/4)/(1 + 1) or 1/4 at any age; without it both read one law of one hit and one end, in
    # [1/4, 3/4] (tests/tree/statistics_test.cpp checks the tables against a naive recomputation).
    assert tree.policy_options().age_classes is False
    for on in (True, False):
        o = tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=2, replan_every=0,
                                gamma=1.0, age_classes=on)  # no decay: the counts above
        assert o.age_classes is on
        pol = tree.state_policy(o)
        ns = segment.namespace_key()
        a = pol.insert(ns, [1, 2, 3])                 # a fresh-end prior at a[2]
        pol.unpin(pol.match(ns, [1, 2]).resume_node)  # a match ends at a[1]
        assert pol.admit(int(a[1]), 1).admitted      # class 0
        assert pol.admit(int(a[2]), 1).admitted      # class 1
        pol.unpin(pol.match(ns, [1, 2]).resume_node)  # a resume from a[1]: one hit, class 0
        pol.drop(int(a[2]))                           # one end, class 1
        assert pol.admit(int(a[2]), 1).admitted      # class 1 again (the prior is still there)
        observed, bet = pol.hit_chance(int(a[1])), pol.hit_chance(int(a[2]))
        if on:
            assert observed >= 0.75 - 1e-12 and bet <= 0.25 + 1e-12
        else:
            assert 0.25 - 1e-12 <= min(observed, bet) and max(observed, bet) <= 0.75 + 1e-12


def test_replan_counters():
    # Every re-plan counts, automatic (replan_every=1, no work threshold: one per match) and
    # explicit, and its wall time adds up.
    pol = tree.state_policy(tree.policy_options(block_size=1, state_bytes=1, capacity_bytes=1,
                                                replan_every=1, replan_work=0.0))
    assert pol.replans == 0 and pol.replan_ns == 0.0
    ns = segment.namespace_key()
    pol.insert(ns, [1, 2, 3])
    for _ in range(3):
        pol.unpin(pol.match(ns, [1, 2, 3]).resume_node)
    assert pol.replans == 3 and pol.replan_ns > 0.0
    before = pol.replan_ns
    pol.replan()
    assert pol.replans == 4 and pol.replan_ns > before


def test_fill_free_option():
    # B = 4, a pool of 4 one-byte states, an empty tree, a 40-token prompt: the plan is the tail
    # 40 and, with fill_free (the default), F = 4 - 1 = 3 of the 9 other grid positions, the
    # ceil(i * 9 / 3)-th for i = 1, 2, 3: 12, 24, 36. Admitting them frees nothing.
    grid = list(range(4, 41, 4))
    plain = tree.state_policy(tree.policy_options(block_size=4, state_bytes=1, capacity_bytes=4,
                                                  replan_every=0, fill_free=False))
    ns = segment.namespace_key()
    toks = list(range(40))
    m0 = plain.match(ns, toks)
    assert list(plain.prefill_plan(m0, 40, grid)) == [40]
    assert tree.policy_options().fill_free is True
    pol = tree.state_policy(tree.policy_options(block_size=4, state_bytes=1, capacity_bytes=4,
                                                replan_every=0))
    m = pol.match(ns, toks)
    plan = list(pol.prefill_plan(m, 40, grid))
    assert plan == [12, 24, 36, 40]
    path = pol.insert(ns, toks)
    for p in plan:
        r = pol.admit(int(path[p // 4 - 1]), 1)
        assert r.admitted and r.victims == []
    pol.unpin(m.resume_node)
    assert pol.used_bytes == 4


def _lazy_leader_reference(history, usables, handovers):
    """The safeguard's rule restated from docs/design/tree_safeguard.md, recomputing every sum
    from the history: the leader switches to argmin_c L_c (ties: the current leader, then the
    lowest index) when the current leader trails it by more than
    delta = max(mean usable over the requests with usable > 0, handover / switches)."""
    leader, switches, leaders = 0, 0, []
    for t in range(len(history)):
        L = [sum(h[c] for h in history[: t + 1]) for c in range(len(history[0]))]
        warm = [u for u in usables[: t + 1] if u > 0]
        mean = sum(warm) / len(warm) if warm else 0.0
        delta = max(mean, sum(handovers[:t]) / switches) if switches else mean
        best = leader
        for c in range(len(L)):
            if L[c] < L[best]:
                best = c
        if best != leader and L[leader] - L[best] > delta:
            leader, switches = best, switches + 1
        leaders.append(leader)
    return leaders, switches


def test_leader_safeguard_matches_the_rule_restated():
    rng = random.Random(3)
    for _ in range(60):
        C, T = rng.randint(1, 5), rng.randint(1, 80)
        bias = [rng.random() for _ in range(C)]
        g = tree.leader_safeguard(C)
        history, usables, handovers, got = [], [], [], []
        for _ in range(T):
            u = 0.0 if rng.random() < 0.3 else float(rng.randint(0, 100))
            losses = [float(math.floor(u * min(1.0, b + 0.3 * rng.random()))) for b in bias]
            history.append(losses)
            usables.append(u)
            got.append(g.observe(losses, u))
            h = float(rng.randint(0, 50))
            handovers.append(h)
            g.note_handover(h)
        want, switches = _lazy_leader_reference(history, usables, handovers)
        assert got == want
        assert g.switches == switches
        assert g.requests == T
        assert g.decisions == sum(1 for u in usables if u > 0)
        assert sum(g.led) == T
        totals = [sum(h[c] for h in history) for c in range(C)]
        assert g.scores == pytest.approx(totals)
        assert g.best_score == pytest.approx(min(totals))
        assert g.leader_loss <= g.best_score + g.regret_bound + 1e-9


def test_leader_safeguard_bad_input_raises_and_changes_nothing():
    with pytest.raises(hc.InvalidArgument):
        tree.leader_safeguard(0)
    with pytest.raises(hc.InvalidArgument):
        tree.leader_safeguard(2, 2)
    g = tree.leader_safeguard(2)
    with pytest.raises(hc.InvalidArgument, match="losses"):
        g.observe([1.0], 1.0)
    with pytest.raises(hc.InvalidArgument, match="losses"):
        g.observe([1.0, float("nan")], 1.0)
    with pytest.raises(hc.InvalidArgument, match="usable"):
        g.observe([1.0, 1.0], -1.0)
    with pytest.raises(hc.InvalidArgument, match="tokens"):
        g.note_handover(-1.0)
    assert g.requests == 0 and g.scores == [0.0, 0.0]
