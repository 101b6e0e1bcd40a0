"""GGUF blocks on a GPU: each matrix kept in its file's quantization, re-laid as planes that a GPU kernel reads
with plain strided loads (qmatmul.py), and the reference that holds them to the `gguf` package's values.

A GGUF block interleaves its scales and quants in 18- to 210-byte structs (Q8_0 34 bytes, Q6_K 210), which no
GPU load reads aligned. `repack` splits each block type into planes over the whole matrix, row by row, keeping
every bit the file has and adding none but one byte per group of 32 for the K-quants' packed 6-bit scales:

- `lo`   uint8 (rows, cols/2): every weight's low 4 code bits; byte j of each 64-value chunk holds value j (low
         nibble) and value 32 + j (high nibble), as Q4_K's own quants are laid out;
- `hi`   uint8 (rows, cols·HB/8): the code bits above 4 (HB = 1 for Q5_*, 2 for Q6_K, 4 for Q8_0), value j of
         a chunk at bit j·HB of the chunk's HB·8 bytes;
- `d`    float16 (rows, cols/S): the block's scale (S = 256 for K-quants and IQ4_XS, 32 for the others);
- `sc`   int8 (rows, cols/G): a K-quant's integer group scale (G = 16 for Q6_K, else 32); IQ4_XS's ls − 32;
- `dmin` float16 (rows, cols/S) and `m` uint8 (rows, cols/G): Q4_K/Q5_K's minimum, d_min·m subtracted;
- `m`    float16 (rows, cols/32): Q4_1/Q5_1's additive minimum.

A weight is then (d·sc)·v + o, where v is the code less the type's zero point (Q4_0 8, Q5_0 16, Q6_K 32,
Q8_0 128), or IQ4's grid value at the code, or the code itself for the types with a minimum; o is −d_min·m, m
or 0. Both products are exact in float32 (an 11-bit d by a ≤ 8-bit scale by a ≤ 8-bit value), so `dequantize`
gives gguf's float32 values bit for bit (tests/gpu/test_blocks.py) and the kernel factors d·sc out of each
group's sum. Repacking runs as torch operations on the device the weights go to: the file's bytes cross to a
GPU once, as they are, and no float copy of a matrix is ever made. Q2_K, Q3_K and the float types have no
planes here: they run dense (qmatmul.BlockMatrix says which)."""
from __future__ import annotations

import functools
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from ..cpu.quant_ref import IQ4_VALUES
from ..cpu.qweight import BLOCKS, NAMES, QWeight
from .unpack import UNPACK

CHUNK = 64   # values per lo-plane chunk: a row's columns must be a whole number of them
REPACK_SLAB = 64 << 20   # codes (a byte a value) unpacked at a time: a 128k-row output layer's temporaries stay small

ZERO, LUT, KMIN, MIN = "zero point", "grid", "k-min", "min"   # LUT: cpu/quant_ref.IQ4_VALUES at the code


@dataclass(frozen=True)
class Format:
    """How one block type maps to the planes: scale span S, group G, code bits above 4, integer group scales,
    the value rule (ZERO: code − z; LUT: IQ4's grid at the code; KMIN/MIN: the code, plus the minimum)."""

    span: int
    group: int
    high_bits: int
    group_scales: bool
    rule: str
    zero: int = 0

    def bits_per_weight(self) -> float:
        """Device bits a weight costs in this layout, scales included (Q4_K 4.625 against the file's 4.5)."""
        per = 4 + self.high_bits + 16 / self.span + (8 / self.group if self.group_scales else 0)
        if self.rule == KMIN:
            per += 16 / self.span + 8 / self.group
        elif self.rule == MIN:
            per += 16 / self.group
        return per


FORMATS = {
    "Q4_0": Format(32, 32, 0, False, ZERO, 8),
    "Q4_1": Format(32, 32, 0, False, MIN),
    "Q5_0": Format(32, 32, 1, False, ZERO, 16),
    "Q5_1": Format(32, 32, 1, False, MIN),
    "Q8_0": Format(32, 32, 4, False, ZERO, 128),
    "IQ4_NL": Format(32, 32, 0, False, LUT),
    "IQ4_XS": Format(256, 32, 0, True, LUT),
    "Q4_K": Format(256, 32, 0, True, KMIN),
    "Q5_K": Format(256, 32, 1, True, KMIN),
    "Q6_K": Format(256, 16, 2, True, ZERO, 32),
}


def supported(type_name: str, cols: int) -> bool:
    """Whether a matrix of this block type and row length has planes (else it runs dense)."""
    return type_name in FORMATS and cols % CHUNK == 0


def device_bytes(type_name: str, rows: int, cols: int) -> int:
    """What a matrix costs on the device: its planes, or bfloat16 where it runs dense."""
    if not supported(type_name, cols):
        return 2 * rows * cols
    return int(rows * cols * FORMATS[type_name].bits_per_weight() / 8)


@dataclass(frozen=True)
class Blocks:
    """One matrix's planes (see the module's docstring); absent planes are None."""

    type: str
    rows: int
    cols: int
    lo: torch.Tensor
    hi: torch.Tensor | None
    d: torch.Tensor
    sc: torch.Tensor | None
    dmin: torch.Tensor | None
    m: torch.Tensor | None

    @property
    def format(self) -> Format:
        return FORMATS[self.type]

    @property
    def device(self) -> torch.device:
        return self.lo.device

    def __post_init__(self):
        if not all(t.is_contiguous() for t in self.planes()):
            raise ValueError("block planes must be contiguous rows")

    def planes(self) -> list[torch.Tensor]:
        return [t for t in (self.lo, self.hi, self.d, self.sc, self.dmin, self.m) if t is not None]

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.planes())

    def take(self, ids: torch.Tensor) -> "Blocks":
        """The rows `ids` (a device tensor; an embedding lookup): every plane indexed alike, no host sync."""
        return Blocks(self.type, int(ids.shape[0]), self.cols, *(None if t is None else t.index_select(0, ids)
                                                                 for t in (self.lo, self.hi, self.d, self.sc,
                                                                           self.dmin, self.m)))


def repack(q: QWeight, device) -> Blocks:
    """A QWeight's blocks as planes on `device`: a slab of rows at a time (REPACK_SLAB codes), each slab's bytes
    copied there as they are and split there, so unpacking never holds more than a slab's temporaries."""
    name = NAMES[q.type]
    if not supported(name, q.cols):
        raise ValueError(f"{name} rows of {q.cols} values have no GPU planes")
    n, k = q.rows, q.cols
    per_row, slab = q.nbytes // max(n, 1), max(1, REPACK_SLAB // k)
    out: dict[str, torch.Tensor | None] = {}
    for a in range(0, n, slab):
        z = min(n, a + slab)
        part = _planes(name, q.data[a * per_row:z * per_row], z - a, k, device)
        if not out:
            out = {key: None if t is None else t.new_empty((n, t.shape[1])) for key, t in part.items()}
        for key, t in part.items():
            if t is not None:
                out[key][a:z] = t
    return Blocks(name, n, k, **out)


def _planes(name: str, data: np.ndarray, n: int, k: int, device) -> dict[str, torch.Tensor | None]:
    """The planes of n rows of k values from their blocks' bytes."""
    f, size = FORMATS[name], BLOCKS[name][2]
    with warnings.catch_warnings():   # a read-only map: the planes are new tensors, the view is never written
        warnings.simplefilter("ignore", UserWarning)
        raw = torch.from_numpy(np.ascontiguousarray(data)).to(device).view(-1, size)   # (rows · blocks, bytes)
    codes, d, sc, dmin, m = UNPACK[name](raw)
    codes = codes.reshape(n, k)

    def plane(t, cols):   # the kernel reads every plane as contiguous rows (a slice of the blocks is not)
        return None if t is None else t.reshape(n, cols).contiguous()

    return {"lo": _lo(codes), "hi": _hi(codes, f.high_bits), "d": plane(d, k // f.span), "sc": plane(sc, k // f.group),
            "dmin": plane(dmin, k // f.span), "m": plane(m, k // (f.group if f.rule == KMIN else 32))}


def dequantize(b: Blocks) -> torch.Tensor:
    """(rows, cols) float32: gguf's values, bit for bit (the rule the kernel is held to)."""
    f, n, k = b.format, b.rows, b.cols
    code = codes(b).to(torch.int32)
    if f.rule == ZERO:
        v = (code - f.zero).float()
    elif f.rule == LUT:
        v = grid(b.device)[code]
    else:
        v = code.float()
    a = b.d.float().repeat_interleave(f.span // f.group, 1) if f.group < f.span else b.d.float()
    if b.sc is not None:
        a = a * b.sc.float()
    w = (a.view(n, -1, 1) * v.view(n, -1, f.group)).view(n, k)
    if f.rule == KMIN:
        o = b.dmin.float().repeat_interleave(f.span // f.group, 1) * b.m.float()
        w = (w.view(n, -1, f.group) - o.view(n, -1, 1)).view(n, k)
    elif f.rule == MIN:
        w = (w.view(n, -1, f.group) + b.m.float().view(n, -1, 1)).view(n, k)
    return w


@functools.cache
def grid(device: torch.device) -> torch.Tensor:
    """IQ4's grid (quant_ref.IQ4_VALUES) as float32 on `device`, made once (a CUDA graph may not copy it from the
    host)."""
    return torch.tensor(IQ4_VALUES, dtype=torch.float32, device=device)


def codes(b: Blocks) -> torch.Tensor:
    """(rows, cols) uint8 codes from the lo and hi planes."""
    n, k = b.rows, b.cols
    lo = b.lo.view(n, k // CHUNK, 1, CHUNK // 2)
    out = torch.cat([lo & 15, lo >> 4], 2).view(n, k)
    hb = b.format.high_bits
    if hb:
        per = 8 // hb
        shifts = torch.arange(per, device=b.device, dtype=torch.uint8) * hb
        bits = (b.hi.view(n, -1, 1) >> shifts) & ((1 << hb) - 1)
        out = out | (bits.view(n, k) << 4)
    return out


def random_planes(name: str, rows: int, cols: int, device, generator: torch.Generator) -> Blocks:
    """Random valid planes of a type made on `device` (benchmarks: an 8B's blocks without a file), scaled so
    the weights spread about as an initialised model's do (standard deviation near cols^-1/2)."""
    f = FORMATS[name]
    if not supported(name, cols) or cols % f.span:
        raise ValueError(f"{name} rows of {cols} values have no GPU planes")

    def ints(low, high, shape, dtype):
        return torch.randint(low, high, shape, generator=generator, device=device, dtype=torch.int32).to(dtype)

    bits = 4 + f.high_bits
    spread = (70 if f.rule == LUT else (1 << bits) / 12 ** 0.5) * (32 if f.group_scales else 1)
    d = torch.full((rows, cols // f.span), cols ** -0.5 / spread, dtype=torch.float16, device=device)
    sc = ints(1, 64, (rows, cols // f.group), torch.int8) if f.group_scales else None
    dmin = m = None
    if f.rule == KMIN:   # minima about the mean of d·sc·code, so the weights centre near zero
        dmin, m = d * (32 * ((1 << bits) - 1) / 2 / 31.5), ints(0, 64, (rows, cols // f.group), torch.uint8)
    elif f.rule == MIN:
        m = (-d.float() * ((1 << bits) / 2)).to(torch.float16)
    hi = ints(0, 256, (rows, cols * f.high_bits // 8), torch.uint8) if f.high_bits else None
    return Blocks(name, rows, cols, ints(0, 256, (rows, cols // 2), torch.uint8), hi, d, sc, dmin, m)


# ---------------------------------------------------------------- planes from codes

def _lo(codes: torch.Tensor) -> torch.Tensor:
    n, k = codes.shape
    c = codes.view(n, k // CHUNK, 2, CHUNK // 2) & 15
    return (c[:, :, 0] | (c[:, :, 1] << 4)).reshape(n, k // 2).contiguous()


def _hi(codes: torch.Tensor, hb: int) -> torch.Tensor | None:
    if not hb:
        return None
    n, k = codes.shape
    per = 8 // hb
    bits = (codes >> 4).view(n, k // per, per)
    out = bits[:, :, 0].clone()
    for i in range(1, per):   # in bytes: no wider temporary than the codes
        out |= bits[:, :, i] << (i * hb)
    return out
