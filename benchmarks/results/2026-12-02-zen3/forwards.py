"""The 1.5B's 1-, 5- and 9-token forwards (after CONTEXT tokens) with two quant builds swapped in turn, one process:
paired ratios B/A with quartiles. Usage: python fwd.py A.so B.so [context] [reps]"""
import sys, time, os
import torch
import specx
from specx.cpu import quant
A, B = quant.opened(sys.argv[1]), quant.opened(sys.argv[2])
ctx = int(sys.argv[3]) if len(sys.argv) > 3 else 100
reps = int(sys.argv[4]) if len(sys.argv) > 4 else 21
lm = specx.load(os.path.join(os.path.expanduser(os.environ.get("SPECX_FIXTURE_MODELS", "~/.cache/specx-fixture-models")), "qwen2.5-coder-1.5b.gguf"), "none").target
st = quant._state
for L in (A, B):
    L.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
    if st["prefetch_one"] is not None: L.prefetch_one(quant.one_row_bytes(st["prefetch_one"].pick))
    L.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
ids = torch.randint(100, 20000, (ctx + 9,), generator=torch.Generator().manual_seed(0)).tolist()
lm.reset(); lm.forward(ids[:ctx], last_only=True)
t = {(k, n): [] for k in "AB" for n in (1, 5, 9)}
outs = {}
for r in range(reps):
    for k in (("A", "B") if r % 2 else ("B", "A")):
        st["lib"] = A if k == "A" else B
        for n in (1, 5, 9):
            lm.crop(ctx)
            a = time.perf_counter()
            o = lm.forward(ids[ctx:ctx + n])
            t[k, n].append(time.perf_counter() - a)
            outs[k, n] = o
med = lambda v: sorted(v)[len(v) // 2]
for n in (1, 5, 9):
    rs = sorted(b / a for a, b in zip(t["A", n], t["B", n]))
    same = torch.equal(outs["A", n], outs["B", n])
    print(f"{n}-token forward: A {med(t['A', n])*1e3:.1f} ms B {med(t['B', n])*1e3:.1f} ms B/A {med(rs):.3f} [{rs[len(rs)//4]:.3f}-{rs[3*len(rs)//4]:.3f}] same logits: {same}", flush=True)
for k in "AB":
    print(f"{k}: 5/1 {med(t[k,5])/med(t[k,1]):.2f}x, 9/1 {med(t[k,9])/med(t[k,1]):.2f}x")
