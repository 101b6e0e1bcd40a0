"""1-row packed calls hot in cache at several sizes: per-call time = fixed + per group; cycles per tile-group."""
import sys, time
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
ghz = float(sys.argv[1]); M = int(sys.argv[2]) if len(sys.argv) > 2 else 1
L = quant._default()
rng = np.random.default_rng(0)
for name, cols in (("Q4_K", 1536), ("Q6_K", 1536)):
    res = {}
    for rows in (256, 512, 1024, 2048):
        w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
        p = packing.pack(L, w, np.empty(w.nbytes, np.uint8))
        x = torch.randn(M, cols)
        ts = []
        for rep in range(41):
            a = time.perf_counter()
            for _ in range(20): L.matmul(x, [p], "q8")
            ts.append((time.perf_counter() - a) / 20)
        res[rows] = sorted(ts)[len(ts) // 4]
    n = sorted(res); t = [res[k] for k in n]
    slope, icpt = np.polyfit(n, t, 1)
    tg = slope * 16 / (cols / 256) * ghz * 1e9 * 2   # cycles per tile-group (16 rows x 256 values) per core
    print(f"{name} M={M}: " + " ".join(f"{k}:{res[k]*1e6:.1f}us" for k in n) + f" | fixed {icpt*1e6:.1f} us, {tg:.0f} cycles per tile-group a core", flush=True)
