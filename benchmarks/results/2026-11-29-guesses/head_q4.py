import os, sys, time, statistics as st, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
import numpy as np, torch, specx
from specx.cpu import lowbit, quant
from specx.cpu.qweight import BLOCKS, QWeight, expected_bytes
F = os.path.expanduser("~/.cache/specx-fixture-models/")
pair = specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")
d = pair.drafter.model; lm = d.lm; head = lm.head
m = head.static
print(m.rows, m.cols, m.nbytes / 1e6, "MB", BLOCKS)
Q4_0 = BLOCKS["Q4_0"][0]
data = np.empty(expected_bytes(Q4_0, m.rows, m.cols), dtype=np.uint8)
rb = expected_bytes(Q4_0, 1, m.cols)
for first in range(0, m.rows, 512):
    rows = np.arange(first, min(first + 512, m.rows))
    data[first * rb:(rows[-1] + 1) * rb] = lowbit.quantize_q4_0(quant.embed(m, rows).numpy(), None)
q4 = QWeight(Q4_0, data, m.rows, m.cols)
print("q4 head", q4.nbytes / 1e6, "MB")
p = [(i * 7919) % 1000 + 100 for i in range(120)]
lm.reset(); lm.forward(p[:100], last_only=True)
times = {"q8": [], "q4": []}
agree = 0
for r in range(40):
    for name in (("q8", "q4") if r % 2 else ("q4", "q8")):
        head.static = m if name == "q8" else q4
        lm.crop(100)
        t = time.perf_counter(); out = lm.forward(p[100:101], last_only=True); times[name].append(time.perf_counter() - t)
for k, v in times.items():
    print(k, f"{st.median(v)*1e3:.2f} ms")
ratios = sorted(a / b for a, b in zip(times["q8"], times["q4"]))
print("q8/q4", st.median(ratios))
