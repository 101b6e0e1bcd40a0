"""One row against packed Q4_K matrices read from memory: 12 matrices of one shape cycled (more than L3 holds),
the earlier build (OLD.so) against the current one, 15 rounds alternating. Usage: python memory.py OLD.so ROWSxCOLS"""
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import oldlib
from specx.cpu import packing, quant_ref

old, new = oldlib.load(sys.argv[1])
rows, cols = (int(a) for a in sys.argv[2].split("x"))
rng = np.random.default_rng(0)
base = [quant_ref.random_weight("Q4_K", rows, cols, rng, extreme=False) for _ in range(12)]
W = {k: [packing.pack(lib, w, np.empty(w.nbytes, np.uint8)) for w in base] for k, lib in (("old", old), ("new", new))}
x = torch.randn(1, cols)
t = {"old": [], "new": []}
for r in range(15):
    for k in (("old", "new") if r % 2 == 0 else ("new", "old")):
        lib = old if k == "old" else new
        t0 = time.perf_counter()
        for _ in range(3):
            for w in W[k]:
                lib.matmul(x, [w], "q8")
        t[k].append((time.perf_counter() - t0) / (3 * len(base)))
ratio = sorted(a / b for a, b in zip(t["new"], t["old"]))
gb = base[0].nbytes / 1e9
o, n = statistics.median(t["old"]), statistics.median(t["new"])
print(f"1 row, {rows}x{cols} Q4_K packed, 12 matrices cycled: old {1e3 * o:.3f} ms ({gb / o:.1f} GB/s), new {1e3 * n:.3f} ms "
      f"({gb / n:.1f} GB/s), new/old {statistics.median(ratio):.3f} [{ratio[3]:.3f}-{ratio[-4]:.3f}] (quartiles)")
