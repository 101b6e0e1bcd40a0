"""Packed Q6_K matmuls of the 1.5B's shapes (random blocks), q8 per 32 values (groups=False) against q8 with groups
(KIND_G6), both in the current build, 1/5/17 rows, alternating. Usage: python kernels.py [REPEATS]"""
import statistics
import sys
import time

import numpy as np
import torch

from specx.cpu import packing, quant, quant_ref

lib = quant._default()
rng = np.random.default_rng(0)
W = {}
for rows, cols in ((151936, 1536), (1536, 8960), (256, 1536)):
    w = quant_ref.random_weight("Q6_K", rows, cols, rng, extreme=False)
    W[(rows, cols)] = packing.pack(lib, w, np.empty(w.nbytes, np.uint8))
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
print(f"{lib.describe()}, {torch.get_num_threads()} threads", flush=True)
for M in (1, 5, 17):
    for (rows, cols), p in W.items():
        x = torch.randn(M, cols)
        t = {False: [], True: []}
        n = max(2, int((2e5 if rows < 100000 else 2e3) / M))
        for r in range(reps):
            for g in ((False, True) if r % 2 == 0 else (True, False)):
                lib.matmul(x, [p], "q8", groups=g)
                t0 = time.perf_counter()
                for _ in range(n):
                    lib.matmul(x, [p], "q8", groups=g)
                t[g].append((time.perf_counter() - t0) / n)
        ratio = sorted(a / b for a, b in zip(t[True], t[False]))
        print(f"M {M:4d} {rows}x{cols}: per 32 {1e3 * statistics.median(t[False]):8.3f} ms groups "
              f"{1e3 * statistics.median(t[True]):8.3f} ms  groups/per32 {statistics.median(ratio):.3f} "
              f"[{ratio[0]:.3f}-{ratio[-1]:.3f}]", flush=True)
