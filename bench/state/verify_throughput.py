# SPDX-License-Identifier: Apache-2.0
"""Benchmark of `hybridcache verify`: 1 GB of candidate arrays, end to end, beside I/O baselines.

Usage (Release build of the CLI: `cmake --preset release && ninja -C build/release hybridcache_cli`):

    python3 bench/state/verify_throughput.py --cli build/release/bin/hybridcache [--root DIR]

Writes under DIR (default: a fresh /tmp directory, deleted afterwards) a golden-vector set of
8 cases, each one 32M-element expected array (float64 reference + float64 bound weights, shared
by the 8 cases: 2 x 268 MB) and its float32 candidate (8 distinct files of 134 MB: 1.07 GB of
candidate arrays). The candidates carry rounding-sized errors (float32 rounding of references
with 40 significant bits), so every element goes through the full error / tolerance arithmetic.

Then, with the page cache warm, each `--repeats` times and in this order:
  - `cat` of every file verify reads, in verify's order (8 x (reference + weights + candidate)):
    the read floor of verify's data flow;
  - `sha256sum` of the candidate files: a per-byte pass over the 1 GB of candidates;
  - `hybridcache verify --vectors V --candidate C --quiet`, for each `--cli` given.
It prints wall and CPU (user + sys) seconds of each run and the median. Standard library only
(no NumPy): the arrays are 2^20-element blocks written 32 times.
"""
import argparse
import array
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

N_BLOCK = 1 << 20
TILES = 32  # 32M elements per array
CASES = 8


def npy_header(descr, n):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, n)
    pad = 64 - (10 + len(h) + 1) % 64
    return b"\x93NUMPY\x01\x00" + (len(h) + pad + 1).to_bytes(2, "little") + (h + " " * pad + "\n").encode()


def write_npy(path, descr, block, tiles):
    raw = block.tobytes()
    with open(path, "wb") as f:
        f.write(npy_header(descr, len(block) * tiles))
        for _ in range(tiles):
            f.write(raw)


def generate(root):
    v, c = os.path.join(root, "v"), os.path.join(root, "c")
    os.makedirs(os.path.join(v, "big"), exist_ok=True)
    # Reference: 40-bit dyadic values in (-8, 8); weights |ref| + 1 (a depth-2t+17 bound).
    x = 0x9E3779B97F4A7C15
    ref = array.array("d", bytes(8 * N_BLOCK))
    for i in range(N_BLOCK):
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        ref[i] = ((x >> 24) - (1 << 39)) / float(1 << 36)
    wt = array.array("d", (abs(r) + 1.0 for r in ref))
    write_npy(os.path.join(v, "big", "ref_o.npy"), "<f8", ref, TILES)
    write_npy(os.path.join(v, "big", "bound_o.npy"), "<f8", wt, TILES)
    cases = []
    for k in range(CASES):
        name = "bench/case%d" % k
        os.makedirs(os.path.join(c, name), exist_ok=True)
        # float32 rounding of the reference, and in case k every (k+2)-th element one float32
        # ulp further: errors of 1-2 ulp, far inside the tolerance.
        cand = array.array("f", ref)
        for i in range(0, N_BLOCK, k + 2):
            cand[i] = cand[i] * (1 + 2.0**-23)
        write_npy(os.path.join(c, name, "out_o.npy"), "<f4", cand, TILES)
        cases.append({"name": name, "expected": {"o": {
            "reference": "big/ref_o.npy", "bound_weight": "big/bound_o.npy",
            "shape": [N_BLOCK * TILES], "depth_per_token": 2.0, "depth_extra": 17.0,
            "time_axis": None, "steps": 256}}})
    with open(os.path.join(v, "manifest.json"), "w") as f:
        json.dump({"format_version": 3, "cases": cases}, f)
    reads, cands = [], []
    for k in range(CASES):
        cand = os.path.join(c, "bench/case%d" % k, "out_o.npy")
        reads += [os.path.join(v, "big", "ref_o.npy"), cand, os.path.join(v, "big", "bound_o.npy")]
        cands.append(cand)
    return v, c, reads, cands


def timed(cmd, **kw):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, **kw)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, cpu, p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True, action="append",
                    help="hybridcache binary; repeat to time several builds in the same run")
    ap.add_argument("--root", default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    root = args.root or tempfile.mkdtemp(prefix="hc_verify_bench_")
    try:
        t0 = time.perf_counter()
        v, c, reads, cands = generate(root)
        cand_bytes = sum(os.path.getsize(p) for p in cands)
        read_bytes = sum(os.path.getsize(p) for p in reads)
        print("generated %.2f GB of candidates (%.2f GB read by verify) in %.0f s under %s"
              % (cand_bytes / 1e9, read_bytes / 1e9, time.perf_counter() - t0, root))
        subprocess.run(["cat"] + reads, stdout=subprocess.DEVNULL, check=True)  # warm the cache
        runs = {"cat (read floor)": ["cat"] + reads,
                "sha256sum (candidates)": ["sha256sum"] + cands}
        for cli in args.cli:
            runs["verify " + cli] = [cli, "verify", "--vectors", v, "--candidate", c, "--quiet"]
        res = {k: [] for k in runs}
        for rep in range(args.repeats):
            for k, cmd in runs.items():
                wall, cpu, p = timed(cmd)
                if p.returncode != 0:
                    sys.exit("%s failed (%d):\n%s" % (k, p.returncode, p.stdout.decode()[-2000:]))
                if k.startswith("verify "):
                    last = p.stdout.decode().strip().splitlines()[-1]
                res[k].append((wall, cpu))
                print("run %d  %-40s wall %6.2f s  cpu %6.2f s" % (rep + 1, k, wall, cpu))
        print("verify: " + last)
        print("\nmedian of %d  (%.2f GB of candidates)" % (args.repeats, cand_bytes / 1e9))
        for k, xs in res.items():
            print("  %-40s wall %6.2f s  cpu %6.2f s" % (k, statistics.median(w for w, _ in xs),
                                                         statistics.median(c for _, c in xs)))
    finally:
        if args.root is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
