# SPDX-License-Identifier: Apache-2.0
"""Every Python example of docs/python.md runs (and its own asserts hold)."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S) if DOC.exists() else []


def test_the_page_has_examples():
    if not DOC.exists():
        pytest.skip("docs/python.md is not beside this checkout")
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_example_runs(index, capsys):
    scope = {"__name__": "__main__"}
    exec(compile(BLOCKS[index], f"{DOC}:example {index}", "exec"), scope)
    # Release pooled entries while the example's names (its callbacks' globals) still exist.
    for value in scope.values():
        if type(value).__name__ == "lru_pool":
            value.clear()
