# SPDX-License-Identifier: Apache-2.0
"""Independent NumPy references for the Python tests: brute force, closed forms and token-by-token
recurrences written from DESIGN.md section 3, never calling the module under test."""

import itertools

import numpy as np


# --- placement ------------------------------------------------------------------------------
def expected_recompute(weights, checkpoints):
    """E[r] = sum_t p_t (t - l(t)), l(t) = max({0} u {c <= t}), by direct evaluation."""
    p = np.asarray(weights, dtype=np.float64)
    p = p / p.sum()
    n = len(p)
    cps = sorted(int(c) for c in checkpoints)
    total = 0.0
    for t in range(1, n + 1):
        last = max([0] + [c for c in cps if c <= t])
        total += p[t - 1] * (t - last)
    return total


def no_cache(weights):
    p = np.asarray(weights, dtype=np.float64)
    p = p / p.sum()
    return float(np.dot(p, np.arange(1, len(p) + 1)))


def brute_force_frontier(weights, max_budget, granularity=1):
    """min E[r] over every candidate subset of size <= M, for M = 0..max_budget, and a minimiser."""
    n = len(weights)
    candidates = list(range(granularity, n + 1, granularity))
    best = []
    for m in range(max_budget + 1):
        value, arg = np.inf, ()
        for k in range(min(m, len(candidates)) + 1):
            for subset in itertools.combinations(candidates, k):
                e = expected_recompute(weights, subset)
                if e < value - 1e-15:
                    value, arg = e, subset
        best.append((value, arg))
    return best


# --- overlap --------------------------------------------------------------------------------
def ew_pmf(depths, max_depth, gamma):
    """p_t proportional to sum_s gamma^(n-s) [T_s = t] over hits, normalised over t = 1..N."""
    n = len(depths)
    w = np.zeros(max_depth + 1)
    for s, d in enumerate(depths, start=1):
        w[d] += gamma ** (n - s)
    hits = w[1:]
    miss_rate = w[0] / w.sum() if w.sum() > 0 else 0.0
    return (hits / hits.sum() if hits.sum() > 0 else hits), miss_rate


# --- dispatch -------------------------------------------------------------------------------
def lpt(costs, workers):
    """LPT greedy, written plainly: descending cost (stable), least-loaded worker (lowest index)."""
    order = sorted(range(len(costs)), key=lambda i: (-costs[i], i))
    load = [0.0] * workers
    worker_of = [0] * len(costs)
    for i in order:
        w = min(range(workers), key=lambda j: (load[j], j))
        worker_of[i] = w
        load[w] += costs[i]
    return worker_of, load


def optimal_makespan(costs, workers):
    best = np.inf
    for assign in itertools.product(range(workers), repeat=len(costs)):
        load = np.zeros(workers)
        for c, w in zip(costs, assign):
            load[w] += c
        best = min(best, load.max())
    return best if len(costs) else 0.0


# --- state ----------------------------------------------------------------------------------
def recurrence(k, v, s0, beta=None, log_gate=None):
    """S_i = T_i S_{i-1} + u_i token by token in float64, T_i and u_i spelt out as matrices
    (DESIGN.md section 3 table). Returns (end state, T_L ... T_1)."""
    k = np.asarray(k, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    s = np.array(s0, dtype=np.float64)
    length, dk = k.shape
    total = np.eye(dk)
    for i in range(length):
        ki, vi = k[i][:, None], v[i][None, :]
        if log_gate is None:
            decay = np.eye(dk)
        else:
            g = np.asarray(log_gate, dtype=np.float64)[i]
            decay = np.diag(np.exp(g) * np.ones(dk)) if np.ndim(g) else np.exp(g) * np.eye(dk)
        if beta is None:  # additive: T = decay, u = k v^T
            t, u = decay, ki @ vi
        else:  # delta rule; a per-row gate (KDA) multiplies on the right, a scalar commutes
            b = float(beta[i])
            t, u = (np.eye(dk) - b * (ki @ ki.T)) @ decay, b * (ki @ vi)
        s = t @ s + u
        total = t @ total
    return s, total


# --- segment --------------------------------------------------------------------------------
def namespace_bytes(tenant=None, knowledge_base=None, adapter=None, model=None, extras=()):
    """The HCNS encoding written from its specification (segment/namespace_key.hpp): magic,
    version 1, then (tag, uint32 LE length, bytes) per present field in tag order, then 0x00."""
    out = bytearray(b"HCNS\x01")
    fields = [(1, tenant), (2, knowledge_base), (3, adapter), (4, model)]
    fields += [(5, e) for e in extras]
    for tag, value in fields:
        if value is None:
            continue
        data = value.encode() if isinstance(value, str) else bytes(value)
        out += bytes([tag]) + len(data).to_bytes(4, "little") + data
    out += b"\x00"
    return bytes(out)
