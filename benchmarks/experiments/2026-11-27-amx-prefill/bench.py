"""AMX-INT8 Q4_K prototype (q4k_amx.c) against gguf's float64 reference and against specx's Q4_K q8 kernel.

Run from the worktree root: python benchmarks/experiments/2026-11-27-amx-prefill/bench.py [repeats]
Needs /tmp/q4k_amx.so (see README.md)."""
import ctypes
import os
import statistics
import sys
import time

import numpy as np
import torch
from gguf import quants, GGMLQuantizationType

from specx.cpu import quant
from specx.decoder.gguf_file import open_gguf

MODEL = os.path.expanduser("~/.cache/specx-fixture-models/qwen2.5-coder-1.5b.gguf")
LAYER = 2   # a layer whose seven projections are all Q4_K
SHAPES = {"gate+up 17920x1536": ["ffn_gate", "ffn_up"], "down 1536x8960": ["ffn_down"],
          "qkv 2048x1536": ["attn_q", "attn_k", "attn_v"]}

lib = ctypes.CDLL("/tmp/q4k_amx.so")
lib.q4k_amx_matmul.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64,
                               ctypes.c_void_p, ctypes.c_int]
lib.q4k_amx_quantize.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p]
assert lib.amx_init() == 0, "arch_prctl(ARCH_REQ_XCOMP_PERM) refused"


def amx(x, wbytes, n):
    y = torch.empty(x.shape[0], n, dtype=torch.float32)
    assert lib.q4k_amx_matmul(x.data_ptr(), x.shape[0], x.shape[1], wbytes.ctypes.data, n, y.data_ptr(), 2) == 0
    return y


def reference(x, wbytes, n, k):
    q = np.empty((x.shape[0], k), np.int8)
    s = np.empty((x.shape[0], k // 32), np.float32)
    lib.q4k_amx_quantize(x.data_ptr(), x.shape[0], k, q.ctypes.data, s.ctypes.data)
    xd = (q.reshape(len(q), -1, 32).astype(np.float64) * s[..., None].astype(np.float64)).reshape(len(q), k)
    wd = quants.dequantize(wbytes.reshape(n, -1), GGMLQuantizationType.Q4_K).astype(np.float64)
    return xd @ wd.T


def timed(fn, reps):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def main(reps):
    torch.set_num_threads(2)
    g = open_gguf(MODEL)
    rng = np.random.default_rng(0)
    for name, parts in SHAPES.items():
        ws = [g.weight(f"blk.{LAYER}.{p}.weight") for p in parts]
        assert all(w.type == 12 for w in ws)
        wbytes = np.ascontiguousarray(np.concatenate([np.asarray(w.data) for w in ws]))
        n, k = sum(w.rows for w in ws), ws[0].cols
        for m in (16, 64, 256):
            x = torch.from_numpy(rng.standard_normal((m, k), dtype=np.float32))
            y = amx(x, wbytes, n).double().numpy()
            ref = reference(x, wbytes, n, k)
            rel = np.abs(y - ref).max() / np.abs(ref).max()
            inv = bool(torch.equal(amx(x[:16].contiguous(), wbytes, n), torch.from_numpy(y[:16]).float()))
            spx = quant.matmul(x, ws, "q8").double().numpy()
            rel_spx = np.abs(spx - ref).max() / np.abs(ref).max()
            line = f"{name:20s} M={m:3d}  amx max|err|/max|ref| {rel:.1e} (specx {rel_spx:.1e}); rows 0-15 same alone: {inv}"
            if m >= 64:
                ta, ts = [], []
                for _ in range(reps):   # alternating
                    ta.append(timed(lambda: amx(x, wbytes, n), 1))
                    ts.append(timed(lambda: quant.matmul(x, ws, "q8"), 1))
                a, s = statistics.median(ta), statistics.median(ts)
                line += f"\n    ms: specx {s:.2f}  amx {a:.2f}  ratio {s / a:.2f}"
            print(line, flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
