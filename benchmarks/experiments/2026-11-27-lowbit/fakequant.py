"""Fake quantization of float32 rows (numpy): quantize to a lower-bit GGUF-like format and return the float32
values it would dequantize to. Q3_K and Q2_K follow llama.cpp's reference layouts (ggml-quants.c):

- Q3_K (110 bytes per 256 values, 3.44 bpw): groups of 16 values, x ≈ d·s_g·q, q in -4..3 (3 bits), s_g a
  6-bit signed scale (-32..31) under an fp16 super-scale d per 256. The group's scale is found by
  make_qx_quants's weighted grid search (weights x², 19 candidate scales), as llama.cpp's imatrix path does;
  its default path refines by coordinate descent (make_q3_quants) instead.
- Q2_K (84 bytes per 256 values, 2.63 bpw): groups of 16, x ≈ d·s_g·q − dmin·m_g, q in 0..3, s_g and m_g 4-bit,
  fp16 d and dmin per 256; the group's scale and min by make_qkx2_quants (weights |x|, 16 candidates, each
  refit by weighted least squares, kept on least weighted absolute error), as quantize_row_q2_K_ref.
- Q4_0 (18 bytes per 32 values, 4.5 bpw): the `gguf` package's own quantizer (the sanity anchor).
"""
import numpy as np

BYTES_PER_VALUE = {"Q3_K": 110 / 256, "Q2_K": 84 / 256, "Q4_0": 18 / 32, "F32": 4.0}


def fp16(a):
    return a.astype(np.float16).astype(np.float32)


def ratio(a, b):
    """a / b, 0 where b is 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(b != 0, a / np.where(b != 0, b, 1), 0).astype(np.float32)


def make_qx_scales(x, nmax):
    """Per group (last axis): the scale minimizing Σ x²(x − scale·l)², l = clip(round(x·iscale), −nmax, nmax−1),
    over iscale = −(nmax + 0.1·i)/max for i in −9..9 (max: the group's value of largest magnitude)."""
    top = np.take_along_axis(x, np.abs(x).argmax(-1)[..., None], -1)
    w = x * x
    best_score, best_scale = np.full(x.shape[:-1], -np.inf, np.float32), np.zeros(x.shape[:-1], np.float32)
    for i in [0, *range(-9, 0), *range(1, 10)]:
        l = np.clip(np.rint(x * ratio(np.float32(-(nmax + 0.1 * i)), top)), -nmax, nmax - 1)
        sumlx, suml2 = (w * x * l).sum(-1), (w * l * l).sum(-1)
        scale = ratio(sumlx, suml2)
        better = (suml2 > 0) & (scale * sumlx > best_score)
        best_score, best_scale = np.where(better, scale * sumlx, best_score), np.where(better, scale, best_scale)
    return best_scale


def q3_k(m):
    x = m.reshape(-1, 16, 16)                                   # (superblocks, groups, values)
    s = make_qx_scales(x, 4)
    top = np.take_along_axis(s, np.abs(s).argmax(-1)[:, None], -1)   # the group scale of largest magnitude
    d = fp16(-top / 32)                                         # llama.cpp: iscale = −32/max_scale, d = 1/iscale
    dg = d * np.clip(np.rint(ratio(np.float32(-32), top) * s), -32, 31)
    q = np.clip(np.rint(ratio(x, dg[..., None])), -4, 3)
    return (dg[..., None] * q).reshape(m.shape)


def make_qkx2(x, w, nmax=3, rmin=-0.5, rdelta=0.1, nstep=15):
    """Per group: (scale, min ≤ 0) with x ≈ scale·l + min, l in 0..nmax, as llama.cpp's make_qkx2_quants."""
    lo, hi = np.minimum(x.min(-1), 0), x.max(-1)
    span = hi - lo
    sw, sx = w.sum(-1), (w * x).sum(-1)
    scale = span / nmax
    l = np.clip(np.rint(ratio(x - lo[..., None], scale[..., None])), 0, nmax)
    best = (w * np.abs(scale[..., None] * l + lo[..., None] - x)).sum(-1)
    for i in range(nstep + 1):
        l = np.clip(np.rint((x - lo[..., None]) * ratio(np.float32(rmin + rdelta * i + nmax), span)[..., None]), 0, nmax)
        sl, sl2, sxl = (w * l).sum(-1), (w * l * l).sum(-1), (w * l * x).sum(-1)
        det = sw * sl2 - sl * sl
        s, mn = ratio(sw * sxl - sx * sl, det), ratio(sl2 * sx - sl * sxl, det)
        s, mn = np.where(mn > 0, ratio(sxl, sl2), s), np.minimum(mn, 0)
        err = (w * np.abs(s[..., None] * l + mn[..., None] - x)).sum(-1)
        better = (det > 0) & (err < best) & (span > 0)
        best, scale, lo = np.where(better, err, best), np.where(better, s, scale), np.where(better, mn, lo)
    return np.where(span > 0, scale, 0), -lo


def q2_k(m):
    x = m.reshape(-1, 16, 16)
    s, mn = make_qkx2(x, np.abs(x))
    top, mtop = s.max(-1, keepdims=True), mn.max(-1, keepdims=True)
    dg = fp16(top / 15) * np.clip(np.rint(s * ratio(np.float32(15), top)), 0, 15)   # 4-bit scales under fp16 d
    mg = fp16(mtop / 15) * np.clip(np.rint(mn * ratio(np.float32(15), mtop)), 0, 15)  # ... and mins under dmin
    q = np.clip(np.rint(ratio(x + mg[..., None], dg[..., None])), 0, 3)
    return (dg[..., None] * q - mg[..., None]).reshape(m.shape)


def q4_0(m):
    from gguf import GGMLQuantizationType as T
    from gguf.quants import dequantize, quantize

    return dequantize(quantize(m, T.Q4_0), T.Q4_0).astype(np.float32)


QUANTIZERS = {"Q3_K": q3_k, "Q2_K": q2_k, "Q4_0": q4_0, "F32": lambda m: m}


def fake(m, fmt, rows=1024):
    """m (rows, cols) float32 → the same shape as `fmt` would dequantize it, in chunks of `rows` rows."""
    return np.concatenate([QUANTIZERS[fmt](np.ascontiguousarray(m[i:i + rows], np.float32))
                           for i in range(0, len(m), rows)])
