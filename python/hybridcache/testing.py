# SPDX-License-Identifier: Apache-2.0
"""Reference kit for engine kernels: flash-linear-attention-style reference ops and pytest asserts.

Also float64 NumPy references for RoPE realign and SparseX selection (``rope_frequencies``,
``rope_rotate``, ``realign_keys``, ``sparse_q_scores``, ``select_tokens``), written from the
definitions (DESIGN.md §3, SparseX §3.2) independently of the C++ kernels.

Every function takes NumPy arrays, or anything exposing DLPack (torch tensors included, when torch
is installed: bf16/fp16 tensors are upcast to float32 first, since NumPy has no bfloat16), in
FLA's layouts and argument names:

- q, k (and RWKV's r, w, a, b, KDA's g, GLA's gk): ``[B, T, H, K]``; v: ``[B, T, H, V]``;
  per-head scalars (g of simple GLA / Gated DeltaNet / Gated DeltaProduct, beta): ``[B, T, H]``;
  ``head_first=True`` swaps the T and H axes. States: ``[B, H, K, V]``.
- ``scale=None`` means ``K ** -0.5``; gates are log-space and applied to the old state before
  the update; ``o_t = (scale * q_t)^T S_t`` after token t.

The reference runs in float64 (the C++ library's double path, tested against an explicit
per-token matrix reference). ``assert_outputs_close`` / ``assert_state_close`` check a kernel's
result with the tolerances ``hybridcache verify`` derives (docs/verification.md):
``|cand - ref| <= gamma(depth*u_acc + t*u_store) * bound_weight + u_out*|ref|``.
"""

from __future__ import annotations

import numpy as _np

from ._hybridcache import _testing as _t

__all__ = [
    "chunk_simple_gla",
    "chunk_gla",
    "chunk_delta_rule",
    "chunk_gated_delta_rule",
    "chunk_kda",
    "fused_recurrent_rwkv7",
    "chunk_gated_delta_product",
    "selective_scan",
    "reference",
    "tolerance",
    "assert_outputs_close",
    "assert_state_close",
    "to_numpy",
    "rope_frequencies",
    "rope_rotate",
    "realign_keys",
    "sparse_q_scores",
    "select_tokens",
]

# op name -> (library family, the gate argument's name, per-key gate?, delta rule?)
_OPS = {
    "chunk_simple_gla": ("simple_gla", "g", False),
    "chunk_gla": ("gla", "gk", True),
    "chunk_delta_rule": ("deltanet", None, False),
    "chunk_gated_delta_rule": ("gated_deltanet", "g", False),
    "chunk_kda": ("kda", "g", True),
    "fused_recurrent_rwkv7": ("rwkv7", "w", True),
    "chunk_gated_delta_product": ("gated_delta_product", "g", False),
    "selective_scan": ("mamba1", None, False),
}


def _precision_of(x):
    """The output format of a candidate array: 'bf16', 'fp16', 'fp32' or 'fp64'."""
    name = str(getattr(x, "dtype", "float32"))
    if "bfloat16" in name:
        return "bf16"
    if "float16" in name:
        return "fp16"
    if "float64" in name:
        return "fp64"
    return "fp32"


def to_numpy(x, dtype=_np.float64):
    """NumPy view/copy of an array-like: NumPy arrays, torch tensors (via DLPack) or sequences."""
    if x is None:
        return None
    if isinstance(x, _np.ndarray):
        return _np.ascontiguousarray(x, dtype=dtype)
    mod = type(x).__module__
    if mod.startswith("torch"):
        x = x.detach().to("cpu")
        if str(x.dtype) in ("torch.bfloat16", "torch.float16"):
            x = x.float()
        return _np.ascontiguousarray(_np.from_dlpack(x), dtype=dtype)
    if hasattr(x, "__dlpack__"):
        return _np.ascontiguousarray(_np.from_dlpack(x), dtype=dtype)
    return _np.ascontiguousarray(_np.asarray(x), dtype=dtype)


def _head(x, b, h, head_first):
    """One head's [T, X] block of a [B, T, H, X] (or head-first) tensor; [T] for [B, T, H]."""
    if x is None:
        return None
    blk = x[b, h] if head_first else x[b, :, h]
    return _np.ascontiguousarray(blk).reshape(-1)


def reference(op, *, q=None, k=None, v=None, g=None, gk=None, beta=None, r=None, w=None, a=None,
              b=None, scale=None, initial_state=None, head_first=False, num_householder=1):
    """Runs FLA op ``op`` in float64. Returns a dict with ``o``, ``final_state``, their bound
    weights ``bound_o``, ``bound_state`` and ``depth_per_token`` (docs/verification.md).

    ``op`` is one of chunk_simple_gla, chunk_gla, chunk_delta_rule, chunk_gated_delta_rule,
    chunk_kda, fused_recurrent_rwkv7, chunk_gated_delta_product.
    """
    if op not in _OPS or op == "selective_scan":
        raise ValueError(f"op = {op!r}: must be one of {sorted(k for k in _OPS if k != 'selective_scan')}")
    family, gate_name, _ = _OPS[op]
    if op == "fused_recurrent_rwkv7":
        q, gate = r, w
    else:
        gate = {"g": g, "gk": gk, None: None}[gate_name]
    if gate is None and gate_name is not None and op not in ("chunk_simple_gla",
                                                             "chunk_gated_delta_product"):
        raise ValueError(f"{op} needs {gate_name} (log-space gates)")
    q, k, v, gate, beta, a, b = (to_numpy(t) for t in (q, k, v, gate, beta, a, b))
    init = to_numpy(initial_state)
    if q is None or k is None or v is None:
        raise ValueError("q (r), k and v are required")
    if head_first:
        B, H, T, K = q.shape
    else:
        B, T, H, K = q.shape
    V = v.shape[-1]
    o = _np.zeros((B, H, T, V))
    bo = _np.zeros((B, H, T, V))
    fs = _np.zeros((B, H, K, V))
    bs = _np.zeros((B, H, K, V))
    depth = 0.0
    for bi in range(B):
        for hi in range(H):
            res = _t.head(
                family, T, K, V, _head(q, bi, hi, head_first), _head(k, bi, hi, head_first),
                _head(v, bi, hi, head_first), g=_head(gate, bi, hi, head_first),
                beta=_head(beta, bi, hi, head_first), a=_head(a, bi, hi, head_first),
                b=_head(b, bi, hi, head_first), scale=scale,
                initial_state=None if init is None else init[bi, hi].reshape(-1),
                num_householder=num_householder)
            o[bi, hi] = res[0].reshape(T, V)
            fs[bi, hi] = res[1].reshape(K, V)
            bo[bi, hi] = res[2].reshape(T, V)
            bs[bi, hi] = res[3].reshape(K, V)
            depth = res[4]
    if not head_first:  # back to [B, T, H, V]
        o, bo = o.transpose(0, 2, 1, 3).copy(), bo.transpose(0, 2, 1, 3).copy()
    return {"o": o, "final_state": fs, "bound_o": bo, "bound_state": bs,
            "depth_per_token": depth, "K": K, "T": T, "head_first": head_first}


def _op(name):
    def run(q=None, k=None, v=None, g=None, gk=None, beta=None, scale=None, initial_state=None,
            output_final_state=False, head_first=False, num_householder=1, **kw):
        ref = reference(name, q=q, k=k, v=v, g=g, gk=gk, beta=beta, scale=scale,
                        initial_state=initial_state, head_first=head_first,
                        num_householder=num_householder, **kw)
        return ref["o"], (ref["final_state"] if output_final_state else None)

    run.__name__ = name
    run.__doc__ = (f"float64 reference of FLA's ``{name}`` with its argument names; returns "
                   "``(o, final_state)`` (final_state None unless output_final_state).")
    return run


chunk_simple_gla = _op("chunk_simple_gla")
chunk_gla = _op("chunk_gla")
chunk_delta_rule = _op("chunk_delta_rule")
chunk_gated_delta_rule = _op("chunk_gated_delta_rule")
chunk_kda = _op("chunk_kda")
chunk_gated_delta_product = _op("chunk_gated_delta_product")


def fused_recurrent_rwkv7(r, w, k, v, a, b, scale=None, initial_state=None,
                          output_final_state=True, head_first=False):
    """float64 reference of FLA's ``fused_recurrent_rwkv7``:
    ``S_t = (Diag(exp(w_t)) + b_t a_t^T) S_{t-1} + k_t v_t^T``, ``o_t = (scale r_t)^T S_t``."""
    ref = reference("fused_recurrent_rwkv7", r=r, w=w, k=k, v=v, a=a, b=b, scale=scale,
                    initial_state=initial_state, head_first=head_first)
    return ref["o"], (ref["final_state"] if output_final_state else None)


def selective_scan(u, delta, A, B, C, D=None, delta_bias=None, delta_softplus=False,
                   return_last_state=False):
    """float64 reference with mamba_ssm's ``selective_scan_ref`` layout (one B/C group):
    u, delta ``[batch, dim, L]``, A ``[dim, dstate]``, B, C ``[batch, dstate, L]``.
    Returns ``out`` or ``(out, last_state [batch, dim, dstate])``."""
    u, delta, A, B, C, D, delta_bias = (to_numpy(t) for t in (u, delta, A, B, C, D, delta_bias))
    batch, dim, L = u.shape
    N = A.shape[1]
    dt = delta + (0.0 if delta_bias is None else delta_bias[None, :, None])
    if delta_softplus:
        dt = _np.where(dt <= 20.0, _np.log1p(_np.exp(dt)), dt)
    out = _np.zeros((batch, dim, L))
    last = _np.zeros((batch, dim, N))
    a_kv = _np.ascontiguousarray(A.T).reshape(-1)  # keys (N) x values (dim)
    for bi in range(batch):
        res = _t.head("mamba1", L, N, dim, _np.ascontiguousarray(C[bi].T).reshape(-1),
                      _np.ascontiguousarray(B[bi].T).reshape(-1),
                      _np.ascontiguousarray(u[bi].T).reshape(-1),
                      dt=_np.ascontiguousarray(dt[bi].T).reshape(-1), A=a_kv, scale=1.0)
        y = res[0].reshape(L, dim).T
        if D is not None:
            y = y + D[:, None] * u[bi]
        out[bi] = y
        last[bi] = res[1].reshape(N, dim).T
    return (out, last) if return_last_state else out


def tolerance(ref, weight, depth, steps, accumulate="fp32", state_storage=None, output="fp32"):
    """Elementwise ``gamma(depth*u_acc + steps*u_store)*weight + u_out*|ref|`` (the C++ bound)."""
    ref = to_numpy(ref)
    shape = ref.shape
    flat = [_np.ascontiguousarray(_np.broadcast_to(to_numpy(x), shape)).reshape(-1)
            for x in (weight, depth, steps)]
    tol = _t.tolerance(flat[0], flat[1], flat[2], ref.reshape(-1), accumulate,
                       state_storage or accumulate, output)
    return tol.reshape(shape)


def _assert_close(name, cand, ref, tol):
    cand = to_numpy(cand)
    if cand.shape != ref.shape:
        raise AssertionError(f"{name}: shape {cand.shape}, expected {ref.shape}")
    err = _np.abs(cand - ref)
    bad = ~(err <= tol)
    if bad.any():
        ratio = _np.where(tol > 0, err / _np.where(tol > 0, tol, 1), _np.inf)
        ratio = _np.where(_np.isfinite(cand), ratio, _np.inf)
        i = _np.unravel_index(int(_np.argmax(ratio)), ref.shape)
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {ref.size} elements outside the derived bound; worst at "
            f"{tuple(int(j) for j in i)}: candidate {cand[i]!r}, reference {ref[i]!r}, "
            f"|err| {err[i]:.3g} > tol {tol[i]:.3g}")
    return float(_np.max(err)) if err.size else 0.0


def _time_index(ref):
    T = ref["T"]
    t = _np.arange(1, T + 1, dtype=_np.float64)
    return t[None, None, :, None] if ref["head_first"] else t[None, :, None, None]


def assert_outputs_close(op, o, *, accumulate="fp32", state_storage=None, output=None, **inputs):
    """Asserts a kernel's outputs ``o`` of FLA op ``op`` (same inputs as the kernel, FLA names)
    lie within the derived bound; returns the max abs error. ``output`` defaults to o's dtype."""
    ref = reference(op, **inputs)
    t = _time_index(ref)
    depth = ref["depth_per_token"] * t + ref["K"] + 1.0
    tol = tolerance(ref["o"], ref["bound_o"], depth, t, accumulate, state_storage,
                    output or _precision_of(o))
    return _assert_close(f"{op} outputs", o, ref["o"], tol)


def assert_state_close(op, final_state, *, accumulate="fp32", state_storage=None, output=None,
                       **inputs):
    """Asserts a kernel's ``final_state`` ``[B, H, K, V]`` of FLA op ``op`` lies within the
    derived bound; returns the max abs error."""
    ref = reference(op, **inputs)
    T = float(ref["T"])
    tol = tolerance(ref["final_state"], ref["bound_state"], ref["depth_per_token"] * T, T,
                    accumulate, state_storage, output or _precision_of(final_state))
    return _assert_close(f"{op} final_state", final_state, ref["final_state"], tol)


# --- RoPE and selection references (pure NumPy, float64) ----------------------------------------


def _rope_config(params, rotary_dim, base, layout, scaling, head_dim):
    """(rotary_dim, base, interleaved, scaling) from an ``hybridcache.rope_params`` or keywords."""
    if params is not None:
        return (params.rotary_dim, params.base, params.layout.name == "interleaved",
                params.scaling)
    interleaved = layout in ("interleaved", "gptj") or getattr(layout, "name", "") == "interleaved"
    return (rotary_dim or head_dim, base, interleaved, scaling)


def rope_frequencies(rotary_dim, base=10000.0, scaling=None):
    """theta_i = base^(-2i/d_rot), i < d_rot/2, then scaled: ``scaling`` is None, an
    ``hybridcache.rope_scaling`` or a dict with its fields (kind 'linear' or 'llama3', factor,
    low_freq_factor, high_freq_factor, original_max_position), as Hugging Face's rope_type."""
    if rotary_dim <= 0 or rotary_dim % 2:
        raise ValueError(f"rotary_dim = {rotary_dim}: must be even and > 0")
    i = _np.arange(rotary_dim // 2, dtype=_np.float64)
    theta = float(base) ** (-2.0 * i / rotary_dim)
    if scaling is None:
        return theta
    get = (scaling.get if isinstance(scaling, dict) else lambda k, d=None: getattr(scaling, k, d))
    kind = get("kind")
    kind = getattr(kind, "name", kind)
    factor = float(get("factor", 1.0))
    if kind in (None, "none"):
        return theta
    if kind == "linear":
        return theta / factor
    if kind != "llama3":
        raise ValueError(f"scaling kind = {kind!r}: must be 'linear' or 'llama3'")
    low, high = float(get("low_freq_factor", 1.0)), float(get("high_freq_factor", 4.0))
    L = float(get("original_max_position", 8192.0))
    wavelength = 2 * _np.pi / theta
    s = (L / wavelength - low) / (high - low)
    blended = (1 - s) * theta / factor + s * theta
    return _np.where(wavelength < L / high, theta,
                     _np.where(wavelength > L / low, theta / factor, blended))


def rope_rotate(x, positions, params=None, *, rotary_dim=None, base=10000.0,
                layout="half_split", scaling=None):
    """Rotates keys ``x`` ``[..., tokens, heads, head_dim]`` at ``positions`` (a scalar or one
    per token) in float64: pair (a, b) = (i, i + d_rot/2) (half-split) or (2i, 2i+1)
    (interleaved) becomes (x_a cos p theta_i - x_b sin p theta_i, x_a sin p theta_i + x_b cos p theta_i);
    dimensions past rotary_dim are copied."""
    x = to_numpy(x)
    if x.ndim < 3:
        raise ValueError(f"x.ndim = {x.ndim}: must be >= 3 [..., tokens, heads, head_dim]")
    d_rot, base, interleaved, scaling = _rope_config(params, rotary_dim, base, layout, scaling,
                                                     x.shape[-1])
    if d_rot > x.shape[-1]:
        raise ValueError(f"rotary_dim = {d_rot}: exceeds head_dim = {x.shape[-1]}")
    theta = rope_frequencies(d_rot, base, scaling)
    pos = _np.broadcast_to(_np.asarray(positions, dtype=_np.float64), (x.shape[-3],))
    angle = pos[:, None, None] * theta  # [tokens, 1, pairs]
    c, s = _np.cos(angle), _np.sin(angle)
    half = d_rot // 2
    a = _np.arange(half) * 2 if interleaved else _np.arange(half)
    b = a + 1 if interleaved else a + half
    out = x.copy()
    out[..., a] = x[..., a] * c - x[..., b] * s
    out[..., b] = x[..., a] * s + x[..., b] * c
    return out


def realign_keys(keys, delta, params=None, **rope):
    """float64 reference of ``hybridcache.realign_keys``: R(delta) keys (every token moved by the
    same delta). ``params``: an ``hybridcache.rope_params``, or keywords as ``rope_rotate``."""
    return rope_rotate(keys, delta, params, **rope)


def sparse_q_scores(queries, positions, keys, scale=None):
    """float64 reference of SparseX's sparse-Q scores (eqs. 1-2): per head h (query head h reads
    kv head h // (H / H_kv)) a causal softmax of scale * q_i . k_j over j <= positions[i], summed
    over queries and heads and divided by H * n_q. ``scale=None`` is 1/sqrt(d)."""
    q, k = to_numpy(queries), to_numpy(keys)
    pos = _np.asarray(to_numpy(positions), dtype=_np.int64)
    if q.ndim != 3 or k.ndim != 3:
        raise ValueError("queries and keys must be [n, heads, d]")
    nq, heads, d = q.shape
    t_len, kv_heads, _ = k.shape
    if kv_heads == 0 or heads % kv_heads:
        raise ValueError(f"keys.shape[1] = {kv_heads}: must divide the query heads {heads}")
    scale = 1.0 / _np.sqrt(d) if scale is None else float(scale)
    group = heads // kv_heads
    s = _np.zeros(t_len)
    visible = _np.arange(t_len)[None, :] <= pos[:, None]  # [nq, T]
    for h in range(heads):
        logits = scale * q[:, h, :] @ k[:, h // group, :].T
        logits = _np.where(visible, logits, -_np.inf)
        logits -= logits.max(axis=1, keepdims=True)
        e = _np.exp(logits)
        s += (e / e.sum(axis=1, keepdims=True)).sum(axis=0)
    return s / (heads * nq) if nq and heads else s


def select_tokens(scores, reused, top_k=0, block_size=16, fallback_tokens=64):
    """Reference of ``hybridcache.select_tokens``: a dict of int64 arrays ``non_reuse``, ``key``
    (top_k reused tokens sorted by score descending, then index ascending), ``overflow`` (reused
    tokens within block_size of a maximal non-reuse interval), ``tail`` (the last fallback_tokens
    of a final reused segment), ``recompute`` (their union), and the bool ``recompute_mask``."""
    scores = to_numpy(scores).reshape(-1)
    t_len = scores.size
    reused = [(int(b), int(e)) for b, e in (reused if len(reused) else [])]
    is_reused = _np.zeros(t_len, dtype=bool)
    for b, e in reused:
        is_reused[b:e] = True
    idx = _np.arange(t_len)
    non_reuse = idx[~is_reused]
    cand = idx[is_reused]
    key = cand[_np.lexsort((cand, -scores[cand]))][:top_k]
    near = _np.zeros(t_len, dtype=bool)
    edges = _np.diff(_np.concatenate(([1], is_reused.astype(_np.int8), [1])))
    for a in _np.flatnonzero(edges == -1):  # a non-reuse interval starts at a ...
        near[max(0, a - block_size):a] = True
    for b in _np.flatnonzero(edges == 1):  # ... and ends before b
        near[b:min(t_len, b + block_size)] = True
    overflow = idx[near & is_reused]
    tail = _np.zeros(0, dtype=_np.int64)
    if reused and reused[-1][1] == t_len:
        b, e = reused[-1]
        tail = _np.arange(e - min(e - b, fallback_tokens), e)
    mask = ~is_reused
    for part in (key, overflow, tail):
        mask[part] = True
    return {"non_reuse": non_reuse, "key": key, "overflow": overflow, "tail": tail,
            "recompute": idx[mask], "recompute_mask": mask}
