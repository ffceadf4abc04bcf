# SPDX-License-Identifier: Apache-2.0
"""SparseX selection against references written here: scores by explicit q.k loops and a
per-row softmax (eqs. 1-2), selection by sorting (score descending, then index ascending: the
documented tie rule) and set arithmetic, the layer plan from its rule."""

import math

import numpy as np
import pytest

import hybridcache as hc
from checks import check_raises

# --- independent references --------------------------------------------------------------------


def ref_scores(q, positions, k, scale=None):
    nq, heads, d = q.shape
    t_len, kv_heads, _ = k.shape
    scale = 1.0 / math.sqrt(d) if scale is None else scale
    group = heads // kv_heads
    s = np.zeros(t_len)
    for h in range(heads):
        for i in range(nq):
            p = positions[i]
            logits = [scale * sum(float(q[i, h, c]) * float(k[j, h // group, c]) for c in range(d))
                      for j in range(p + 1)]
            m = max(logits)
            e = [math.exp(x - m) for x in logits]
            z = sum(e)
            for j in range(p + 1):
                s[j] += e[j] / z
    return s / (heads * nq)


def ref_select(scores, reused, top_k, block_size, fallback):
    t_len = len(scores)
    is_reused = np.zeros(t_len, dtype=bool)
    for b, e in reused:
        is_reused[b:e] = True
    non_reuse = [j for j in range(t_len) if not is_reused[j]]
    cand = [j for j in range(t_len) if is_reused[j]]
    key = sorted(cand, key=lambda j: (-scores[j], j))[:top_k]
    overflow = set()
    j = 0
    while j < t_len:  # maximal non-reuse intervals [a, b)
        if is_reused[j]:
            j += 1
            continue
        a = j
        while j < t_len and not is_reused[j]:
            j += 1
        for x in list(range(max(0, a - block_size), a)) + list(range(j, min(t_len, j + block_size))):
            if is_reused[x]:
                overflow.add(x)
    tail = []
    if reused and reused[-1][1] == t_len:
        b, e = reused[-1]
        tail = list(range(e - min(e - b, fallback), e))
    recompute = sorted(set(non_reuse) | set(key) | overflow | set(tail))
    return non_reuse, key, sorted(overflow), tail, recompute


# --- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("heads, kv_heads", [(2, 2), (4, 2), (3, 1)])
def test_sparse_q_scores_match_explicit_softmax(dtype, heads, kv_heads):
    rng = np.random.default_rng(heads * 10 + kv_heads)
    t_len, d = 23, 8
    k = rng.standard_normal((t_len, kv_heads, d)).astype(dtype)
    positions = np.array([0, 4, 5, 11, 17])
    q = rng.standard_normal((len(positions), heads, d)).astype(dtype)
    tol = 1e-12 if dtype == np.float64 else 2e-6
    for scale in (None, 0.3):
        got = hc.sparse_q_scores(q, positions, k, scale=scale)
        want = ref_scores(q, positions, k, scale)
        assert got.dtype == np.float64 and got.shape == (t_len,)
        np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol)
        assert abs(got.sum() - 1.0) < 10 * tol
        assert not got[positions[-1] + 1:].any()  # causal


def test_sparse_q_scores_use_strided_views_in_place():
    rng = np.random.default_rng(1)
    big_q = rng.standard_normal((6, 4, 8))
    big_k = rng.standard_normal((12, 2, 16))
    q, k = big_q[::2, ::2], big_k[:, :, ::2]  # no axis contiguous
    pos = [1, 3, 9]
    np.testing.assert_allclose(hc.sparse_q_scores(q, pos, k), ref_scores(q, pos, k),
                               rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("seed", range(8))
def test_select_tokens_matches_sorting_reference(seed):
    rng = np.random.default_rng(seed)
    t_len = int(rng.integers(20, 60))
    # random disjoint reused ranges (adjacent allowed)
    cuts = sorted(rng.choice(np.arange(1, t_len), size=6, replace=False).tolist())
    bounds = [0] + cuts + [t_len]
    reused = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1) if rng.random() < 0.6]
    scores = rng.integers(0, 4, size=t_len) / 4.0  # many ties
    top_k, block, fallback = int(rng.integers(0, 10)), int(rng.integers(1, 5)), 3
    sel = hc.select_tokens(scores, reused, top_k=top_k, block_size=block, fallback_tokens=fallback)
    nr, key, ov, tail, rec = ref_select(scores, reused, top_k, block, fallback)
    assert sel.non_reuse.tolist() == nr
    assert sel.key.tolist() == key  # order too: best first, ties to the lower index
    assert sel.overflow.tolist() == ov
    assert sel.tail.tolist() == tail
    assert sel.recompute.tolist() == rec
    mask = np.zeros(t_len, dtype=bool)
    mask[rec] = True
    assert sel.recompute_mask.dtype == np.bool_
    np.testing.assert_array_equal(sel.recompute_mask, mask)
    assert hc.non_reuse_positions(reused, t_len).tolist() == nr
    assert hc.non_reuse_positions(np.array(reused, dtype=np.int64).reshape(-1, 2),
                                  t_len).tolist() == nr


@pytest.mark.parametrize("layers, threshold", [(8, 0), (8, 1), (8, 3), (8, 8), (1, 0)])
def test_layer_plan_follows_its_rule(layers, threshold):
    scores = np.linspace(0.0, 1.0, 12)
    reused = [(0, 5), (7, 12)]
    sel = hc.select_tokens(scores, reused, top_k=2, block_size=1, fallback_tokens=2)
    plan = hc.make_layer_plan(layers, threshold, sel)
    sparse_q = np.zeros(12, dtype=bool)
    sparse_q[sel.non_reuse] = True
    selection_layer = 0 if threshold == 0 else threshold - 1
    assert plan.threshold == threshold and plan.selection_layer == selection_layer
    total = 0
    for layer in range(layers):
        if layer < threshold:
            mode = hc.layer_mode.select if (layer == selection_layer and threshold < layers) \
                else hc.layer_mode.full
            want = np.ones(12, dtype=bool)
        elif layer == selection_layer:  # threshold == 0
            mode, want = hc.layer_mode.select, sparse_q
        else:
            mode, want = hc.layer_mode.sparse, sel.recompute_mask
        assert plan.modes[layer] == mode
        np.testing.assert_array_equal(plan.mask(layer), want)
        assert plan.recompute_count(layer) == int(want.sum())
        total += int(want.sum())
    assert plan.recompute_fraction() == pytest.approx(total / (layers * 12))
    assert hc.threshold_for(36, 0.15) == math.ceil(36 * 0.15)
    assert hc.threshold_for(10, 0.0) == 0 and hc.threshold_for(10, 1.0) == 10


def test_bad_input_raises_value_error_naming_the_argument():
    q = np.zeros((2, 2, 4))
    k = np.zeros((6, 2, 4))
    check_raises(lambda: hc.sparse_q_scores(q, [3, 1], k), "positions[1]")
    check_raises(lambda: hc.sparse_q_scores(q, [1, 6], k), "positions[1]")
    check_raises(lambda: hc.sparse_q_scores(q, [1], k), "positions.extent(0)")
    check_raises(lambda: hc.sparse_q_scores(q, [1, 2], np.zeros((6, 2, 3))), "keys.extent(2)")
    check_raises(lambda: hc.sparse_q_scores(np.zeros((2, 3, 4)), [1, 2], k), "keys.extent(1)")
    check_raises(lambda: hc.sparse_q_scores(np.zeros((2, 4)), [1, 2], k), "queries.ndim")
    check_raises(lambda: hc.sparse_q_scores(q, [1, 2], k, scale=-1.0), "scale")
    s = np.ones(10)
    check_raises(lambda: hc.select_tokens(s, [(0, 4), (3, 6)]), "reused[1].begin")
    check_raises(lambda: hc.select_tokens(s, [(0, 11)]), "reused[0].end")
    check_raises(lambda: hc.select_tokens(s, [(0, 1, 2)]), "reused.shape")
    check_raises(lambda: hc.select_tokens(s, [(-1, 2)]), "reused[0]")
    check_raises(lambda: hc.select_tokens(-s, [(0, 2)]), "scores[0]")
    check_raises(lambda: hc.select_tokens(s, [(0, 2)], block_size=0), "options.block_size")
    sel = hc.select_tokens(s, [(0, 2)])
    check_raises(lambda: hc.make_layer_plan(4, 5, sel), "threshold")
    check_raises(lambda: hc.make_layer_plan(0, 0, sel), "layers")
    check_raises(lambda: hc.make_layer_plan(4, 1, sel).mask(4), "layer")
    check_raises(lambda: hc.threshold_for(4, 1.5), "fraction")
