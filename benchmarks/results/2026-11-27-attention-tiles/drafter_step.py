"""A 0.5B drafter step (1 token after 200, full output layer) with its own layers against the same layers requantized to
Q4_0, alternating."""
import time, statistics, numpy as np, torch
from pathlib import Path
from gguf import GGMLQuantizationType as G
from gguf.quants import quantize
from specx.cpu.qweight import QWeight, BLOCKS, dequantize
from specx.decoder import lm as lean
from specx.decoder import resident
M = Path.home()/".cache/specx-fixture-models"
a = lean.load(M/"qwen2.5-coder-0.5b.gguf", mode="q8")
b = lean.load(M/"qwen2.5-coder-0.5b.gguf", mode="q8")
def requant(w, kind):
    q = quantize(dequantize(w), getattr(G, kind))
    return QWeight(BLOCKS[kind][0], np.ascontiguousarray(q).reshape(-1).view(np.uint8), w.rows, w.cols)
W = b.model.weights
for l in W.layers:
    for f in ("qkv", "o", "gate_up", "down"):
        setattr(l, f, [requant(w, "Q4_0") for w in getattr(l, f)])
b.model.weights = resident.copy_in(W) if resident.wanted() else W
print("layers bytes own", sum(w.nbytes for l in a.model.weights.layers for w in (*l.qkv,*l.o,*l.gate_up,*l.down))/1e6,
      "q4_0", sum(w.nbytes for l in b.model.weights.layers for w in (*l.qkv,*l.o,*l.gate_up,*l.down))/1e6)
prompt = [(i * 7919) % 1000 + 100 for i in range(200)]
for m in (a, b):
    m.reset(); m.forward(prompt, last_only=True)
ts = {"own": [], "q4_0": []}
for r in range(30):
    for name, m in (("own", a), ("q4_0", b)) if r % 2 else (("q4_0", b), ("own", a)):
        m.crop(200); t = time.perf_counter(); m.forward([5], last_only=True); ts[name].append(time.perf_counter() - t)
print({k: f"{statistics.median(v)*1e3:.2f} ms" for k, v in ts.items()})
