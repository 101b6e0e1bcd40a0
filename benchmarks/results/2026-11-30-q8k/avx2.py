"""The AVX2 build (what a CPU without AVX-512 runs: the file's layout, no packing), earlier against current, the
current one both ways: q8 as it runs it (per 32) and with groups (Q4_K per 256, KIND_G, as the AVX-512 builds run
it). Q4_K matmuls of the 1.5B's shapes, weights hot in L3, 1/5/17/128 rows, 7 rounds rotating.
Usage: python avx2.py OLD_AVX2.so"""
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

from specx.cpu import build, quant, quant_ref

sys.path.insert(0, str(Path(__file__).parent))
import oldlib

new = quant.load("avx2")
raw = build.load(Path(sys.argv[1]))
for name in oldlib.NAMES:
    f, g = getattr(new.lib, name), getattr(raw, name)
    g.argtypes, g.restype = f.argtypes, f.restype
old = quant.Library(new.name, new.vnni, raw, Path(sys.argv[1]), False, new.vbmi)
rng = np.random.default_rng(0)
for M in (1, 5, 17, 128):
    for rows, cols in ((17920, 1536), (1536, 8960)):
        w = quant_ref.random_weight("Q4_K", rows, cols, rng, extreme=False)
        x = torch.randn(M, cols)
        runs = {"old": (old, None), "new": (new, None), "groups": (new, True)}
        t = {k: [] for k in runs}
        n = max(3, 200 // M)
        for r in range(7):
            order = list(runs)[r % 3:] + list(runs)[:r % 3]
            for k in order:
                lib, groups = runs[k]
                lib.matmul(x, [w], "q8", groups=groups)
                t0 = time.perf_counter()
                for _ in range(n):
                    lib.matmul(x, [w], "q8", groups=groups)
                t[k].append((time.perf_counter() - t0) / n)
        ratio = {k: sorted(a / b for a, b in zip(t[k], t["old"])) for k in ("new", "groups")}
        print(f"M {M:4d} {rows}x{cols}: old {1e3 * statistics.median(t['old']):8.3f} ms, "
              + ", ".join(f"{k} {1e3 * statistics.median(t[k]):8.3f} ms ({statistics.median(v):.3f} [{v[0]:.3f}-{v[-1]:.3f}])"
                          for k, v in ratio.items()), flush=True)
