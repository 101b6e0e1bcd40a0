"""All layer matrices of a model (huge pages, as the engine holds them) for R rows, 2 threads: old .so vs new build
alternating in one process; the sum of the matmul times per forward, medians of reps."""
import os, time, sys, os, numpy as np, torch
from specx.decoder import lm
from specx.cpu import quant, build
new = quant._library()
raw = build.load(sys.argv[1])
for n in ("spx_matmul", "spx_set_prefetch", "spx_set_prefetch_l2"):
    f, g = getattr(new.lib, n), getattr(raw, n); g.argtypes, g.restype = f.argtypes, f.restype
PF = int(os.environ.get('PF', '2048')); L2 = int(os.environ.get('L2', '1'))
for L in (new.lib, raw): L.spx_set_prefetch(PF); L.spx_set_prefetch_l2(L2)
old = quant.Library(new.name, new.vnni, raw, sys.argv[1], False, new.vbmi)
W = lm.read(sys.argv[2], huge_pages=True, draft_vocab=int(os.environ.get("VOCAB", "0"))).weights
torch.set_num_threads(2)
mats = [ws for L in W.layers for ws in (L.qkv, L.o, L.gate_up, L.down)] + [[W.output]]
for R in [int(r) for r in os.environ.get("ROWS", "1,2,4").split(",")]:
    X = {ws[0].cols: torch.randn(R, ws[0].cols) for ws in mats}
    res = {"old": [], "new": []}
    for rep in range(int(os.environ.get("REPS", "21"))):
        for name, lib in (("old", old), ("new", new)) if rep % 2 else (("new", new), ("old", old)):
            t = time.perf_counter()
            for ws in mats: lib.matmul(X[ws[0].cols], ws, "q8")
            res[name].append(time.perf_counter() - t)
    o, n = np.array(res["old"]), np.array(res["new"])
    r = n / o
    print(f"R={R}: old {np.median(o)*1e3:.2f} ms  new {np.median(n)*1e3:.2f} ms  new/old median {np.median(r):.3f} [{np.quantile(r,0.25):.3f}-{np.quantile(r,0.75):.3f}]", flush=True)
