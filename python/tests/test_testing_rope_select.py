# SPDX-License-Identifier: Apache-2.0
"""hybridcache.testing's RoPE and selection references: against the loop references of
test_rope.py / test_select.py (written independently), through DLPack, and used the way an engine
would use them: to check a kernel (here, the library's own kernels are the candidates)."""

import numpy as np
import pytest

import hybridcache as hc
from hybridcache import testing as hct
from test_rope import SCALINGS, pair_error, ref_rotate, ref_thetas
from test_select import ref_scores, ref_select


class DLPackOnly:
    """An array that is reachable only through the DLPack protocol (as a torch tensor is)."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, *args, **kwargs):
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@pytest.mark.parametrize("scaling", list(SCALINGS))
@pytest.mark.parametrize("layout", ["half_split", "interleaved"])
def test_rope_references_agree_with_the_loop_reference(scaling, layout):
    sc, ref_sc = SCALINGS[scaling]
    p = hc.rope_params(head_dim=16, rotary_dim=12, base=5000.0,
                       layout=getattr(hc.rope_layout, layout), scaling=sc)
    np.testing.assert_allclose(hct.rope_frequencies(12, 5000.0, sc), ref_thetas(12, 5000.0, ref_sc),
                               rtol=1e-14)
    x = np.random.default_rng(2).standard_normal((4, 3, 16))
    want = ref_rotate(x, np.full(4, -29), 12, 5000.0, layout == "interleaved", ref_sc)
    np.testing.assert_allclose(hct.realign_keys(x, -29, p), want, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(hct.realign_keys(DLPackOnly(x), -29, p), want, rtol=1e-13,
                               atol=1e-13)
    pos = np.array([0, 3, 8, 100])
    np.testing.assert_allclose(
        hct.rope_rotate(x, pos, rotary_dim=12, base=5000.0, layout=layout, scaling=sc),
        ref_rotate(x, pos, 12, 5000.0, layout == "interleaved", ref_sc), rtol=1e-13, atol=1e-13)
    # an engine checking its realign kernel (here: the library's float32 kernel)
    got = hc.realign_keys(p, x.astype(np.float32), -29)
    assert pair_error(got, hct.realign_keys(x.astype(np.float32), -29, p), 12,
                      layout == "interleaved") < 2e-6


def test_selection_references_agree_with_the_loop_reference():
    rng = np.random.default_rng(9)
    q = rng.standard_normal((3, 4, 8))
    k = rng.standard_normal((15, 2, 8))
    pos = [2, 7, 12]
    want = ref_scores(q, pos, k)
    np.testing.assert_allclose(hct.sparse_q_scores(q, pos, k), want, rtol=1e-12)
    np.testing.assert_allclose(hct.sparse_q_scores(DLPackOnly(q), pos, DLPackOnly(k), 0.5),
                               ref_scores(q, pos, k, 0.5), rtol=1e-12)
    for seed in range(5):
        r = np.random.default_rng(seed)
        scores = r.integers(0, 3, size=30) / 3.0
        reused = [(0, 6), (9, 17), (17, 22), (26, 30)]
        got = hct.select_tokens(scores, reused, top_k=5, block_size=2, fallback_tokens=3)
        nr, key, ov, tail, rec = ref_select(scores, reused, 5, 2, 3)
        assert got["non_reuse"].tolist() == nr and got["key"].tolist() == key
        assert got["overflow"].tolist() == ov and got["tail"].tolist() == tail
        assert got["recompute"].tolist() == rec
        lib = hc.select_tokens(scores, reused, top_k=5, block_size=2, fallback_tokens=3)
        np.testing.assert_array_equal(lib.recompute_mask, got["recompute_mask"])
