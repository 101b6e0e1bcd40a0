"""Weight prefetching at 1 and 5 rows on the AVX2 builds and this CPU's own: off, or into L1 and L2 2-32 KB ahead
(2K: the incumbent, the ratios against it), the 1.5B's packed Q4_K gate/up and Q6_K down, 28 copies in turn, 7 repeats with
the ways' order rotated. Usage: python prefetch.py"""
import time, statistics
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
own = quant._default()
libs = {"avx2": quant.load("avx2", vnni=False), "avx2-vnni": quant.load("avx2", vnni=True), "avx512": own}
rng = np.random.default_rng(0)
ways = {"off": (0, False), "2K": (2048, True), "4K": (4096, True), "8K": (8192, True), "16K": (16384, True), "32K": (32768, True)}
shapes = [("Q4_K", 17920, 1536, 28), ("Q6_K", 1536, 8960, 28)]
for name, rows, cols, n in shapes:
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
    for lk, L in libs.items():
        L.prefetch_one(None)
        p = packing.pack(L, w, np.empty(w.nbytes, np.uint8))
        ws = [p] + [type(p)(p.type, p.data.copy(), p.rows, p.cols) for _ in range(n - 1)]
        for M in (1, 5):
            x = torch.randn(M, cols)
            t = {k: [] for k in ways}
            for rep in range(7):
                order = list(ways)[rep % len(ways):] + list(ways)[:rep % len(ways)]
                for k in order:
                    L.prefetch(*ways[k])
                    a = time.perf_counter()
                    for ww in ws: L.matmul(x, [ww], "q8")
                    t[k].append((time.perf_counter() - a) / n)
            base = t["2K"]
            print(f"{lk} {name} {rows}x{cols} M={M}: " + "  ".join(
                f"{k} {statistics.median(v)*1e3:.3f} ({statistics.median([a/b for a, b in zip(v, base)]):.2f})" for k, v in t.items()), flush=True)
        del ws
