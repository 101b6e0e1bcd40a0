"""Packed matmuls cold (copies in turn) at M rows under several prefetch distances, one process; medians of reps.
Usage: python ahead.py [M ...]"""
import sys, time
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
L = quant._default()
rng = np.random.default_rng(0)
shapes = [("Q6_K", 151936, 1536, 1), ("Q4_K", 1536, 8960, 28), ("Q4_K", 17920, 1536, 28)]
Ms = [int(a) for a in sys.argv[1:]] or [1, 5]
ways = [(0, False), (1024, True), (2048, True), (4096, True), (8192, True), (2048, False)]
for name, rows, cols, n in shapes:
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
    p = packing.pack(L, w, np.empty(w.nbytes, np.uint8))
    ws = [p] + [type(p)(p.type, p.data.copy(), p.rows, p.cols) for _ in range(n - 1)]
    for M in Ms:
        x = torch.randn(M, cols)
        t = {k: [] for k in ways}
        for r in range(9 if n > 1 else 15):
            for way in (ways if r % 2 else ways[::-1]):
                L.prefetch(*way)
                a = time.perf_counter()
                for ww in ws: L.matmul(x, [ww], "q8")
                t[way].append((time.perf_counter() - a) / n)
        med = lambda v: sorted(v)[len(v) // 2]
        print(f"{name} {rows}x{cols} M={M}: " + "  ".join(f"{a}{'+L2' if l2 else ''} {med(t[(a, l2)])*1e3:.3f}" for a, l2 in ways), flush=True)
