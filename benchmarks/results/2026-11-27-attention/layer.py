"""One attention layer (attention.c) of an older tree's build against this tree's, alternating calls, after a
context of cached keys: medians of 200 calls each, and the largest difference of their outputs.

    python layer.py OLD_TREE [--shapes 12/2/128,9/3/64] [--contexts 200,1000,4000] [--rows 1,5]

A shape is query heads / KV heads / head dim (Qwen2.5-1.5B: 12/2/128; SmolLM2-135M: 9/3/64). Here the cache is
warm (the same layer is called again and again); in a decoder the weights read between layers evict it."""
import argparse
import statistics
import time
from pathlib import Path

import torch

from specx.cpu import attention

ap = argparse.ArgumentParser()
ap.add_argument("old")
ap.add_argument("--shapes", default="12/2/128,9/3/64")
ap.add_argument("--contexts", default="200,1000,4000")
ap.add_argument("--rows", default="1,5")
a = ap.parse_args()
new = attention._library()
build = attention._state["build"]
attention.SOURCE = Path(a.old) / "specx/cpu/attention.c"
old = attention.load_build(build)
threads = torch.get_num_threads()


def layer(heads, kv, dim, capacity):
    k, v = attention.cache_tensors(kv, capacity, dim)
    angles = torch.arange(capacity, dtype=torch.float32)[:, None] * (1e4 ** (-torch.arange(dim // 2) / (dim // 2)))
    return attention.Attention(k[0], v[0], angles.cos(), angles.sin(), None, None, heads, 1e-6, dim ** -0.5)


def call(lib, L, qkv, start, pos, heads, dim):
    out = torch.empty(qkv.shape[0], heads * dim)
    assert lib.spx_attention(L.address, qkv.data_ptr(), qkv.shape[0], start, pos.data_ptr(), 0, None,
                             out.data_ptr(), threads) == 0
    return out


print(f"attention ({build} build), {threads} threads; µs per call, medians of 200 alternating calls")
print("| heads/kv/dim | context | rows | old µs | new µs | new/old | max abs difference |")
print("|---|---|---|---|---|---|---|")
torch.manual_seed(0)
for shape in a.shapes.split(","):
    heads, kv, dim = map(int, shape.split("/"))
    for context in map(int, a.contexts.split(",")):
        L = layer(heads, kv, dim, (context + 79) // 16 * 16)
        call(new, L, torch.randn(context, (heads + 2 * kv) * dim), 0, torch.arange(context), heads, dim)
        for rows in map(int, a.rows.split(",")):
            qkv, pos = torch.randn(rows, (heads + 2 * kv) * dim), torch.arange(context, context + rows)
            diff = (call(old, L, qkv, context, pos, heads, dim) - call(new, L, qkv, context, pos, heads, dim)).abs().max()
            times = {"old": [], "new": []}
            for i in range(200):
                for key, lib in (("old", old), ("new", new)) if i % 2 == 0 else (("new", new), ("old", old)):
                    t = time.perf_counter()
                    call(lib, L, qkv, context, pos, heads, dim)
                    times[key].append(time.perf_counter() - t)
            o, n = statistics.median(times["old"]) * 1e6, statistics.median(times["new"]) * 1e6
            print(f"| {shape} | {context} | {rows} | {o:.0f} | {n:.0f} | {n / o:.2f} | {float(diff):.0e} |", flush=True)
