"""The Q4_K outputs-in-lanes prototype with specx's own q8 arithmetic (packed.c) against specx's kernel: the
same bits, then cost per group hot and time from memory.

    python packed.py [--reps 5] [--calls 200]

1. Bits: the prototype's outputs against quant._default().matmul(x, [w], "q8") (and quant_ref.reference_q8)
   for 1..16 rows and row counts that leave a partial tile: equal bit for bit.
2. Hot (weights in L2: 512 x 1536; the fixed cost taken out with a 16 x 1536 call): cycles per 256-weight group
   per core, shared + M x row fitted on M = 1..8, both kernels, 1 and 2 threads, alternating.
3. From memory (2 threads): the 1.5B's gate+up shape (17920 x 1536) from copies larger than the caches, M = 1,
   4 and 5, alternating: ms a call (specx's time includes quantizing its activations, a few microseconds).
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
from row_floor import core_rates, fit
from specx.cpu import quant, quant_ref

ROWS = range(1, 9)
F32 = np.float32


def build():
    so = HERE / "packed.so"
    subprocess.run(["cc", "-O3", "-march=native", "-ffp-contract=off", "-fopenmp", "-shared", "-fPIC",
                    str(HERE / "packed.c"), "-o", str(so)], check=True)
    lib = ctypes.CDLL(str(so))
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
    lib.packed_bytes.argtypes, lib.packed_bytes.restype = [i64, i64], i64
    lib.packed_repack.argtypes = [p, i64, i64, p]
    lib.packed_matmul.argtypes = [p, i64, i64, i64, p, p, p, p, i64, i32]
    return lib


class Packed:
    def __init__(self, lib, w):
        self.n, self.k = w.rows, w.cols
        size = lib.packed_bytes(self.n, self.k)
        self.data = np.empty(size + 64, np.uint8)
        off = (-self.data.ctypes.data) % 64
        self.buf = self.data[off:off + size]
        lib.packed_repack(w.data.ctypes.data, self.n, self.k, self.buf.ctypes.data)


def quantize(x: np.ndarray):
    """specx's q8 activations (quant_ref.quantize_rows): int8 rows, each block's scale dx and dx·Σq."""
    q, d = quant_ref.quantize_rows(x)
    xs = (d * q.sum(axis=-1).astype(F32)).astype(F32)
    return (np.ascontiguousarray(q.reshape(x.shape[0], -1).astype(np.int8)), np.ascontiguousarray(d),
            np.ascontiguousarray(xs))


def run(lib, pk, qx, threads, out=None):
    q, dx, xs = qx
    m = q.shape[0]
    y = out if out is not None else np.empty((m, pk.n), F32)
    lib.packed_matmul(pk.buf.ctypes.data, pk.n, pk.k, m, q.ctypes.data, dx.ctypes.data, xs.ctypes.data,
                      y.ctypes.data, pk.n, threads)
    return y


def check(lib):
    rng = np.random.default_rng(1)
    spx = quant._default()
    same = True
    for rows, cols in ((64, 1536), (37, 512), (5, 2304)):
        for extreme in (False, True):
            w = quant_ref.random_weight("Q4_K", rows, cols, rng, extreme=extreme)
            pk = Packed(lib, w)
            for m in (1, 2, 3, 5, 8, 9, 16):
                x = rng.standard_normal((m, cols)).astype(F32)
                y = run(lib, pk, quantize(x), 2)
                want = spx.matmul(torch.from_numpy(x), [w], "q8").numpy()
                ok = np.array_equal(y, want) and np.array_equal(y, quant_ref.reference_q8(x, [w]))
                if not ok:
                    print(f"DIFFER rows {rows} cols {cols} extreme {extreme} m {m}: max |d| "
                          f"{np.abs(y - want).max():.3e}")
                same &= ok
    print(f"bits: the prototype equals specx's q8 kernel and quant_ref bit for bit: {same}")


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
                qx = quantize(x.numpy())
                out = np.empty((m, 512), F32)
                kernels = (("specx", lambda x=x: spx.matmul(x, [big], "q8"), lambda x=x: spx.matmul(x, [small], "q8")),
                           ("packed", lambda qx=qx, t=threads, out=out: run(lib, pbig, qx, t, out),
                            lambda qx=qx, t=threads: run(lib, psmall, qx, t)))
                for name, f_big, f_small in kernels:
                    f_big()
                    cyc = (best(f_big, calls) - best(f_small, calls)) * ghz * 1e9 / (groups / threads)
                    res.setdefault((name, threads, m), []).append(cyc)
    torch.set_num_threads(2)
    print("\nhot, cycles per 256-weight group per core (medians of the repeats):")
    print("| kernel | threads | M=1 | M=2 | M=4 | M=5 | M=8 | shared | row |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in ("specx", "packed"):
        for threads in (1, 2):
            cyc = [statistics.median(res[(name, threads, m)]) for m in ROWS]
            shared, row = fit(list(ROWS), cyc)
            print(f"| {name} | {threads} | {cyc[0]:.1f} | {cyc[1]:.1f} | {cyc[3]:.1f} | {cyc[4]:.1f} | {cyc[7]:.1f} | "
                  f"{shared:.1f} | {row:.2f} |", flush=True)


def memory(lib, reps):
    rng = np.random.default_rng(0)
    pool = [quant_ref.random_weight("Q4_K", 17920, 1536, rng, extreme=False) for _ in range(4)]
    packs = [Packed(lib, w) for w in pool]
    spx = quant._default()
    torch.set_num_threads(2)
    res = {}
    for _ in range(reps):
        for m in (1, 4, 5):
            x = torch.randn(m, 1536)
            qx = quantize(x.numpy())
            out = np.empty((m, 17920), F32)
            for i in range(len(pool)):
                t = time.perf_counter()
                spx.matmul(x, [pool[i]], "q8")
                res.setdefault(("specx", m), []).append(time.perf_counter() - t)
                t = time.perf_counter()
                run(lib, packs[i], qx, 2, out)
                res.setdefault(("packed", m), []).append(time.perf_counter() - t)
    print("\nfrom memory, gate+up 17920 x 1536 Q4_K, 2 threads (median ms a call):")
    for name in ("specx", "packed"):
        t = {m: statistics.median(res[(name, m)]) * 1e3 for m in (1, 4, 5)}
        print(f"  {name}: M=1 {t[1]:.3f} ms ({pool[0].nbytes / t[1] / 1e6:.1f} GB/s of weights), M=4 {t[4]:.3f}, "
              f"M=5 {t[5]:.3f} ms; M=4/M=1 {t[4] / t[1]:.2f}, M=5/M=1 {t[5] / t[1]:.2f}")
    for m in (1, 4, 5):
        r = [b / a for a, b in zip(res[("specx", m)], res[("packed", m)])]
        print(f"  packed / specx at M={m}: {statistics.median(r):.3f} (paired calls)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--only", default="check,hot,memory")
    a = ap.parse_args()
    lib = build()
    rates = core_rates()
    print(f"{os.uname().machine}; core clock {rates['ghz']:.2f} GHz; {quant._default().describe()}")
    if "check" in a.only:
        check(lib)
    if "hot" in a.only:
        hot(lib, a.reps, a.calls, rates["ghz"])
    if "memory" in a.only:
        memory(lib, a.reps)


if __name__ == "__main__":
    main()
