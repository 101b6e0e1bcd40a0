"""The review's change to the packed activations (a group's block sums from the lanes' sums, not 8 reductions),
before (A.so) and after (B.so), one process, alternating: q8 matmuls of 1 and 5 rows against one tile (16 rows) of
packed Q4_K and Q6_K, K = 1536 and 8960, µs medians of 9 × 2000 calls, paired B/A with the 3rd-7th of 9.
Usage: python review.py A.so B.so"""
import sys, time
import numpy as np, torch
from specx.cpu import packing, quant, quant_ref
torch.set_num_threads(2)
quant._default()
libs = {"A": quant.opened(sys.argv[1]), "B": quant.opened(sys.argv[2])}
rng = np.random.default_rng(0)
for name, cols in (("Q4_K", 1536), ("Q6_K", 1536), ("Q4_K", 8960), ("Q6_K", 8960)):
    w = quant_ref.random_weight(name, 16, cols, rng, extreme=False)
    p = packing.pack(libs["A"], w, np.empty(w.nbytes, np.uint8))
    for m in (1, 5):
        x, o = torch.randn(m, cols), torch.empty(m, 16)
        t = {"A": [], "B": []}
        for r in range(9):
            for k in (("A", "B") if r % 2 else ("B", "A")):
                a = time.perf_counter()
                for _ in range(2000): libs[k].matmul(x, [p], "q8", out=o)
                t[k].append((time.perf_counter() - a) / 2000 * 1e6)
        rs = sorted(b / a for a, b in zip(t["A"], t["B"]))
        print(f"{name} 16x{cols} M={m}: A {sorted(t['A'])[4]:.1f} us B {sorted(t['B'])[4]:.1f} us B/A {rs[4]:.3f} [{rs[2]:.3f}-{rs[6]:.3f}]", flush=True)
