"""A weight matrix as a GGUF file holds it: raw blocks of one ggml type, viewed without a copy.

`QWeight` is what the native kernels (quant.py) and the lean decoder pass between them; `reference`
is the rule every kernel is held to: the `gguf` package's dequantization, then a float64 matmul.
The sizes are checked here, in Python, before any kernel reads a byte (a short or corrupt tensor
is refused, never read past its end)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# ggml type ids (ggml.h; gguf.GGMLQuantizationType agrees) -> (values per block, bytes per block)
BLOCKS = {
    "F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20), "Q5_0": (6, 32, 22),
    "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q2_K": (10, 256, 84), "Q4_K": (12, 256, 144),
    "Q3_K": (11, 256, 110),
    "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "BF16": (30, 1, 2),
    "IQ4_NL": (20, 32, 18), "IQ4_XS": (23, 256, 136),
}
NAMES = {tid: name for name, (tid, _, _) in BLOCKS.items()}
# Not ggml types and never a file's: Q4_0, Q4_K and Q6_K with 16 rows packed together (cpu/quant_packed.h; made at
# load by cpu/packing.py for the one kernel that reads them). The same bytes as the rows; rows a multiple of 16.
Q4_0_P16, Q4_K_P16, Q6_K_P16, PACK_ROWS = 102, 112, 114, 16
PACKED = {Q4_0_P16: "Q4_0", Q4_K_P16: "Q4_K", Q6_K_P16: "Q6_K"}   # packed type -> the file's type


@dataclass(frozen=True)
class QWeight:
    """`rows` x `cols` weights (out_features x in_features, ggml's ne1 x ne0) of ggml type `type`
    (an id of BLOCKS), stored row after row as `data`: a flat uint8 array (a view of the file's map)."""

    type: int
    data: np.ndarray
    rows: int
    cols: int

    def __post_init__(self):
        check(self)

    @property
    def name(self) -> str:
        """The ggml type's name (a packed matrix's file type: its values are the file's)."""
        return PACKED.get(self.type) or NAMES.get(self.type, f"type {self.type}")

    @property
    def packed(self) -> bool:
        return self.type in PACKED

    @property
    def nbytes(self) -> int:
        return expected_bytes(self.type, self.rows, self.cols)


def expected_bytes(type_id: int, rows: int, cols: int) -> int:
    """Bytes a rows x cols tensor of that type occupies; ValueError for an unknown type or a row
    length that is not a whole number of blocks."""
    if type_id in PACKED:
        if rows % PACK_ROWS:
            raise ValueError(f"packed {PACKED[type_id]} needs a multiple of {PACK_ROWS} rows, not {rows}")
        type_id = BLOCKS[PACKED[type_id]][0]
    if type_id not in NAMES:
        raise ValueError(f"no kernel for ggml type {type_id}")
    _, per_block, size = BLOCKS[NAMES[type_id]]
    if rows < 0 or cols <= 0 or cols % per_block:
        raise ValueError(f"{NAMES[type_id]} rows of {cols} values are not whole blocks of {per_block}")
    return rows * (cols // per_block) * size


def reencoded_bytes(rows: int, cols: int, nbytes: int) -> int:
    """A drafter's layer matrix of `nbytes` once re-encoded (decoder/reencode.py): Q4_0's bytes where they are
    fewer and its rows whole Q4_0 blocks, else its own (it is kept as it is). The memory plan prices with it."""
    q4_0, per_block, _ = BLOCKS["Q4_0"]
    return nbytes if cols % per_block else min(nbytes, expected_bytes(q4_0, rows, cols))


def check(w: QWeight) -> None:
    """Refuse a weight whose bytes do not match its type and shape (never let a kernel read past them)."""
    if not isinstance(w.data, np.ndarray) or w.data.dtype != np.uint8 or w.data.ndim != 1:
        raise ValueError("weight data must be a flat uint8 array")
    if not w.data.flags.c_contiguous:
        raise ValueError("weight data must be contiguous")
    need = expected_bytes(w.type, w.rows, w.cols)
    if w.data.size != need:
        raise ValueError(f"{w.name} {w.rows}x{w.cols} needs {need} bytes, the tensor has {w.data.size}")


def dequantize(w: QWeight) -> np.ndarray:
    """(rows, cols) float32: the `gguf` package's dequantization (the reference values)."""
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize as gguf_dequantize

    if w.packed:
        from .packing import unpack

        w = unpack(w)
    if w.type == BLOCKS["F32"][0]:
        return w.data.view(np.float32).reshape(w.rows, w.cols).copy()
    if w.type == BLOCKS["F16"][0]:
        return w.data.view(np.float16).reshape(w.rows, w.cols).astype(np.float32)
    if w.type == BLOCKS["BF16"][0]:
        return (w.data.view(np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(w.rows, w.cols)
    blocks = w.data.reshape(w.rows, -1)
    return gguf_dequantize(blocks, GGMLQuantizationType(w.type)).reshape(w.rows, w.cols).astype(np.float32)


def reference(x: np.ndarray, weights: list[QWeight]) -> np.ndarray:
    """x (M, cols) @ [w0; w1; …]^T in float64, the weights dequantized by `gguf`: (M, sum of rows)."""
    x = np.asarray(x, dtype=np.float64)
    return np.concatenate([x @ dequantize(w).astype(np.float64).T for w in weights], axis=1)
