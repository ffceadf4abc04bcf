#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Issue #24's targets on the traces of record rebuilt at other seeds (docs/tree_simulation.md,
# "The traces of record at other seeds"). `--seed` re-draws the synthetic multi-turn sessions, and
# the 10,000 Zipf-popular requests of QuALITY and system-prompts (which document or system prompt,
# which question or query, when); Mooncake is replayed as recorded, the same at every seed. Per
# seed: the four traces x M = 4, 16, 64, 256, 1024 x KV unlimited, separate, joint; then one
# markdown table (stdout and OUT/seeds.md):
#   - win / tie / loss of `hybridcache` against the best faithful engine row of each cell (win
#     < 0.99x, tie <= 1.01x, loss above; both 0 is a tie), the results of record's rule;
#   - the geometric mean of hybridcache / best engine row over the cells where that row recomputes
#     more than 0.1 % of the usable tokens (issue #24's second target: <= 0.75);
#   - every lost cell.
# Under a joint pool "recomputed" is the avoidable prefill ū − k (ū the usable match with KV
# unlimited), as in the results of record. A check only: no constant is chosen on these traces.
#
# Usage: scripts/tree_seeds.sh [OUT]   (default OUT = out/tree_seeds)
# Environment: HYBRIDCACHE_BIN (default build/release/bin/hybridcache), DATA (default
# ../shared/data; traces whose files are absent are skipped with a note), SEEDS (default
# 1,2,3,4,5,6), KV_BUDGET (default 4GiB), SESSIONS (optional --tree-sessions, multi-turn's
# sessions, for a quick run), TABLE_ONLY=1 (only re-tabulate OUT/seed_*/tree.csv; the binary is
# still asked which rows are the faithful engine rows: scripts/tree_cells.py).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-out/tree_seeds}
BIN=${HYBRIDCACHE_BIN:-build/release/bin/hybridcache}
DATA=${DATA:-../shared/data}
SEEDS=${SEEDS:-1,2,3,4,5,6}
KV_BUDGET=${KV_BUDGET:-4GiB}

TRACES=multi-turn
[[ -d "$DATA/leval" ]] && TRACES+=,quality || echo "tree_seeds: no $DATA/leval, QuALITY skipped" >&2
[[ -d "$DATA/system_prompts" && -d "$DATA/sharegpt" ]] && TRACES+=,system-prompts ||
  echo "tree_seeds: no $DATA/system_prompts or sharegpt, system-prompts skipped" >&2
[[ -f "$DATA/mooncake/conversation_trace.jsonl" ]] && TRACES+=,mooncake ||
  echo "tree_seeds: no $DATA/mooncake, Mooncake skipped" >&2

mkdir -p "$OUT"
if [[ "${TABLE_ONLY:-0}" != 1 ]]; then
  extra=()
  [[ -n "${SESSIONS:-}" ]] && extra=(--tree-sessions "$SESSIONS")
  IFS=, read -ra seeds <<<"$SEEDS"
  for s in "${seeds[@]}"; do
    start=$(date +%s)
    mkdir -p "$OUT/seed_$s"
    "$BIN" simulate --scenario tree --data "$DATA" --tree "$TRACES" \
      --tree-budgets 4,16,64,256,1024 --kv-budget "$KV_BUDGET" --kv-mode unlimited,separate,joint \
      --seed "$s" "${extra[@]}" --no-plot --quiet --out "$OUT/seed_$s" >"$OUT/seed_$s/tables.txt"
    echo "tree_seeds: seed $s, $(($(date +%s) - start)) s wall" >&2
  done
fi

PYTHONPATH=scripts python3 - "$OUT" "$SEEDS" "$BIN" <<'PY' | tee "$OUT/seeds.md"
import math, sys
from tree_cells import GEOMEAN_SHARE, engine_rows, engine_test, read_cells, verdict

out, seeds = sys.argv[1], sys.argv[2].split(",")
engine_ok = engine_test(engine_rows(sys.argv[3]))
modes = ("unlimited", "separate", "joint")
fmt = lambda x: f"{x / 1e6:.3f} M" if x >= 500 else f"{x:.0f} tok"

print("`hybridcache` against the best faithful engine row of each cell: win / tie / loss (win "
      "< 0.99x, tie <= 1.01x) and the geometric mean of the ratio over the cells where that row "
      "recomputes more than 0.1 % of the usable tokens (their number in brackets).\n")
print("| seed | " + " | ".join(modes) + " |")
print("|---:|" + "---|" * len(modes))
losses = []
for s in seeds:
    cells, usable = read_cells(f"{out}/seed_{s}/tree.csv")
    cols = []
    for m in modes:
        wtl, logs = [0, 0, 0], []
        for k, c in sorted(cells.items(), key=lambda kc: (kc[0][1], int(kc[0][2]))):
            if k[0] != m or "hybridcache" not in c:
                continue
            eng = {p: v for p, v in c.items() if engine_ok(p)}
            bp = min(eng, key=eng.get)
            x, best = c["hybridcache"], eng[bp]
            v = ("win", "tie", "loss").index(verdict(x, best))
            wtl[v] += 1
            if v == 2:
                ratio = f"{x / best:.2f}x" if best > 0 else "-"
                share = f"{100 * best / usable[k[1:]]:.3f} %"
                losses.append(f"| {s} | {k[1]} | {m} | {k[2]} | {fmt(x)} | `{bp}` {fmt(best)} "
                              f"| {ratio} | {share} |")
            if best > GEOMEAN_SHARE * usable[k[1:]]:
                logs.append(math.log(max(x, 1.0) / best))
        gm = f"{math.exp(sum(logs) / len(logs)):.3f} ({len(logs)})" if logs else "-"
        cols.append(f"{wtl[0]}/{wtl[1]}/{wtl[2]}, {gm}")
    print(f"| {s} | " + " | ".join(cols) + " |")
print("\nThe cells lost (the last column: the best engine row's recompute over the usable tokens; "
      "below 0.1 % the cell is outside the geometric mean):\n")
print("| seed | trace | KV | M | hybridcache | best faithful engine row | ratio "
      "| its share of the usable tokens |")
print("|---:|---|---|---:|---:|---|---:|---:|")
for line in losses:
    print(line)
PY
