"""A call's cost outside the weights' arithmetic, before (OLD.so: the build of 33a7990) and after, one process,
alternating: q8 matmuls of 1 and 5 rows against one tile (16 rows) of packed Q4_K and Q6_K, K = 1536 and 8960 (the
X quantization, its packed activations, the call), µs medians of 7 × 2000 calls; and the activation (spx_glu) of 1
and 5 rows of the 1.5B's MLP (8960) on 1 thread (the code before: under its 131072-value threshold a call stayed on
one thread) and 2. Usage: python calls.py OLD.so"""
import statistics, sys, time
import numpy as np, torch
from specx.cpu import attention, packing, quant, quant_ref
torch.set_num_threads(2)
new, old = quant._default(), quant.opened(sys.argv[1])
rng = np.random.default_rng(0)
def timed(f, n=2000):
    ts = []
    for _ in range(7):
        a = time.perf_counter()
        for _ in range(n): f()
        ts.append((time.perf_counter() - a) / n)
    return statistics.median(ts) * 1e6
for name, cols in (("Q4_K", 1536), ("Q6_K", 1536), ("Q4_K", 8960), ("Q6_K", 8960)):
    w = quant_ref.random_weight(name, 16, cols, rng, extreme=False)
    ps = {k: packing.pack(L, w, np.empty(w.nbytes, np.uint8)) for k, L in (("old", old), ("new", new))}
    row = []
    for m in (1, 5):
        x, o = torch.randn(m, cols), torch.empty(m, 16)
        t = {k: timed(lambda L=L, k=k: L.matmul(x, [ps[k]], "q8", out=o)) for k, L in (("old", old), ("new", new))}
        row.append(f"M={m}: old {t['old']:.1f} us, new {t['new']:.1f} us")
    print(f"{name} 16x{cols}:", "; ".join(row), flush=True)
for rows in (1, 5):
    gu = torch.randn(rows, 2 * 8960)
    t = {}
    for n in (1, 2):
        torch.set_num_threads(n)
        t[n] = timed(lambda: attention.glu(gu, "silu"))
    torch.set_num_threads(2)
    print(f"glu {rows}x8960: 1 thread {t[1]:.1f} us, 2 threads {t[2]:.1f} us (rows x 8960 = {rows * 8960} values)", flush=True)
