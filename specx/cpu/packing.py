"""Q4_0, Q4_K and Q6_K layer matrices packed 16 rows together at load, for the AVX-512 and AVX2 builds' q8 kernels
(quant_packed.h).

Why: a verify of 4-5 rows pays the q8 kernels' decoding of each weight group in full, and with 16 weight rows in a
vector's lanes that decoding nearly disappears (benchmarks/experiments/2026-11-30-packed). The packed matrix holds
the file's bytes rearranged (the same number of them), and the kernel computes quant.c's q8 arithmetic on it to
the bit, so a packed model's results are the unpacked one's. Only that kernel reads the layout: a matrix is
packed only where the loaded build has it (AVX-512, with AMX, whose prompt passes on the tiles are
quant_amx_packed.h; AVX2, with groups: quant_packed_avx2.h), only
for the q8 mode, and only where its rows are a multiple of 16 (the output layer's too: its rows are unpacked as they
are read). Packed Q4_K is laid out for q8 with groups (activations per 256 values, a group's sums as integers: quant.c's
KIND_G, `quant.Library.q8_groups`), so it is packed only where the build runs that. Q4_0 is what a model drafter's
wider layers are re-encoded to (decoder/reencode.py), rows of any whole number of blocks (the 0.5B's 896 values
too); on the file's layout its kernel decodes each block for every 8 rows and ran at under half of packed Q4_K's
multiply-adds a second at 17 rows (benchmarks/results/2026-11-30-q40).
`unpack` is the layout's reference (numpy), which tests hold the C packing to."""
from __future__ import annotations

import os

import numpy as np

from .qweight import BLOCKS, PACK_ROWS, PACKED, QWeight

FILE_TYPES = {BLOCKS[name][0]: packed for packed, name in PACKED.items()}   # the file's type -> its packed type
ENV = "SPECX_PACK"   # "0": keep the file's layout (benchmarks compare both ways; the results are the same)


def builds(lib) -> bool:
    """Whether this loaded build (quant.Library) runs packed matrices: AVX-512 or AVX2 (and SPECX_PACK is not 0)."""
    off = os.environ.get(ENV, "").strip() == "0"
    return lib is not None and not off and lib.lib.spx_build() & 3 in (1, 2)


def packable(w: QWeight, lib=None) -> bool:
    """A Q4_0, Q4_K or Q6_K matrix whose rows fill whole tiles, of a type `lib` (if given) has packed kernels for:
    the AVX-512 builds all three, Q4_K only where they run q8 with groups; the AVX2 builds all three where they run
    q8 with groups (quant_packed_avx2.h: Q6_K with groups only)."""
    if lib is not None and w.name not in types(lib):
        return False
    return w.type in FILE_TYPES and w.rows % PACK_ROWS == 0 and w.rows > 0


def types(lib) -> tuple[str, ...]:
    """The file types this build has packed kernels for."""
    build, grouped = lib.lib.spx_build() & 3, lib.q8_groups()
    if build == 2:
        return ("Q4_0", "Q6_K") + (("Q4_K",) if grouped else ())
    return ("Q4_0", "Q4_K", "Q6_K") if build == 1 and grouped else ()


def pack(lib, w: QWeight, out: np.ndarray) -> QWeight:
    """`w` packed into `out` (uint8, w.nbytes, writable): the C packing, a pass over the bytes."""
    if not packable(w) or out.dtype != np.uint8 or out.size != w.nbytes or not out.flags.writeable:
        raise ValueError(f"cannot pack a {w.name} {w.rows}x{w.cols} matrix into {out.size} bytes")
    packer = {"Q4_0": lib.lib.spx_pack_q40, "Q4_K": lib.lib.spx_pack_q4k, "Q6_K": lib.lib.spx_pack_q6k}[w.name]
    if packer(w.data.ctypes.data, w.rows, w.cols, out.ctypes.data):
        raise ValueError(f"the kernels refused to pack a {w.rows}x{w.cols} {w.name} matrix")
    return QWeight(FILE_TYPES[w.type], out, w.rows, w.cols)


# Q4_K's and Q6_K's lanes (quant_packed.h's pair_lane, pair_shift): rows o and o + 2 (o % 4 < 2) share lanes
# 4⌊o/4⌋ + 2(o % 2) + e, in the low and the high nibbles, e = 0, 1 holding values 8c + 4e .. + 3 of vector c
_LANES = np.array([[4 * (o // 4) + 2 * (o % 2) + e for e in range(2)] for o in range(PACK_ROWS)])
_SHIFTS = np.array([4 * ((o // 2) % 2) for o in range(PACK_ROWS)], np.uint8)


def unpack(w: QWeight) -> QWeight:
    """A packed matrix as the file holds it (numpy; quant_packed.h states the layouts)."""
    if w.name == "Q6_K":
        return _unpack_q6(w)
    if w.name == "Q4_0":
        return _unpack_q40(w)
    groups, tiles = w.cols // 256, w.rows // PACK_ROWS
    t = w.data.reshape(tiles, groups, 9, 256)                                        # group-major
    scales, vals = t[:, :, 0], t[:, :, 1:].reshape(tiles, groups, 8, 4, PACK_ROWS, 4)   # g j c o e
    out = np.empty((tiles, PACK_ROWS, groups, 144), np.uint8)
    out[..., 0:2] = scales[:, :, 0:32].reshape(tiles, groups, PACK_ROWS, 2).transpose(0, 2, 1, 3)
    out[..., 2:4] = scales[:, :, 32:64].reshape(tiles, groups, PACK_ROWS, 2).transpose(0, 2, 1, 3)
    out[..., 4:16] = scales[:, :, 64:].reshape(tiles, groups, 12, PACK_ROWS).transpose(0, 3, 1, 2)
    q = (vals[..., _LANES, :] >> _SHIFTS[:, None, None]) & 15                         # g j c o e k
    q = q.transpose(0, 4, 1, 2, 3, 5, 6).reshape(tiles, PACK_ROWS, groups, 8, 32)      # value 8c + 4e + k of block j
    out[..., 16:] = (q[..., 0::2, :] | (q[..., 1::2, :] << 4)).reshape(tiles, PACK_ROWS, groups, 128)
    return QWeight(BLOCKS["Q4_K"][0], out.reshape(-1), w.rows, w.cols)


def _unpack_q40(w: QWeight) -> QWeight:
    blocks, tiles = w.cols // 32, w.rows // PACK_ROWS
    order = sorted(range(blocks), key=lambda b: (b % 8, b // 8))   # the units in the tile: block-major
    units = w.data.reshape(tiles, blocks, 288)
    out = np.empty((tiles, PACK_ROWS, blocks, 18), np.uint8)
    for u, b in enumerate(order):
        out[:, :, b, 0:2] = units[:, u, 0:32].reshape(tiles, PACK_ROWS, 2)
        out[:, :, b, 2:18] = units[:, u, 32:].reshape(tiles, 4, PACK_ROWS, 4).transpose(0, 2, 1, 3).reshape(tiles, PACK_ROWS, 16)
    return QWeight(BLOCKS["Q4_0"][0], out.reshape(-1), w.rows, w.cols)


def _unpack_q6(w: QWeight) -> QWeight:
    groups, tiles = w.cols // 256, w.rows // PACK_ROWS
    t = w.data.reshape(tiles, groups, 3360)                                           # group-major
    scales = t[..., :288]
    vals = t[..., 288:].reshape(tiles, groups, 8, 384).transpose(0, 2, 1, 3)          # j g
    out = np.empty((tiles, PACK_ROWS, groups, 210), np.uint8)
    out[..., 208:210] = scales[:, :, 0:32].reshape(tiles, groups, PACK_ROWS, 2).transpose(0, 2, 1, 3)
    out[..., 192:208] = scales[:, :, 32:].reshape(tiles, groups, 16, PACK_ROWS).transpose(0, 3, 1, 2)
    low = vals[..., :256].reshape(tiles, 8, groups, 4, PACK_ROWS, 4)                 # j g c lane k
    high = vals[..., 256:].reshape(tiles, 8, groups, 2, PACK_ROWS, 4)                # j g nibble lane k
    lo = (low[..., _LANES, :] >> _SHIFTS[:, None, None]) & 15                         # j g c o e k
    top = high[:, :, :, _SHIFTS[:, None] // 4, _LANES, :]                             # j g o e k
    hi = np.stack([(top >> (2 * c)) & 3 for c in range(4)], axis=3)                   # j g c o e k
    q = (lo | (hi << 4)).transpose(0, 4, 2, 1, 3, 5, 6).reshape(tiles, PACK_ROWS, groups, 8, 32)   # o g j p
    for n in range(2):   # the file's ql and qh: block j = 4n + quarter
        for k in range(2):
            out[..., 64 * n + 32 * k:64 * n + 32 * k + 32] = (q[..., 4 * n + k, :] & 15) | ((q[..., 4 * n + 2 + k, :] & 15) << 4)
        out[..., 128 + 32 * n:160 + 32 * n] = sum((q[..., 4 * n + quarter, :] >> 4) << (2 * quarter) for quarter in range(4))
    return QWeight(BLOCKS["Q6_K"][0], out.reshape(-1), w.rows, w.cols)


def describe(names) -> str:
    """The kernels sentence's part on packed matrices of these types (their names)."""
    return f"{'/'.join(sorted(set(names)))} layers packed 16 rows together (one decoding serves a verify's rows, the same bits)"
