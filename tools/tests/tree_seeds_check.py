# SPDX-License-Identifier: Apache-2.0
"""Checks scripts/tree_seeds.sh's table against its own recomputation from the CSVs.

Usage: tree_seeds_check.py OUT SEEDS. For each seed, OUT/seed_S/tree.csv is re-read here and the
wins / ties / losses of `hybridcache` against the best faithful engine row are counted per KV
mode with the results of record's rule (win below 0.99x, loss above 1.01x, both zero a tie; under
a joint pool the avoidable prefill: usable tokens with KV unlimited minus resumed tokens), with
the geometric mean of the ratio over the cells where that row recomputes more than 0.1 % of the
usable tokens. They must equal the figures of OUT/seeds.md, which must also list exactly the lost
cells. The seeds must give different traces (seed plumbing).
"""
import csv
import math
import re
import sys

ENGINES = {"vllm_align", "vllm_align_dense", "vllm_all", "sglang_no_buffer",
           "sglang_extra_buffer", "sglang_extra_buffer_lazy", "marconi", "llamacpp",
           "llamacpp_cache_ram", "trtllm"}


def is_engine(policy):
    return policy in ENGINES or policy.startswith("sglang_extra_buffer_cap")


def recount(path):
    rows = list(csv.DictReader(open(path, newline="")))
    free = {}
    for r in rows:
        if r["kv_mode"] == "unlimited":
            free[(r["trace"], r["budget_states"])] = float(r["usable_tokens"])
    table = {}
    for r in rows:
        key = (r["kv_mode"], r["trace"], r["budget_states"])
        if r["kv_mode"] == "joint":
            cost = free[key[1:]] - float(r["resumed_tokens"])
        else:
            cost = float(r["recomputed_tokens"])
        table.setdefault(key, {})[r["policy"]] = cost
    counts, lost, logs = {}, set(), {}
    for key, cell in table.items():
        if "hybridcache" not in cell:
            continue
        mine = cell["hybridcache"]
        best = min(v for p, v in cell.items() if is_engine(p))
        if mine == 0 and best == 0:
            verdict = "tie"
        elif mine < 0.99 * best:
            verdict = "win"
        elif mine > 1.01 * best:
            verdict = "loss"
        else:
            verdict = "tie"
        c = counts.setdefault(key[0], {"win": 0, "tie": 0, "loss": 0})
        c[verdict] += 1
        if verdict == "loss":
            lost.add((key[1], key[0], key[2]))
        # The geometric mean's cells: the best engine row recomputes > 0.1 % of the usable tokens.
        if best > free[key[1:]] / 1000.0:
            logs.setdefault(key[0], []).append(math.log(max(mine, 1.0) / best))
    means = {m: f"{math.exp(sum(v) / len(v)):.3f} ({len(v)})" for m, v in logs.items()}
    return counts, lost, means, sum(free.values())


def main():
    out, seeds = sys.argv[1], sys.argv[2].split(",")
    text = open(f"{out}/seeds.md").read()
    head, _, losses = text.partition("The cells lost")
    assert losses, "seeds.md has no list of lost cells"
    usable = set()
    for s in seeds:
        counts, lost, means, total = recount(f"{out}/seed_{s}/tree.csv")
        usable.add(total)
        m = re.search(rf"^\| {s} \| (.*) \|$", head, re.M)
        assert m, f"seed {s}: no row in seeds.md"
        cols = [c.strip() for c in m.group(1).split("|")]
        assert len(cols) == 3, cols
        for mode, col in zip(("unlimited", "separate", "joint"), cols):
            c = counts[mode]
            want = f"{c['win']}/{c['tie']}/{c['loss']}, {means.get(mode, '-')}"
            assert col == want, f"seed {s} {mode}: table {col}, recount {want}"
        listed = set()
        for line in re.findall(rf"^\| {s} \| ([^|]+) \| ([^|]+) \| ([^|]+) \|", losses, re.M):
            listed.add(tuple(x.strip() for x in line))
        assert listed == lost, f"seed {s}: lost cells {sorted(listed)} != {sorted(lost)}"
    assert len(usable) == len(seeds), "the seeds gave the same trace"
    print(f"tree_seeds table checked: {len(seeds)} seeds")


if __name__ == "__main__":
    main()
