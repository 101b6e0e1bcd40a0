"""Float32 rows to Q2_K blocks (lowbit.c): the quantizer of a target's 2-bit copy of itself.

The C build is held bit for bit to lowbit_ref.quantize_q2_k (tests/test_lowbit.py); without a C compiler
the reference runs instead (the same bytes, several times slower). Sizes are checked here before C runs."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np

from . import build
from .lowbit_ref import BLOCK, BLOCK_BYTES, quantize_q2_k as reference

SOURCE = Path(__file__).with_name("lowbit.c")
FLAGS = ("-O3", "-fopenmp", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-lm")
_state: dict = {}


def quantize_q2_k(x: np.ndarray, threads: int | None = None) -> np.ndarray:
    """(rows, cols) float32, cols a multiple of 256 and every value finite -> (rows * cols / 256 * 84,) uint8,
    as lowbit_ref.quantize_q2_k gives."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] % BLOCK:
        raise ValueError(f"Q2_K rows must be whole blocks of {BLOCK} values, not shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("a row to quantize holds a value that is not finite")
    lib = _library()
    if lib is None:
        return reference(x)
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    n = x.size // BLOCK
    out = np.empty(n * BLOCK_BYTES, dtype=np.uint8)
    if n:
        lib.spx_quantize_q2_k(x.ctypes.data, n, out.ctypes.data, max(1, int(threads)))
    return out


def available() -> bool:
    return _library() is not None


def _library():
    if "lib" not in _state:
        _state["lib"] = None
        compiler = build.c_compiler()
        if compiler:
            try:
                lib, _ = build.library("lowbit", SOURCE, compiler, FLAGS)
            except (OSError, subprocess.SubprocessError):
                lib = None
            if lib is not None:
                lib.spx_quantize_q2_k.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32]
                lib.spx_quantize_q2_k.restype = None
                _state["lib"] = lib
    return _state["lib"]
