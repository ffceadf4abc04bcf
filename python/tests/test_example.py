# SPDX-License-Identifier: Apache-2.0
"""The serving-engine example runs and its own checks hold."""

import pathlib
import runpy

EXAMPLE = pathlib.Path(__file__).resolve().parents[1] / "examples" / "serving_engine.py"


def test_serving_engine_example_runs(capsys):
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    out = capsys.readouterr().out
    assert "spliced vs token-by-token state" in out
    assert "checkpoints" in out
