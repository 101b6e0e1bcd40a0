"""The decoder's linear layers and embedding lookup on QWeights: specx's native block kernels (cpu/quant.py)
where they are built, else a reference with the same signatures that dequantizes each fused group once
(the `gguf` package's values), keeps it as float32 and runs specx's row-exact float32 kernel (rowgemm),
so a row's result never depends on the other rows in either case."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from ..cpu.qweight import QWeight, dequantize

_dense: dict[tuple[int, ...], tuple[Sequence[QWeight], torch.Tensor]] = {}   # the reference's float32 copies
_native: list = []   # [module or None], resolved on first use


def _quant():
    if not _native:
        try:
            from ..cpu import quant
        except ImportError:
            quant = None
        _native.append(quant if quant is not None and quant.available() else None)
    return _native[0]


def describe() -> str:
    """Which linear runs: one sentence for the kernels line."""
    quant = _quant()
    if quant is not None:
        return quant.describe()
    from ..cpu import rowgemm

    exact = "rowgemm" if rowgemm.available() else "PyTorch's matmul (not row-exact)"
    return f"reference linear: weights dequantized to float32 once, {exact}"


def packer(mode: str):
    """The loaded kernel build where it runs packed matrices in this mode (q8, or q4: q8 on re-encoded layers;
    cpu/packing.py), else None."""
    quant = _quant()
    if quant is None or mode not in ("q8", "q4"):
        return None
    from ..cpu import packing

    lib = quant._library()
    return lib if packing.builds(lib) else None


def prompt_note(types: str, mode: str) -> str:
    """Which weight types ("Q4_K/Q6_K") run their prompt passes on AMX ("" when none, or on the reference)."""
    quant = _quant()
    return quant.prompt_note(types.split("/"), mode) if quant is not None else ""


def matmul(x: torch.Tensor, weights: Sequence[QWeight], mode: str = "f32") -> torch.Tensor:
    """x (M, cols) float32 @ [w0; w1; …]ᵀ → (M, sum of rows): one fused projection. The reference is
    exact float32 whatever `mode` asks (the native kernels' "q8" quantizes x per row)."""
    quant = _quant()
    if quant is not None:
        return quant.matmul(x, weights, mode)
    from ..cpu import rowgemm

    dense = _dequantized(weights)
    return rowgemm.linear(x, dense) if rowgemm.available() else x @ dense.T


def embed(w: QWeight, ids: torch.Tensor) -> torch.Tensor:
    """Rows `ids` of an embedding table, dequantized: (len(ids), cols) float32."""
    quant = _quant()
    if quant is not None:
        return quant.embed(w, ids)
    return torch.from_numpy(np.ascontiguousarray(dequantize(take_rows(w, ids.tolist()))))


def take_rows(w: QWeight, ids: Sequence[int]) -> QWeight:
    """A QWeight of the given rows (a copy of their blocks): embedding lookups, a trimmed output layer."""
    if w.packed:   # its rows as the file holds them (the layout interleaves 16 rows; only a kernel build packs)
        return _quant().unpack_rows(w, ids)
    per_row = w.nbytes // w.rows if w.rows else 0
    if any(not 0 <= i < w.rows for i in ids):
        raise IndexError(f"row ids outside 0..{w.rows - 1}")
    data = w.data.reshape(w.rows, per_row)[np.asarray(ids, dtype=np.int64)].reshape(-1)
    return QWeight(w.type, np.ascontiguousarray(data), len(ids), w.cols)


def _dequantized(weights: Sequence[QWeight]) -> torch.Tensor:
    key = tuple(id(w) for w in weights)
    if key not in _dense:   # the QWeights stay referenced here, so their ids stay theirs
        dense = np.concatenate([dequantize(w) for w in weights], axis=0)
        _dense[key] = (tuple(weights), torch.from_numpy(np.ascontiguousarray(dense, dtype=np.float32)))
    return _dense[key][1]
