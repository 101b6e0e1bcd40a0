"""The 1.5B target loaded twice, its output layer (Q6_K, 151936 rows) packed with the layers and left in the file's
layout (packing.packable refusing it), forwards after a 100-token prompt of 1, 2, 4, 5 and 8 tokens and a 100-token
prompt pass, alternating (order flipped each repeat): medians and the paired ratio packed / file with quartiles;
the logits checked equal. Usage: python forwards.py [REPEATS]"""
import statistics
import sys
import time
from pathlib import Path

import torch

from specx.cpu import packing
from specx.decoder import lm as lean

path = str(Path("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf").expanduser())
a = lean.load(path, mode="q8")
packable = packing.packable
packing.packable = lambda w: packable(w) and w.rows != a.model.weights.output.rows
b = lean.load(path, mode="q8")
packing.packable = packable
assert a.model.weights.output.packed and not b.model.weights.output.packed
assert a.model.weights.layers[0].down[0].packed and b.model.weights.layers[0].down[0].packed
ids = torch.randint(100, 20000, (140,), generator=torch.Generator().manual_seed(0)).tolist()
for m in (a, b):
    m.reset()
assert torch.equal(a.forward(ids[:100]), b.forward(ids[:100])) and torch.equal(a.forward(ids[100:105]), b.forward(ids[100:105]))
res = {n: [] for n in (1, 2, 4, 5, 8, "prefill")}
for rep in range(int(sys.argv[1]) if len(sys.argv) > 1 else 15):
    for n, times in res.items():
        pair = {}
        for m in ((a, b) if rep % 2 else (b, a)):
            if n == "prefill":
                m.crop(0)
                s = time.perf_counter()
                m.forward(ids[:100], last_only=True)
            else:
                m.crop(100)
                s = time.perf_counter()
                m.forward(ids[100:100 + n])
            pair[id(m)] = time.perf_counter() - s
        times.append([pair[id(a)], pair[id(b)]])
for n, v in res.items():
    pa, pb = (statistics.median(x[i] for x in v) * 1e3 for i in (0, 1))
    r = sorted(x[0] / x[1] for x in v)
    print(f"{n} tokens: packed {pa:.1f} ms, output unpacked {pb:.1f} ms, packed/unpacked {statistics.median(r):.3f} "
          f"[{r[len(r) // 4]:.3f}-{r[3 * len(r) // 4]:.3f}]")
one, five = ([statistics.median(x[i] for x in res[n]) for i in (0, 1)] for n in (1, 5))
print(f"5 tokens / 1 token: packed {five[0] / one[0]:.2f}, output unpacked {five[1] / one[1]:.2f}")
