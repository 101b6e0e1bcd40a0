import os, statistics as st, sys, tempfile, time
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
import torch, specx
F = os.path.expanduser("~/.cache/specx-fixture-models/")
pair = specx.load(F + "qwen2.5-coder-1.5b.gguf", F + "qwen2.5-coder-0.5b.gguf+ngram")
d = pair.drafter.model
lm = d.lm
print(type(lm), getattr(lm, "head", None))
prompt = [(i * 7919) % 1000 + 100 for i in range(120)]
lm.reset(); lm.forward(prompt[:100], last_only=True)
sizes = [1, 2, 3, 4, 5, 6, 8]
times = {s: [] for s in sizes}
tt = {s: [] for s in sizes}
for r in range(15):
    for s in (sizes if r % 2 else sizes[::-1]):
        lm.crop(100)
        t = time.perf_counter(); lm.forward(prompt[100:100 + s], last_only=True); times[s].append(time.perf_counter() - t)
        lm.crop(100)
        t = time.perf_counter(); lm.forward(prompt[100:100 + s], last_only=False); tt[s].append(time.perf_counter() - t)
for s in sizes:
    print(f"{s} rows: last_only {st.median(times[s])*1e3:6.1f} ms   all rows {st.median(tt[s])*1e3:6.1f} ms")
# target too
t = pair.target
