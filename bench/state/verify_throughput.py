# SPDX-License-Identifier: Apache-2.0
# Usage: python bench/state/verify_throughput.py  (needs numpy), then
#   time hybridcache verify --vectors /tmp/rk/big/v --candidate /tmp/rk/big/c --quiet
# Builds a verify benchmark: one 32M-element expected array (f8 reference + f8 bound weight,
# candidate f4 = 128 MB) listed 8 times in the manifest: 1 GB of candidate arrays to check.
import json, os, numpy as np
root = "/tmp/rk/big"
n = 32 * 1024 * 1024
rng = np.random.default_rng(0)
ref = rng.standard_normal(n)
os.makedirs(f"{root}/v/big", exist_ok=True)
np.save(f"{root}/v/big/expected_o.npy", ref)
np.save(f"{root}/v/big/bound_o.npy", np.abs(ref) + 1.0)
cases = []
for i in range(8):
    name = f"bench/case{i}"
    os.makedirs(f"{root}/c/{name}", exist_ok=True)
    if i == 0:
        np.save(f"{root}/c/{name}/o.npy", ref.astype(np.float32))
    else:
        os.link(f"{root}/c/bench/case0/o.npy", f"{root}/c/{name}/o.npy") if not os.path.exists(f"{root}/c/{name}/o.npy") else None
    cases.append({"name": name, "expected": {"o": {"reference": "big/expected_o.npy", "bound_weight": "big/bound_o.npy",
        "shape": [n], "depth_per_token": 2.0, "depth_extra": 17.0, "time_axis": None, "steps": 256}}})
json.dump({"format_version": 1, "cases": cases}, open(f"{root}/v/manifest.json", "w"))
