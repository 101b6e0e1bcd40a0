"""A matmul call checked before quant.c runs: x's dtype, shape and layout, each weight's blocks (qweight.check), the
fused weights' shared width and `out`'s shape, so that no size or type reaches the C code unchecked. A weight group's
ctypes arrays are kept while the group lives (a decoder calls the same groups every step), keyed by the weights'
id()s and held by weak references, so a freed group's id() reused by another never returns stale arrays."""
from __future__ import annotations

import ctypes
import weakref
from typing import Sequence

import torch

from .qweight import QWeight, check

_seen: dict[tuple[int, ...], tuple] = {}   # id()s of a weight group -> weak refs to it, its ctypes arrays
_SEEN_MAX = 4096


def arrays(weights: Sequence[QWeight], x, out) -> tuple[tuple, int]:
    """Check the call (ValueError before any C runs) and return the group's ctypes arrays (types, data, rows) and
    Σ rows."""
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() != 2 or not x.is_cpu:
        raise ValueError("x must be a 2-D float32 tensor on the CPU")
    if not x.is_contiguous():
        raise ValueError("x must be contiguous")
    weights = tuple(weights)
    if not weights:
        raise ValueError("matmul needs at least one weight")
    key = tuple(id(w) for w in weights)
    entry = _seen.get(key)
    if entry is None or any(ref() is not w for ref, w in zip(entry[0], weights)):
        for w in weights:
            if not isinstance(w, QWeight):
                raise ValueError(f"weights must be QWeight, not {type(w).__name__}")
            check(w)
        if len({w.cols for w in weights}) > 1:
            raise ValueError(f"fused weights must share cols, not {sorted({w.cols for w in weights})}")
        n = len(weights)
        arrays = ((ctypes.c_int32 * n)(*(w.type for w in weights)),
                  (ctypes.c_void_p * n)(*(w.data.ctypes.data for w in weights)),
                  (ctypes.c_int64 * n)(*(w.rows for w in weights)))
        if len(_seen) >= _SEEN_MAX:
            _seen.clear()
        refs = tuple(weakref.ref(w) for w in weights)
        entry = _seen[key] = (refs, arrays, sum(w.rows for w in weights), weights[0].cols)
    _, arrays, n, cols = entry
    if x.shape[1] != cols:
        raise ValueError(f"x has {x.shape[1]} columns, the weights {cols}")
    if out is not None and (not isinstance(out, torch.Tensor) or out.dtype != torch.float32
                            or tuple(out.shape) != (x.shape[0], n) or not out.is_contiguous() or not out.is_cpu):
        raise ValueError(f"out must be a contiguous float32 CPU tensor of shape ({x.shape[0]}, {n})")
    return arrays, n
