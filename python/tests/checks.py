# SPDX-License-Identifier: Apache-2.0
"""Assertion helpers shared by the Python tests (conftest.py puts this folder on sys.path)."""

import pytest

import hybridcache as hc


def check_raises(fn, *names):
    """fn() raises hybridcache.InvalidArgument (a ValueError) whose message names every one of
    `names` — the argument and the offending value, as the C++ hybridcache::error does."""
    with pytest.raises(ValueError) as e:
        fn()
    assert isinstance(e.value, hc.InvalidArgument)
    for name in names:
        assert name in str(e.value), str(e.value)
