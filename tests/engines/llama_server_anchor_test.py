#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A short run of the llama-server anchor (tools/llama_server/anchor.py), ctest label llama_cpp.

  llama_server_anchor_test.py SERVER MODEL_DIR WORK_DIR

Exit 77 (skipped) when the server binary or the model is absent. Sends 8 prompts (two sessions
of four turns under one shared system prompt, each turn extending the previous prompt: the shape
of replay's trace) and checks, per request, the server's own invariant prompt_n + cache_n ==
prompt length, and that the reuse it reports is possible: cache_n <= min(P - 1, the longest
common prefix with an earlier prompt), computed here by brute force. Over the run the server
must have reused something (a turn that extends the previous prompt of the same session, with
no other request in between, is a full-prefix hit on the one slot).
"""

import csv
import json
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "llama_server"))
import anchor  # noqa: E402


def lcp(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    server, model_dir, work = sys.argv[1:]
    model = os.path.join(model_dir, "qwen35-tiny.gguf")
    if not os.access(server, os.X_OK) or not os.path.isfile(model):
        print(f"skipped: {server} or {model} is absent "
              "(LLAMA_CPP_SERVER=1 scripts/install-llama-cpp.sh builds the server)")
        return 77
    os.makedirs(work, exist_ok=True)
    rng = random.Random(7)
    words = lambda n: [rng.randrange(2, 1000) for _ in range(n)]  # noqa: E731
    system = words(40)
    sessions = [list(system), list(system)]
    order = [0, 0, 1, 1, 0, 1, 0, 1]  # back-to-back turns and interleaved ones
    prompts = []
    for i, s in enumerate(order):
        sessions[s] += words(rng.randrange(8, 24))  # the previous answer + the next message
        prompts.append({"request": i, "root": 0, "tokens": list(sessions[s])})
    path = os.path.join(work, "prompts.jsonl")
    with open(path, "w", encoding="utf-8") as f:
        for p in prompts:
            f.write(json.dumps(p) + "\n")

    rows_path = os.path.join(work, "rows.csv")
    totals_path = os.path.join(work, "totals.json")
    rc = anchor.main(["--server", server, "--model", model, "--prompts", path,
                      "--csv", rows_path, "--json", totals_path,
                      "--log", os.path.join(work, "server.log"), "--ctx-size", "512",
                      "--cache-ram", "8", "--max-requests", "10", "--time-limit", "120"])
    if rc != 0:
        print(f"FAIL: anchor.py returned {rc} (server log in {work}/server.log)")
        return 1
    with open(rows_path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    failures = 0
    if len(rows) != len(prompts):
        print(f"FAIL: {len(rows)} rows for {len(prompts)} prompts")
        failures += 1
    reused = 0
    for row, p in zip(rows, prompts):
        tokens = p["tokens"]
        prompt_n, cache_n = int(row["prompt_n"]), int(row["cache_n"])
        bound = max([0] + [lcp(tokens, q["tokens"]) for q in prompts[: p["request"]]])
        bound = min(bound, len(tokens) - 1)
        ok = (int(row["prompt_tokens"]) == len(tokens) and prompt_n + cache_n == len(tokens)
              and 0 <= cache_n <= bound and prompt_n >= 1 and float(row["prompt_ms"]) >= 0)
        reused += cache_n
        print(f"request {p['request']}: P={len(tokens)} prompt_n={prompt_n} cache_n={cache_n} "
              f"(bound {bound}) {'ok' if ok else 'FAIL'}")
        failures += not ok
    if reused == 0:
        print("FAIL: the server reused no token over the run")
        failures += 1
    with open(totals_path, encoding="utf-8") as f:
        totals = json.load(f)
    if totals["evaluated_tokens"] + totals["cached_tokens"] != totals["prompt_tokens"]:
        print("FAIL: totals do not add up")
        failures += 1
    print(f"{len(rows)} requests, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
