"""Two builds of the same packed layout (A.so, B.so, each with this machine's prefetch settings), one process: the
1.5B's packed shapes cold (28 copies in turn; the output layer one copy), alternating (order flipped each repeat),
11 repeats (21 for the output layer); paired ratios B/A with quartiles. Usage: python builds.py A.so B.so [M ...]"""
import statistics, sys, time
import numpy as np, torch
from specx.cpu import quant, packing, quant_ref
A, B = quant.opened(sys.argv[1]), quant.opened(sys.argv[2])
quant._default()   # this machine's prefetch choices (quant._state)
for L in (A, B):
    st = quant._state
    L.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
    if st["prefetch_one"] is not None: L.prefetch_one(quant.one_row_bytes(st["prefetch_one"].pick))
    L.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
rng = np.random.default_rng(0)
shapes = [("Q4_K", 17920, 1536, 28), ("Q6_K", 1536, 8960, 28), ("Q4_K", 1536, 8960, 28), ("Q6_K", 151936, 1536, 1)]
Ms = [int(a) for a in sys.argv[3:]] or [1, 5]
for name, rows, cols, n in shapes:
    w = quant_ref.random_weight(name, rows, cols, rng, extreme=False)
    p = packing.pack(A, w, np.empty(w.nbytes, np.uint8))
    ws = [p] + [type(p)(p.type, p.data.copy(), p.rows, p.cols) for _ in range(n - 1)]
    for M in Ms:
        x = torch.randn(M, cols)
        t = {"A": [], "B": []}
        for r in range(11 if n > 1 else 21):
            for k in (("A", "B") if r % 2 else ("B", "A")):
                L = A if k == "A" else B
                a = time.perf_counter()
                for ww in ws: L.matmul(x, [ww], "q8")
                t[k].append((time.perf_counter() - a) / n)
        rs = sorted(b / a for a, b in zip(t["A"], t["B"]))
        med = lambda v: sorted(v)[len(v) // 2]
        print(f"{name} {rows}x{cols} M={M}: A {med(t['A'])*1e3:.3f} ms B {med(t['B'])*1e3:.3f} ms B/A {med(rs):.3f} [{rs[len(rs)//4]:.3f}-{rs[3*len(rs)//4]:.3f}]", flush=True)
