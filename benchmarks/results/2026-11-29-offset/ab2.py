"""The AVX2 build without VNNI (what a Zen 1 runs) of the current source against an earlier one's .so: results
equal, then timing, 1 thread, 1/2/4/5 rows, alternating in one process.

    python ab2.py OLD_AVX2.so Q5_0:2048:896,Q4_0:1024:4864"""
import os, time, numpy as np, torch, sys
from specx.cpu import quant, build
from specx.cpu.quant_ref import random_weight
new = quant.load("avx2", False)
raw = build.load(sys.argv[1])
for n in ("spx_matmul", "spx_set_prefetch", "spx_set_prefetch_l2"):
    f, g = getattr(new.lib, n), getattr(raw, n); g.argtypes, g.restype = f.argtypes, f.restype
for L in (new.lib, raw): L.spx_set_prefetch(2048); L.spx_set_prefetch_l2(1)
old = quant.Library(new.name, new.vnni, raw, sys.argv[1], False, False)
rng = np.random.default_rng(0)
torch.set_num_threads(1)
for spec in sys.argv[2].split(","):
    typ, outs, K = spec.split(":"); outs, K = int(outs), int(K)
    w = random_weight(typ, outs, K, rng, extreme=False)
    for R in (1, 2, 4, 5):
        x = torch.randn(R, K)
        assert torch.equal(old.matmul(x, [w], "q8"), new.matmul(x, [w], "q8"))
        res = {"old": [], "new": []}
        n = max(3, int(3e6 / (outs * K)))
        for rep in range(int(os.environ.get("REPS", "21"))):
            for name, lib in (("old", old), ("new", new)) if rep % 2 else (("new", new), ("old", old)):
                t = time.perf_counter()
                for _ in range(n): lib.matmul(x, [w], "q8")
                res[name].append((time.perf_counter() - t) / n)
        mo, mn = np.median(res["old"]), np.median(res["new"])
        print(f"avx2 {typ} {outs}x{K} R={R}: new/old {mn/mo:.3f}", flush=True)
