"""Nanoseconds per 256-value group of the q8 kernels (quant.c), one thread, weights hot in L2 (560 × 1536 of each
type: the arithmetic, not memory), for 1, 2 and 5 rows; an older tree's build beside this tree's when given.

    python groups.py [OLD_TREE] [--types Q4_0,...] [--reps 7]"""
import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from specx.cpu import quant, quant_ref

ap = argparse.ArgumentParser()
ap.add_argument("old", nargs="?")
ap.add_argument("--types", default="Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,IQ4_NL,IQ4_XS,Q2_K,Q3_K,Q4_K,Q5_K,Q6_K")
ap.add_argument("--reps", type=int, default=7)
a = ap.parse_args()
torch.set_num_threads(1)
libs = {"new": quant._default()}
if a.old:
    source, quant.SOURCE = quant.SOURCE, Path(a.old) / "specx/cpu/quant.c"
    libs["old"] = quant.load(libs["new"].name)
    quant.SOURCE = source
rng = np.random.default_rng(0)
N, K, ROWS = 560, 1536, (1, 2, 5)
print(f"{libs['new'].describe()}; one thread; ns per group, median of {a.reps} × 50 calls")
print("| type | build | " + " | ".join(f"{r} row{'s' * (r > 1)}" for r in ROWS) + " |")
print("|---|---|" + "---|" * len(ROWS))
for name in a.types.split(","):
    w = quant_ref.random_weight(name, N, K, rng, extreme=False)
    for key in ("old", "new") if a.old else ("new",):
        cells = []
        for r in ROWS:
            x = torch.randn(r, K)
            for _ in range(20):
                libs[key].matmul(x, [w], "q8")
            times = []
            for _ in range(a.reps):
                t = time.perf_counter()
                for _ in range(50):
                    libs[key].matmul(x, [w], "q8")
                times.append((time.perf_counter() - t) / 50)
            cells.append(f"{statistics.median(times) / (N * K / 256) * 1e9:.2f}")
        print(f"| {name} | {key} | " + " | ".join(cells) + " |", flush=True)
