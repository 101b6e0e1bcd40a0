"""The 0.5B drafter's (as a drafter loads it) and the 1.5B target's forwards of 1 and 5 tokens after a 200-token
prompt on this CPU's AVX-512 build and on the AVX2 build without VNNI (a stand-in for an AVX2-only CPU), one
process, alternating, 15 repeats; medians and the drafter's step as a share of the target's.
Usage: python steps.py"""
import time
from pathlib import Path
from specx.cpu import quant
from specx.decoder import lm as lean
path = str(Path("~/.cache/specx-fixture-models/qwen2.5-coder-0.5b.gguf").expanduser())
tpath = str(Path("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf").expanduser())
d512 = quant._default(); st = quant._state
a2 = quant.load("avx2", vnni=False)
a2.prefetch(*quant.PREFETCH_WAYS[st["prefetch"].pick])
if st["prefetch_one"] is not None: a2.prefetch_one(quant.one_row_bytes(st["prefetch_one"].pick))
a2.xspan(quant.xspan_bytes(quant.l1_data_bytes()))
libs = {"avx512": d512, "avx2": a2}
models = {}
for k, L in libs.items():
    st["lib"] = L
    models[(k, "draft")] = lean.load(path, mode="q4", draft_vocab=32768)
    models[(k, "target")] = lean.load(tpath, mode="q8")
prompt = [(i * 7919) % 1000 + 100 for i in range(260)]
for key, m in models.items():
    st["lib"] = libs[key[0]]; m.forward(prompt[:200])
t = {key: {1: [], 5: []} for key in models}
for r in range(15):
    for key, m in (list(models.items()) if r % 2 else list(models.items())[::-1]):
        st["lib"] = libs[key[0]]
        for n in (1, 5):
            m.crop(200); a = time.perf_counter(); m.forward(prompt[200:200 + n]); t[key][n].append(time.perf_counter() - a)
med = lambda v: sorted(v)[len(v)//2]
for key in models:
    print(key, " ".join(f"{n} tok {med(t[key][n])*1e3:.1f} ms" for n in (1, 5)))
for k in libs:
    print(k, "drafter 1-tok / target 1-tok", round(med(t[(k,'draft')][1]) / med(t[(k,'target')][1]), 3))
