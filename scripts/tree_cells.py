# SPDX-License-Identifier: Apache-2.0
"""What scripts/tree_seeds.sh and scripts/tree_ablation.sh share: which rows are the faithful
engine rows, the yardstick per cell and the verdict rule of the results of record
(docs/tree_simulation.md, "Results of record (issue #24 ...)").

- The engine rows come from the binary (`hybridcache simulate --tree-list-policies`, kind
  `engine`), so a new engine row reaches both scripts without an edit here.
- The yardstick: tokens recomputed under unlimited and separate KV; under a joint pool the
  avoidable prefill ū − k, ū the usable match with KV unlimited (each row's KV differs there).
- The verdict: win < 0.99x, tie <= 1.01x, loss above (both 0 is a tie).

tools/tests/tree_seeds_check.py keeps its own copy of these rules on purpose: it is the
independent recount of tree_seeds.sh's table.
"""
import csv
import subprocess
from collections import defaultdict

WIN, TIE = 0.99, 1.01  # the results of record's verdict thresholds
GEOMEAN_SHARE = 0.001  # issue #24: the geometric mean counts cells above 0.1 % of usable tokens


def engine_rows(binary):
    """The faithful engine rows, as `--tree-policies` names them, in the binary's order."""
    out = subprocess.run([binary, "simulate", "--tree-list-policies"], check=True,
                         capture_output=True, text=True).stdout
    rows = [line.split("\t")[0] for line in out.splitlines() if line.endswith("\tengine")]
    if not rows:
        raise SystemExit(f"tree_cells: {binary} lists no engine rows")
    return rows


def engine_test(rows):
    """A predicate on tree.csv's policy column. The CSV names `sglang_extra_buffer_cap` after
    its path cap (`sglang_extra_buffer_cap4`)."""
    rows = set(rows)
    caps = {r for r in rows if r == "sglang_extra_buffer_cap"}
    return lambda p: p in rows or any(p.startswith(c) and p[len(c):].isdigit() for c in caps)


def read_cells(path, budget=str):
    """tree.csv -> (cells, usable): cells[(kv mode, trace, budget)][policy] = the yardstick,
    usable[(trace, budget)] = ū. `budget` converts the budget column (str or int)."""
    records = list(csv.DictReader(open(path)))
    usable = {(r["trace"], budget(r["budget_states"])): float(r["usable_tokens"])
              for r in records if r["kv_mode"] == "unlimited"}
    cells = defaultdict(dict)
    for r in records:
        k = (r["kv_mode"], r["trace"], budget(r["budget_states"]))
        if k[0] == "joint" and k[1:] in usable:
            cells[k][r["policy"]] = usable[k[1:]] - float(r["resumed_tokens"])
        else:
            cells[k][r["policy"]] = float(r["recomputed_tokens"])
    return cells, usable


def verdict(x, best):
    """The results of record's rule: 'win', 'tie' or 'loss' of x against best."""
    return "win" if x < WIN * best else ("loss" if x > TIE * best else "tie")
