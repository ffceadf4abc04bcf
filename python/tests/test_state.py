# SPDX-License-Identifier: Apache-2.0
"""State algebra against a float64 token-by-token NumPy recurrence (HYPIC eq. 2, 4, 6)."""

import numpy as np
import pytest

import hybridcache as hc
import reference as ref
from hybridcache import state

VARIANTS = ["linear", "retnet", "mamba2", "gla", "deltanet", "gated_deltanet", "kda"]


def make_inputs(variant, length, dk, dv, rng, dtype=np.float64):
    k = rng.standard_normal((length, dk)) / np.sqrt(dk)
    v = rng.standard_normal((length, dv))
    beta = log_gate = None
    if variant == "retnet":
        log_gate = np.full(length, -0.05)
    elif variant in ("mamba2", "gated_deltanet"):
        log_gate = -rng.random(length) * 0.3
    elif variant in ("gla", "kda"):
        log_gate = -rng.random((length, dk)) * 0.3
    if variant in ("deltanet", "gated_deltanet", "kda"):
        k = k / np.linalg.norm(k, axis=1, keepdims=True)  # keys L2-normalised, as these models do
        beta = rng.random(length)
    cast = (lambda a: None if a is None else a.astype(dtype))
    return cast(k), cast(v), cast(beta), cast(log_gate)


def expected_family(variant):
    if variant in ("deltanet", "gated_deltanet", "kda"):
        return state.family.dense
    return state.family.diagonal if variant == "gla" else state.family.scalar


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("length", [0, 1, 7, 40, 130])
def test_summarize_apply_and_recurrence_match_reference(variant, length):
    rng = np.random.default_rng(length * 31 + len(variant))
    dk, dv = 4, 3
    k, v, beta, g = make_inputs(variant, length, dk, dv, rng)
    s0 = rng.standard_normal((dk, dv))
    want, t_total = ref.recurrence(k, v, s0, beta, g)
    got = state.run_recurrence(k, v, s0, beta=beta, log_gate=g)
    assert got.shape == (dk, dv) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    summ = state.summarize(k, v, beta=beta, log_gate=g)
    assert summ.length == length and (summ.dk, summ.dv) == (dk, dv)
    if length:
        assert summ.family == expected_family(variant)
    np.testing.assert_allclose(summ.transition, t_total, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(summ.end_state, ref.recurrence(k, v, np.zeros((dk, dv)), beta, g)[0],
                               rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.apply(summ, s0), want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_dense_paths_agree(variant):
    rng = np.random.default_rng(5)
    k, v, beta, g = make_inputs(variant, 100, 5, 2, rng)
    a = state.summarize(k, v, beta=beta, log_gate=g, method=state.summarize_method.per_token)
    b = state.summarize(k, v, beta=beta, log_gate=g, method=state.summarize_method.chunked, chunk=16)
    np.testing.assert_allclose(a.transition, b.transition, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.end_state, b.end_state, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("variants", [("mamba2", "mamba2"), ("mamba2", "gla"), ("gla", "kda"),
                                      ("gated_deltanet", "retnet"), ("kda", "deltanet")])
def test_compose_fold_and_run_apply_are_the_whole_sequence(variants):
    rng = np.random.default_rng(11)
    dk, dv = 3, 2
    pieces = []
    for variant in variants + variants[:1]:
        pieces.append(make_inputs(variant, int(rng.integers(1, 20)), dk, dv, rng))
    s0 = rng.standard_normal((dk, dv))
    # Reference: the three segments back to back, token by token.
    want = s0
    for k, v, beta, g in pieces:
        want, _ = ref.recurrence(k, v, want, beta, g)
    summaries = [state.summarize(k, v, beta=beta, log_gate=g) for k, v, beta, g in pieces]
    composed = state.compose(state.compose(summaries[0], summaries[1]), summaries[2])
    assert composed.length == sum(p[0].shape[0] for p in pieces)
    np.testing.assert_allclose(state.apply(composed, s0), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.apply(state.fold(summaries), s0), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(state.apply(summaries, s0), want, rtol=1e-10, atol=1e-12)


def test_identity_and_cached_constructors():
    rng = np.random.default_rng(3)
    dk, dv = 3, 2
    k, v, _, g = make_inputs("gla", 9, dk, dv, rng)
    summ = state.summarize(k, v, log_gate=g)
    ident = state.segment_summary.identity(dk, dv)
    s0 = rng.standard_normal((dk, dv))
    np.testing.assert_allclose(state.apply(state.compose(ident, summ), s0), state.apply(summ, s0))
    np.testing.assert_allclose(ident.transition, np.eye(dk))
    # An engine rebuilds summaries from tensors it cached: round trip through each constructor.
    again = state.segment_summary.diagonal(summ.log_decay, summ.end_state, length=9)
    np.testing.assert_allclose(state.apply(again, s0), state.apply(summ, s0), rtol=1e-14)
    dense = state.segment_summary.dense(summ.transition, summ.end_state)
    np.testing.assert_allclose(state.apply(dense, s0), state.apply(summ, s0), rtol=1e-12)
    scalar = state.segment_summary.scalar(-0.5, summ.end_state)
    np.testing.assert_allclose(state.apply(scalar, s0), np.exp(-0.5) * s0 + summ.end_state)


def test_float32_follows_the_float64_reference():
    rng = np.random.default_rng(8)
    k, v, beta, g = make_inputs("kda", 64, 8, 4, rng, dtype=np.float32)
    s0 = rng.standard_normal((8, 4)).astype(np.float32)
    summ = state.summarize(k, v, beta=beta, log_gate=g)
    assert isinstance(summ, state.segment_summary_f32)
    got = state.apply(summ, s0)
    assert got.dtype == np.float32
    want, _ = ref.recurrence(k, v, s0, beta, g)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_long_segments_and_hard_resets_stay_finite():
    rng = np.random.default_rng(2)
    length, dk, dv = 20000, 2, 2
    k = rng.standard_normal((length, dk))
    v = rng.standard_normal((length, dv))
    g = np.full(length, -0.2)  # total log-decay -4000: exp underflows, the log does not
    summ = state.summarize(k, v, log_gate=g)
    assert summ.log_decay[0] == pytest.approx(-0.2 * length)
    assert np.all(np.isfinite(summ.end_state)) and np.all(summ.transition == 0)
    g2 = np.zeros(4)
    g2[2] = -np.inf  # a hard reset at token 2: earlier tokens are forgotten
    k2, v2 = rng.standard_normal((4, dk)), rng.standard_normal((4, dv))
    out = state.run_recurrence(k2, v2, rng.standard_normal((dk, dv)), log_gate=g2)
    want = np.outer(k2[2], v2[2]) + np.outer(k2[3], v2[3])
    np.testing.assert_allclose(out, want, rtol=1e-12)
    np.testing.assert_allclose(state.summarize(k2, v2, log_gate=g2).end_state, want, rtol=1e-12)


def test_lists_and_submodule_import():
    import hybridcache.state as st2

    assert st2 is state
    out = state.run_recurrence([[1.0, 0.0]], [[2.0]], [[1.0], [1.0]])
    np.testing.assert_allclose(out, [[3.0], [1.0]])


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: state.summarize(np.ones((3, 2)), np.ones((2, 2))), "v.shape[0]"),
        (lambda: state.summarize(np.ones((3, 2)), np.ones((3, 2)), log_gate=np.ones(3)),
         "log_gate[0]"),
        (lambda: state.summarize(np.ones((3, 2)), np.ones((3, 2)), log_gate=np.zeros((3, 3))),
         "log_gate.shape[1]"),
        (lambda: state.summarize(np.full((1, 2), np.nan), np.ones((1, 2))), "k[0]"),
        (lambda: state.run_recurrence(np.ones((1, 2)), np.ones((1, 2)), np.ones((3, 2))),
         "initial_state"),
        (lambda: state.compose(state.segment_summary.identity(2, 2),
                               state.segment_summary.identity(3, 2)), "then"),
        (lambda: state.fold([]), "run"),
    ],
)
def test_state_errors_name_the_argument(call, name):
    with pytest.raises(hc.InvalidArgument) as info:
        call()
    assert name in str(info.value)
