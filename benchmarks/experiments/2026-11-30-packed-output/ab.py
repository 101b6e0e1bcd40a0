"""The output layer packed (with the layers) against left in the file's layout (packing.packable refusing it),
end to end: plain decoding and the default pair, each loaded twice, every bench prompt (2 per category) x repeats,
the two alternating (order rotated per prompt); outputs checked equal. Usage: python ab.py [REPEATS]"""
import os
import statistics
import sys
import time

import specx
from specx.bench import suite
from specx.cpu import packing, quant

F = os.path.expanduser("~/.cache/specx-fixture-models/")
reps = int(sys.argv[1]) if len(sys.argv) > 1 else 3


def load():
    return {"plain": specx.load(F + "qwen2.5-coder-1.5b.gguf", "none"),
            "default": specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")}


loaded = {"packed": load()}
packable = packing.packable
packing.packable = lambda w: packable(w) and w.rows != 151936   # the target's and the drafter's vocabulary
loaded["file"] = load()
packing.packable = packable
print(quant._default().describe(detail=True), flush=True)
settings = list(loaded)
prompts = suite.calibration(suite.bundled(), 2)
res, outs = {}, {}
for rep in range(reps):
    for i, p in enumerate(prompts):
        order = settings if (i + rep) % 2 == 0 else settings[::-1]
        for name in ("plain", "default"):
            for s in order:
                model = loaded[s][name]
                t = time.perf_counter()
                text, done = "", None
                for ev in specx.stream(model, p.text, max_tokens=128):
                    text += getattr(ev, "text", "")
                    if hasattr(ev, "stats"):
                        done = ev
                total = time.perf_counter() - t
                st = done.stats
                res.setdefault((name, s, p.category), []).append((st.new_tokens / st.decode_s, st.new_tokens / total))
                outs.setdefault((name, i), set()).add(text)
        print(f"rep {rep} prompt {i} {p.category} done", flush=True)
print("\nsame outputs across layouts:", all(len(v) == 1 for v in outs.values()),
      "; plain and default equal:", all(outs[("plain", i)] == outs[("default", i)] for i in range(len(prompts))))
cats = sorted({p.category for p in prompts})
for name in ("plain", "default"):
    for kind, k in (("decode", 0), ("end to end", 1)):
        cells, allr = [], []
        for c in cats:
            r = [b[k] / a[k] for a, b in zip(res[(name, "file", c)], res[(name, "packed", c)])]
            allr += r
            cells.append(f"{c} {statistics.median(r):.3f}")
        print(f"{name:8} {kind:10} output packed/unpacked speed: " + ", ".join(cells) + f"; overall median {statistics.median(allr):.3f} "
              f"[{sorted(allr)[len(allr) // 4]:.3f}-{sorted(allr)[3 * len(allr) // 4]:.3f}] (n={len(allr)})")
