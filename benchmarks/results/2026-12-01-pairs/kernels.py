"""The packed kernels before this change (OLD.so: the build of 33a7990, its own packing) and after (the current
build), one process: the 1.5B's packed Q4_K gate/up (17920x1536) and Q6_K down (1536x8960), each packed by its own
build, hot (one copy, 28 calls) and cold (28 copies in turn), alternating (order flipped each repeat), 9 repeats;
paired ratios new/old with the 3rd-7th of 9. Usage: python kernels.py OLD.so [M ...]"""
import statistics, sys, time
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
new = quant.load("avx512", amx=True)
old = quant.opened(sys.argv[1])
rng = np.random.default_rng(0)
libs = {"old": old, "new": new}
sets = {}
for name, rows, cols in (("Q4_K", 17920, 1536), ("Q6_K", 1536, 8960)):
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
    for k, lib in libs.items():
        p = packing.pack(lib, w, np.empty(w.nbytes, np.uint8))
        sets[(name, k)] = [p] + [type(p)(p.type, p.data.copy(), p.rows, p.cols) for _ in range(27)]
    x = torch.randn(3, cols)
    assert torch.equal(old.matmul(x, sets[(name, "old")][:1], "q8"), new.matmul(x, sets[(name, "new")][:1], "q8"))
print("threads", torch.get_num_threads())
for M in [int(a) for a in sys.argv[2:]] or (1, 5, 9):
    for name in ("Q4_K", "Q6_K"):
        x = torch.randn(M, sets[(name, "new")][0].cols)
        t = {(k, h): [] for k in libs for h in ("hot", "cold")}
        for rep in range(9):
            for k in (("old", "new") if rep % 2 else ("new", "old")):
                lib, ws = libs[k], sets[(name, k)]
                for _ in range(3): lib.matmul(x, ws[:1], "q8")
                a = time.perf_counter()
                for _ in range(28): lib.matmul(x, ws[:1], "q8")
                t[(k, "hot")].append((time.perf_counter() - a) / 28)
                a = time.perf_counter()
                for w in ws: lib.matmul(x, [w], "q8")
                t[(k, "cold")].append((time.perf_counter() - a) / 28)
        for h in ("hot", "cold"):
            r = sorted(n / o for n, o in zip(t[("new", h)], t[("old", h)]))
            print(f"M {M} {name} {h}: old {statistics.median(t[('old', h)])*1e3:.3f} ms new {statistics.median(t[('new', h)])*1e3:.3f} ms new/old {r[4]:.3f} [{r[2]:.3f}-{r[6]:.3f}]", flush=True)
