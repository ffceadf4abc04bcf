#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`hybridcache replay` end to end (ctest cli/replay_dump, cli/replay_fidelity; exit 77 =
skipped without the generated model).

usage: replay_cli_test.py dump|fidelity|family HYBRIDCACHE MODEL_DIR WORK_DIR

dump      `replay --dump-prompts`: one JSON line per request of the trace, in order, with the
          request's token ids; checked against replay's own per-request CSV and JSON (same
          prompt lengths and totals), the model's vocabulary (ids < vocab - 2, the fold), the
          trace's sharing (each library resume point is at most the longest common prefix with
          an earlier dumped prompt, by brute force, and some request resumes), and determinism
          (a second run under another policy writes the same bytes).
fidelity  the tokens llama_decode evaluated under the library's row and two engine rows equal
          what `simulate --scenario tree` predicts for the same trace, block and budget (read
          from simulate's tree.csv, prefill_tokens): the simulator's prediction, from its own CLI;
          and request for request, replay's --csv resume points equal simulate's
          --tree-requests log.
family    the same on a tuning family (`replay --trace doc-qa-skewed`, one burst of questions on
          long documents): four rows that the simulator tells apart, each request's logits
          checked bit for bit every third request, each request's resume point against
          simulate's log; and `--trace`'s usage errors.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

SKIP = 77


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.stderr.write(p.stdout + p.stderr)
        raise SystemExit(f"failed ({p.returncode}): {' '.join(cmd)}")
    return p.stdout


def dump(exe, model, work):
    out = os.path.join(work, "prompts.jsonl")
    rows = os.path.join(work, "rows.csv")
    summary = os.path.join(work, "summary.json")
    base = [exe, "replay", "--model", model, "--sessions", "6", "--policy", "library",
            "--quiet"]
    run(base + ["--dump-prompts", out, "--csv", rows, "--json", summary])
    with open(out, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    with open(rows, newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    with open(summary, encoding="utf-8") as f:
        s = json.load(f)
    assert len(lines) == s["requests"] == len(table) > 10, (len(lines), s["requests"], len(table))
    vocab = 1024  # qwen35-tiny (tools/gguf/make_models.py)
    for i, (j, r) in enumerate(zip(lines, table)):
        assert j["request"] == i, j["request"]
        assert isinstance(j["root"], int)
        toks = j["tokens"]
        assert len(toks) == int(r["prompt_tokens"]) > 0, (i, len(toks), r["prompt_tokens"])
        assert all(isinstance(t, int) and 0 <= t < vocab - 2 for t in toks), i
    assert sum(len(j["tokens"]) for j in lines) == s["prompt_tokens"]
    # Sharing: the library's resume point is a common prefix with an earlier prompt (brute force).
    for i, (j, r) in enumerate(zip(lines, table)):
        k = int(r["resume_tokens"])
        if k == 0:
            continue
        best = max((lcp(j["tokens"], e["tokens"]) for e in lines[:i]), default=0)
        assert k <= best, (i, k, best)
    assert any(int(r["resume_tokens"]) > 0 for r in table), "no request shared a prefix"
    # Determinism, and the dump does not depend on the policy run beside it.
    again = os.path.join(work, "prompts2.jsonl")
    run([exe, "replay", "--model", model, "--sessions", "6", "--policy", "none", "--quiet",
         "--dump-prompts", again])
    with open(out, "rb") as a, open(again, "rb") as b:
        assert a.read() == b.read(), "the dump differs between two runs"
    print(f"dump: {len(lines)} requests, {s['prompt_tokens']} tokens checked")


def lcp(a, b):
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def simulated(exe, work, trace, sessions, block, policies):
    """simulate's prefill_tokens per policy (seed 3, 8 states, unlimited KV): its prediction; and
    per policy, each request's (prompt tokens, resumed tokens) from --tree-requests."""
    run([exe, "simulate", "--scenario", "tree", "--tree", trace, "--tree-sessions", str(sessions),
         "--tree-block", str(block), "--seed", "3", "--tree-budgets", "8", "--tree-policies",
         policies, "--out", work, "--no-plot", "--quiet", "--tree-requests"])
    predicted, per_request = {}, {}
    with open(os.path.join(work, "tree.csv"), newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["kv_mode"] == "unlimited" and r["budget_states"] == "8":
                predicted[r["policy"]] = float(r["prefill_tokens"])
    with open(os.path.join(work, "tree_requests.csv"), newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["kv_mode"] == "unlimited" and r["budget_states"] == "8":
                per_request.setdefault(r["policy"], []).append(
                    (int(r["prompt_tokens"]), int(r["resumed_tokens"])))
    return predicted, per_request


def same_requests(rows_csv, per_request, policies):
    """replay's per-request CSV against simulate's per-request log: request for request, the same
    prompt and the same resume point, and the evaluated tokens are the rest of the prompt."""
    with open(rows_csv, newline="", encoding="utf-8") as f:
        table = list(csv.DictReader(f))
    for p in policies.split(","):
        mine = [r for r in table if r["policy"] == p]
        got = [(int(r["prompt_tokens"]), int(r["resume_tokens"])) for r in mine]
        assert [int(r["request"]) for r in mine] == list(range(len(got))), p
        assert got == per_request[p], f"{p}: per-request resume points differ from simulate's"
        for r in mine:
            evaluated, prompt, resume = (int(r[c]) for c in
                                         ("evaluated_tokens", "prompt_tokens", "resume_tokens"))
            assert evaluated == prompt - resume, (p, r)
        print(f"{p}: {len(got)} requests resume where simulate's per-request log says")


def fidelity(exe, model, work):
    policies = "hybridcache,vllm_align,sglang_extra_buffer"
    predicted, per_request = simulated(exe, work, "multi-turn", 2, 64, policies)
    summary = os.path.join(work, "fidelity.json")
    plots = os.path.join(work, "plots")
    rows_csv = os.path.join(work, "fidelity.csv")
    run([exe, "replay", "--model", model, "--trace-preset", "simulate", "--sessions", "2",
         "--block", "64", "--seed", "3", "--chunk", "256", "--budget-states", "8",
         "--policy", policies, "--verify", "1", "--quiet", "--json", summary, "--plot", plots,
         "--csv", rows_csv])
    same_requests(rows_csv, per_request, policies)
    with open(summary, encoding="utf-8") as f:
        rows = {r["policy"]: r for r in json.load(f)["rows"]}
    for p in policies.split(","):
        got = rows[p]["evaluated_tokens"]
        assert p in predicted, (p, sorted(predicted))
        assert got == predicted[p], f"{p}: replay evaluated {got}, simulate predicts {predicted[p]}"
        assert got < rows[p]["prompt_tokens"], p
        assert rows[p]["verified_requests"] == json.load(open(summary))["requests"]
        print(f"fidelity: {p}: {got} tokens evaluated = simulate's prediction")
    # --plot: one data row per policy (evaluated, predicted), the two gnuplot scripts, and the
    # plots themselves when gnuplot is installed.
    with open(os.path.join(plots, "replay.dat"), encoding="utf-8") as f:
        data = [line.split() for line in f if not line.startswith("#")]
    assert [d[1].strip('"') for d in data] == policies.split(","), data
    for d in data:
        name = d[1].strip('"')
        assert int(d[2]) == rows[name]["evaluated_tokens"], (d, rows[name])
        assert float(d[3]) == predicted[name], (d, predicted[name])
    for gp in ("replay_png.gp", "replay_svg.gp"):
        assert os.path.exists(os.path.join(plots, gp)), gp
    if shutil.which(os.environ.get("HYBRIDCACHE_GNUPLOT", "gnuplot")):
        for img in ("replay.png", "replay.svg"):
            assert os.path.getsize(os.path.join(plots, img)) > 0, img


def family(exe, model, work):
    policies = "hybridcache,vllm_align,sglang_extra_buffer,marconi"
    predicted, per_request = simulated(exe, work, "doc-qa-skewed", 1, 16, policies)
    summary = os.path.join(work, "family.json")
    rows_csv = os.path.join(work, "family.csv")
    run([exe, "replay", "--model", model, "--trace", "doc-qa-skewed", "--sessions", "1",
         "--block", "16", "--seed", "3", "--chunk", "64", "--budget-states", "8",
         "--policy", policies, "--verify", "3", "--quiet", "--json", summary, "--csv", rows_csv])
    same_requests(rows_csv, per_request, policies)
    with open(summary, encoding="utf-8") as f:
        s = json.load(f)
    assert s["trace"] == "doc-qa-skewed" and s["requests"] > 3, s
    rows = {r["policy"]: r for r in s["rows"]}
    for p in policies.split(","):
        got = rows[p]["evaluated_tokens"]
        assert got == predicted[p], f"{p}: replay evaluated {got}, simulate predicts {predicted[p]}"
        assert got < rows[p]["prompt_tokens"] == s["prompt_tokens"], p
        assert rows[p]["verified_requests"] == (s["requests"] + 2) // 3, rows[p]
        print(f"family: {p}: {got} tokens evaluated = simulate's prediction")
    # The rows differ on this trace, so equal totals are not a coincidence of one shared answer.
    assert len({rows[p]["evaluated_tokens"] for p in policies.split(",")}) >= 3, rows
    for bad, why in ((["--trace", "nope"], "unknown --trace 'nope'"),
                     (["--trace", "rag", "--max-turns", "3"], "--max-turns shapes the multi-turn")):
        p = subprocess.run([exe, "replay", "--model", model] + bad, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode != 0 and why in p.stderr, (bad, p.returncode, p.stderr)


def main():
    mode, exe, models, work = sys.argv[1:5]
    model = os.path.join(models, "qwen35-tiny.gguf")
    if not os.path.exists(model):
        print(f"skipped: {model} is absent (tools/gguf/make_models.py writes it)")
        return SKIP
    os.makedirs(work, exist_ok=True)
    {"dump": dump, "fidelity": fidelity, "family": family}[mode](exe, model, work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
