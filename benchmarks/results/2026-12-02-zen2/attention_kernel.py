"""The old tree's attention.c build against this tree's, one process, hot (one layer's cache of random keys and values
read again each call), a model's attention shape; 21 alternating repeats (5 for the 200-row prompt), medians in ms;
the outputs checked bit-equal. A comma list of value shapes: 0 the build's choice, 4 or 8 vectors a pass.
    python attention_kernel.py OLD_TREE HEADS KV_HEADS HEAD_DIM 0[,4,8]"""
import statistics, sys, time, torch
from pathlib import Path
from specx.cpu import attention as A
torch.manual_seed(0)
heads, kv, d, cap = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), 4096
k, v = A.cache_tensors(kv, cap, d); k, v = k[0].normal_(), v[0].normal_()
angles = torch.arange(cap).float()[:, None] * (1.0 / (1e6 ** (torch.arange(0, d, 2).float() / d)))
L = A.Attention(k, v, angles.cos().contiguous(), angles.sin().contiguous(), None, None, heads, 1e-6, d ** -0.5)
new = A._library()
A.SOURCE = Path(sys.argv[1]) / "specx/cpu/attention.c"
old = A.load_build(A._state["build"])
ways = {"old": (old, 0)} | {f"v{s}": (new, s) for s in [int(a) for a in sys.argv[5].split(",")]}
print(A._state["build"], heads, kv, d, torch.get_num_threads(), "threads")
outs = {}
for T, start in [(1, 200), (1, 1000), (5, 200), (5, 1000), (16, 1000), (200, 0)]:
    qkv, pos = torch.randn(T, (heads + 2 * kv) * d), torch.arange(start, start + T)
    t = {w: [] for w in ways}
    for rep in range(21 if T < 100 else 5):
        for w in (list(ways) if rep % 2 else list(ways)[::-1]):
            A._state["lib"] = ways[w][0]; A.passes(None, ways[w][1])
            a = time.perf_counter(); o = A.attention(L, qkv, start, pos); t[w].append(time.perf_counter() - a)
            outs[w] = o
    assert all(torch.equal(outs[w], outs["old"]) for w in ways), "bits differ"
    m = {w: statistics.median(x) for w, x in t.items()}
    print(f"T {T} after {start}: " + "  ".join(f"{w} {m[w]*1e3:.3f}" for w in ways), flush=True)
