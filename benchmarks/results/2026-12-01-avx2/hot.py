"""The AVX2 build without VNNI, 2 threads: ns per weight row of packed Q4_K at 1 and 5 rows, from memory (the 1.5B's gate/up,
17920x1536, 28 copies in turn) and from L2 (a 2048x1536 matrix, 0.9 MB a thread, called 8x as often: the same rows
read), alternating, 9 repeats. Usage: python hot.py"""
import time, statistics
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
quant._default()
L = quant.load("avx2", vnni=False)
rng = np.random.default_rng(0)
w = quant_ref.random_weight("Q4_K", 17920, 1536, rng, extreme=False)
p = packing.pack(L, w, np.empty(w.nbytes, np.uint8))
cold = [p] + [type(p)(p.type, p.data.copy(), p.rows, p.cols) for _ in range(27)]
hw = quant_ref.random_weight("Q4_K", 2048, 1536, rng, extreme=False)   # 1.8 MB: each thread's half in its L2
hp = packing.pack(L, hw, np.empty(hw.nbytes, np.uint8))
for M in (1, 5):
    x = torch.randn(M, 1536)
    t = {"hot": [], "cold": []}
    for rep in range(9):
        for k in (("hot", "cold") if rep % 2 else ("cold", "hot")):
            a = time.perf_counter()
            if k == "hot":
                for _ in range(28 * 8): L.matmul(x, [hp], "q8")   # the same bytes as the cold pass (2048 x 8 = 16384 rows)
            else:
                for ww in cold: L.matmul(x, [ww], "q8")
            t[k].append((time.perf_counter() - a) / (28 * (16384 if k == "hot" else 17920)) * 1e9)
    print(f"M={M}: ns per weight row: hot {statistics.median(t['hot']):.3f} cold {statistics.median(t['cold']):.3f}", flush=True)
