import os, sys, time, statistics as st, tempfile
os.environ.setdefault("SPECX_HOME", tempfile.mkdtemp())
import torch
from specx.decoder import lm as lean
F = os.path.expanduser("~/.cache/specx-fixture-models/")
which, threads, rows, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
torch.set_num_threads(threads)
model = lean.load(F + which + ".gguf", mode="q8")
p = [(i * 7919) % 1000 + 100 for i in range(200)]
model.reset(); model.forward(p[:100], last_only=True)
ts = []
t_end = time.time() + secs
start_at = float(sys.argv[5]) if len(sys.argv) > 5 else 0
while time.time() < start_at: time.sleep(0.001)
t_end = time.time() + secs
while time.time() < t_end:
    model.crop(100)
    t = time.perf_counter(); model.forward(p[100:100 + rows], last_only=False); ts.append(time.perf_counter() - t)
print(f"{which} threads {threads} rows {rows}: median {st.median(ts)*1e3:.1f} ms (n={len(ts)})", flush=True)
