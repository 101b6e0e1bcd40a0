"""Build and load q2k.c (with specx's AVX-512 VNNI flags), random valid Q2_K blocks, and its reference."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
CPU = HERE.parents[2] / "specx" / "cpu"
BYTES = 84   # one Q2_K block: 256 values
OPTIONS = ("-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma", "-mf16c", "-mavx512vnni")


def load(path: str = "/tmp/q2k.so", shift: int = 0) -> ctypes.CDLL:
    """shift: q2k.c's Q2K_SHIFT (1: the 2-bit fields shifted down; 0: masked in place)."""
    from specx.cpu.quant import FLAGS   # the flags specx builds quant.c with

    cmd = ["gcc", *FLAGS, *OPTIONS, f"-I{CPU}", f"-DQ2K_SHIFT={shift}", str(HERE / "q2k.c"), "-o", path]
    subprocess.run(cmd, check=True, capture_output=True)
    lib = ctypes.CDLL(path)
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    lib.spx_q2k_matmul.argtypes = [p, i64, i64, p, i64, p, ctypes.c_int32]
    lib.spx_q2k_matmul.restype = ctypes.c_int
    lib.spx_set_prefetch.argtypes = [i64]
    lib.spx_set_prefetch.restype = i64
    return lib


def random_q2k(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """rows × cols/256 random Q2_K blocks (flat uint8): random scales and quants, d and dmin finite f16."""
    n = rows * (cols // 256)
    blocks = rng.integers(0, 256, size=(n, BYTES), dtype=np.uint8)
    for off in (80, 82):
        d = (rng.uniform(0.2, 1.0, n) * 0.002 * rng.choice([-1.0, 1.0], n)).astype(np.float16)
        blocks[:, off:off + 2] = d.view(np.uint8).reshape(n, 2)
    return blocks.reshape(-1)


def matmul(lib, x: torch.Tensor, w: np.ndarray, rows: int, out: torch.Tensor | None = None) -> torch.Tensor:
    m, k = x.shape
    out = torch.empty(m, rows, dtype=torch.float32) if out is None else out
    status = lib.spx_q2k_matmul(x.data_ptr(), m, k, w.ctypes.data, rows, out.data_ptr(), torch.get_num_threads())
    assert status == 0, status
    return out


def dequantize(w: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """gguf's own Q2_K dequantization (the reference), float64."""
    from gguf import GGMLQuantizationType, quants

    return quants.dequantize(w.reshape(rows, cols // 256 * BYTES), GGMLQuantizationType.Q2_K).astype(np.float64)
