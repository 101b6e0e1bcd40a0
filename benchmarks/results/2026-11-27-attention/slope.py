"""What verifying one more row costs on the 1.5B fixture: the fastest of 8 forwards of n rows after 300 cached tokens,
over the fastest 1-row forward (what the self-draft search's slope, drafters/self.py, prices per verified row).

    python slope.py"""
import time, statistics, sys
from pathlib import Path
from specx.decoder import lm as lean
model = lean.load(Path.home() / ".cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf", mode="q8")
prompt = [(i * 7919) % 1000 + 100 for i in range(300)]
model.forward(prompt)
ts = {n: [] for n in (1, 2, 3, 4, 5, 6, 8, 16)}
for r in range(8):
    for n in ts:
        model.crop(300); t = time.perf_counter(); model.forward(prompt[r:r + n]); ts[n].append(time.perf_counter() - t)
one = min(ts[1])
for n in ts:
    print(f"{n:2d} rows: fastest {min(ts[n])*1e3:.1f} ms, {min(ts[n]) / one:.2f}x one row, slope {(min(ts[n]) / one - 1) / max(n - 1, 1):.3f} per extra row")
