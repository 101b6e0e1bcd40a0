"""Packed Q4_K, Q6_K and Q4_0 matmuls (random blocks, hot), the build before PACK_RMAX (OLD.so: passes of at most 8 rows)
against the current one (Q4_K and Q6_K up to 9), alternating, outputs asserted equal; new / old with range.
Usage: python rmax.py OLD.so ROWS...
"""
import statistics, sys, time
from pathlib import Path
import numpy as np, torch
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "2026-11-30-q8k"))
import oldlib
from specx.cpu import packing, quant_ref
old, new = oldlib.load(sys.argv[1], True)
rng = np.random.default_rng(0)
W = []
for t, rows, cols in (("Q4_K", 17920, 1536), ("Q6_K", 1536, 8960), ("Q4_0", 9728, 896)):
    w = quant_ref.random_weight(t, rows, cols, rng, extreme=False)
    W.append((t, rows, cols, packing.pack(new, w, np.empty(w.nbytes, np.uint8))))
reps = 7
for M in [int(a) for a in sys.argv[2:]]:
    for t, rows, cols, p in W:
        x = torch.randn(M, cols)
        assert torch.equal(old.matmul(x, [p], "q8", groups=True), new.matmul(x, [p], "q8", groups=True))
        n = max(3, int(1e9 / (M * rows * cols)))
        ts = {0: [], 1: []}
        for r in range(reps):
            for k in ((0, 1) if r % 2 == 0 else (1, 0)):
                lib = (old, new)[k]
                lib.matmul(x, [p], "q8", groups=True)
                t0 = time.perf_counter()
                for _ in range(n):
                    lib.matmul(x, [p], "q8", groups=True)
                ts[k].append((time.perf_counter() - t0) / n)
        rr = sorted(b / a for a, b in zip(ts[0], ts[1]))
        print(f"M {M:3d} {t} {rows}x{cols}: old {1e3*statistics.median(ts[0]):.3f} ms new {1e3*statistics.median(ts[1]):.3f} ms new/old {statistics.median(rr):.3f} [{rr[0]:.3f}-{rr[-1]:.3f}]", flush=True)
