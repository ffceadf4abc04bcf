# SPDX-License-Identifier: Apache-2.0
"""Overlap histograms against the closed form p_t ~ sum_s gamma^(n-s) [T_s = t]."""

import numpy as np
import pytest

import hybridcache as hc
import reference as ref


@pytest.mark.parametrize("gamma", [0.5, 0.9, 0.99, 1.0])
def test_ew_histogram_matches_formula(gamma):
    rng = np.random.default_rng(7)
    n_max = 30
    depths = rng.integers(0, n_max + 1, size=500)
    h = hc.ew_histogram(n_max, gamma)
    h.observe_many(depths[:250])
    for d in depths[250:]:
        h.observe(int(d))
    pmf, miss = ref.ew_pmf(list(depths), n_max, gamma)
    np.testing.assert_allclose(h.pmf(), pmf, rtol=1e-9, atol=1e-15)
    assert h.miss_rate == pytest.approx(miss, rel=1e-9, abs=1e-15)
    assert h.observations == 500
    assert h.max_depth == n_max and h.gamma == gamma


def test_ew_histogram_stays_finite_for_long_streams():
    h = hc.ew_histogram(8, 0.5)
    h.observe_many(np.full(100_000, 3))
    h.observe(5)
    p = h.pmf()
    assert np.all(np.isfinite(p))
    # After the last observation: weight of 5 is 1, of 3 is sum 0.5^k for k >= 1 = 1.
    assert p[4] == pytest.approx(0.5) and p[2] == pytest.approx(0.5)


def test_empirical_histogram_counts():
    h = hc.empirical_histogram(5)
    h.observe_many(np.array([1, 1, 3, 0, 5]))
    np.testing.assert_allclose(h.pmf(), [0.5, 0, 0.25, 0, 0.25])
    assert h.misses == 1 and h.observations == 5 and h.miss_rate == pytest.approx(0.2)


def test_refresh_policy_replans_every_interval_with_copies():
    plans = []
    policy = hc.refresh_policy(20, 2, plans.append, gamma=0.9, interval=3, law="pooled", safeguard=False)
    depths = [4, 4, 9, 0, 15, 15, 15, 15, 15]
    replanned = [policy.observe(d) for d in depths]
    assert replanned == [False, False, True] * 3
    assert len(plans) == 3 and policy.plans == 3
    # Each callback got its own plan: the optimal one for the histogram at that time.
    for k, plan in enumerate(plans):
        pmf, _ = ref.ew_pmf(depths[: 3 * (k + 1)], 20, 0.9)
        best = ref.brute_force_frontier(pmf, 2)[2][0]
        assert ref.expected_recompute(pmf, plan.checkpoints) == pytest.approx(best, abs=1e-12)
    assert list(policy.current.checkpoints) == list(plans[-1].checkpoints)
    assert policy.histogram.observations == len(depths)


def test_histogram_errors():
    with pytest.raises(hc.InvalidArgument, match="max_depth"):
        hc.ew_histogram(0)
    with pytest.raises(hc.InvalidArgument, match="gamma"):
        hc.ew_histogram(4, 1.5)
    h = hc.ew_histogram(4)
    with pytest.raises(hc.InvalidArgument, match="depth"):
        h.observe(5)
    with pytest.raises(hc.InvalidArgument, match="depths"):
        h.observe_many(np.array([1, -1]))


def test_refresh_policy_callback_cycle_is_collected():
    import gc
    import weakref

    class Engine:
        def __init__(self):
            self.policy = hc.refresh_policy(10, 1, self.on_plan, interval=1)
            self.last = None

        def on_plan(self, plan):
            self.last = plan

    engine = Engine()
    engine.policy.observe(3)
    assert list(engine.last.checkpoints) == [3]
    alive = weakref.ref(engine)
    del engine
    gc.collect()
    assert alive() is None  # engine -> policy -> bound method -> engine was traversed
