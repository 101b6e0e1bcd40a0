"""packed.c's one-row reading and prefetching as settings (set_mode): each setting against specx's kernel from memory.

    M=1 python prefetch_variants.py AHEAD,NEXT_T1,GROUPS_OUTER ...   e.g. 2048,0,0 2048,1,0 0,1,1

AHEAD: bytes the value stream is prefetched ahead into L1 (0: not); NEXT_T1: 1 brings the next tile into L2 in
order, an eighth of a group per step; GROUPS_OUTER: 1 runs one row with groups outer (nine streams) instead of a
sweep per block. Each setting reads every copy in turn (no copy twice in a row: the L3 would serve it)."""
import ctypes
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from specx.cpu import quant, quant_ref

import packed as P

HERE = Path(__file__).resolve().parent
M = int(os.environ.get("M", "1"))
subprocess.run(["cc", "-O3", "-march=native", "-ffp-contract=off", "-fopenmp", "-shared", "-fPIC",
                str(HERE / "packed.c"), "-o", "/tmp/prefetch_variants.so"], check=True)
lib = ctypes.CDLL("/tmp/prefetch_variants.so")
p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
lib.packed_bytes.argtypes, lib.packed_bytes.restype = [i64, i64], i64
lib.packed_repack.argtypes = [p, i64, i64, p]
lib.packed_matmul.argtypes = [p, i64, i64, i64, p, p, p, p, i64, i32]
lib.set_mode.argtypes = [i64, i32, i32]
rng = np.random.default_rng(0)
spx = quant._default()
# bits of the g-outer path
w = quant_ref.random_weight("Q4_K", 64, 1536, rng); pk = P.Packed(lib, w)
x = rng.standard_normal((1, 1536)).astype(np.float32)
lib.set_mode(2048, 1, 1); y = P.run(lib, pk, P.quantize(x), 2)
print("g-outer bits", np.array_equal(y, spx.matmul(torch.from_numpy(x), [w], "q8").numpy()))
shapes = {"gate_up": (17920, 1536), "down": (1536, 8960), "o": (1536, 1536)}
modes = [tuple(int(v) for v in m.split(",")) for m in sys.argv[1:]]
pools = {}
for name, (r, c) in shapes.items():
    n = max(2, int(150e6 // (r * c * 144 / 256)))
    ws = [quant_ref.random_weight("Q4_K", r, c, rng, extreme=False) for _ in range(n)]
    pools[name] = (ws, [P.Packed(lib, q) for q in ws])
res = {}
for rep in range(7):
    for name, (ws, ps) in pools.items():
        x = torch.randn(M, ws[0].cols)
        qx = P.quantize(x.numpy())
        out = np.empty((M, ws[0].rows), np.float32)
        for m in ["specx"] + modes:
            if m != "specx": lib.set_mode(*m)
            for w, pw in zip(ws, ps):
                s = time.perf_counter()
                if m == "specx": spx.matmul(x, [w], "q8")
                else: P.run(lib, pw, qx, 2, out)
                res.setdefault((name, m), []).append(time.perf_counter() - s)
for name, (ws, _) in pools.items():
    base = statistics.median(res[(name, "specx")])
    print(name, "specx %.1f GB/s" % (ws[0].nbytes / base / 1e9), "  ".join(f"{m}: {statistics.median(res[(name, m)]) / base:.3f}" for m in modes))
