"""Float32 rows to Q2_K or Q4_0 blocks (lowbit.c): the quantizers of a target's 2-bit copy of itself and of a
model drafter's layers re-encoded to 4 bits (decoder/reencode.py).

The C build is held bit for bit to lowbit_ref's quantizers (tests/cpu/test_lowbit.py); without a C compiler
the reference runs instead (the same bytes, several times slower). Sizes are checked here before C runs."""
from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path

import numpy as np

from . import build
from .lowbit_ref import BLOCK, BLOCK_BYTES, Q4_0_BLOCK, Q4_0_BYTES, quantize_q2_k as reference
from .lowbit_ref import quantize_q4_0 as reference_q4_0

SOURCE = Path(__file__).with_name("lowbit.c")
FLAGS = ("-O3", "-fopenmp", "-ffp-contract=off", "-fno-fast-math", "-shared", "-fPIC", "-lm")
_state: dict = {}


def quantize_q2_k(x: np.ndarray, threads: int | None = None) -> np.ndarray:
    """(rows, cols) float32, cols a multiple of 256 and every value finite -> (rows * cols / 256 * 84,) uint8,
    as lowbit_ref.quantize_q2_k gives."""
    return _quantize(x, threads, "Q2_K", BLOCK, BLOCK_BYTES, reference, "spx_quantize_q2_k")


def quantize_q4_0(x: np.ndarray, threads: int | None = None) -> np.ndarray:
    """(rows, cols) float32, cols a multiple of 32 and every value finite -> (rows * cols / 32 * 18,) uint8,
    as lowbit_ref.quantize_q4_0 gives."""
    return _quantize(x, threads, "Q4_0", Q4_0_BLOCK, Q4_0_BYTES, reference_q4_0, "spx_quantize_q4_0")


def _quantize(x: np.ndarray, threads: int | None, name: str, block: int, size: int, ref, symbol: str) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] % block:
        raise ValueError(f"{name} rows must be whole blocks of {block} values, not shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("a row to quantize holds a value that is not finite")
    lib = _library()
    if lib is None:
        return ref(x)
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    n = x.size // block
    out = np.empty(n * size, dtype=np.uint8)
    if n:
        getattr(lib, symbol)(x.ctypes.data, n, out.ctypes.data, max(1, int(threads)))
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
                for fn in (lib.spx_quantize_q2_k, lib.spx_quantize_q4_0):
                    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int32]
                    fn.restype = None
                _state["lib"] = lib
    return _state["lib"]
