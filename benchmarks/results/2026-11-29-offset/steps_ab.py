"""Whole forwards of the lean decoder (the drafter as the engine loads it: q8, VocabTrim head for the 0.5B) under
the new kernels against an earlier build's .so, swapped in one process where the decoder and the layer loop look
the build up; after a 100-token prompt, forwards of ROWS tokens (cropped back), the builds alternating, REPS
repeats: medians and the paired ratio's median and quartiles.

    python steps_ab.py OLD.so MODEL.gguf [DRAFT_VOCAB]"""
import os, sys, time, statistics
from pathlib import Path
from specx.cpu import quant, build
from specx.decoder import lm
old_path, model_path = sys.argv[1], sys.argv[2]
vocab = int(sys.argv[3]) if len(sys.argv) > 3 else 0
new = quant._library()
raw = build.load(old_path)
for n in ("spx_matmul", "spx_dequantize_rows", "spx_stream_sum", "spx_build", "spx_set_xspan", "spx_set_prefetch",
          "spx_set_prefetch_l2", "spx_set_amx", "spx_amx_init", "spx_amx_min_rows"):
    f, g = getattr(new.lib, n), getattr(raw, n); g.argtypes, g.restype = f.argtypes, f.restype
old = quant.Library(new.name, new.vnni, raw, Path(old_path), False, new.vbmi)
pf = new.lib.spx_set_prefetch(0); new.lib.spx_set_prefetch(pf); raw.spx_set_prefetch(pf)
raw.spx_set_prefetch_l2(new.lib.spx_set_prefetch_l2(-1))
xs = new.lib.spx_set_xspan(-1); raw.spx_set_xspan(xs)
model = lm.load(model_path, draft_vocab=vocab, mode="q8")
prompt = [(i * 7919) % 1000 + 100 for i in range(100)]
model.forward(prompt)
for rows in [int(r) for r in os.environ.get("ROWS", "1,4").split(",")]:
    t = {"old": [], "new": []}
    for rep in range(int(os.environ.get("REPS", "41"))):
        for name in (("old", "new") if rep % 2 else ("new", "old")):
            quant._state["lib"] = old if name == "old" else new
            model.crop(100)
            s = time.perf_counter()
            model.forward(prompt[rep % 50:rep % 50 + rows])
            t[name].append(time.perf_counter() - s)
    quant._state["lib"] = new
    r = sorted(a / b for a, b in zip(t["new"], t["old"]))
    print(f"{Path(model_path).stem} {rows} rows: old {statistics.median(t['old']) * 1e3:.2f} ms  new "
          f"{statistics.median(t['new']) * 1e3:.2f} ms  new/old {statistics.median(r):.3f} "
          f"[{r[len(r) // 4]:.3f}-{r[3 * len(r) // 4]:.3f}]", flush=True)
