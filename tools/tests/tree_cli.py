# SPDX-License-Identifier: Apache-2.0
"""What the tree CLI checks share (tree_requests_check.py, tree_victims_check.py): one small
`simulate --scenario tree` sweep into a directory, its CSVs read as dictionaries, and tree.csv
without the wall-time columns (the only ones a logging flag may change)."""
import csv
import os
import subprocess
import sys

TIMING = {"decision_ns_per_request", "decision_ns_per_block", "replan_ns_per_block"}


def run(exe, out, sweep, extra):
    """`exe simulate --scenario tree SWEEP... --no-plot --quiet --out OUT EXTRA...`; exits with
    the command's output when it fails."""
    cmd = [exe, "simulate", "--scenario", "tree"] + sweep + [
        "--no-plot", "--quiet", "--out", out] + extra
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")


def read(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def strip_timing(rows):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in rows]


def with_and_without(exe, work, sweep, flag, written):
    """Runs `sweep` twice under `work`, without and with `flag`, and checks that the file
    `written` appears only with the flag and that tree.csv is the same either way (wall times
    aside). @returns (the rows of tree.csv, the directory of the run with the flag)."""
    name = flag.lstrip("-")
    plain, logged = os.path.join(work, name + "_plain"), os.path.join(work, name + "_logged")
    run(exe, plain, sweep, [])
    run(exe, logged, sweep, [flag])
    assert not os.path.exists(os.path.join(plain, written)), f"{written} written without {flag}"
    rows = read(os.path.join(logged, "tree.csv"))
    assert strip_timing(rows) == strip_timing(read(os.path.join(plain, "tree.csv"))), \
        f"{flag} changed tree.csv"
    return rows, logged
