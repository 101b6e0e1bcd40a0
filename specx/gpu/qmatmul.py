"""Y = X·Wᵀ on a GGUF file's blocks on a GPU (blocks.py's planes), for the 1 to 17 rows that a decode step or a
verification sends, so a target keeps its file's 4-bit form on the GPU instead of a bfloat16 copy 3.5× its size.

The kernel (triton_kernels.block_matmul) reads each weight once per call for up to 16 rows and applies it to
all of them with tensor-core dots, the block's scales applied per group after the dot. Two rules, as for the
CPU kernels (cpu/quant.c):

- batch invariance: a row's result is bit-identical whatever other rows share the call. The rows go 16 to a
  program (more rows are more programs, each the same code), and how a matrix is cut into programs (`Launch`:
  rows per program, chunks per step, splits of the columns) depends on the matrix and the GPU alone, never on
  the rows. Splits write float32 partial sums that one more kernel adds in split order;
- fidelity: within float noise of gguf's values in float32 (blocks.dequantize) times x; the values v are exact
  in bfloat16 and float16, the products exact, the scale d·sc exact in float32.

A fused projection (QKV, gate/up) whose parts differ in type (Q4_K_M files keep some V and FFN-down matrices
in Q6_K) is a `BlockMatrix` of parts, each written into its columns of one output. A part whose type has no
planes (Q2_K, Q3_K, the float types) is a dense matrix in the compute dtype, dequantized once on the device. Off
a GPU (tests; the CPU runs cpu/quant.c instead) a part runs as blocks.dequantize times x in float32."""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ..cpu.qweight import NAMES, QWeight, dequantize as file_values
from .blocks import CHUNK, FORMATS, KMIN, LUT, MIN, ZERO, Blocks, dequantize, grid, repack, supported

ROWS = 16         # rows a program computes: tl.dot's smallest M; more rows are further programs, the same code
WAVES = 4         # programs per multiprocessor a launch aims for: as many as fit at once (Launch's registers)
MIN_CHUNKS = 4    # chunks (64 columns) a split reads at least, so its partial sums are worth their traffic
SUM_BLOCK = 1024  # columns a program of sum_splits adds
DENSE_SLAB = 64 << 20   # float32 bytes of a matrix dequantized at a time (dense_matrix)
INTERPRETED_SMS = 132   # the multiprocessors Triton's interpreter launches for: an H100's and H200's count
RULES = {ZERO: 0, LUT: 1, KMIN: 2, MIN: 3}


@dataclass(frozen=True)
class Launch:
    """How one matrix is cut: `block` rows of W per program, `chunks` per loop step, `splits` of its columns
    (each `per_split` chunks long), `warps` and pipeline `stages` per program.

    The defaults keep every block type's kernel at sm_90 within about 150 registers a thread and a few spilled
    bytes at most (ptxas -v on Triton 3.6's and 3.9's code, the pointers 16-byte aligned as torch allocates them:
    benchmarks/results/2026-11-28-gpu-blocks/), so 4 programs share a multiprocessor, each with 3 steps' loads
    in flight (cp.async); 64 rows and 4 chunks a step took all 255 registers and spilled (tests/gpu/test_qmatmul.py
    holds the rule)."""

    block: int = 32
    chunks: int = 2
    splits: int = 1
    per_split: int = 1
    warps: int = 4
    stages: int = 4


@functools.cache   # a pure function of the shape, asked at every eager call (about 10 µs to work out)
def launch_for(rows: int, cols: int, sms: int, block: int = Launch.block, waves: int = WAVES) -> Launch:
    """The launch of a rows × cols matrix on a GPU of `sms` multiprocessors: W's rows in programs of `block`;
    the step the largest of Launch.chunks, …, 1 chunks that divides the row; the columns cut into the number of
    equal splits (whole steps, at least MIN_CHUNKS chunks each) nearest to `waves` programs per multiprocessor."""
    chunks = cols // CHUNK
    step = next(s for s in (4, 2, 1) if s <= Launch.chunks and chunks % s == 0)
    want = waves * sms / -(-rows // block)
    steps = chunks // step
    fits = [s for s in range(1, steps + 1) if steps % s == 0 and (s == 1 or chunks // s >= MIN_CHUNKS)]
    splits = min(fits, key=lambda s: abs(math.log(s / max(want, 1))))
    return Launch(block, step, splits, chunks // splits)


MIN_CAPABILITY = (8, 0)   # Ampere: the bfloat16 tensor-core dots the kernel is written for


@functools.cache
def available(device_index: int | None = None) -> str:
    """"" where the kernel can run (Triton importable; with a device index, that GPU Ampere or newer), else why
    not."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return "Triton is not installed (it comes with PyTorch's CUDA builds on Linux)"
    if device_index is None:
        return ""
    try:
        capability = torch.cuda.get_device_capability(device_index)
    except (RuntimeError, AssertionError, AttributeError) as e:   # no CUDA here (a torch without it, no driver)
        return f"no CUDA device {device_index} ({e})"
    if capability < MIN_CAPABILITY:
        return f"{torch.cuda.get_device_name(device_index)} is older than Ampere (compute capability 8.0)"
    return ""


@functools.cache
def interpreted() -> bool:
    """Whether Triton runs kernels in its interpreter (TRITON_INTERPRET=1 when it was imported): then block
    matrices run the kernel on CPU tensors too (tests)."""
    if available():
        return False
    from triton import knobs

    return bool(knobs.runtime.interpret)


@functools.cache
def _sms(device_index: int) -> int:
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def block_linear(x: torch.Tensor, b: Blocks, out: torch.Tensor, bias: torch.Tensor | None = None,
                 launch: Launch | None = None) -> torch.Tensor:
    """out (T, rows) ← x (T, cols) @ dequantize(b)ᵀ (+ bias) through the kernel; out may be a column slice of a
    wider output (its rows strided). Under TRITON_INTERPRET=1 (set before Triton is imported) the same kernel
    source runs in Triton's interpreter on CPU tensors (the tests' way to run it without a GPU)."""
    from . import triton_kernels as tk

    rows_t, k = x.shape
    if k != b.cols or out.shape != (rows_t, b.rows) or x.stride(1) != 1 or out.stride(1) != 1:
        raise ValueError(f"x {tuple(x.shape)} and out {tuple(out.shape)} do not fit a {b.rows}x{b.cols} matrix")
    f = b.format
    interpret = interpreted()
    if launch is None:
        launch = launch_for(b.rows, b.cols, INTERPRETED_SMS if interpret else _sms(x.device.index or 0))
    split = launch.splits > 1
    part = torch.empty((launch.splits, rows_t, b.rows), dtype=torch.float32, device=x.device) if split else out
    absent = b.lo   # what an absent plane's pointer gets: a kernel of that type never reads it
    # IQ4's grid lookups are loads the pipeliner would buffer in shared memory (133 KB at 3 stages for 64 rows)
    options = {} if interpret else {"num_warps": launch.warps, "num_stages": 1 if f.rule == LUT else launch.stages,
                                    "enable_fp_fusion": True}
    programs = (-(-b.rows // launch.block), launch.splits, -(-rows_t // ROWS))
    tk.block_matmul[programs](
        x, out, part, absent if bias is None else bias, b.lo, *(absent if t is None else t for t in (b.hi, b.d, b.sc,
                                                                                                   b.dmin, b.m)),
        grid(x.device) if f.rule == LUT else absent, rows_t, b.rows, k, x.stride(0), out.stride(0),
        HB=f.high_bits, S=f.span, G=f.group, SC=b.sc is not None, RULE=RULES[f.rule], Z=f.zero, PER=launch.per_split,
        SPLIT=split, BIAS=bias is not None and not split, F32=interpret or x.dtype == torch.float32,
        BN=launch.block, CH=launch.chunks, **options)
    if split:
        options.pop("num_warps", None), options.pop("num_stages", None)
        tk.sum_splits[(rows_t, -(-b.rows // SUM_BLOCK))](part, out, absent if bias is None else bias, rows_t, b.rows,
                                                         out.stride(0), SPLITS=launch.splits, BIAS=bias is not None,
                                                         BLOCK=SUM_BLOCK, **options)
    return out


class BlockMatrix:
    """One fused projection on a device: parts stacked by rows, each a Blocks (run by the kernel) or a dense
    tensor in the compute dtype (a type without planes). Quacks as much like a weight tensor as the dense
    decoder asks of one (shape, numel, nbytes, dtype, device)."""

    def __init__(self, parts: Sequence[Blocks | torch.Tensor], dtype: torch.dtype, kinds: Sequence[str] = ()):
        self.parts, self.dtype = list(parts), dtype
        # each part's file type ("Q4_K"; a dense part's, e.g. "Q3_K" or "F16", when known)
        self.kinds = list(kinds) or [p.type if isinstance(p, Blocks) else "dense" for p in self.parts]
        cols = {p.cols if isinstance(p, Blocks) else p.shape[1] for p in self.parts}
        if len(cols) != 1:
            raise ValueError(f"fused parts of different widths {sorted(cols)}")
        self.cols = cols.pop()
        self.offsets = [0]
        for p in self.parts:
            self.offsets.append(self.offsets[-1] + (p.rows if isinstance(p, Blocks) else p.shape[0]))
        self.rows = self.offsets[-1]
        self._values = None   # off a GPU: the float32 values, made at the first call

    @property
    def shape(self) -> tuple[int, int]:
        return (self.rows, self.cols)

    @property
    def device(self) -> torch.device:
        p = self.parts[0]
        return p.device

    def numel(self) -> int:
        return self.rows * self.cols

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.parts)

    def formats(self) -> list[str]:
        return self.kinds

    def linear(self, x: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
        """x (T, cols) → (T, rows) in x's dtype."""
        if x.device.type != "cuda" and not interpreted():   # the reference: gguf's values in float32, made once
            if self._values is None:
                self._values = torch.cat([dequantize(p) if isinstance(p, Blocks) else p.float() for p in self.parts])
            y = torch.nn.functional.linear(x.float(), self._values, None if bias is None else bias.float())
            return y.to(x.dtype)
        x = x.contiguous()
        out = torch.empty((x.shape[0], self.rows), dtype=x.dtype, device=x.device)
        for p, a, z in zip(self.parts, self.offsets, self.offsets[1:]):
            b = None if bias is None else bias[a:z]
            if isinstance(p, Blocks):
                block_linear(x, p, out[:, a:z], b)
            else:
                out[:, a:z] = torch.nn.functional.linear(x, p, b)
        return out

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """Rows `ids` as an embedding lookup: (len(ids), cols) in the compute dtype (gathered blocks dequantized;
        device operations only, so a CUDA graph captures it)."""
        if len(self.parts) != 1:
            raise ValueError("an embedding table is one matrix")
        p = self.parts[0]
        if isinstance(p, Blocks):
            return dequantize(p.take(ids)).to(self.dtype)
        return torch.nn.functional.embedding(ids, p)

    def take_rows(self, ids: torch.Tensor) -> "BlockMatrix":
        """A BlockMatrix of the given rows (a trimmed output layer)."""
        if len(self.parts) != 1:
            raise ValueError("only a single matrix is trimmed")
        p = self.parts[0]
        return BlockMatrix([p.take(ids) if isinstance(p, Blocks) else p[ids]], self.dtype, self.kinds)


def from_file(group: Sequence[QWeight], dtype: torch.dtype, device) -> BlockMatrix:
    """A fused group of a GGUF's QWeights on `device`: planes where the type has them, else dense in `dtype`
    (dequantized on the device from its planes' source bytes, never a float32 copy on the host)."""
    parts = [repack(q, device) if supported(NAMES[q.type], q.cols) else dense_matrix(q, dtype, device) for q in group]
    return BlockMatrix(parts, dtype, [NAMES[q.type] for q in group])


def dense_matrix(q: QWeight, dtype: torch.dtype, device) -> torch.Tensor:
    """A QWeight as a dense matrix in `dtype` on `device` (the dense decoder's weights, and a type without
    planes): F16/BF16 rows as they are; a block type's gguf values a slab of rows at a time, dequantized on the
    device from its planes (blocks.dequantize: the same values, bit for bit, without a pass of numpy over the
    host) or, for a type without planes, on the host; never the whole matrix in float32."""
    import numpy as np

    from ..cpu.qweight import BLOCKS

    raw = {BLOCKS["BF16"][0]: torch.bfloat16, BLOCKS["F16"][0]: torch.float16}.get(q.type)
    if raw is not None:
        t = torch.from_numpy(np.ascontiguousarray(q.data).view(np.int16)).view(raw).view(q.rows, q.cols)
        return t.to(device=device).to(dtype)
    planes = supported(NAMES[q.type], q.cols)
    out = torch.empty((q.rows, q.cols), dtype=dtype, device=device)
    per_row = q.nbytes // max(q.rows, 1)
    slab = max(1, DENSE_SLAB // max(4 * q.cols, 1))
    for a in range(0, q.rows, slab):
        z = min(q.rows, a + slab)
        part = QWeight(q.type, np.ascontiguousarray(q.data[a * per_row:z * per_row]), z - a, q.cols)
        values = dequantize(repack(part, device)) if planes else torch.from_numpy(file_values(part)).to(device)
        out[a:z] = values.to(dtype)
    return out


def describe(formats: set[str], on_gpu: bool = True) -> str:
    """The kernels sentence's part for block matrices: which types run on the kernel, which run dense."""
    planes = "/".join(sorted(t for t in formats if t in FORMATS))
    dense = "/".join(sorted(t for t in formats if t not in FORMATS))
    how = "specx GGUF block kernels (Triton)" if on_gpu else "gguf's values in float32 (the block kernels' reference)"
    text = f"{how} for {planes}" if planes else ""
    if dense:
        text += (", " if text else "") + f"{dense} dequantized once to the compute dtype (no block kernel)"
    return text
