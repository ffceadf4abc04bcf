# SPDX-License-Identifier: Apache-2.0
"""Planner and metrics against brute force and closed forms (DESIGN.md section 3)."""

import math

import numpy as np
import pytest

import hybridcache as hc
import reference as ref

RNG = np.random.default_rng(20261122)


def random_weights(n, kind):
    if kind == "uniform":
        return np.ones(n)
    if kind == "random":
        return RNG.random(n)
    if kind == "sparse":
        w = np.zeros(n)
        w[RNG.choice(n, size=max(1, n // 4), replace=False)] = RNG.random(max(1, n // 4)) + 0.1
        return w
    if kind == "heavy_tail":
        return 1.0 / np.arange(1, n + 1) ** 1.5
    raise ValueError(kind)


@pytest.mark.parametrize("n, granularity",
                         [(n, b) for n in (1, 2, 5, 9) for b in (1, 2, 3) if b <= n])
@pytest.mark.parametrize("kind", ["uniform", "random", "sparse", "heavy_tail"])
def test_place_optimal_matches_brute_force(n, kind, granularity):
    w = random_weights(n, kind)
    max_budget = min(4, n)
    best = ref.brute_force_frontier(w, max_budget, granularity)
    frontier = hc.optimal_frontier(w, max_budget, granularity=granularity)
    assert frontier.shape == (max_budget + 1,)
    for m in range(max_budget + 1):
        value, _ = best[m]
        assert frontier[m] == pytest.approx(value, rel=1e-9, abs=1e-12)
        for method in (hc.placement_method.automatic, hc.placement_method.cht,
                       hc.placement_method.lagrangian):
            plan = hc.place_optimal(w, m, granularity=granularity, method=method)
            cps = plan.checkpoints
            assert cps.dtype == np.int64
            assert len(cps) <= m
            assert np.all(np.diff(cps) > 0)
            assert np.all(cps % granularity == 0) and np.all((cps >= 1) & (cps <= n))
            # The plan achieves the optimum, and its reported E[r] is its true E[r].
            assert ref.expected_recompute(w, cps) == pytest.approx(value, rel=1e-9, abs=1e-12)
            assert plan.expected_recompute == pytest.approx(value, rel=1e-9, abs=1e-12)


def test_uniform_closed_form_and_balanced():
    for n in (7, 10, 31):
        for m in (1, 2, 3, 6):
            w = np.ones(n)
            # Theorem 1: the balanced set floor(i(N+1)/(M+1)) is optimal for uniform overlap.
            balanced = [math.floor(i * (n + 1) / (m + 1)) for i in range(1, m + 1)]
            assert list(hc.place_balanced(n, m)) == balanced
            e = ref.expected_recompute(w, balanced)
            assert hc.uniform_optimal_recompute(n, m) == pytest.approx(e, rel=1e-12)
            assert hc.place_optimal(w, m).expected_recompute == pytest.approx(e, rel=1e-12)


def test_baselines_match_their_definitions():
    assert list(hc.place_block(10, 3)) == [3, 6, 9]
    assert list(hc.place_sqrt(17)) == [4, 8, 12, 16]
    assert list(hc.place_dense(4)) == [1, 2, 3, 4]
    assert list(hc.place_none(5)) == []
    log = hc.place_logarithmic(1000, 5)
    assert len(log) == 5 and np.all(np.diff(log) > 0) and log[-1] <= 1000
    gaps = np.diff(np.concatenate([[0], log]))
    assert gaps[-1] > gaps[0]  # gaps grow
    assert list(hc.clip_to_granularity(np.array([3, 5, 9, 10]), 4)) == [4, 8]


def test_metrics_match_numpy():
    w = RNG.random(40)
    cps = np.array([5, 12, 30])
    e = ref.expected_recompute(w, cps)
    r_nc = ref.no_cache(w)
    assert hc.expected_recompute(w, cps) == pytest.approx(e, rel=1e-12)
    assert hc.no_cache_recompute(w) == pytest.approx(r_nc, rel=1e-12)
    assert hc.savings(w, cps) == pytest.approx(1 - e / r_nc, rel=1e-12)
    assert hc.reduction(w, cps) == pytest.approx(r_nc / e, rel=1e-12)
    assert hc.reduction(np.array([0, 0, 1.0]), np.array([3])) == math.inf


def test_lists_are_accepted():
    assert list(hc.place_optimal([1, 1, 1, 1, 1], 1).checkpoints) == [3]  # the unique optimum
    assert hc.expected_recompute((1, 1, 1, 1), [2]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda: hc.place_optimal(np.array([]), 1), "weights"),
        (lambda: hc.place_optimal(np.array([1.0, np.nan]), 1), "weights[1]"),
        (lambda: hc.place_optimal(np.array([1.0, -2.0]), 1), "weights[1]"),
        (lambda: hc.place_optimal(np.zeros(3), 1), "weights"),
        (lambda: hc.place_optimal(np.ones(3), 1, granularity=0), "granularity"),
        (lambda: hc.place_optimal(np.ones(3), 1, granularity=4), "granularity"),
        (lambda: hc.expected_recompute(np.ones(3), np.array([2, 1])), "checkpoints[1]"),
        (lambda: hc.expected_recompute(np.ones(3), np.array([-1])), "checkpoints[0]"),
        (lambda: hc.place_block(5, 0), "block"),
    ],
)
def test_bad_input_raises_invalid_argument_naming_it(call, name):
    with pytest.raises(hc.InvalidArgument) as info:
        call()
    assert name in str(info.value)
    assert isinstance(info.value, ValueError) and isinstance(info.value, hc.Error)
