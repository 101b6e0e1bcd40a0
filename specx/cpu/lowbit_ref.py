"""Round-to-nearest Q2_K and Q4_0 quantization in numpy: the reference lowbit.c is held to, bit for bit.

The rule (benchmarks/experiments/2026-11-27-lowbit-run/q2k_quant.py, with zeros and NaN ratios made
definite): per 16-value sub-block, its range [min(lo, 0), hi] in 4 levels (scale = (hi - lo) / 3,
min = 0 - lo); the 16 scales and 16 mins of a super-block as 4-bit integers under fp16 d and dmin (the
largest of each / 15, + 0 so that a zero is +0); then each value rounded (half to even) to the nearest
level of its sub-block's quantized scale and min; a NaN ratio (0/0, inf/inf) is level 0. Every step is
one float32 operation. Byte layout as ggml's dequantize_row_q2_K reads it (84 bytes per 256 values):
scales[16] (low nibble scale, high nibble min), qs[64] (value 128h + 32j + 16s + l in byte 32h + 16s + l,
bits 2j), d, dmin."""
from __future__ import annotations

import numpy as np

BLOCK, BLOCK_BYTES = 256, 84
Q4_0_BLOCK, Q4_0_BYTES = 32, 18


def _levels(ratio: np.ndarray, top: int) -> np.ndarray:
    return np.clip(np.rint(np.nan_to_num(ratio, nan=0.0, posinf=top, neginf=0.0)), 0, top).astype(np.uint8)


def _levels_of(sub: np.ndarray):
    """(blocks, 16 sub-blocks, 16 values) -> the 4-bit scales and mins, fp16 d and dmin, 2-bit levels."""
    lo = np.minimum(sub.min(-1), np.float32(0))
    hi = sub.max(-1)
    scale, mins = (hi - lo) / np.float32(3), np.float32(0) - lo
    d = (scale.max(-1) / np.float32(15) + np.float32(0)).astype(np.float16)   # per block
    dmin = (mins.max(-1) / np.float32(15) + np.float32(0)).astype(np.float16)
    d32, dmin32 = d.astype(np.float32)[:, None], dmin.astype(np.float32)[:, None]
    sc = np.where(d32 > 0, _levels(scale / d32, 15), 0).astype(np.uint8)
    mq = np.where(dmin32 > 0, _levels(mins / dmin32, 15), 0).astype(np.uint8)
    dl = d32 * sc.astype(np.float32)                             # (blocks, 16) effective scale
    ml = dmin32 * mq.astype(np.float32)
    q = np.where(dl[..., None] > 0, _levels((sub + ml[..., None]) / dl[..., None], 3), 0)
    return sc, mq, d, dmin, q


def quantize_q2_k(x: np.ndarray) -> np.ndarray:
    """(rows, cols) float32, cols a multiple of 256 -> (rows * cols / 256 * 84,) uint8."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # huge rows: inf ranges, NaN ratios
        sc, mq, d, dmin, q = _levels_of(np.asarray(x, dtype=np.float32).reshape(-1, 16, 16))
    q = q.astype(np.uint8).reshape(-1, 2, 4, 2, 16)              # (block, h, j, s, l): value 128h+32j+16s+l
    qs = np.zeros((q.shape[0], 2, 2, 16), dtype=np.uint8)        # (block, h, s, l): byte 32h+16s+l
    for j in range(4):
        qs |= q[:, :, j] << (2 * j)
    out = np.empty((q.shape[0], BLOCK_BYTES), dtype=np.uint8)
    out[:, :16] = sc | (mq << 4)
    out[:, 16:80] = qs.reshape(-1, 64)
    out[:, 80:82] = d.view(np.uint8).reshape(-1, 2)
    out[:, 82:84] = dmin.view(np.uint8).reshape(-1, 2)
    return out.reshape(-1)


def quantize_q4_0(x: np.ndarray) -> np.ndarray:
    """(rows, cols) float32, cols a multiple of 32 -> (rows * cols / 32 * 18,) uint8: ggml's quantize_row_q4_0_ref
    (per block, the value of largest magnitude, the first of equals, gives d = max / -8, stored as fp16; id = 1 / d
    in float32, 0 where the fp16 d is 0 (lowbit.c says why); each value min(15, trunc(x * id + 8.5)), values j
    and j + 16 in byte j's low and high nibble)."""
    v = np.asarray(x, dtype=np.float32).reshape(-1, Q4_0_BLOCK)
    peak = v[np.arange(len(v)), np.abs(v).argmax(1)]
    peak = np.where(np.abs(peak) > 0, peak, np.float32(0))   # a block of zeros: +0, as ggml's max starts
    d = peak / np.float32(-8)
    with np.errstate(divide="ignore", over="ignore"):   # a huge d: an infinite half, as ggml stores it
        half = d.astype(np.float16)
        inv = np.where(half != 0, np.float32(1) / d, np.float32(0)).astype(np.float32)
    q = np.minimum(np.trunc(v * inv[:, None] + np.float32(8.5)), 15).astype(np.uint8)
    out = np.empty((len(v), Q4_0_BYTES), dtype=np.uint8)
    out[:, :2] = half.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.reshape(-1)
