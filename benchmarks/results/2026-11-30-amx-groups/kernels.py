"""One q8 matmul of random weights of the 1.5B's shapes at prompt-pass row counts, four ways in one process,
alternating, medians of 5: the file's layout per 32 values on AMX (quant_amx.h: what an AMX machine ran before) and
on the VNNI kernels, packed tiles with groups on the VNNI kernel (what a machine without AMX runs) and on AMX
(quant_amx_packed.h: this change). Prints multiply-adds a second (GMAC/s). Usage: python kernels.py [THREADS]"""
import sys
import time

import numpy as np
import torch

from specx.cpu import packing, quant, quant_ref

lib = quant.load("avx512", amx=True)
torch.set_num_threads(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
print(lib.describe(), "threads", torch.get_num_threads(), flush=True)
rng = np.random.default_rng(1)


def median_time(f, n=5):
    ts = []
    for _ in range(n):
        a = time.perf_counter()
        f()
        ts.append(time.perf_counter() - a)
    return sorted(ts)[n // 2]


for name, rows, cols, what in (("Q4_K", 17920, 1536, "gate+up"), ("Q4_K", 1536, 8960, "down"),
                               ("Q6_K", 1536, 8960, "down"), ("Q4_K", 2048, 1536, "q+k+v")):
    w = quant_ref.random_weight(name, rows, cols, rng)
    p = packing.pack(lib, w, np.empty(w.nbytes, np.uint8))
    for m in (32, 64, 100, 256):
        x = torch.randn(m, cols)
        res = {}
        for label, weight, amx, groups in (("file-amx-32", w, True, False), ("file-vnni-32", w, False, False),
                                           ("packed-vnni-g", p, False, None), ("packed-amx-g", p, True, None)):
            lib.use_amx(amx)
            res[label] = median_time(lambda: lib.matmul(x, [weight], "q8", groups=groups))
        macs = rows * cols * m
        print(f"{name} {what:8} {rows}x{cols} M={m:3}  " + "  ".join(f"{k} {macs / v / 1e9:4.0f}" for k, v in res.items())
              + f"  GMAC/s; packed-amx-g / file-amx-32 {res['file-amx-32'] / res['packed-amx-g']:.2f}x", flush=True)
