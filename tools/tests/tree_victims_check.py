#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`simulate --scenario tree --tree-victims` (ctest cli/simulate/tree_victims).

usage: tree_victims_check.py HYBRIDCACHE WORK_DIR

Runs a small sweep (the multi-turn trace and the rag family; unlimited and joint KV; the
library's row, the exact policy alone and one engine row) twice, with and without --tree-victims,
and checks tree_victims.csv against tree.csv and against itself (the unit test "victim log: ..."
in tests/sim/tree_test.cpp checks the records against the replayer's own pool log):
- without the flag no tree_victims.csv is written, and tree.csv is the same either way;
- the header is the documented one; only the library's rows log, the row's records name one of
  its library candidates, the exact policy's its own name, and the engine row logs nothing;
- each record's request is one of its row's, in order; its depth and gap are whole blocks with
  the gap at most the depth; its bytes are one state's (tree.csv's state memory / M); its value
  and ΔE[r] are finite and >= 0; under unlimited KV every victim was displaced by an admission.
"""
import math
import os
import sys
from collections import defaultdict

from tree_cli import read, with_and_without

HEADER = ("trace,kv_mode,budget_states,policy,candidate,request,cause,node,depth_tokens,up_node,"
          "gap_tokens,expected_tokens,value,bytes,age,states_below,planned,prior")
SWEEP = ["--tree", "multi-turn,rag", "--tree-sessions", "12", "--tree-budgets", "2,8",
         "--tree-policies", "hybridcache,hybridcache_exact,vllm_align", "--kv-budget", "64MiB",
         "--kv-mode", "unlimited,joint", "--seed", "5"]


def main():
    exe, work = sys.argv[1], sys.argv[2]
    rows, logged = with_and_without(exe, work, SWEEP, "--tree-victims", "tree_victims.csv")
    path = os.path.join(logged, "tree_victims.csv")
    with open(path, encoding="utf-8") as f:
        assert f.readline().strip() == HEADER, "header"

    per = defaultdict(list)
    for v in read(path):
        per[(v["trace"], v["kv_mode"], v["budget_states"], v["policy"])].append(v)
    records = 0
    for r in rows:
        key = (r["trace"], r["kv_mode"], r["budget_states"], r["policy"])
        vs = per.pop(key, [])
        if r["policy"] in ("vllm_align", "static_optimum"):
            assert not vs, key
            continue
        if r["budget_states"] == "2":
            assert vs, f"{key}: a pool of 2 states never gave one up"
        B, n = int(r["block_tokens"]), int(r["requests"])
        state = float(r["state_memory_bytes"]) / int(r["budget_states"])
        requests = [int(v["request"]) for v in vs]
        assert requests == sorted(requests) and all(0 <= q < n for q in requests), key
        for v in vs:
            if r["policy"] == "hybridcache":
                assert v["candidate"] in (
                    "hybridcache", "hybridcache_pool_memory", "hybridcache_lru",
                    "hybridcache_prefill"), (key, v)
            else:
                assert v["candidate"] == r["policy"], (key, v)
            assert v["cause"] in ("admit", "shed", "capacity"), (key, v)
            if r["kv_mode"] == "unlimited":
                assert v["cause"] == "admit", (key, v)
            d, g = int(v["depth_tokens"]), int(v["gap_tokens"])
            assert d % B == 0 and g % B == 0 and 0 < g <= d, (key, v)
            assert (v["up_node"] == "") == (g == d), (key, v)  # no state above: the gap is all
            assert math.isclose(float(v["bytes"]), state, rel_tol=1e-9), (key, v["bytes"], state)
            for col in ("value", "expected_tokens"):
                x = float(v[col])
                assert math.isfinite(x) and x >= 0.0, (key, col, x)
            assert v["planned"] in ("0", "1") and v["prior"] in ("0", "1"), (key, v)
            assert int(v["age"]) >= 0 and int(v["states_below"]) >= 0, (key, v)
        records += len(vs)
    assert not per, f"rows in tree_victims.csv but not in tree.csv: {sorted(per)}"
    assert records > 0
    print(f"tree_victims: {records} victims checked against tree.csv")


if __name__ == "__main__":
    main()
