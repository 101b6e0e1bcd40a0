"""attention.c's kernel alone: an older tree's build against this tree's, alternating call by call on one layer's
cache of random keys and values (hot: the cache is read again each call), a model's attention shape.

    python kernel.py OLD_TREE HEADS KV_HEADS HEAD_DIM

Rows (T new rows after `start` cached slots): old ms, new ms, median of the paired new/old ratios."""
import statistics
import sys
import time
from pathlib import Path

import torch

from specx.cpu import attention as A

torch.manual_seed(0)
heads, kv, d, cap = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), 4096
k, v = A.cache_tensors(kv, cap, d)
k, v = k[0].normal_(), v[0].normal_()
angles = torch.arange(cap).float()[:, None] * (1.0 / (1e6 ** (torch.arange(0, d, 2).float() / d)))
L = A.Attention(k, v, angles.cos().contiguous(), angles.sin().contiguous(), None, None, heads, 1e-6, d ** -0.5)
libs = {"new": A._library()}
A.SOURCE = Path(sys.argv[1]) / "specx/cpu/attention.c"
libs["old"] = A.load_build(A._state["build"])
print(f"heads {heads}, kv heads {kv}, head dim {d}, {torch.get_num_threads()} threads")
print("| rows | after | old ms | new ms | new/old |\n|---|---|---|---|---|")
for T, start in [(1, 200), (1, 1000), (1, 3000), (5, 200), (5, 1000), (16, 1000), (512, 0), (512, 1536), (512, 3584)]:
    qkv, pos = torch.randn(T, (heads + 2 * kv) * d), torch.arange(start, start + T)
    times, ratios = {"new": [], "old": []}, []
    for rep in range(5 if T > 64 else 31):
        for name in (("old", "new") if rep % 2 else ("new", "old")):
            A._state["lib"] = libs[name]
            t = time.perf_counter()
            A.attention(L, qkv, start, pos)
            times[name].append(time.perf_counter() - t)
        ratios.append(times["new"][-1] / times["old"][-1])
    print(f"| {T} | {start} | {statistics.median(times['old']) * 1e3:.3f} | "
          f"{statistics.median(times['new']) * 1e3:.3f} | {statistics.median(ratios):.3f} |", flush=True)
