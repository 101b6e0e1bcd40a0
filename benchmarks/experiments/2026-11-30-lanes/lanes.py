"""The outputs-in-lanes Q4_K prototype (lanes.c) against specx's q8 kernel: results, then cost per group.

    python lanes.py [--reps 5] [--calls 200]

1. Correctness: the prototype's outputs against float64 on the dequantized weights and the same quantized
   activations (relative to the largest output), for 1..8 rows; and each row's bits alone and in a batch.
2. Hot cost (weights in L2: 512 x 1536, the call's fixed cost taken out with a 16 x 1536 call): cycles per
   256-weight group per core, shared + M x row fitted on M = 1..8, for specx's kernel and the prototype, 1 thread
   and 2 threads, alternating.
3. From memory (2 threads): the 1.5B's gate+up shape (2 x 8960 x 1536) read from copies larger than the caches,
   M = 1 and 5: ms a call, and M=5 / M=1.
"""
from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from row_floor import core_rates, fit  # noqa: E402

from specx.cpu import quant, quant_ref  # noqa: E402
from specx.cpu.qweight import dequantize  # noqa: E402

ROWS = range(1, 9)


def build():
    so = HERE / "lanes.so"
    subprocess.run(["cc", "-O2", "-march=native", "-fopenmp", "-shared", "-fPIC", str(HERE / "lanes.c"), "-o",
                    str(so)], check=True)
    lib = ctypes.CDLL(str(so))
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    lib.lanes_bytes.argtypes, lib.lanes_bytes.restype = [i64, i64], i64
    lib.lanes_repack.argtypes = [p, i64, i64, p]
    lib.lanes_matmul.argtypes = [p, i64, i64, i32, p, p, p, p, i64, i32]
    return lib


class Packed:
    def __init__(self, lib, w):
        self.n, self.k = w.rows, w.cols
        self.data = np.empty(lib.lanes_bytes(self.n, self.k) + 64, np.uint8)
        off = (-self.data.ctypes.data) % 64
        self.buf = self.data[off:off + lib.lanes_bytes(self.n, self.k)]
        lib.lanes_repack(w.data.ctypes.data, self.n, self.k, self.buf.ctypes.data)


def quantize(x: np.ndarray):
    """Per row and 32-value block, as specx's q8 does: int8 values (round half to even), the block's scale, and
    the scale times the values' sum."""
    m, k = x.shape
    g = x.reshape(m, k // 32, 32)
    dx = (np.abs(g).max(axis=2) / 127).astype(np.float32)
    inv = np.where(dx > 0, 1 / np.where(dx > 0, dx, 1), 0).astype(np.float32)
    q = np.clip(np.rint(g * inv[..., None]), -127, 127).astype(np.int8)
    xs = (dx * q.astype(np.int32).sum(axis=2)).astype(np.float32)
    return np.ascontiguousarray(q.reshape(m, k)), np.ascontiguousarray(dx), np.ascontiguousarray(xs)


def run(lib, pk, q, dx, xs, threads, out=None):
    m = q.shape[0]
    y = out if out is not None else np.empty((m, pk.n), np.float32)
    lib.lanes_matmul(pk.buf.ctypes.data, pk.n, pk.k, m, q.ctypes.data, dx.ctypes.data, xs.ctypes.data,
                     y.ctypes.data, pk.n, threads)
    return y


def check(lib):
    rng = np.random.default_rng(1)
    w = quant_ref.random_weight("Q4_K", 64, 1536, rng, extreme=False)
    pk = Packed(lib, w)
    wf = dequantize(w).astype(np.float64)
    x = rng.standard_normal((8, 1536)).astype(np.float32)
    q, dx, xs = quantize(x)
    y = run(lib, pk, q, dx, xs, 2)
    ref = (q.reshape(8, 48, 32) * dx[..., None]).reshape(8, 1536).astype(np.float64) @ wf.T
    err = np.abs(y - ref).max() / np.abs(ref).max()
    alone = np.stack([run(lib, pk, q[r:r + 1], dx[r:r + 1], xs[r:r + 1], 1)[0] for r in range(8)])
    spx = quant._default().matmul(torch.from_numpy(x), [w], "q8").numpy()
    print(f"correctness: max |prototype - float64| / max |y| = {err:.2e}; rows alone bit-identical to the batch: "
          f"{bool((alone == y).all())}; against specx's q8 (its own activation rounding): "
          f"{np.abs(y - spx).max() / np.abs(spx).max():.2e}")


def best(fn, calls):
    b = float("inf")
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t)
    return b


def hot(lib, reps, calls, ghz):
    rng = np.random.default_rng(0)
    big, small = (quant_ref.random_weight("Q4_K", n, 1536, rng, extreme=False) for n in (512, 16))
    pbig, psmall = Packed(lib, big), Packed(lib, small)
    spx = quant._default()
    groups = 512 * 1536 // 256
    res = {}
    for _ in range(reps):
        for threads in (1, 2):
            torch.set_num_threads(threads)
            for m in ROWS:
                x = torch.randn(m, 1536)
                q, dx, xs = quantize(x.numpy())
                out = np.empty((m, 512), np.float32)
                for name, f_big, f_small in (
                        ("specx", lambda: spx.matmul(x, [big], "q8"), lambda: spx.matmul(x, [small], "q8")),
                        ("lanes", lambda: (quantize(x.numpy()), run(lib, pbig, q, dx, xs, threads, out)),
                         lambda: (quantize(x.numpy()), run(lib, psmall, q, dx, xs, threads)))):
                    f_big()
                    cyc = (best(f_big, calls) - best(f_small, calls)) * ghz * 1e9 / (groups / threads)
                    res.setdefault((name, threads, m), []).append(cyc)
    torch.set_num_threads(2)
    print("\nhot, cycles per 256-weight group per core (medians of the repeats; activation quantizing in both):")
    print("| kernel | threads | M=1 | M=2 | M=5 | M=8 | shared | row |")
    print("|---|---|---|---|---|---|---|---|")
    for name in ("specx", "lanes"):
        for threads in (1, 2):
            cyc = [statistics.median(res[(name, threads, m)]) for m in ROWS]
            shared, row = fit(list(ROWS), cyc)
            print(f"| {name} | {threads} | {cyc[0]:.1f} | {cyc[1]:.1f} | {cyc[4]:.1f} | {cyc[7]:.1f} | {shared:.1f} | "
                  f"{row:.2f} |", flush=True)


def memory(lib, reps):
    """gate+up of the 1.5B (17920 x 1536) from copies together larger than the caches, 2 threads."""
    rng = np.random.default_rng(0)
    pool = [quant_ref.random_weight("Q4_K", 17920, 1536, rng, extreme=False) for _ in range(4)]
    packs = [Packed(lib, w) for w in pool]
    spx = quant._default()
    torch.set_num_threads(2)
    res = {}
    for _ in range(reps):
        for m in (1, 5):
            x = torch.randn(m, 1536)
            q, dx, xs = quantize(x.numpy())
            for i in range(len(pool)):
                t = time.perf_counter()
                spx.matmul(x, [pool[i]], "q8")
                res.setdefault(("specx", m), []).append(time.perf_counter() - t)
                t = time.perf_counter()
                quantize(x.numpy())
                run(lib, packs[i], q, dx, xs, 2)
                res.setdefault(("lanes", m), []).append(time.perf_counter() - t)
    print("\nfrom memory, gate+up 17920 x 1536 Q4_K, 2 threads (median ms a call):")
    for name in ("specx", "lanes"):
        one, five = (statistics.median(res[(name, m)]) * 1e3 for m in (1, 5))
        print(f"  {name}: M=1 {one:.3f} ms ({pool[0].nbytes / one / 1e6:.1f} GB/s of weights), M=5 {five:.3f} ms, "
              f"M=5/M=1 {five / one:.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    a = ap.parse_args()
    lib = build()
    rates = core_rates()
    print(f"{os.uname().machine}; core clock {rates['ghz']:.2f} GHz; {quant._default().describe()}")
    check(lib)
    hot(lib, a.reps, a.calls, rates["ghz"])
    memory(lib, a.reps)


if __name__ == "__main__":
    main()
