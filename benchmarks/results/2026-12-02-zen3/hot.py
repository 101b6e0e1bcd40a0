"""Packed q8 kernels hot in cache: per-call time at M rows for builds given (alternating), and cycles per 256-weight
group per row fitted. Usage: python hot.py GHZ A.so [B.so ...]"""
import sys, time
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
ghz = float(sys.argv[1]); libs = [quant.opened(p) for p in sys.argv[2:]]
quant._default()
for L in libs:
    st = quant._state
    L.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
    L.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
rng = np.random.default_rng(0)
for name, rows, cols in (("Q4_K", 2048, 1536), ("Q6_K", 1536, 1536)):
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
    p = packing.pack(libs[0], w, np.empty(w.nbytes, np.uint8))
    groups = rows * cols / 256
    res = {i: {} for i in range(len(libs))}
    for M in (1, 2, 3, 4, 5, 6, 8):
        x = torch.randn(M, cols)
        ts = {i: [] for i in range(len(libs))}
        for rep in range(31):
            order = range(len(libs)) if rep % 2 else reversed(range(len(libs)))
            for i in order:
                a = time.perf_counter()
                for _ in range(5): libs[i].matmul(x, [p], "q8")
                ts[i].append((time.perf_counter() - a) / 5)
        for i in ts: res[i][M] = min(ts[i])
    for i in res:
        Ms = sorted(res[i]); t = [res[i][m] for m in Ms]
        slope, icpt = np.polyfit(Ms, t, 1)
        cyc = lambda s: s * ghz * 1e9 * 2 / groups   # 2 cores
        print(f"{name} lib{i}: " + " ".join(f"M{m} {res[i][m]*1e6:.0f}us" for m in Ms) +
              f" | row {cyc(slope):.1f} cyc/group, shared {cyc(icpt):.1f}", flush=True)
