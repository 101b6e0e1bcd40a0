"""The AVX2 build's matmuls three ways, one process: the file's layout with activations per 32 values (its q8
before this change), the file's layout per 256 (q8 with groups) and packed per 256 (this change: the same bits as
the line before), on the 1.5B's Q4_K gate/up (17920x1536) and Q6_K down (1536x8960); hot (one copy, 28 calls) and
cold (28 copies in turn), the ways' order rotated each repeat, 9 repeats; paired ratios against the first way with
the 3rd-7th of 9. Usage: python kernels.py [vnni|novnni] [M ...]"""
import statistics, sys, time
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
lib = quant.load("avx2", vnni=sys.argv[1] == "vnni")
print(lib.describe(), "threads", torch.get_num_threads())
rng = np.random.default_rng(0)
ways = ("file32", "file256", "packed256")
sets = {}
for name, rows, cols in (("Q4_K", 17920, 1536), ("Q6_K", 1536, 8960)):
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
    p = packing.pack(lib, w, np.empty(w.nbytes, np.uint8))
    for k, base in (("file", w), ("packed", p)):
        sets[(name, k)] = [base] + [type(base)(base.type, base.data.copy(), base.rows, base.cols) for _ in range(27)]
    x = torch.randn(3, cols)
    assert torch.equal(lib.matmul(x, [w], "q8", groups=True), lib.matmul(x, [p], "q8"))
for M in [int(a) for a in sys.argv[2:]] or (1, 5, 9):
    for name in ("Q4_K", "Q6_K"):
        x = torch.randn(M, sets[(name, "file")][0].cols)
        t = {(k, h): [] for k in ways for h in ("hot", "cold")}
        for rep in range(9):
            for k in ways[rep % 3:] + ways[:rep % 3]:
                ws = sets[(name, "packed" if k == "packed256" else "file")]
                g = k != "file32"
                for _ in range(3): lib.matmul(x, ws[:1], "q8", groups=g)
                a = time.perf_counter()
                for _ in range(28): lib.matmul(x, ws[:1], "q8", groups=g)
                t[(k, "hot")].append((time.perf_counter() - a) / 28)
                a = time.perf_counter()
                for w in ws: lib.matmul(x, [w], "q8", groups=g)
                t[(k, "cold")].append((time.perf_counter() - a) / 28)
        for h in ("hot", "cold"):
            line = f"M {M} {name} {h}: file32 {statistics.median(t[('file32', h)])*1e3:.3f} ms"
            for k in ways[1:]:
                r = sorted(n / o for n, o in zip(t[(k, h)], t[("file32", h)]))
                line += f"  {k} {statistics.median(t[(k, h)])*1e3:.3f} ms ({r[4]:.3f} [{r[2]:.3f}-{r[6]:.3f}])"
            print(line, flush=True)
