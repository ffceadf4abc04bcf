#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The external anchor of issue #23 item 7: the real `llama-server` on the trace of `replay`.

Starts llama-server (built from the same llama.cpp source: LLAMA_CPP_SERVER=1
scripts/install-llama-cpp.sh) on 127.0.0.1 with one slot and its own prompt-cache and checkpoint
settings, sends the prompts that `hybridcache replay --dump-prompts FILE` wrote (the same token
ids, as token arrays to POST /completion, cache_prompt true, temperature 0, n_predict 0: prefill
only, like replay), reads each answer's `timings` (prompt_n, cache_n, prompt_ms) and writes
per-request rows (CSV) and totals (JSON). The server always runs in its own process group and is
always killed (SIGTERM, then SIGKILL) on the way out; the request loop is bounded by a request
cap and an overall deadline. Standard library only.

  anchor.py --server /opt/llama.cpp/bin/llama-server --model qwen35-tiny.gguf \\
            --prompts prompts.jsonl --csv rows.csv --json totals.json \\
            [--cache-ram MIB] [--ctx-checkpoints N] [--checkpoint-min-step N] ...

Exit status: 0 on success, 1 on a failed request or a violated invariant
(prompt_n + cache_n == prompt length), 2 on bad usage.
"""

import argparse
import csv
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time


def free_port():
    """A port that was free on 127.0.0.1 a moment ago (the server binds it next)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(port, method, path, body=None, timeout=60.0):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        conn.request(method, path, body=data, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def quantile(values, q):
    """The same nearest-rank rule as `hybridcache replay` (index round(q·(n−1)))."""
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(int(q * (len(v) - 1) + 0.5), len(v) - 1)]


def read_prompts(path):
    prompts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                obj = json.loads(line)
                tokens = [int(t) for t in obj["tokens"]]
                prompts.append((int(obj["request"]), int(obj["root"]), tokens))
    if not prompts:
        raise ValueError(f"--prompts {path}: no prompt")
    return prompts


def stop(proc):
    """SIGTERM to the server's process group, SIGKILL after 10 s."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", required=True, help="the llama-server binary")
    ap.add_argument("--model", required=True, help="the GGUF model")
    ap.add_argument("--prompts", required=True, help="JSON lines of `replay --dump-prompts`")
    ap.add_argument("--csv", help="per-request rows")
    ap.add_argument("--json", help="totals")
    ap.add_argument("--log", help="the server's stdout+stderr (default: discarded)")
    ap.add_argument("--cache-ram", type=int, default=8, help="--cache-ram MiB (default 8)")
    ap.add_argument("--ctx-checkpoints", type=int, default=32, help="per slot (server default 32)")
    ap.add_argument("--checkpoint-min-step", type=int, default=None,
                    help="tokens (server default 8192); omitted when not given")
    ap.add_argument("--ctx-size", type=int, default=1024, help="the slot's context (default 1024)")
    ap.add_argument("--batch", type=int, default=64, help="-b and -ub (default 64, replay's chunk)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--n-predict", type=int, default=0,
                    help="tokens generated per request (default 0: prefill only, like replay)")
    ap.add_argument("--max-requests", type=int, default=1000, help="request cap")
    ap.add_argument("--time-limit", type=float, default=300.0, help="overall seconds")
    ap.add_argument("--startup-timeout", type=float, default=60.0)
    ap.add_argument("--extra", action="append", default=[], help="one more server argument")
    a = ap.parse_args(argv)
    for name in ("cache_ram", "ctx_size", "batch", "threads", "max_requests"):
        if getattr(a, name) < (-1 if name == "cache_ram" else 1):
            ap.error(f"--{name.replace('_', '-')} out of range: {getattr(a, name)}")
    if a.n_predict < 0 or a.ctx_checkpoints < 0:
        ap.error("--n-predict and --ctx-checkpoints must be >= 0")

    deadline = time.monotonic() + a.time_limit
    prompts = read_prompts(a.prompts)[: a.max_requests]
    longest = max(len(p[2]) for p in prompts)
    if longest + a.n_predict > a.ctx_size:
        ap.error(f"--ctx-size {a.ctx_size} < longest prompt {longest} + n_predict")

    port = free_port()
    cmd = [a.server, "-m", a.model, "--host", "127.0.0.1", "--port", str(port), "-np", "1",
           "-c", str(a.ctx_size), "-b", str(a.batch), "-ub", str(a.batch), "-t", str(a.threads),
           "-tb", str(a.threads), "--cache-ram", str(a.cache_ram),
           "--ctx-checkpoints", str(a.ctx_checkpoints), "--no-warmup"]
    if a.checkpoint_min_step is not None:
        cmd += ["--checkpoint-min-step", str(a.checkpoint_min_step)]
    cmd += a.extra
    log = open(a.log, "wb") if a.log else subprocess.DEVNULL
    rows = []
    failure = None
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        start_deadline = min(deadline, time.monotonic() + a.startup_timeout)
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with {proc.returncode} during start-up")
            try:
                status, _ = request(port, "GET", "/health", timeout=2.0)
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > start_deadline:
                raise RuntimeError("llama-server did not become healthy in time")
            time.sleep(0.1)

        for index, root, tokens in prompts:
            left = deadline - time.monotonic()
            if left <= 0:
                failure = f"time limit reached after {len(rows)} requests"
                break
            body = {"prompt": tokens, "n_predict": a.n_predict, "cache_prompt": True,
                    "temperature": 0.0, "seed": 1}
            t0 = time.monotonic()
            status, raw = request(port, "POST", "/completion", body, timeout=max(1.0, left))
            wall_ms = 1e3 * (time.monotonic() - t0)
            if status != 200:
                failure = f"request {index}: HTTP {status}: {raw[:200]!r}"
                break
            t = json.loads(raw)["timings"]
            row = {"request": index, "root": root, "prompt_tokens": len(tokens),
                   "prompt_n": int(t["prompt_n"]), "cache_n": int(t["cache_n"]),
                   "prompt_ms": float(t["prompt_ms"]), "predicted_n": int(t.get("predicted_n", 0)),
                   "wall_ms": wall_ms}
            rows.append(row)
            if row["prompt_n"] + row["cache_n"] != row["prompt_tokens"]:
                failure = (f"request {index}: prompt_n {row['prompt_n']} + cache_n {row['cache_n']}"
                           f" != prompt length {row['prompt_tokens']}")
                break
    except (RuntimeError, OSError, ValueError, KeyError) as e:
        failure = str(e)
    finally:
        stop(proc)
        if log is not subprocess.DEVNULL:
            log.close()

    if a.csv:
        with open(a.csv, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=["request", "root", "prompt_tokens", "prompt_n",
                                              "cache_n", "prompt_ms", "predicted_n", "wall_ms"])
            w.writeheader()
            w.writerows(rows)
    ms = [r["prompt_ms"] for r in rows]
    totals = {"server": a.server, "model": a.model, "command": cmd[:5] + cmd[7:],
              "requests": len(rows), "cache_ram_mib": a.cache_ram,
              "ctx_checkpoints": a.ctx_checkpoints, "checkpoint_min_step": a.checkpoint_min_step,
              "ctx_size": a.ctx_size, "batch": a.batch, "n_predict": a.n_predict,
              "prompt_tokens": sum(r["prompt_tokens"] for r in rows),
              "evaluated_tokens": sum(r["prompt_n"] for r in rows),
              "cached_tokens": sum(r["cache_n"] for r in rows),
              "prompt_seconds": sum(ms) / 1e3,
              "prompt_ms_p50": quantile(ms, 0.5), "prompt_ms_p99": quantile(ms, 0.99),
              "error": failure}
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(totals, f, indent=2)
            f.write("\n")
    print(f"llama-server: {totals['requests']} requests ({totals['prompt_tokens']} prompt tokens), "
          f"{totals['evaluated_tokens']} evaluated, {totals['cached_tokens']} from its cache, "
          f"prompt {totals['prompt_seconds']:.3f} s, p50 {totals['prompt_ms_p50']:.2f} ms "
          f"p99 {totals['prompt_ms_p99']:.2f} ms")
    if failure:
        print(f"anchor.py: {failure}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
