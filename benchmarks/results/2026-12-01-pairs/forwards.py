"""The 1.5B's forwards of 1 and 5 tokens after a 200-token prompt, before this change (OLD.so: the build of 33a7990,
its own packing) and after, both loaded in one process (each model packed by its build; quant's library swapped
before each forward), the C layer loop, alternating (order flipped each repeat); medians, each build's 5 ÷ 1 ratio
per repeat, and paired ratios new/old with quartiles. Usage: python forwards.py OLD.so [REPEATS]"""
import statistics, sys, time
from pathlib import Path
import torch
from specx.cpu import build, quant
from specx.decoder import lm as lean
path = str(Path("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf").expanduser())
new = quant._default()
old = quant.opened(sys.argv[1])
st = quant._state
old.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
if st["prefetch_one"] is not None:
    old.prefetch_one(quant.one_row_bytes(st["prefetch_one"].pick))
old.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
libs = {"old": old, "new": new}
models = {}
for k in ("old", "new"):
    st["lib"] = libs[k]
    models[k] = lean.load(path, mode="q8")
prompt = [(i * 7919) % 1000 + 100 for i in range(260)]
for k, m in models.items():
    st["lib"] = libs[k]
    m.forward(prompt[:200])
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 21
t = {(k, n): [] for k in libs for n in (1, 5)}
for r in range(reps):
    for k in (("old", "new") if r % 2 else ("new", "old")):
        st["lib"], m = libs[k], models[k]
        for n in (1, 5):
            m.crop(200)
            a = time.perf_counter(); m.forward(prompt[200 + r % 40:200 + r % 40 + n]); t[(k, n)].append(time.perf_counter() - a)
q = lambda v: sorted(v)[len(v) // 2]
for k in libs:
    rs = sorted(b / a for a, b in zip(t[(k, 1)], t[(k, 5)]))
    print(f"{k}: 1 tok {q(t[(k,1)])*1e3:.1f} ms, 5 tok {q(t[(k,5)])*1e3:.1f} ms, 5/1 per repeat median {q(rs):.3f} [{rs[len(rs)//4]:.3f}-{rs[3*len(rs)//4]:.3f}], ratio of medians {q(t[(k,5)])/q(t[(k,1)]):.3f}")
for n in (1, 5):
    rs = sorted(b / a for a, b in zip(t[("old", n)], t[("new", n)]))
    print(f"{n} tok new/old {q(rs):.3f} [{rs[len(rs)//4]:.3f}-{rs[3*len(rs)//4]:.3f}]")
