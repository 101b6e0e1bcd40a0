"""The AMX kernel on packed tiles before the review (OLD.so: the epilogue for all 32 rows of a pair, a lone last row tile
multiplied twice) against now (rows stored only, a lone tile once), one process, alternating, 9 repeats, paired
ratios with the 3rd-7th of 9. Usage: python review.py OLD.so [THREADS]"""
import sys, time
import numpy as np, torch
from specx.cpu import build, quant, packing, quant_ref
torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
new = quant.load("avx512", amx=True)
ol = build.load(sys.argv[1]); ol.spx_matmul.argtypes = new.lib.spx_matmul.argtypes
ol.spx_amx_init(); ol.spx_set_amx(1)
old = quant.Library("avx512", True, ol, sys.argv[1], True, True)
rng = np.random.default_rng(1)
for name, rows, cols in (("Q4_K", 17920, 1536), ("Q4_K", 1536, 8960), ("Q6_K", 1536, 8960), ("Q4_K", 2048, 1536)):
    w = quant_ref.random_weight(name, rows, cols, rng)
    p = packing.pack(new, w, np.empty(w.nbytes, np.uint8))
    for m in (32, 33, 47, 64, 100, 128):
        x = torch.randn(m, cols)
        ts = {"old": [], "new": []}
        for rep in range(9):
            for k, lib in (("old", old), ("new", new)) if rep % 2 else (("new", new), ("old", old)):
                a = time.perf_counter(); out = lib.matmul(x, [p], "q8"); ts[k].append(time.perf_counter() - a)
        r = sorted(n / o for n, o in zip(ts["new"], ts["old"]))
        print(f"{name} {rows}x{cols} M={m:3} old {sorted(ts['old'])[4]*1e3:6.2f} ms new {sorted(ts['new'])[4]*1e3:6.2f} ms new/old {r[4]:.3f} [{r[2]:.3f}-{r[6]:.3f}]", flush=True)
