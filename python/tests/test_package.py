# SPDX-License-Identifier: Apache-2.0
"""The installed package: version, error hierarchy, type stubs, and the GIL released in long calls."""

import pathlib
import re
import threading
import time

import numpy as np
import pytest

import hybridcache as hc

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_version_matches_version_hpp():
    text = (ROOT / "include" / "hybridcache" / "version.hpp").read_text()
    parts = tuple(int(re.search(rf"#define HYBRIDCACHE_VERSION_{k} (\d+)", text).group(1))
                  for k in ("MAJOR", "MINOR", "PATCH"))
    assert hc.version == parts
    assert hc.__version__ == ".".join(map(str, parts))


def test_error_hierarchy():
    assert issubclass(hc.InvalidArgument, hc.Error) and issubclass(hc.InvalidArgument, ValueError)
    assert issubclass(hc.NotFoundError, hc.Error) and issubclass(hc.NotFoundError, LookupError)
    assert issubclass(hc.StaleHandleError, hc.InvalidArgument)
    assert issubclass(hc.CapacityError, hc.Error) and issubclass(hc.Error, RuntimeError)


def test_type_stubs_are_installed():
    pkg = pathlib.Path(hc.__file__).parent
    assert (pkg / "py.typed").exists()
    stubs = pkg / "_hybridcache"
    expected = {
        "__init__.pyi": ["def place_optimal", "def optimal_frontier", "def lpt_assign",
                         "class ew_histogram", "class placement", "class assignment",
                         "from hybridcache._hybridcache import"],
        "state.pyi": ["def summarize", "def compose", "def apply", "def run_recurrence",
                      "class segment_summary", "class segment_summary_f32"],
        "segment.pyi": ["def segment_key", "def block_keys", "class namespace_key", "class digest"],
        "store.pyi": ["class lru_pool", "class handle", "class pic_store", "class last_k_cache"],
    }
    for needle in ["def realign_keys", "class rope_params", "def select_tokens"]:
        expected["__init__.pyi"].append(needle)
    for name, needles in expected.items():
        text = (stubs / name).read_text()
        for needle in needles:
            assert needle in text, (name, needle)


def test_submodules_import_both_ways():
    import hybridcache.segment
    import hybridcache.state
    from hybridcache import segment, state

    assert hybridcache.state is state and hybridcache.segment is segment


def _max_main_thread_gap(long_call):
    """Runs long_call in a thread while the main thread spins; returns (call seconds, the longest
    stretch of the call during which the main thread did not run). With the GIL released the main
    thread keeps running; with it held, it stalls for the whole call."""
    go, done = threading.Event(), threading.Event()
    span = {}

    def work():
        go.wait()
        span["t0"] = time.perf_counter()
        long_call()
        span["t1"] = time.perf_counter()
        done.set()

    t = threading.Thread(target=work)
    t.start()
    stalls = []  # (from, to) of main-loop pauses longer than 1 ms
    last = time.perf_counter()
    go.set()
    while not done.is_set():
        now = time.perf_counter()
        if now - last > 1e-3:
            stalls.append((last, now))
        last = now
    stalls.append((last, time.perf_counter()))
    t.join()
    t0, t1 = span["t0"], span["t1"]
    gap = max((min(b, t1) - max(a, t0) for a, b in stalls), default=0.0)
    return t1 - t0, max(gap, 0.0)


@pytest.mark.parametrize("which", ["place_optimal", "optimal_frontier", "lpt_assign"])
def test_long_calls_release_the_gil(which):
    rng = np.random.default_rng(1)
    n = 1 << 14
    while True:
        w = rng.random(n)
        calls = {
            "place_optimal": lambda: hc.place_optimal(w, 256, method=hc.placement_method.cht),
            "optimal_frontier": lambda: hc.optimal_frontier(w, 256),
            "lpt_assign": lambda: hc.lpt_assign(w, 64),
        }
        t0 = time.perf_counter()
        calls[which]()
        if time.perf_counter() - t0 > 0.05 or n >= 1 << 24:
            break
        n *= 4
    call, gap = _max_main_thread_gap(calls[which])
    # Holding the GIL would stall the main loop for the whole call.
    assert gap < 0.5 * call, (call, gap)
