"""Cold 1-row packed Q4_K matmuls against the stream read of the same bytes, one process: GB/s medians.
Usage: python stream_vs.py NORMAL.so NOCOMPUTE.so"""
import sys, time
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
L0 = quant._default()
A, B = quant.opened(sys.argv[1]), quant.opened(sys.argv[2])
st = quant._state
for L in (A, B):
    L.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
rng = np.random.default_rng(0)
for name, rows, cols, n in (("Q4_K", 17920, 1536, 28), ("Q4_K", 1536, 8960, 28)):
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
    p = packing.pack(A, w, np.empty(w.nbytes, np.uint8))
    ws = [p] + [type(p)(p.type, p.data.copy(), p.rows, p.cols) for _ in range(n - 1)]
    nbytes = p.data.size
    x = torch.randn(1, cols)
    t = {k: [] for k in ("stream", "kernel", "nocompute")}
    for r in range(11):
        for k in (t if r % 2 else list(t)[::-1]):
            a = time.perf_counter()
            for ww in ws:
                if k == "stream": quant.stream_read(A, ww.data, 2)
                else: (A if k == "kernel" else B).matmul(x, [ww], "q8")
            t[k].append((time.perf_counter() - a) / n)
    med = lambda v: sorted(v)[len(v) // 2]
    print(f"{name} {rows}x{cols} ({nbytes/1e6:.1f} MB): " + "  ".join(f"{k} {nbytes / med(v) / 1e9:.1f} GB/s" for k, v in t.items()), flush=True)
