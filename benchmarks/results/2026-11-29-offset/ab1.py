"""The AVX-512 build of the current source against an earlier build's .so, one random weight per TYPE:OUTPUTS:K,
alternating in one process, both with the same weight prefetching (PF bytes into L1, L2 on/off; 2048 and 1 is
what this machine times), THR threads (1), ROWS (1), REPS alternating repeats (21). Timing only: eq.py checks the results.

    python ab1.py OLD.so Q5_0:2048:896,Q4_0:1024:4864"""
import os, time, numpy as np, torch, sys, os
from specx.cpu import quant, build
from specx.cpu.quant_ref import random_weight
new = quant._library()
raw = build.load(sys.argv[1])
for n in ("spx_matmul", "spx_set_prefetch", "spx_set_prefetch_l2"):
    f, g = getattr(new.lib, n), getattr(raw, n); g.argtypes, g.restype = f.argtypes, f.restype
PF = int(os.environ.get('PF', '2048')); L2 = int(os.environ.get('L2', '1'))
for L in (new.lib, raw): L.spx_set_prefetch(PF); L.spx_set_prefetch_l2(L2)
old = quant.Library(new.name, new.vnni, raw, sys.argv[1], False, new.vbmi)
rng = np.random.default_rng(0)
torch.set_num_threads(int(os.environ.get("THR", "1")))
for spec in sys.argv[2].split(","):
    typ, outs, K = spec.split(":"); outs, K = int(outs), int(K)
    w = random_weight(typ, outs, K, rng, extreme=False)
    for R in [int(r) for r in os.environ.get("ROWS", "1").split(",")]:
        x = torch.randn(R, K)
        res = {"old": [], "new": []}
        n = max(3, int(3e6 / (outs * K)))
        for rep in range(int(os.environ.get("REPS", "21"))):
            for name, lib in (("old", old), ("new", new)) if rep % 2 else (("new", new), ("old", old)):
                t = time.perf_counter()
                for _ in range(n): lib.matmul(x, [w], "q8")
                res[name].append((time.perf_counter() - t) / n)
        mo, mn = np.median(res["old"]), np.median(res["new"])
        print(f"{typ} {outs}x{K} R={R}: old {mo*1e6:.1f} us  new {mn*1e6:.1f} us  new/old {mn/mo:.3f}", flush=True)
