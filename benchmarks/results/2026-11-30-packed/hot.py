"""The landed kernel hot: cycles per 256-weight group per core for Q4_K and Q6_K, the file's layout and packed, M = 1..8
rows (a 1024 x 1536 matrix read again and again from cache, less a 16 x 1536 call's time), fitted as
shared + M x row as benchmarks/row_floor.py does; alternating, medians of the repeats. Usage: python hot.py [REPEATS]"""
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from row_floor import ROWS, best_call, core_rates, fit
from specx.cpu import packing, quant, quant_ref

lib = quant._default()
rng = np.random.default_rng(0)
weights = {}
for name in ("Q4_K", "Q6_K"):
    big, small = (quant_ref.random_weight(name, r, 1536, rng, extreme=False) for r in (1024, 16))
    weights[f"{name}, file"] = (big, small)
    weights[f"{name}, packed"] = tuple(packing.pack(lib, w, np.empty(w.nbytes, np.uint8)) for w in (big, small))
ghz = core_rates()["ghz"]
groups = 1024 * 1536 // 256
res = {}
for _ in range(int(sys.argv[1]) if len(sys.argv) > 1 else 5):
    for m in ROWS:
        x = torch.randn(m, 1536)
        for name, (b, s) in weights.items():
            cyc = (best_call(lib, x, b, 200) - best_call(lib, x, s, 200)) * ghz * 1e9 / (groups / torch.get_num_threads())
            res.setdefault((name, m), []).append(cyc)
print(f"{lib.describe()}; {torch.get_num_threads()} threads, core {ghz:.2f} GHz")
print("| type, layout | M=1 | M=2 | M=4 | M=5 | M=8 | shared | a row |")
print("|---|---|---|---|---|---|---|---|")
for name in weights:
    cyc = [statistics.median(res[(name, m)]) for m in ROWS]
    shared, row = fit(list(ROWS), cyc)
    print(f"| {name} | {cyc[0]:.1f} | {cyc[1]:.1f} | {cyc[3]:.1f} | {cyc[4]:.1f} | {cyc[7]:.1f} | {shared:.1f} | {row:.2f} |")
