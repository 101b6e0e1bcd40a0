"""Q4_K layer matrices packed 16 rows together at load, for the AVX-512 build's q8 kernel (quant_packed.h).

Why: a verify of 4-5 rows pays the q8 kernels' decoding of each Q4_K group in full, and with 16 weight rows in a
vector's lanes that decoding nearly disappears (benchmarks/experiments/2026-11-30-packed). The packed matrix holds
the file's bytes rearranged (the same number of them), and the kernel computes quant.c's q8 arithmetic on it to
the bit, so a packed model's results are the unpacked one's. Only that kernel reads the layout: a matrix is
packed only where the loaded build has it (AVX-512, AMX off: AMX's prompt passes read the file's layout), only
for the q8 mode, and only where its rows are a multiple of 16; the embedding and output layers stay as they are.
`unpack` is the layout's reference (numpy), which tests hold the C packing to."""
from __future__ import annotations

import os

import numpy as np

from .qweight import BLOCKS, PACK_ROWS, Q4_K_P16, QWeight

Q4_K = BLOCKS["Q4_K"][0]
ENV = "SPECX_PACK"   # "0": keep the file's layout (benchmarks compare both ways; the results are the same)


def builds(lib) -> bool:
    """Whether this loaded build (quant.Library) runs packed matrices: AVX-512, with AMX off (and SPECX_PACK is
    not 0)."""
    off = os.environ.get(ENV, "").strip() == "0"
    return lib is not None and not off and lib.lib.spx_build() & 3 == 2 and not lib.amx_on()


def packable(w: QWeight) -> bool:
    """A Q4_K matrix whose rows fill whole tiles."""
    return w.type == Q4_K and w.rows % PACK_ROWS == 0 and w.rows > 0


def pack(lib, w: QWeight, out: np.ndarray) -> QWeight:
    """`w` packed into `out` (uint8, w.nbytes, writable): the C packing, a pass over the bytes."""
    if not packable(w) or out.dtype != np.uint8 or out.size != w.nbytes or not out.flags.writeable:
        raise ValueError(f"cannot pack a {w.name} {w.rows}x{w.cols} matrix into {out.size} bytes")
    if lib.lib.spx_pack_q4k(w.data.ctypes.data, w.rows, w.cols, out.ctypes.data):
        raise ValueError(f"the kernels refused to pack a {w.rows}x{w.cols} Q4_K matrix")
    return QWeight(Q4_K_P16, out, w.rows, w.cols)


def unpack(w: QWeight) -> QWeight:
    """A packed matrix as the file holds it (numpy; quant_packed.h states the layout)."""
    groups, tiles = w.cols // 256, w.rows // PACK_ROWS
    t = w.data.reshape(tiles, 9 * groups, 256)
    scales, vals = t[:, :groups], t[:, groups:].reshape(tiles, 8, groups, 4, PACK_ROWS, 4)   # j g c o e
    out = np.empty((tiles, PACK_ROWS, groups, 144), np.uint8)
    out[..., 0:2] = scales[:, :, 0:32].reshape(tiles, groups, PACK_ROWS, 2).transpose(0, 2, 1, 3)
    out[..., 2:4] = scales[:, :, 32:64].reshape(tiles, groups, PACK_ROWS, 2).transpose(0, 2, 1, 3)
    out[..., 4:16] = scales[:, :, 64:].reshape(tiles, groups, 12, PACK_ROWS).transpose(0, 3, 1, 2)
    q = vals.transpose(0, 4, 2, 1, 3, 5).reshape(tiles, PACK_ROWS, groups, 8, 16)   # value 4c + e of block j
    q = np.concatenate([q & 15, q >> 4], axis=-1)                                    # values 0..31 of block j
    out[..., 16:] = (q[..., 0::2, :] | (q[..., 1::2, :] << 4)).reshape(tiles, PACK_ROWS, groups, 128)
    return QWeight(Q4_K, out.reshape(-1), w.rows, w.cols)


def describe() -> str:
    """The kernels sentence's part on packed matrices."""
    return "Q4_K layers packed 16 rows together (one decoding serves a verify's rows, the same bits)"
