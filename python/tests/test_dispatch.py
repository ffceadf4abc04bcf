# SPDX-License-Identifier: Apache-2.0
"""LPT against a plain greedy and Graham's bound against brute-force optima."""

import numpy as np
import pytest

import hybridcache as hc
import reference as ref


@pytest.mark.parametrize("seed", range(20))
def test_lpt_matches_greedy_and_graham_bound(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 8))
    m = int(rng.integers(1, 4))
    costs = rng.integers(1, 20, size=n).astype(float)
    a = hc.lpt_assign(costs, m)
    worker_of, load = ref.lpt(list(costs), m)
    assert list(a.worker_of) == worker_of
    np.testing.assert_allclose(a.load, load)
    np.testing.assert_allclose(a.load, np.bincount(a.worker_of, weights=costs, minlength=m))
    assert a.makespan == pytest.approx(max(load) if n else 0.0)
    opt = ref.optimal_makespan(list(costs), m)
    assert a.makespan <= hc.lpt_ratio_bound(m) * opt + 1e-9


def test_lpt_related_speeds():
    costs = np.array([6.0, 4.0, 2.0])
    a = hc.lpt_assign(costs, np.array([2.0, 1.0]))
    # 6 -> w0 (3.0 < 6.0); 4 -> w0 finishes at 5.0 < 4.0? no: w1 finishes at 4.0; 2 -> w0 at 4.0
    assert list(a.worker_of) == [0, 1, 0]
    np.testing.assert_allclose(a.load, [4.0, 4.0])


def test_lpt_errors():
    with pytest.raises(hc.InvalidArgument, match="workers"):
        hc.lpt_assign(np.array([1.0]), 0)
    with pytest.raises(hc.InvalidArgument, match=r"costs\[1\]"):
        hc.lpt_assign(np.array([1.0, np.inf]), 2)
