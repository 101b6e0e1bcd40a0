"""The 8B-shaped file (benchmarks/gguf_8b.py) on the lean decoder: load time, a 64-token prompt, 16 decode steps,
peak RSS; run with the Q4_K layers packed and with SPECX_PACK=0 (the file's layout), each in its own process.

    python benchmarks/results/2026-11-30-packed/l8b.py L8B.gguf"""
import os
import statistics
import sys
import time

t = time.perf_counter()
from specx.decoder.lm import load

lm = load(sys.argv[1], context=4096, mode="q8")
loaded = time.perf_counter() - t
ids = [1000 + (i * 7919) % 100000 for i in range(80)]
lm.forward(ids[:64], last_only=True)
steps = []
for i in range(16):
    t = time.perf_counter()
    lm.forward([ids[64 + i]], last_only=True)
    steps.append(time.perf_counter() - t)
with open("/proc/self/status") as status:
    hwm = next(line.split()[1] for line in status if line.startswith("VmHWM"))
print(f"{'file layout' if os.environ.get('SPECX_PACK') == '0' else 'packed'}: load {loaded:.2f} s, step {statistics.median(steps) * 1000:.1f} ms "
      f"({1 / statistics.median(steps):.2f} tok/s), peak RSS {int(hwm) / 2**20:.2f} GiB")
