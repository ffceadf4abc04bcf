# SPDX-License-Identifier: Apache-2.0
"""hybridcache.testing against independent NumPy recurrences written here in FLA's naive style
(fla/ops/*/naive.py: state [K, V], gate on the old state, o = (scale q)^T S), plus the asserts'
negative controls. Runs without torch; the DLPack path is exercised when torch is installed."""

import numpy as np
import pytest

from hybridcache import testing as hct

B, T, H, K, V = 2, 12, 3, 8, 5


def _rng(seed):
    return np.random.default_rng(seed)


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _inputs(seed, gate_shape=None, delta=False):
    r = _rng(seed)
    d = {"q": r.standard_normal((B, T, H, K)), "k": _unit(r.standard_normal((B, T, H, K))),
         "v": r.standard_normal((B, T, H, V)), "initial_state": r.standard_normal((B, H, K, V))}
    if gate_shape == "head":
        d["g"] = r.uniform(-0.3, -0.01, (B, T, H))
    elif gate_shape == "key":
        d["g"] = r.uniform(-0.3, -0.01, (B, T, H, K))
    if delta:
        d["beta"] = r.uniform(0.1, 0.9, (B, T, H))
    return d


def _numpy_reference(q, k, v, g=None, beta=None, initial_state=None, scale=None, per_key=False):
    """FLA naive recurrence, written out: S <- gate(S); delta or additive write; o = s q^T S."""
    scale = K ** -0.5 if scale is None else scale
    o = np.zeros((B, T, H, V))
    S = np.zeros((B, H, K, V)) if initial_state is None else initial_state.copy()
    for t in range(T):
        if g is not None:
            decay = np.exp(g[:, t]) if per_key else np.exp(g[:, t])[..., None]
            S = S * decay[..., None]
        kt, vt = k[:, t], v[:, t]
        if beta is None:
            S = S + kt[..., None] * vt[..., None, :]
        else:
            pred = np.einsum("bhk,bhkv->bhv", kt, S)
            S = S + beta[:, t][..., None, None] * kt[..., None] * (vt - pred)[..., None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", q[:, t] * scale, S)
    return o, S


@pytest.mark.parametrize("op,gate,delta,per_key", [
    ("chunk_simple_gla", "head", False, False),
    ("chunk_gla", "key", False, True),
    ("chunk_delta_rule", None, True, False),
    ("chunk_gated_delta_rule", "head", True, False),
    ("chunk_kda", "key", True, True),
])
def test_ops_match_numpy_recurrence(op, gate, delta, per_key):
    d = _inputs(1, gate, delta)
    expect_o, expect_s = _numpy_reference(d["q"], d["k"], d["v"], d.get("g"), d.get("beta"),
                                          d["initial_state"], per_key=per_key)
    kw = dict(d)
    if op == "chunk_gla":
        kw["gk"] = kw.pop("g")
    o, s = getattr(hct, op)(**kw, output_final_state=True)
    np.testing.assert_allclose(o, expect_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s, expect_s, rtol=1e-12, atol=1e-12)
    # head-first layout gives the same numbers, transposed.
    hf = {k: (np.ascontiguousarray(np.swapaxes(x, 1, 2)) if k != "initial_state" else x)
          for k, x in kw.items()}
    o2, s2 = getattr(hct, op)(**hf, output_final_state=True, head_first=True)
    np.testing.assert_allclose(np.swapaxes(o2, 1, 2), expect_o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(s2, expect_s, rtol=1e-12, atol=1e-12)


def test_rwkv7_matches_numpy_dplr():
    r = _rng(2)
    rr, k, w = r.standard_normal((B, T, H, K)), r.standard_normal((B, T, H, K)), r.uniform(-0.5, -0.01, (B, T, H, K))
    kap = _unit(r.standard_normal((B, T, H, K)))
    a, b = -kap, kap * 0.5
    v = r.standard_normal((B, T, H, V))
    S = np.zeros((B, H, K, V))
    o = np.zeros((B, T, H, V))
    for t in range(T):  # fla/ops/generalized_delta_rule/dplr/naive.py: rank-1 reads the old S
        sa = np.einsum("bhk,bhkv->bhv", a[:, t], S)
        S = S * np.exp(w[:, t])[..., None] + k[:, t][..., None] * v[:, t][..., None, :] \
            + b[:, t][..., None] * sa[..., None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", rr[:, t] * K ** -0.5, S)
    got_o, got_s = hct.fused_recurrent_rwkv7(rr, w, k, v, a, b)
    np.testing.assert_allclose(got_o, o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_s, S, rtol=1e-12, atol=1e-12)


def test_gated_delta_product_matches_numpy():
    r = _rng(3)
    nh = 2
    q = r.standard_normal((B, T, H, K))
    k = _unit(r.standard_normal((B, T * nh, H, K)))
    v = r.standard_normal((B, T * nh, H, V))
    beta = r.uniform(0.1, 0.9, (B, T * nh, H))
    g = r.uniform(-0.3, -0.01, (B, T, H))
    S = np.zeros((B, H, K, V))
    o = np.zeros((B, T, H, V))
    for t in range(T):  # fla/ops/gated_delta_product/naive.py
        S = S * np.exp(g[:, t])[..., None, None]
        for j in range(nh):
            kj, vj, bj = k[:, t * nh + j], v[:, t * nh + j], beta[:, t * nh + j]
            pred = np.einsum("bhk,bhkv->bhv", kj, S)
            S = S + bj[..., None, None] * kj[..., None] * (vj - pred)[..., None, :]
        o[:, t] = np.einsum("bhk,bhkv->bhv", q[:, t] * K ** -0.5, S)
    got_o, got_s = hct.chunk_gated_delta_product(q=q, k=k, v=v, g=g, beta=beta,
                                                 num_householder=nh, output_final_state=True)
    np.testing.assert_allclose(got_o, o, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got_s, S, rtol=1e-12, atol=1e-12)


def test_selective_scan_matches_mamba_ref():
    r = _rng(4)
    batch, dim, L, N = 2, 3, 10, 4
    u, delta = r.standard_normal((batch, dim, L)), r.standard_normal((batch, dim, L))
    A = -r.uniform(0.2, 3, (dim, N))
    Bm, Cm, D = r.standard_normal((batch, N, L)), r.standard_normal((batch, N, L)), r.standard_normal(dim)
    dt = np.log1p(np.exp(delta))
    x = np.zeros((batch, dim, N))
    ys = []
    for t in range(L):  # mamba_ssm selective_scan_ref
        x = np.exp(dt[:, :, t, None] * A) * x + dt[:, :, t, None] * Bm[:, None, :, t] * u[:, :, t, None]
        ys.append(np.einsum("bdn,bn->bd", x, Cm[:, :, t]))
    y = np.stack(ys, axis=2) + D[None, :, None] * u
    out, last = hct.selective_scan(u, delta, A, Bm, Cm, D, delta_softplus=True, return_last_state=True)
    np.testing.assert_allclose(out, y, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(last, x, rtol=1e-12, atol=1e-12)


def _numpy_chunked_gla_kernel(q, k, v, gk, chunk=4):
    """A small kernel stand-in: chunked GLA in float32 (the docs' worked example)."""
    q, k, v, gk = (x.astype(np.float32) for x in (q, k, v, gk))
    scale = np.float32(K ** -0.5)
    S = np.zeros((B, H, K, V), np.float32)
    o = np.zeros((B, T, H, V), np.float32)
    for s in range(0, T, chunk):
        G = np.cumsum(gk[:, s:s + chunk], axis=1)  # [B, C, H, K] cumulative log-decay
        for i in range(G.shape[1]):
            # o_i = q_i e^{G_i} S + sum_{j<=i} (q_i e^{G_i - G_j} . k_j) v_j
            qi = q[:, s + i] * scale * np.exp(G[:, i])
            acc = np.einsum("bhk,bhkv->bhv", qi, S)
            for j in range(i + 1):
                w = np.einsum("bhk,bhk->bh", q[:, s + i] * scale * np.exp(G[:, i] - G[:, j]), k[:, s + j])
                acc = acc + w[..., None] * v[:, s + j]
            o[:, s + i] = acc
        Gn = G[:, -1]
        S = S * np.exp(Gn)[..., None]
        for j in range(G.shape[1]):
            S = S + (k[:, s + j] * np.exp(Gn - G[:, j]))[..., None] * v[:, s + j][..., None, :]
    return o, S


def test_assert_outputs_close_accepts_a_float32_kernel_and_rejects_errors():
    d = _inputs(5, "key")
    q, k, v, gk = (x.astype(np.float32).astype(np.float64) for x in (d["q"], d["k"], d["v"], d["g"]))
    o, S = _numpy_chunked_gla_kernel(q, k, v, gk)
    err = hct.assert_outputs_close("chunk_gla", o, q=q, k=k, v=v, gk=gk)
    assert err > 0  # float32 really differs from the float64 reference ...
    hct.assert_state_close("chunk_gla", S, q=q, k=k, v=v, gk=gk)  # ... but within the bound
    # Negative controls: missing q scale, transposed state, one element past its bound.
    o_noscale, _ = _numpy_chunked_gla_kernel(q * K ** 0.5, k, v, gk)
    with pytest.raises(AssertionError, match="outside the derived bound"):
        hct.assert_outputs_close("chunk_gla", o_noscale, q=q, k=k, v=v, gk=gk)
    with pytest.raises(AssertionError):
        # a kernel that writes S^T (V x K) into the [K, V] buffer
        hct.assert_state_close("chunk_gla", np.ascontiguousarray(S.swapaxes(2, 3)).reshape(B, H, K, V),
                               q=q, k=k, v=v, gk=gk)
    ref = hct.reference("chunk_gla", q=q, k=k, v=v, gk=gk)
    t = np.arange(1, T + 1, dtype=float)[None, :, None, None]
    tol = hct.tolerance(ref["o"], ref["bound_o"], ref["depth_per_token"] * t + K + 1, t,
                        output="fp64")
    bad = ref["o"].copy()
    bad[1, 3, 2, 1] += 1.01 * tol[1, 3, 2, 1] + 1e-300
    with pytest.raises(AssertionError, match="1 of"):
        hct.assert_outputs_close("chunk_gla", bad, q=q, k=k, v=v, gk=gk, output="fp64")
    ok = ref["o"].copy()
    ok[1, 3, 2, 1] += 0.99 * tol[1, 3, 2, 1]
    hct.assert_outputs_close("chunk_gla", ok, q=q, k=k, v=v, gk=gk, output="fp64")


def test_bad_arguments_raise():
    d = _inputs(6, None)
    with pytest.raises(ValueError):
        hct.reference("chunk_frobnicate", **d)
    with pytest.raises(ValueError, match="gk"):  # GLA without its gate
        hct.chunk_gla(q=d["q"], k=d["k"], v=d["v"])


def test_torch_tensors_via_dlpack():
    torch = pytest.importorskip("torch")
    d = _inputs(7, "head")
    o_np, _ = hct.chunk_simple_gla(**d)
    o_t, _ = hct.chunk_simple_gla(**{k: torch.from_numpy(x) for k, x in d.items()})
    np.testing.assert_array_equal(o_np, o_t)
