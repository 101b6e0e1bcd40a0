"""The 1.5B target (Q4_K_M fixture) under the earlier build (OLD.so: Q4_K's activations per 32 values; with --groups
an earlier build that runs q8 with groups, 2026-11-30-q6k: Q6_K per 32) and the current one (per 256, integer group
sums), each model loaded and packed by its own build (with --head the earlier one's output layer left unpacked, as
205738d loaded it): forwards after a
100-token prompt of 1, 5, 9 and 17 tokens and a 128-token prompt pass, alternating (order flipped each repeat):
medians and the paired ratio new / old with quartiles. Usage: python forwards.py OLD.so [REPEATS] [--groups] [--head]"""
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import oldlib
from specx.decoder import lm as lean

from specx.cpu import packing

old, new = oldlib.load(sys.argv[1], "--groups" in sys.argv)
path = str(Path("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf").expanduser())
oldlib.use(old)
packable = packing.packable
if "--head" in sys.argv:   # 205738d's rule: never the output layer (151936 rows, the only one of that many)
    packing.packable = lambda w, lib=None: w.rows != 151936 and packable(w, lib)
a = lean.load(path, mode="q8")
packing.packable = packable
oldlib.use(new)
b = lean.load(path, mode="q8")
LIBS = {id(a): old, id(b): new}
ids = torch.randint(100, 20000, (240,), generator=torch.Generator().manual_seed(0)).tolist()
res = {n: [] for n in (1, 5, 9, 17, "prompt 128")}
for rep in range(int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 9):
    for n, times in res.items():
        pair = {}
        for m in ((a, b) if rep % 2 else (b, a)):
            oldlib.use(LIBS[id(m)])
            if n == "prompt 128":
                m.crop(0)
                s = time.perf_counter()
                m.forward(ids[:128], last_only=True)
            else:
                m.crop(100)
                s = time.perf_counter()
                m.forward(ids[100:100 + n])
            pair[id(m)] = time.perf_counter() - s
        times.append([pair[id(a)], pair[id(b)]])
oldlib.use(new)
for n, v in res.items():
    po, pn = (statistics.median(x[i] for x in v) * 1e3 for i in (0, 1))
    r = sorted(x[1] / x[0] for x in v)
    print(f"{n} tokens: old {po:.1f} ms, new {pn:.1f} ms, new/old {statistics.median(r):.3f} "
          f"[{r[len(r) // 4]:.3f}-{r[3 * len(r) // 4]:.3f}]")
one, five = ([statistics.median(x[i] for x in res[n]) for i in (0, 1)] for n in (1, 5))
print(f"5 tokens / 1 token: old {five[0] / one[0]:.2f}, new {five[1] / one[1]:.2f}")
