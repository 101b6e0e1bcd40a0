"""The 1.5B's prompt pass of N tokens with quant builds swapped in turn, one process; medians and paired ratios to
the first. Usage: python pf.py N REPS A.so B.so [C.so ...]"""
import sys, time, os
import torch
import specx
from specx.cpu import quant
n, reps = int(sys.argv[1]), int(sys.argv[2])
libs = [quant.opened(p) for p in sys.argv[3:]]
lm = specx.load(os.path.join(os.path.expanduser(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")), "qwen2.5-coder-1.5b.gguf"), "none").target
st = quant._state
for L in libs:
    L.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
    if st["prefetch_one"] is not None: L.prefetch_one(quant.one_row_bytes(st["prefetch_one"].pick))
    L.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
ids = torch.randint(100, 20000, (n,), generator=torch.Generator().manual_seed(0)).tolist()
t = [[] for _ in libs]; outs = [None] * len(libs)
for r in range(reps):
    order = list(range(len(libs)))
    if r % 2: order.reverse()
    for i in order:
        st["lib"] = libs[i]
        lm.reset()
        a = time.perf_counter()
        outs[i] = lm.forward(ids, last_only=True)
        t[i].append(time.perf_counter() - a)
med = lambda v: sorted(v)[len(v) // 2]
for i in range(len(libs)):
    rs = sorted(b / a for a, b in zip(t[0], t[i]))
    print(f"lib{i}: {med(t[i]):.3f} s ({n / med(t[i]):.1f} tok/s) ratio {med(rs):.3f} [{rs[len(rs)//4]:.3f}-{rs[3*len(rs)//4]:.3f}] same: {torch.equal(outs[0], outs[i])}", flush=True)
