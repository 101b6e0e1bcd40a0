"""Rates of the file-layout and packed kernels at 1, 17 and 128 rows on the 0.5B's Q4_0 shapes (file layout: Q4_0 was not packed
then) and the 1.5B's packed Q4_K and Q6_K shapes, GMAC/s, run before this change (now
Q4_0 is packable and packed here too). Usage: python rates.py 1 17 128"""
import statistics, sys, time
import numpy as np, torch
from specx.cpu import packing, quant, quant_ref
lib = quant._default()
rng = np.random.default_rng(0)
shapes = [(9728, 896, "Q4_0"), (896, 4864, "Q4_0"), (9728, 1024, "Q4_K"), (1536, 8960, "Q6_K"), (1536, 8960, "Q4_K")]
W = {}
for rows, cols, t in shapes:
    w = quant_ref.random_weight(t, rows, cols, rng, extreme=False)
    W[(rows, cols, t)] = packing.pack(lib, w, np.empty(w.nbytes, np.uint8)) if packing.packable(w, lib) else w
print(lib.describe(), torch.get_num_threads())
for M in [int(a) for a in sys.argv[1:]] or (1, 8, 17, 64, 128):
    for (rows, cols, t), p in W.items():
        x = torch.randn(M, cols)
        n = max(3, int(3e10 / (M * rows * cols + 1e7)))
        ts = []
        for r in range(5):
            lib.matmul(x, [p], "q8")
            t0 = time.perf_counter()
            for _ in range(n):
                lib.matmul(x, [p], "q8")
            ts.append((time.perf_counter() - t0) / n)
        s = statistics.median(ts)
        print(f"M {M:4d} {t} {rows}x{cols}: {1e3*s:8.3f} ms  {rows*cols*M/s/1e9:6.1f} GMAC/s  {p.nbytes/s/1e9 if hasattr(p,'nbytes') else 0:6.1f} GB/s", flush=True)
