#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""How far could any switching rule over the library row's candidates go? A diagnostic for
issue #24's geometric-mean target (docs/design/tree_safeguard.md §21), not a result of record.

For each tree.csv (one `simulate --scenario tree` run, with the row `hybridcache`, its library
candidates and the faithful engine rows among its policies), and each KV mode, over the cells
where the best faithful engine row recomputes more than 0.1 % of the usable tokens (the issue's
rule, scripts/tree_cells.py), the geometric mean of

  row         hybridcache / the best engine row of the cell (the tables of record's figure);
  hindsight   the least of the row's candidates in the cell / the best engine row, i.e. a row
              that always followed, with no hand-over, the candidate that turned out best there.

The yardstick is the one of the tables of record: tokens recomputed, and under a joint pool the
avoidable prefill (usable match with KV unlimited minus tokens resumed). A zero numerator counts
as one token, as in scripts/tree_seeds.sh. The row can read below `hindsight` (its real pool,
built by several leaders, can hold more than any one of them).

Usage:
  scripts/dev/tree_hindsight.py [--bin BIN | --engines A,B,...] [--candidates C,...]
                                [--modes M,...] CSV [CSV ...]
The engine rows come from `BIN simulate --tree-list-policies` (default build/release/bin/
hybridcache) unless --engines names them. --candidates names the library candidates (default
hybridcache_noprefill,hybridcache_pool_memory,hybridcache_lru,hybridcache_exact: the base
candidate, the long-memory one, and the two third candidates, `hybridcache_lru` in the row under
a joint pool only (outside it, it replays as the base candidate) and `hybridcache_exact` under
unlimited KV only (since 2026-12-03, evening; before that the default named `hybridcache_exact`
in place of the base candidate); the row's candidates are those plus the engine rows.
A CSV's label is the name of its folder when it is a tree.csv, else its file name. To run the
traces of record at one seed with the candidates' rows, for example:
  BIN=build/release/bin/hybridcache
  E=$($BIN simulate --tree-list-policies | awk -F'\\t' '$2=="engine"{print $1}' | paste -sd,)
  L=hybridcache_noprefill,hybridcache_pool_memory,hybridcache_lru,hybridcache_exact
  $BIN simulate --scenario tree --data ../shared/data \\
    --tree multi-turn,quality,system-prompts,mooncake --tree-budgets 4,16,64,256,1024 \\
    --kv-budget 4GiB --kv-mode unlimited,separate,joint --seed 7 \\
    --tree-policies hybridcache,$L,$E \\
    --out out/s7
  scripts/dev/tree_hindsight.py out/s7/tree.csv
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tree_cells import GEOMEAN_SHARE, engine_rows, engine_test, read_cells  # noqa: E402

MODES = ("unlimited", "separate", "joint")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def hindsight(path, is_engine, library, modes):
    """{mode: (cells, row mean, hindsight mean, {trace: (row mean, hindsight mean)})}."""
    cells, usable = read_cells(path)
    out = {}
    for m in modes:
        rows, best, per = [], [], {}
        for k, c in cells.items():
            if k[0] != m or "hybridcache" not in c:
                continue
            engines = [v for p, v in c.items() if is_engine(p)]
            if not engines:
                raise SystemExit(f"tree_hindsight: {path}: no engine row in cell {k}")
            e = min(engines)
            if e <= GEOMEAN_SHARE * usable[k[1:]]:
                continue
            missing = [p for p in library if p not in c]
            if missing:
                raise SystemExit(f"tree_hindsight: {path}: cell {k} lacks {', '.join(missing)}")
            cand = min(engines + [c[p] for p in library])
            rows.append(max(c["hybridcache"], 1.0) / e)
            best.append(max(cand, 1.0) / e)
            per.setdefault(k[1], ([], []))
            per[k[1]][0].append(rows[-1])
            per[k[1]][1].append(best[-1])
        out[m] = (len(rows), geomean(rows), geomean(best),
                  {t: (geomean(a), geomean(b)) for t, (a, b) in sorted(per.items())})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--bin", default="build/release/bin/hybridcache")
    ap.add_argument("--engines", help="comma list of the faithful engine rows (skips --bin)")
    ap.add_argument("--candidates",
                    default="hybridcache_noprefill,hybridcache_pool_memory,hybridcache_lru,"
                    "hybridcache_exact")
    ap.add_argument("--modes", default=",".join(MODES))
    a = ap.parse_args()
    modes = [m for m in a.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            raise SystemExit(f"tree_hindsight: --modes: unknown mode {m!r}")
    is_engine = engine_test(a.engines.split(",") if a.engines else engine_rows(a.bin))
    library = [p for p in a.candidates.split(",") if p]
    print("Per run and KV mode: cells counted (best engine row above 0.1 % of the usable tokens), "
          "then the geometric mean of the row / the best engine row, and of the least of the "
          "row's candidates / the best engine row (hindsight); per trace, row / hindsight.\n")
    print("| run | " + " | ".join(modes) + " | per trace (" + modes[-1] + ") |")
    print("|---|" + "---|" * len(modes) + "---|")
    for path in a.csv:
        r = hindsight(path, is_engine, library, modes)
        name = os.path.basename(path)
        label = (os.path.basename(os.path.dirname(os.path.abspath(path))) if name == "tree.csv"
                 else os.path.splitext(name)[0])
        cols = [f"{n}: {row:.3f} / {best:.3f}" if n else "0: -"
                for n, row, best, _ in (r[m] for m in modes)]
        trace = "; ".join(f"{t} {x:.2f} / {y:.2f}" for t, (x, y) in r[modes[-1]][3].items())
        print(f"| {label} | " + " | ".join(cols) + f" | {trace} |")


if __name__ == "__main__":
    main()
