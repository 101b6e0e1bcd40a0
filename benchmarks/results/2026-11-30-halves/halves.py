"""Hot Q4_K q8 kernel: HALVES8=0 vs 1 builds alternating; and a whole-model linear pass (cold weights)."""
import sys, time, statistics
import numpy as np, torch
sys.path.insert(0, "/work/main/benchmarks")
from specx.cpu import quant, quant_build, quant_ref
base_flags = quant_build.FLAGS
libs = {}
for h in (0, 1):
    quant_build.FLAGS = base_flags + (f"-DHALVES8={h}",)
    libs[h] = quant.load("avx512")
quant_build.FLAGS = base_flags
for lib in libs.values():
    lib.prefetch(*quant.PREFETCH_WAYS[quant.prefetch_choice(lib).pick]) if hasattr(quant, "PREFETCH_WAYS") else None
rng = np.random.default_rng(0)
w = quant_ref.random_weight("Q4_K", 1024, 1536, rng, extreme=False)
res = {(h, m): [] for h in (0, 1) for m in (1, 2, 5, 8)}
for rep in range(15):
    for h in (0, 1):
        for m in (1, 2, 5, 8):
            x = torch.randn(m, 1536)
            libs[h].matmul(x, [w], "q8")
            ts = []
            for _ in range(50):
                t = time.perf_counter(); libs[h].matmul(x, [w], "q8"); ts.append(time.perf_counter() - t)
            res[h, m].append(min(ts))
for m in (1, 2, 5, 8):
    r = [a / b for a, b in zip(res[1, m], res[0, m])]
    print(f"hot Q4_K 1024x1536, {m} rows: h0 {statistics.median(res[0, m])*1e6:.1f} us, h1 {statistics.median(res[1, m])*1e6:.1f} us, h1/h0 median {statistics.median(r):.3f} [{min(r):.3f}-{max(r):.3f}]")
# model linears, cold
from quant_kernels import layer_groups
import os
groups = layer_groups(os.path.expanduser("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf"), True)
res = {(h, m): [] for h in (0, 1) for m in (1, 5)}
xs = {m: {} for m in (1, 5)}
for rep in range(9):
    for h in (0, 1):
        for m in (1, 5):
            t = time.perf_counter()
            for g in groups:
                x = xs[m].setdefault(g[0].cols, torch.randn(m, g[0].cols))
                libs[h].matmul(x, g, "q8")
            res[h, m].append(time.perf_counter() - t)
for m in (1, 5):
    r = [a / b for a, b in zip(res[1, m], res[0, m])]
    print(f"1.5B linears, {m} rows: h0 {statistics.median(res[0, m])*1e3:.1f} ms, h1 {statistics.median(res[1, m])*1e3:.1f} ms, h1/h0 {statistics.median(r):.3f} [{min(r):.3f}-{max(r):.3f}]")
print("5/1 rows: h0", statistics.median(res[0, 5]) / statistics.median(res[0, 1]), "h1", statistics.median(res[1, 5]) / statistics.median(res[1, 1]))
