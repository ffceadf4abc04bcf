#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`simulate --scenario tree --tree-requests` (ctest cli/simulate/tree_requests).

usage: tree_requests_check.py HYBRIDCACHE WORK_DIR

Runs a small sweep (the multi-turn trace and the rag family; every KV mode; the library's row,
two engine rows and an offline reference) twice, with and without --tree-requests, and checks
tree_requests.csv against tree.csv, which the replayer sums separately:
- without the flag no tree_requests.csv is written, and tree.csv is the same either way;
- every row of tree.csv but `static_optimum` has its requests, in trace order, and their prompt,
  usable, resumed and recomputed tokens sum to the row's; the mean states and KV blocks held
  after each request are the row's `states_mean` and `kv_blocks_mean`;
- each request resumes within its usable match, and recomputes the difference;
- under unlimited KV the usable match of a request is the same for every row (it does not depend
  on what a policy holds);
- the `leader` column is set for the library's row only: its last value is tree.csv's `leader`,
  and its changes from one request to the next are tree.csv's `switches`.
"""
import math
import os
import sys
from collections import defaultdict

from tree_cli import read, with_and_without

SWEEP = ["--tree", "multi-turn,rag", "--tree-sessions", "12", "--tree-budgets", "2,8",
         "--tree-policies", "hybridcache,vllm_align,marconi,oracle", "--kv-budget", "64MiB",
         "--kv-mode", "unlimited,separate,joint", "--seed", "5"]


def main():
    exe, work = sys.argv[1], sys.argv[2]
    rows, logged = with_and_without(exe, work, SWEEP, "--tree-requests", "tree_requests.csv")

    per = defaultdict(list)
    for q in read(os.path.join(logged, "tree_requests.csv")):
        per[(q["trace"], q["kv_mode"], q["budget_states"], q["policy"])].append(q)
    seen, usable_by_request = 0, {}
    for r in rows:
        key = (r["trace"], r["kv_mode"], r["budget_states"], r["policy"])
        qs = per.pop(key, [])
        if r["policy"] == "static_optimum":
            assert not qs, key
            continue
        n = int(r["requests"])
        assert [int(q["request"]) for q in qs] == list(range(n)), (key, len(qs), n)
        for col in ("prompt_tokens", "usable_tokens", "resumed_tokens", "recomputed_tokens"):
            assert sum(int(q[col]) for q in qs) == float(r[col]), (key, col)
        # (tree.csv prints kv_blocks_mean to 6 significant digits)
        for col, mean in (("states", "states_mean"), ("kv_blocks", "kv_blocks_mean")):
            got = sum(int(q[col]) for q in qs) / n
            assert math.isclose(got, float(r[mean]), rel_tol=1e-5), (key, col, got)
        for q in qs:
            u, k = int(q["usable_tokens"]), int(q["resumed_tokens"])
            assert 0 <= k <= u < int(q["prompt_tokens"]), (key, q)
            assert int(q["recomputed_tokens"]) == u - k, (key, q)
            if r["kv_mode"] == "unlimited":
                ref = usable_by_request.setdefault((r["trace"], q["request"]), u)
                assert u == ref, (key, q["request"], u, ref)
        leaders = [q["leader"] for q in qs]
        if r["policy"] == "hybridcache":
            assert all(leaders), key
            assert leaders[-1] == r["leader"], (key, leaders[-1], r["leader"])
            changes = sum(a != b for a, b in zip(leaders, leaders[1:]))
            assert changes == float(r["switches"]), (key, changes, r["switches"])
        else:
            assert not any(leaders), key
        seen += 1
    assert not per, f"rows in tree_requests.csv but not in tree.csv: {sorted(per)}"
    assert seen == 2 * 3 * 2 * 4, seen  # traces x KV modes x budgets x policies
    print(f"tree_requests: {seen} rows checked against tree.csv")


if __name__ == "__main__":
    main()
