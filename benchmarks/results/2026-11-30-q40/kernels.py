"""Q4_0 matmuls of the 0.5B drafter's shapes (random blocks), the file's layout against the packed one (quant_packed.h)
in the current build, q8 per 32 values (the same bits), 1/2/5/17/128 rows, alternating, medians and the paired
ratio packed / file with its range. Usage: python kernels.py [REPEATS]"""
import statistics
import sys
import time

import numpy as np
import torch

from specx.cpu import packing, quant, quant_ref

lib = quant._default()
rng = np.random.default_rng(0)
SHAPES = ((1152, 896), (896, 896), (9728, 896), (896, 4864), (32768, 896))   # qkv, o, gate_up, down, a wide one
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 7
print(f"{lib.describe()}, {torch.get_num_threads()} threads", flush=True)
for rows, cols in SHAPES:
    w = quant_ref.random_weight("Q4_0", rows, cols, rng, extreme=False)
    p = packing.pack(lib, w, np.empty(w.nbytes, np.uint8))
    for M in (1, 2, 5, 17, 128):
        x = torch.randn(M, cols)
        assert torch.equal(lib.matmul(x, [w], "q8"), lib.matmul(x, [p], "q8"))
        t = {"file": [], "packed": []}
        n = max(3, int(2e9 / (M * rows * cols + 5e6)))
        for r in range(reps):
            for k in (("file", "packed") if r % 2 == 0 else ("packed", "file")):
                m = w if k == "file" else p
                lib.matmul(x, [m], "q8")
                t0 = time.perf_counter()
                for _ in range(n):
                    lib.matmul(x, [m], "q8")
                t[k].append((time.perf_counter() - t0) / n)
        ratio = sorted(a / b for a, b in zip(t["packed"], t["file"]))
        f, pk = statistics.median(t["file"]), statistics.median(t["packed"])
        print(f"{rows}x{cols} M {M:3d}: file {1e3 * f:8.3f} ms ({rows * cols * M / f / 1e9:5.1f} GMAC/s)  packed "
              f"{1e3 * pk:8.3f} ms ({rows * cols * M / pk / 1e9:5.1f})  packed/file {statistics.median(ratio):.3f} "
              f"[{ratio[0]:.3f}-{ratio[-1]:.3f}]", flush=True)
