# SPDX-License-Identifier: Apache-2.0
"""RoPE realign against an explicit rotation: keys rotated at position p by cos/sin of p*theta_i
(float64, written here from the RoFormer / HF definitions), moved by delta, must equal the keys
rotated at p + delta."""

import math

import numpy as np
import pytest

import hybridcache as hc
from checks import check_raises

# --- independent reference -------------------------------------------------------------------


def ref_thetas(rotary_dim, base, scaling=None):
    """theta_i = base^(-2i/d_rot), then HF's 'linear' or 'llama3' rope scaling."""
    i = np.arange(rotary_dim // 2, dtype=np.float64)
    th = base ** (-2.0 * i / rotary_dim)
    if scaling is None:
        return th
    kind = scaling[0]
    if kind == "linear":
        return th / scaling[1]
    _, factor, low, high, L = scaling  # llama3
    out = np.empty_like(th)
    for j, t in enumerate(th):
        wavelength = 2 * math.pi / t
        if wavelength < L / high:
            out[j] = t
        elif wavelength > L / low:
            out[j] = t / factor
        else:
            s = (L / wavelength - low) / (high - low)
            out[j] = (1 - s) * t / factor + s * t
    return out


def ref_rotate(x, positions, rotary_dim, base, interleaved, scaling=None):
    """x [tokens, heads, d] (float64) rotated at positions [tokens] pair by pair."""
    x = np.asarray(x, dtype=np.float64)
    out = x.copy()
    th = ref_thetas(rotary_dim, base, scaling)
    half = rotary_dim // 2
    for t in range(x.shape[0]):
        for i in range(half):
            a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + half)
            c, s = math.cos(positions[t] * th[i]), math.sin(positions[t] * th[i])
            xa, xb = x[t, :, a].copy(), x[t, :, b].copy()
            out[t, :, a] = xa * c - xb * s
            out[t, :, b] = xa * s + xb * c
    return out


def to_bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(b):
    return (b.astype(np.uint32) << 16).view(np.float32)


def pair_error(got, want, rotary_dim, interleaved):
    """max over rotated pairs of |got - want| / |pair| (the C++ test's measure)."""
    half = rotary_dim // 2
    idx_a = np.arange(half) * 2 if interleaved else np.arange(half)
    idx_b = idx_a + 1 if interleaved else idx_a + half
    norm = np.sqrt(want[..., idx_a] ** 2 + want[..., idx_b] ** 2) + 1e-30
    err = np.maximum(np.abs(got[..., idx_a] - want[..., idx_a]),
                     np.abs(got[..., idx_b] - want[..., idx_b]))
    return float(np.max(err / norm))


SCALINGS = {
    "none": (None, None),
    "linear": (hc.rope_scaling.linear(4.0), ("linear", 4.0)),
    "llama3": (hc.rope_scaling.llama3(8.0, 1.0, 4.0, 64.0), ("llama3", 8.0, 1.0, 4.0, 64.0)),
}

# --- tests -------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", ["half_split", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [32, 16])  # full and partial rotary
@pytest.mark.parametrize("scaling", list(SCALINGS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_realign_equals_rotation_at_the_new_position(layout, rotary_dim, scaling, dtype):
    rng = np.random.default_rng(7)
    d, heads, tokens, base = 32, 3, 5, 500000.0
    interleaved = layout == "interleaved"
    sc, ref_sc = SCALINGS[scaling]
    p = hc.rope_params(head_dim=d, rotary_dim=rotary_dim, base=base,
                       layout=getattr(hc.rope_layout, layout), scaling=sc)
    np.testing.assert_allclose(p.frequencies(), ref_thetas(rotary_dim, base, ref_sc), rtol=1e-12)
    raw = rng.standard_normal((tokens, heads, d))
    old = np.arange(100, 100 + tokens)
    for delta in (0, 37, -91, 12345):
        cached = ref_rotate(raw, old, rotary_dim, base, interleaved, ref_sc).astype(dtype)
        got = hc.realign_keys(p, cached, delta)
        assert got.dtype == dtype and got.shape == cached.shape
        want = ref_rotate(cached, np.full(tokens, delta), rotary_dim, base, interleaved, ref_sc)
        assert pair_error(got, want, rotary_dim, interleaved) < 2e-6
        # the same as rotating the raw keys at the new positions
        at_new = ref_rotate(raw, old + delta, rotary_dim, base, interleaved, ref_sc)
        assert pair_error(got, at_new, rotary_dim, interleaved) < 2e-5
        # the dimensions past rotary_dim pass through bit for bit
        np.testing.assert_array_equal(got[..., rotary_dim:], cached[..., rotary_dim:])


@pytest.mark.parametrize("storage", ["float16", "bfloat16"])
def test_realign_16_bit_storage(storage):
    rng = np.random.default_rng(3)
    d, rot = 16, 16
    p = hc.rope_params(head_dim=d, base=10000.0)
    x = rng.standard_normal((4, 2, d)).astype(np.float32)
    if storage == "float16":
        cached = x.astype(np.float16)
        got = hc.realign_keys(p, cached, 21)
        assert got.dtype == np.float16
        got_f = got.astype(np.float64)
        start, tol = cached.astype(np.float64), 2.0 ** -10
    else:
        cached = to_bf16_bits(x)
        got = hc.realign_keys(p, cached, 21, bfloat16=True)
        assert got.dtype == np.uint16
        got_f = from_bf16_bits(got).astype(np.float64)
        start, tol = from_bf16_bits(cached).astype(np.float64), 2.0 ** -7
    want = ref_rotate(start, np.full(4, 21), rot, 10000.0, False)
    assert pair_error(got_f, want, rot, False) < tol


def test_realign_in_place_and_on_strided_views():
    rng = np.random.default_rng(11)
    p = hc.rope_params(head_dim=8, rotary_dim=8)
    big = rng.standard_normal((6, 4, 8)).astype(np.float32)
    view = big[::2, 1::2, :]  # not contiguous: used in place, no copy
    want = ref_rotate(view, np.full(3, 9), 8, 10000.0, False)
    before = big.copy()
    out = hc.realign_keys(p, view, 9, out=view)
    assert out is view
    assert pair_error(view, want, 8, False) < 2e-6
    untouched = np.ones(big.shape, dtype=bool)
    untouched[::2, 1::2, :] = False
    np.testing.assert_array_equal(big[untouched], before[untouched])
    # a preallocated, disjoint output
    dst = np.zeros((3, 2, 8), dtype=np.float32)
    src = before[::2, 1::2, :].copy()
    assert hc.realign_keys(p, src, 9, out=dst) is dst
    assert pair_error(dst, want, 8, False) < 2e-6


def test_realign_blocks_copies_old_blocks_to_new_ones():
    rng = np.random.default_rng(5)
    p = hc.rope_params(head_dim=8, rotary_dim=4, layout=hc.rope_layout.interleaved)
    nb, bs, heads = 6, 4, 2
    k = rng.standard_normal((nb, bs, heads, 8)).astype(np.float32)
    v = rng.standard_normal((nb, bs, heads, 5)).astype(np.float32)
    k0, v0 = k.copy(), v.copy()
    old, new, num_tokens, delta = [0, 1], [3, 5], 6, -17
    assert hc.realign_blocks(p, k, v, old, new, num_tokens, delta) is None  # in place, one pool
    for b in range(2):
        n = min(bs, num_tokens - b * bs)
        want = ref_rotate(k0[old[b], :n], np.full(n, delta), 4, 10000.0, True)
        assert pair_error(k[new[b], :n], want, 4, True) < 2e-6
        np.testing.assert_array_equal(k[new[b], :n, :, 4:], k0[old[b], :n, :, 4:])
        np.testing.assert_array_equal(v[new[b], :n], v0[old[b], :n])
        np.testing.assert_array_equal(k[new[b], n:], k0[new[b], n:])  # past num_tokens
    for blk in (0, 1, 2, 4):
        np.testing.assert_array_equal(k[blk], k0[blk])
        np.testing.assert_array_equal(v[blk], v0[blk])
    # separate destination pools
    kd, vd = np.zeros_like(k0), np.zeros_like(v0)
    hc.realign_blocks(p, k0, v0, [2], [0], 4, 3, k_out=kd, v_out=vd)
    assert pair_error(kd[0], ref_rotate(k0[2], np.full(4, 3), 4, 10000.0, True), 4, True) < 2e-6
    np.testing.assert_array_equal(vd[0], v0[2])
    assert not kd[1:].any()


def test_bad_input_raises_value_error_naming_the_argument():
    p = hc.rope_params(head_dim=8)
    x = np.zeros((2, 1, 8), dtype=np.float32)
    check_raises(lambda: hc.rope_params(head_dim=8, rotary_dim=7), "rotary_dim")
    check_raises(lambda: hc.rope_params(head_dim=8, base=1.0), "base")
    check_raises(lambda: hc.rope_params(head_dim=8, scaling=hc.rope_scaling.linear(0.0)),
                 "scaling.factor")
    check_raises(lambda: hc.realign_keys(p, np.zeros((2, 8), np.float32), 1), "src.ndim")
    check_raises(lambda: hc.realign_keys(p, np.zeros((2, 1, 6), np.float32), 1), "src.extent(2)")
    check_raises(lambda: hc.realign_keys(p, x, 1, out=np.zeros((2, 1, 8))), "out.dtype")
    check_raises(lambda: hc.realign_keys(p, x, 1, out=np.zeros((3, 1, 8), np.float32)),
                 "dst.extent(0)")
    check_raises(lambda: hc.realign_keys(p, np.zeros((2, 1, 8), np.uint16), 1), "src.dtype")
    check_raises(lambda: hc.realign_keys(p, x, 1, bfloat16=True), "src.dtype")
    check_raises(lambda: hc.realign_keys(p, np.zeros((2, 1, 8), np.int8), 1), "src.dtype")
    big = np.zeros((3, 1, 8), np.float32)
    check_raises(lambda: hc.realign_keys(p, big[:2], 1, out=big[1:]), "out")  # partial overlap
    ro = np.zeros((2, 1, 8), np.float32)
    ro.flags.writeable = False
    check_raises(lambda: hc.realign_keys(p, x, 1, out=ro), "out")
    check_raises(lambda: hc.realign_keys(p, x[::-1], 1), "src.strides[0]")
    k = np.zeros((2, 2, 1, 8), np.float32)
    v = np.zeros((2, 2, 1, 4), np.float32)
    check_raises(lambda: hc.realign_blocks(p, k, v, [0], [5], 2, 1), "new_blocks[0]")
    check_raises(lambda: hc.realign_blocks(p, k, v, [0], [1], 3, 1), "num_tokens")
    check_raises(lambda: hc.realign_blocks(p, k, v.astype(np.float64), [0], [1], 2, 1),
                 "v_cache.dtype")
    check_raises(lambda: hc.realign_blocks(p, k, v, [0, 1], [1, 0], 4, 1), "new_blocks[0]")
