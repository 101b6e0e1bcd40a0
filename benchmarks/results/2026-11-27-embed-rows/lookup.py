"""The cost of an embedding lookup read by rows (FileRows.take) against one in the mapped table, alternating.

    PYTHONPATH=. python benchmarks/results/2026-11-27-embed-rows/lookup.py [MODEL.gguf]
"""
import os
import statistics
import sys
import time

import torch

from specx.decoder import linear, lm

path = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/specx-fixture-models/qwen2.5-coder-0.5b.gguf")
w = lm.load(path, context=64).model.weights
g = torch.Generator().manual_seed(0)


def rows(ids):
    table, at = w.lookup.take(ids)
    return linear.embed(table, torch.tensor(at))


def mapped(ids):
    return linear.embed(w.embed, torch.tensor(ids))


for n in (1, 16, 4096):
    times = {"rows": [], "mapped": []}
    for _ in range(40 if n < 4096 else 8):
        ids = torch.randint(0, w.embed.rows, (n,), generator=g).tolist()
        for name, f in (("rows", rows), ("mapped", mapped)):
            t = time.perf_counter()
            out = f(ids)
            times[name].append(time.perf_counter() - t)
        assert torch.equal(rows(ids), mapped(ids))
    print(f"{n} tokens: read by rows {statistics.median(times['rows']) * 1e6:,.0f} us, "
          f"mapped {statistics.median(times['mapped']) * 1e6:,.0f} us (medians)")
