"""The q8 mode of quant.c written out in numpy: the reference its kernels equal bit for bit, and the
random valid weights the tests and benchmarks use.

q8 (quant.c states the rules): each row of X is quantized per 32 values, d = amax/127, q = rint(x·(1/d));
each weight block is an integer vector and one or two floats (`weight_ints`, which reproduce gguf's
dequantization exactly: a test holds them together); a block's integer dot product `isum` is exact, its
contribution v is formed in float32 by one formula per type family, added to lane (block mod 8) of 8
float32 sums, and the 8 sums are reduced by a fixed tree."""
from __future__ import annotations

import numpy as np

from .qweight import BLOCKS, QWeight, dequantize

F32 = np.float32
_TYPE = {name: tid for name, (tid, _, _) in BLOCKS.items()}


def quantize_rows(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """x (M, K) float32, K a multiple of 32 → q (M, K/32, 32) int64 in -127..127, d (M, K/32) float32."""
    blocks = np.asarray(x, dtype=F32).reshape(x.shape[0], -1, 32)
    amax = np.abs(blocks).max(axis=-1)
    d = (amax / F32(127)).astype(F32)
    with np.errstate(divide="ignore"):
        inv = np.where(d != 0, F32(1) / d, F32(0)).astype(F32)
    v = (blocks * inv[..., None]).astype(F32)
    q = np.rint(np.clip(v, F32(-127), F32(127))).astype(np.int64)
    return q, d


def weight_ints(w: QWeight) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(kind, q (rows, nb, 32) int64, a (rows, nb) float32, b (rows, nb) float32, sc16 (rows, nb, 2) or None)
    with gguf's values w = a·q (S), a·q + b (SM), a·q − b (KM), (a·sc16)·q per 16 values (Q6_K)."""
    name = w.name
    _, per, size = BLOCKS[name]
    raw = w.data.reshape(w.rows, -1, size)
    half = lambda off: raw[..., off:off + 2].copy().view(np.float16)[..., 0].astype(F32)   # noqa: E731
    if name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0"):
        one = name in ("Q4_1", "Q5_1")
        a, b = half(0), half(2) if one else np.zeros(raw.shape[:2], F32)
        if name == "Q8_0":
            return "S", raw[..., 2:].view(np.int8).astype(np.int64), a, b, None
        qs = raw[..., -16:].astype(np.int64)
        q = np.concatenate([qs & 15, qs >> 4], axis=-1)
        if name.startswith("Q5"):
            qh = raw[..., 2 + 2 * one:6 + 2 * one].copy().view(np.uint32).astype(np.int64)
            q |= ((qh >> np.arange(32)) & 1) << 4
        return ("SM" if one else "S"), q - (0 if one else 8 if name == "Q4_0" else 16), a, b, None
    nsb = raw.shape[1]
    if name in ("Q4_K", "Q5_K"):
        d, dmin = half(0), half(2)
        s = raw[..., 4:16].astype(np.int64)
        sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 15) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
        m = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
        qs = raw[..., -128:].astype(np.int64).reshape(w.rows, nsb, 4, 1, 32) >> np.array([0, 4]).reshape(2, 1)
        q = (qs & 15).reshape(w.rows, nsb, 8, 32)
        if name == "Q5_K":
            qh = raw[..., 16:48].astype(np.int64)
            q = q | (((qh[:, :, None, :] >> np.arange(8)[:, None]) & 1) << 4)
        a = (d[..., None] * sc.astype(F32)).astype(F32)
        b = (dmin[..., None] * m.astype(F32)).astype(F32)
        return "KM", q.reshape(w.rows, -1, 32), a.reshape(w.rows, -1), b.reshape(w.rows, -1), None
    # Q6_K
    ql = raw[..., :128].astype(np.int64).reshape(w.rows, nsb, 2, 1, 64) >> np.array([0, 4]).reshape(2, 1)
    ql = (ql & 15).reshape(w.rows, nsb, 2, 4, 32)
    qh = raw[..., 128:192].astype(np.int64).reshape(w.rows, nsb, 2, 1, 32) >> np.array([0, 2, 4, 6]).reshape(4, 1)
    q = (ql | ((qh & 3) << 4)).reshape(w.rows, -1, 32) - 32
    sc16 = raw[..., 192:208].view(np.int8).astype(np.int64).reshape(w.rows, -1, 2)
    d = np.repeat(half(208), 8, axis=1)
    return "S", q, d, np.zeros_like(d), sc16


def reconstruct(w: QWeight) -> np.ndarray:
    """gguf's float32 values rebuilt from weight_ints (equal to qweight.dequantize bit for bit)."""
    kind, q, a, b, sc16 = weight_ints(w)
    qf = q.astype(F32)
    if sc16 is not None:
        scale = (a[..., None] * sc16.astype(F32)).astype(F32)
        out = np.repeat(scale, 16, axis=-1) * qf
    else:
        out = a[..., None] * qf
        if kind == "SM":
            out = out + b[..., None]
        elif kind == "KM":
            out = out - b[..., None]
    return out.astype(F32).reshape(w.rows, w.cols)


def reference_q8(x: np.ndarray, weights: list[QWeight]) -> np.ndarray:
    """What quant.matmul(x, weights, "q8") returns, computed in numpy: (M, Σ rows) float32."""
    x = np.asarray(x, dtype=F32)
    return np.concatenate([_q8_one(x, w) for w in weights], axis=1)


def _q8_one(x: np.ndarray, w: QWeight) -> np.ndarray:
    if w.name in ("F32", "F16", "BF16"):
        raise ValueError("float weights have no q8 mode")
    xq, dx = quantize_rows(x)
    xs = (dx * xq.sum(axis=-1).astype(F32)).astype(F32)
    kind, q, a, b, sc16 = weight_ints(w)
    if sc16 is not None:   # Q6_K: integer sub-scales per 16 values inside the block's sum
        halves = np.einsum("mbhp,nbhp->mnbh", xq.reshape(*xq.shape[:2], 2, 16).astype(np.float64),
                           q.reshape(*q.shape[:2], 2, 16).astype(np.float64)).astype(np.int64)
        isum = (halves * sc16[None]).sum(axis=-1)
    else:
        isum = np.einsum("mbp,nbp->mnb", xq.astype(np.float64), q.astype(np.float64)).astype(np.int64)
    nb = isum.shape[-1]
    pad = -nb % 8
    isum = np.pad(isum, ((0, 0), (0, 0), (0, pad))).astype(F32)
    a, b = (np.pad(v, ((0, 0), (0, pad)))[None] for v in (a, b))
    dx, xs = (np.pad(v, ((0, 0), (0, pad)))[:, None] for v in (dx, xs))
    t = (a * dx).astype(F32)
    v = (isum * t).astype(F32)
    if kind == "SM":
        v = (v + (b * xs).astype(F32)).astype(F32)
    elif kind == "KM":
        v = (v - (b * xs).astype(F32)).astype(F32)
    acc = np.zeros(v.shape[:2] + (8,), F32)
    for s in range(0, v.shape[-1], 8):
        acc = (acc + v[..., s:s + 8]).astype(F32)
    return (((acc[..., 0] + acc[..., 4]) + (acc[..., 2] + acc[..., 6]))
            + ((acc[..., 1] + acc[..., 5]) + (acc[..., 3] + acc[..., 7]))).astype(F32)


def error_bound(x: np.ndarray, weights: list[QWeight]) -> np.ndarray:
    """Σ|x||w| per output (M, Σ rows): the scale of float rounding in a dot product."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    return np.concatenate([x @ np.abs(dequantize(w).astype(np.float64)).T for w in weights], axis=1)


# ---------------------------------------------------------------- random valid weights

SCALES = {   # byte offsets of each block's half-float scales (random bytes would give NaN/inf halves)
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,),
    "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
}


def random_weight(name: str, rows: int, cols: int, rng: np.random.Generator, extreme: bool = True) -> QWeight:
    """rows × cols of type `name`: random blocks with finite scales, about 0.01 in size; with `extreme`
    some blocks get zero, the largest and the smallest (subnormal) half scales."""
    tid, per, size = BLOCKS[name]
    n = rows * (cols // per)
    if name == "F32":
        data = rng.standard_normal(n, dtype=F32).view(np.uint8)
    elif name == "F16":
        data = rng.standard_normal(n).astype(np.float16).view(np.uint8)
    elif name == "BF16":
        data = (rng.standard_normal(n, dtype=F32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    else:
        blocks = rng.integers(0, 256, size=(n, size), dtype=np.uint8)
        for off in SCALES[name]:
            d = rng.uniform(0.2, 1.0, n) * (0.02 if per == 32 else 0.002) * rng.choice([-1.0, 1.0], n)
            if extreme:
                pick = rng.random(n)
                d[pick < 0.05] = 0
                d[(pick >= 0.05) & (pick < 0.08)] = 65504.0
                d[(pick >= 0.08) & (pick < 0.11)] = 2.0 ** -24
            d = d.astype(np.float16)
            blocks[:, off:off + 2] = d.view(np.uint8).reshape(n, 2)
        data = blocks.reshape(-1)
    return QWeight(tid, np.ascontiguousarray(data), rows, cols)
