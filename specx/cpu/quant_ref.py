"""The q8 mode of quant.c written out in numpy: the reference its kernels equal bit for bit, and the
random valid weights the tests and benchmarks use.

q8 (quant.c states the rules): each row of X is quantized per 32 values, d = amax/127, q = rint(x·(1/d));
each weight block is a vector of integers and one or two floats (`weight_ints`, which reproduce gguf's
dequantization exactly: a test holds them together); the integer dot product S of each half block (16
values) is exact; then, in float32, acc[lane] = fma(S, a·dx, acc[lane]) over 16 lanes (block mod 8, half),
for blocks with a min or offset accb[block mod 8] = fma(b, xs, accb) (Q2_K, whose mins are per 16 values:
accb[lane] = fma(b, xh, accb[lane]), xh = dx·Σq over the half block), and fixed trees reduce the lanes.
Q4_K with groups (quant.c's KIND_G, MODE_Q8K): X quantized per 256 values, per group the exact S = Σ_j sc_j·S_j
and M = Σ_j m_j·Σq_j, then acc = fma(S, d·D, acc), acc = fma(−M, dmin·D, acc) over the groups in order; Q6_K with
groups (KIND_G6): per group S = Σ_i sc_i·S_i over its 16 scales (S_i over 16 values, weights q − 32), then
acc = fma(S, d·D, acc)."""
from __future__ import annotations

import numpy as np

from .qweight import BLOCKS, QWeight, dequantize

F32 = np.float32
# IQ4_NL / IQ4_XS: the 16 values a 4-bit index picks (ggml's kvalues_iq4nl; quant.c's IQ4_VALUES)
IQ4_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113])
_TYPE = {name: tid for name, (tid, _, _) in BLOCKS.items()}


def quantize_rows(x: np.ndarray, per: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """x (M, K) float32, K a multiple of `per` (32, or 256 for KIND_G) → q (M, K/per, per) int64 in -127..127,
    d (M, K/per) float32 (a block holding a NaN or an infinity: d NaN, q 0)."""
    blocks = np.asarray(x, dtype=F32).reshape(x.shape[0], -1, per)
    bad = ~np.isfinite(blocks).all(axis=-1)   # a NaN or infinity: scale NaN, q 0
    blocks = np.where(bad[..., None], F32(0), blocks)
    amax = np.abs(blocks).max(axis=-1)
    d = (amax / F32(127)).astype(F32)
    with np.errstate(divide="ignore", over="ignore"):
        inv = np.where(d != 0, F32(1) / d, F32(0)).astype(F32)
    inv = np.where(np.isfinite(inv), inv, F32(0))   # 1/d overflowed (d below 2^-128): the block's q are 0
    v = (blocks * inv[..., None]).astype(F32)
    q = np.rint(np.clip(v, F32(-127), F32(127))).astype(np.int64)
    return q, np.where(bad, F32(np.nan), d).astype(F32)


def weight_ints(w: QWeight) -> tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(kind, q (rows, nb, 32) int64, a (rows, nb) float32, b (rows, nb) float32, sc16 (rows, nb, 2) or None)
    with gguf's values w = a·q (S), a·q + b (SM), a·q − b (KM), (a·sc16)·q per 16 values (Q6_K; Q3_K: a = d,
    sc16 = its 6-bit scale − 32, q in −4..3); for Q2_K (kind K2) a and b are (rows, nb, 2), one per 16 values,
    w = a·q − b; IQ4_NL and IQ4_XS are S with q from IQ4_VALUES (−127..113)."""
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
    if name in ("IQ4_NL", "IQ4_XS"):   # q = IQ4_VALUES[nibble]: qs[16s + l] holds values 32s + l and 32s + 16 + l
        xs = name == "IQ4_XS"
        qs = raw[..., 8 if xs else 2:].astype(np.int64).reshape(w.rows, -1, 1, 16) >> np.array([0, 4]).reshape(2, 1)
        q = IQ4_VALUES[(qs & 15).reshape(w.rows, -1, 32)]
        a = half(0)
        if xs:   # sub-block s: a = d·(ls − 32), ls = 4 bits of scales_l[s/2] | 2 bits of scales_h << 4
            lo = raw[..., 4:8].astype(np.int64)[..., :, None] >> np.array([0, 4])
            hi = raw[..., 2:4].copy().view(np.uint16).astype(np.int64) >> (2 * np.arange(8))
            ls = (lo.reshape(w.rows, nsb, 8) & 15) | ((hi & 3) << 4)
            a = (a[..., None] * (ls - 32).astype(F32)).astype(F32).reshape(w.rows, -1)
        return "S", q, a, np.zeros_like(a), None
    if name == "Q2_K":   # value 128n + 32s + l: bits 2s..2s+1 of qs[32n + l]; scales per 16 values
        qs = raw[..., 16:80].astype(np.int64).reshape(w.rows, nsb, 2, 1, 32) >> np.array([0, 2, 4, 6]).reshape(4, 1)
        sc = raw[..., :16].astype(np.int64).reshape(w.rows, -1, 2)
        a = (np.repeat(half(80), 8, axis=1)[..., None] * (sc & 15).astype(F32)).astype(F32)
        b = (np.repeat(half(82), 8, axis=1)[..., None] * (sc >> 4).astype(F32)).astype(F32)
        return "K2", (qs & 3).reshape(w.rows, -1, 32), a, b, None
    if name == "Q3_K":
        return _q3k_ints(raw, half(108))
    if name in ("Q4_K", "Q5_K"):
        d, dmin = half(0), half(2)
        sc, m = _k4_scales(raw)
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


def _k4_scales(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_K/Q5_K blocks (…, 144 or 176 bytes) → their 8 six-bit scales and 8 mins (…, 8) int64
    (ggml's get_scale_min_k4)."""
    s = raw[..., 4:16].astype(np.int64)
    sc = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 15) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
    m = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
    return sc, m


def _q3k_ints(raw: np.ndarray, d: np.ndarray):
    """Q3_K (hmask[32], qs[64], scales[12], d): value 128n + 32j + l has low bits (qs[32n + l] >> 2j) & 3 and
    high bit (hmask[l] >> (4n + j)) & 1, q = low − 4 when that bit is 0 (so q + 4 = low | high << 2); value v
    has scale v // 16, 16 six-bit scales: low 4 bits from scales[i % 8] >> 4·(i // 8), high 2 bits from
    scales[8 + i % 4] >> 2·(i // 4) (ggml's kmask/aux unpacking), taken as sc − 32."""
    rows, nsb = raw.shape[:2]
    qs = raw[..., 32:96].astype(np.int64).reshape(rows, nsb, 2, 1, 32) >> np.array([0, 2, 4, 6]).reshape(4, 1)
    hm = raw[..., None, :32].astype(np.int64) >> np.arange(8)[:, None]            # (rows, nsb, 8, 32): bit 4n + j
    q = ((qs & 3).reshape(rows, nsb, 8, 32) | ((hm & 1) << 2)) - 4
    s, i = raw[..., 96:108].astype(np.int64), np.arange(16)
    sc = ((s[..., i % 8] >> (4 * (i // 8))) & 15) | (((s[..., 8 + i % 4] >> (2 * (i // 4))) & 3) << 4)
    return "S", q.reshape(rows, -1, 32), np.repeat(d, 8, axis=1), np.zeros((rows, 8 * nsb), F32), \
        (sc - 32).reshape(rows, -1, 2)


def reconstruct(w: QWeight) -> np.ndarray:
    """gguf's float32 values rebuilt from weight_ints (equal to qweight.dequantize bit for bit)."""
    kind, q, a, b, sc16 = weight_ints(w)
    qf = q.astype(F32)
    if kind == "K2":
        out = np.repeat(a, 16, axis=-1) * qf - np.repeat(b, 16, axis=-1)
    elif sc16 is not None:
        scale = (a[..., None] * sc16.astype(F32)).astype(F32)
        out = np.repeat(scale, 16, axis=-1) * qf
    else:
        out = a[..., None] * qf
        if kind == "SM":
            out = out + b[..., None]
        elif kind == "KM":
            out = out - b[..., None]
    return out.astype(F32).reshape(w.rows, w.cols)


def reference_q8(x: np.ndarray, weights: list[QWeight], groups: bool = False) -> np.ndarray:
    """What quant.matmul(x, weights, "q8", groups=groups) returns, computed in numpy: (M, Σ rows) float32."""
    x = np.asarray(x, dtype=F32)
    return np.concatenate([_q8_one(x, w, groups) for w in weights], axis=1)


def _q8_one(x: np.ndarray, w: QWeight, groups: bool) -> np.ndarray:
    if w.name in ("F32", "F16", "BF16"):
        raise ValueError("float weights have no q8 mode")
    if w.name == "Q4_K" and groups:
        return _q8_groups(x, w)
    if w.name == "Q6_K" and groups:
        return _q8_groups6(x, w)
    xq, dx = quantize_rows(x)
    xs = (dx * xq.sum(axis=-1).astype(F32)).astype(F32)
    kind, q, a, b, sc16 = weight_ints(w)
    # S per half block: (M, N, blocks, 2), exact integers (float64 holds them exactly)
    halves = np.einsum("mbhp,nbhp->mnbh", xq.reshape(*xq.shape[:2], 2, 16).astype(np.float64),
                       q.reshape(*q.shape[:2], 2, 16).astype(np.float64)).astype(F32)
    if kind == "K2":
        return _q8_k2(xq, dx, halves, a, b)
    a2 = (a[..., None] * sc16.astype(F32)).astype(F32) if sc16 is not None else np.repeat(a[..., None], 2, -1)
    pad = -halves.shape[2] % 8
    halves = np.pad(halves, ((0, 0), (0, 0), (0, pad), (0, 0)))
    a2, b = np.pad(a2, ((0, 0), (0, pad), (0, 0))), np.pad(b, ((0, 0), (0, pad)))
    dx, xs = np.pad(dx, ((0, 0), (0, pad))), np.pad(xs, ((0, 0), (0, pad)))
    t = (a2[None] * dx[:, None, :, None]).astype(F32)                  # (M, N, blocks, 2)
    acc = np.zeros(halves.shape[:2] + (8, 2), F32)
    accb = np.zeros(halves.shape[:2] + (8,), F32)
    for s in range(0, halves.shape[2], 8):
        acc = fma32(halves[:, :, s:s + 8], t[:, :, s:s + 8], acc)
        if kind != "S":
            accb = fma32(b[None, :, s:s + 8], xs[:, None, s:s + 8], accb)
    main = tree8((acc[..., 0] + acc[..., 1]).astype(F32))
    return {"S": main, "SM": main + tree8(accb), "KM": main - tree8(accb)}[kind].astype(F32)


def _q8_groups(x: np.ndarray, w: QWeight) -> np.ndarray:
    """Q4_K's q8 steps (KIND_G): integers per group of 256, two fmas a group."""
    xq, D = quantize_rows(x, 256)                                      # (M, G, 256), (M, G)
    groups = xq.shape[1]
    raw = w.data.reshape(w.rows, groups, 144)
    half = lambda off: raw[..., off:off + 2].copy().view(np.float16)[..., 0].astype(F32)   # noqa: E731
    d, dmin = half(0), half(2)                                         # (N, G)
    sc, m = _k4_scales(raw)                                            # (N, G, 8)
    q = weight_ints(w)[1].reshape(w.rows, groups, 8, 32)               # 0..15
    xb = xq.reshape(xq.shape[0], groups, 8, 32)
    sj = np.einsum("mgjp,ngjp->mngj", xb, q)                           # exact block sums (int64)
    S = (sj * sc[None]).sum(axis=-1)                                   # (M, N, G)
    Mn = (xb.sum(axis=-1)[:, None] * m[None]).sum(axis=-1)
    acc = np.zeros((xq.shape[0], w.rows), F32)
    for g in range(groups):
        t = (d[None, :, g] * D[:, None, g]).astype(F32)
        u = (dmin[None, :, g] * D[:, None, g]).astype(F32)
        acc = fma32(S[..., g].astype(F32), t, acc)
        acc = fma32(-Mn[..., g].astype(F32), u, acc)
    return acc


def _q8_groups6(x: np.ndarray, w: QWeight) -> np.ndarray:
    """Q6_K's q8 steps (KIND_G6): per group of 256 the 16 sums of 16 values times their scales as integers, one
    fma a group."""
    xq, D = quantize_rows(x, 256)                                      # (M, G, 256), (M, G)
    m, groups = xq.shape[:2]
    _, q, a, _, sc16 = weight_ints(w)                                  # q − 32 (N, 8G, 32), d per block, scales
    si = np.einsum("mgip,ngip->mngi", xq.reshape(m, groups, 16, 16), q.reshape(w.rows, groups, 16, 16))
    S = (si * sc16.reshape(w.rows, groups, 16)[None]).sum(axis=-1)     # (M, N, G), exact
    d = a.reshape(w.rows, groups, 8)[..., 0]
    acc = np.zeros((m, w.rows), F32)
    for g in range(groups):
        acc = fma32(S[..., g].astype(F32), (d[None, :, g] * D[:, None, g]).astype(F32), acc)
    return acc


def _q8_k2(xq, dx, halves, a, b) -> np.ndarray:
    """Q2_K's q8 steps (its blocks come in whole groups of 8): a and b per half block, the min term from
    xh = dx·Σq per half block."""
    xh = (dx[..., None] * xq.reshape(*xq.shape[:2], 2, 16).sum(axis=-1).astype(F32)).astype(F32)   # (M, nb, 2)
    t = (a[None] * dx[:, None, :, None]).astype(F32)                   # (M, N, nb, 2)
    acc = np.zeros(halves.shape[:2] + (8, 2), F32)
    accb = np.zeros(halves.shape[:2] + (8, 2), F32)
    for s in range(0, halves.shape[2], 8):
        acc = fma32(halves[:, :, s:s + 8], t[:, :, s:s + 8], acc)
        accb = fma32(b[None, :, s:s + 8], xh[:, None, s:s + 8], accb)
    main = tree8((acc[..., 0] + acc[..., 1]).astype(F32))
    return (main - tree8((accb[..., 0] + accb[..., 1]).astype(F32))).astype(F32)


def tree8(a: np.ndarray) -> np.ndarray:
    """The fixed sum of 8 float32 lanes (last axis) every build uses."""
    return (((a[..., 0] + a[..., 4]) + (a[..., 2] + a[..., 6]))
            + ((a[..., 1] + a[..., 5]) + (a[..., 3] + a[..., 7]))).astype(F32)


def fma32(a, b, c) -> np.ndarray:
    """float32 a·b + c rounded once (an FMA instruction), exactly: the product is exact in float64, the
    float64 sum's error is recovered exactly (two-sum), and it decides the one case where rounding the float64
    sum to float32 would round twice (a sum exactly halfway between two float32 values)."""
    a, b, c = (np.asarray(v, F32) for v in (a, b, c))
    p = a.astype(np.float64) * b.astype(np.float64)
    c64 = c.astype(np.float64)
    s = p + c64
    bb = s - p
    err = (p - (s - bb)) + (c64 - bb)
    r = s.astype(F32)
    other = np.where(s > r.astype(np.float64), np.nextafter(r, F32(np.inf)), np.nextafter(r, F32(-np.inf)))
    midway = (s != r.astype(np.float64)) & ((r.astype(np.float64) + other.astype(np.float64)) * 0.5 == s)
    fix = midway & (err != 0) & ((other.astype(np.float64) > s) == (err > 0))
    return np.where(fix, other, r).astype(F32)


def error_bound(x: np.ndarray, weights: list[QWeight]) -> np.ndarray:
    """Σ|x||w| per output (M, Σ rows): the scale of float rounding in a dot product."""
    x = np.abs(np.asarray(x, dtype=np.float64))
    return np.concatenate([x @ np.abs(dequantize(w).astype(np.float64)).T for w in weights], axis=1)


# ---------------------------------------------------------------- random valid weights

SCALES = {   # byte offsets of each block's half-float scales (random bytes would give NaN/inf halves)
    "Q4_0": (0,), "Q4_1": (0, 2), "Q5_0": (0,), "Q5_1": (0, 2), "Q8_0": (0,),
    "Q2_K": (80, 82), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208,),
    "Q3_K": (108,),
    "IQ4_NL": (0,), "IQ4_XS": (0,),
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
