"""Packed Q4_K matmuls of the 1.5B's shapes (random blocks, hot in L3), the earlier build (OLD.so: q8 per 32 values)
against the current one (q8 with groups), 1/5/17/128 rows, alternating. Usage: python kernels.py OLD.so [REPEATS]"""
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import oldlib
from specx.cpu import packing, quant_ref

old, new = oldlib.load(sys.argv[1])
rng = np.random.default_rng(0)
W = {}
for rows, cols in ((17920, 1536), (1536, 8960), (1536, 1536)):
    w = quant_ref.random_weight("Q4_K", rows, cols, rng, extreme=False)
    W[(rows, cols)] = {k: packing.pack(lib, w, np.empty(w.nbytes, np.uint8)) for k, lib in (("old", old), ("new", new))}
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
for M in (1, 5, 17, 128):
    for (rows, cols), ws in W.items():
        x = torch.randn(M, cols)
        t = {"old": [], "new": []}
        n = max(3, int(200 / M))
        for r in range(reps):
            for k in (("old", "new") if r % 2 == 0 else ("new", "old")):
                lib = old if k == "old" else new
                lib.matmul(x, [ws[k]], "q8")
                t0 = time.perf_counter()
                for _ in range(n):
                    lib.matmul(x, [ws[k]], "q8")
                t[k].append((time.perf_counter() - t0) / n)
        ratio = sorted(a / b for a, b in zip(t["new"], t["old"]))
        print(f"M {M:4d} {rows}x{cols}: old {1e3 * statistics.median(t['old']):8.3f} ms new "
              f"{1e3 * statistics.median(t['new']):8.3f} ms  new/old {statistics.median(ratio):.3f} "
              f"[{ratio[0]:.3f}-{ratio[-1]:.3f}]", flush=True)
