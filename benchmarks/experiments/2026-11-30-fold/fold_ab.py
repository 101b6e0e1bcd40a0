"""The folded packed kernel (one body for Q4_K and Q6_K) against the two-function kernel it replaced, both builds
loaded in one process: cycles per 256-weight group hot (a 1024 x 1536 packed matrix, less a 16 x 1536 call), M =
1..8 rows, alternating, medians; and the new build's results equal to the old one's bit for bit.
Usage: python fold_ab.py OLD_SO [REPEATS]"""
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, "/work/main/benchmarks")
from row_floor import ROWS, best_call, core_rates, fit
from specx.cpu import build, packing, quant, quant_ref

new = quant._default()
real = build.build_spec
build.build_spec = lambda spec: Path(sys.argv[1])
old = quant.load("avx512")
build.build_spec = real
setting = new.prefetch(0)
new.prefetch(*setting)
old.prefetch(*setting)
one = new.prefetch_one(0)
new.prefetch_one(one)
old.prefetch_one(one)
span = new.xspan(0)
new.xspan(span)
old.xspan(span)
rng = np.random.default_rng(0)
weights = {}
for name in ("Q4_K", "Q6_K"):
    big, small = (quant_ref.random_weight(name, r, 1536, rng, extreme=False) for r in (1024, 16))
    weights[name] = tuple(packing.pack(new, w, np.empty(w.nbytes, np.uint8)) for w in (big, small))
for name, (b, s) in weights.items():
    for m in ROWS:
        x = torch.randn(m, 1536)
        assert torch.equal(new.matmul(x, [b], "q8"), old.matmul(x, [b], "q8")), (name, m)
ghz = core_rates()["ghz"]
groups = 1024 * 1536 // 256
res = {}
for rep in range(int(sys.argv[2]) if len(sys.argv) > 2 else 7):
    for m in ROWS:
        x = torch.randn(m, 1536)
        for name, (b, s) in weights.items():
            for tag, lib in (("new", new), ("old", old)) if rep % 2 else (("old", old), ("new", new)):
                cyc = (best_call(lib, x, b, 200) - best_call(lib, x, s, 200)) * ghz * 1e9 / (groups / torch.get_num_threads())
                res.setdefault((name, tag, m), []).append(cyc)
print(f"{new.describe()}; {torch.get_num_threads()} threads, core {ghz:.2f} GHz; results equal bit for bit")
print("| type, kernel | M=1 | M=2 | M=4 | M=5 | M=8 | shared | a row |")
print("|---|---|---|---|---|---|---|---|")
for name in weights:
    for tag in ("old", "new"):
        cyc = [statistics.median(res[(name, tag, m)]) for m in ROWS]
        shared, row = fit(list(ROWS), cyc)
        print(f"| {name}, {tag} | {cyc[0]:.1f} | {cyc[1]:.1f} | {cyc[3]:.1f} | {cyc[4]:.1f} | {cyc[7]:.1f} | {shared:.1f} | {row:.2f} |")
