"""Round-to-nearest Q2_K quantization in numpy, to ggml's block_q2_K bytes (84 bytes per 256 values).

Per 16-value sub-block: its range [min(0, lo), hi] in 4 levels (scale = (hi - lo) / 3, min = -lo); the 16 scales
and 16 mins of a super-block as 4-bit integers under fp16 d and dmin (the largest of each / 15); then each value
rounded to the nearest level of its sub-block's quantized scale and min. Byte layout as dequantize_row_q2_K reads
it: scales[16] (low nibble scale, high nibble min), qs[64] (value 128h + 32j + 16s + l in byte 32h + 16s + l,
bits 2j), d, dmin."""
from __future__ import annotations

import numpy as np


def quantize_q2_k(x: np.ndarray) -> np.ndarray:
    """(rows, cols) float32, cols a multiple of 256 -> (rows * cols / 256 * 84,) uint8."""
    rows, cols = x.shape
    sub = x.reshape(-1, 16, 16).astype(np.float32)               # (blocks, sub-block, value)
    lo = np.minimum(sub.min(-1), 0.0)
    hi = sub.max(-1)
    scale, mins = (hi - lo) / 3.0, -lo
    d = (scale.max(-1) / 15.0).astype(np.float16)                # per block
    dmin = (mins.max(-1) / 15.0).astype(np.float16)
    d32, dmin32 = d.astype(np.float32), dmin.astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        sc = np.where(d32[:, None] > 0, np.rint(scale / d32[:, None]), 0).clip(0, 15).astype(np.uint8)
        mq = np.where(dmin32[:, None] > 0, np.rint(mins / dmin32[:, None]), 0).clip(0, 15).astype(np.uint8)
        dl = d32[:, None] * sc                                   # (blocks, 16) effective scale
        ml = dmin32[:, None] * mq
        q = np.where(dl[..., None] > 0, np.rint((sub + ml[..., None]) / dl[..., None]), 0).clip(0, 3)
    q = q.astype(np.uint8).reshape(-1, 2, 4, 2, 16)              # (block, h, j, s, l): value 128h+32j+16s+l
    qs = np.zeros((q.shape[0], 2, 2, 16), dtype=np.uint8)        # (block, h, s, l): byte 32h+16s+l
    for j in range(4):
        qs |= q[:, :, j] << (2 * j)
    out = np.empty((q.shape[0], 84), dtype=np.uint8)
    out[:, :16] = sc | (mq << 4)
    out[:, 16:80] = qs.reshape(-1, 64)
    out[:, 80:82] = d.view(np.uint8).reshape(-1, 2)
    out[:, 82:84] = dmin.view(np.uint8).reshape(-1, 2)
    return out.reshape(-1)


if __name__ == "__main__":   # round trip against gguf's dequantize
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    rng = np.random.default_rng(0)
    x = rng.standard_normal((64, 1536)).astype(np.float32) * 0.02
    back = dequantize(quantize_q2_k(x).reshape(64, -1), GGMLQuantizationType.Q2_K).reshape(x.shape)
    print("relative RMS error", float(np.sqrt(((back - x) ** 2).mean() / (x ** 2).mean())))
