"""The q8 block kernel of the current build ("new") against an earlier build's .so ("old"), alternating in one
process, same prefetch setting, results checked equal; R rows against one random weight of TYPE.

    python kernel_ab.py OLD.so OUTPUTS [TYPE] [K]     (NOXSPAN=1: both without the activation spans)"""
import time, numpy as np, torch, sys, ctypes, glob, os
from specx.cpu import quant, build
from specx.cpu.quant_ref import random_weight
new = quant._library()
oldp = sys.argv[1]
raw = build.load(oldp)
# reuse the loader's argtypes by loading through quant.load's code path: copy attributes
for n in ("spx_matmul", "spx_set_prefetch", "spx_set_prefetch_l2", "spx_build"):
    f, g = getattr(new.lib, n), getattr(raw, n); g.argtypes, g.restype = f.argtypes, f.restype
old = quant.Library(new.name, new.vnni, raw, oldp, False, new.vbmi)
# the same prefetch setting as the new build's choice
pf = new.lib.spx_set_prefetch(-1); new.lib.spx_set_prefetch(pf); raw.spx_set_prefetch(pf)
l2 = new.lib.spx_set_prefetch_l2(-1); new.lib.spx_set_prefetch_l2(l2); raw.spx_set_prefetch_l2(l2)
rng = np.random.default_rng(0)
if os.environ.get("NOXSPAN"): new.lib.spx_set_xspan(0); raw.spx_set_xspan.argtypes=[ctypes.c_int64]; raw.spx_set_xspan(0)
outs = int(sys.argv[2]); typ = sys.argv[3] if len(sys.argv) > 3 else "Q4_K"; K = int(sys.argv[4]) if len(sys.argv) > 4 else 1536
w = random_weight(typ, outs, K, rng, extreme=False)
for R in [int(r) for r in os.environ.get("ROWS", "1,8,9,12,16").split(",")]:
    x = torch.randn(R, K)
    yo, yn = old.matmul(x, [w], "q8"), new.matmul(x, [w], "q8")
    assert torch.equal(yo, yn)
    n = max(3, int(3e6 / (outs * K)))
    res = {"old": [], "new": []}
    for rep in range(9):
        for name, lib in (("old", old), ("new", new)) if rep % 2 else (("new", new), ("old", old)):
            t = time.perf_counter()
            for _ in range(n): lib.matmul(x, [w], "q8")
            res[name].append((time.perf_counter() - t) / n)
    mo, mn = np.median(res["old"]), np.median(res["new"])
    print(f"{typ} {outs}x{K} R={R:2d}: old {mo*1e3:.3f} ms  new {mn*1e3:.3f} ms  new/old {mn/mo:.3f}", flush=True)
