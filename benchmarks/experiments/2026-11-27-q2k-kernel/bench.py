"""Time q2k.c's Q2_K matmul against specx's Q4_K kernel (q8 mode) on the Qwen 1.5B layer shapes, 2 threads.

Each format runs on copies of the weight totalling more than COPY_BYTES (past the last-level cache the VM
reports), a different copy each call, so every call reads its weights from memory. Calls alternate between
the formats and the row counts; medians over REPEATS (argv[1]). Also prints the machine's read bandwidth
(quant.c's stream_sum over one such buffer)."""
import os
import statistics
import sys
import time

import numpy as np
import torch

import q2k
from specx.cpu import quant
from specx.cpu.qweight import QWeight
from specx.cpu.quant_ref import random_weight

COPY_BYTES = 640 << 20      # per format and shape: more than the 480 MiB L3 lscpu reports
REPEATS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
SHAPES = {"gate+up 17920x1536": (17920, 1536), "down 1536x8960": (1536, 8960), "qkv 2048x1536": (2048, 1536)}
ROWS = (1, 4, 8)

torch.set_num_threads(int(os.environ.get("THREADS", "2")))   # 2: this machine's cores
lib = q2k.load(shift=int(os.environ.get("Q2K_SHIFT", "0")))   # 1: the shifting decoder
spx = quant._default()
prefetch = quant._state["prefetch"].pick
# Q2K_PREFETCH: q2k.c's prefetch distance in bytes (0: off), for q2k.c only; default: specx's choice here
distance = int(os.environ.get("Q2K_PREFETCH", quant.PREFETCH_BYTES if prefetch == "on" else 0))
lib.spx_set_prefetch(distance)
prefetch = f"{distance} bytes ahead" if distance else "off"
print(f"{spx.describe()}; q2k.c prefetch {prefetch}; threads {torch.get_num_threads()}", flush=True)

buf = np.random.default_rng(0).integers(0, 256, COPY_BYTES, dtype=np.uint8)
quant.stream_read(spx, buf, torch.get_num_threads())
t = []
for _ in range(5):
    t0 = time.perf_counter()
    quant.stream_read(spx, buf, torch.get_num_threads())
    t.append(time.perf_counter() - t0)
print(f"read bandwidth, {torch.get_num_threads()} threads: {COPY_BYTES / statistics.median(t) / 1e9:.1f} GB/s", flush=True)
del buf

rng = np.random.default_rng(0)
print("| shape | M | Q4_K ms | Q4_K GB/s | Q2_K ms | Q2_K GB/s | t(Q2_K)/t(Q4_K) |")
print("|---|---|---|---|---|---|---|")
for label, (rows, cols) in SHAPES.items():
    b4, b2 = rows * cols // 256 * 144, rows * cols // 256 * q2k.BYTES
    n4, n2 = -(-COPY_BYTES // b4), -(-COPY_BYTES // b2)
    big4 = random_weight("Q4_K", rows * n4, cols, rng, extreme=False)
    w4 = [QWeight(big4.type, big4.data[i * b4:(i + 1) * b4], rows, cols) for i in range(n4)]
    big2 = q2k.random_q2k(rows * n2, cols, rng)
    w2 = [big2[i * b2:(i + 1) * b2] for i in range(n2)]
    xs = {m: torch.randn(m, cols) for m in ROWS}
    outs = {m: torch.empty(m, rows) for m in ROWS}
    times = {(f, m): [] for f in ("q4", "q2") for m in ROWS}
    i4 = i2 = 0
    for rep in range(REPEATS + 10):
        for m in ROWS:
            for f in (("q4", "q2") if rep % 2 else ("q2", "q4")):
                t0 = time.perf_counter()
                if f == "q4":
                    spx.matmul(xs[m], [w4[i4 % n4]], "q8", out=outs[m])
                    i4 += 1
                else:
                    q2k.matmul(lib, xs[m], w2[i2 % n2], rows, out=outs[m])
                    i2 += 1
                if rep >= 10:
                    times[f, m].append(time.perf_counter() - t0)
    for m in ROWS:
        t4, t2 = statistics.median(times["q4", m]), statistics.median(times["q2", m])
        print(f"| {label} | {m} | {t4 * 1e3:.3f} | {b4 / t4 / 1e9:.1f} | {t2 * 1e3:.3f} | {b2 / t2 / 1e9:.1f} | "
              f"{t2 / t4:.2f} |", flush=True)
    del big4, w4, big2, w2
print(f"byte ratio Q2_K/Q4_K: {84 / 144:.3f}")
