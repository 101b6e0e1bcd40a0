"""A model drafter's layers re-encoded to 4 bits (Q4_0) in memory, so that each drafting step reads less.

A drafter's weights change how often its drafts are accepted, never the output: the target verifies every token.
On a CPU its step is bound by the bytes it reads, so its layer matrices of more bytes a weight than Q4_0 (Q5_0,
Q5_1, Q8_0, Q5_K, Q6_K, F16, BF16, F32) are decoded to gguf's values and quantized again to Q4_0 at load
(cpu/lowbit.c, ggml's rule), the cheapest type for the int8-activation kernels to decode. The output layer
(VocabTrim's rows) and the embedding keep the file's blocks: they are read by rows or trimmed already. Measured
on the fixture 0.5B drafter in benchmarks/results/2026-11-29-drafter-bits."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..cpu.qweight import BLOCKS, QWeight, expected_bytes, reencoded_bytes
from . import resident
from .weights import Weights

Q4_0 = BLOCKS["Q4_0"][0]
CHUNK_ROWS = 512   # rows decoded and quantized at a time: bounds the float32 scratch (512 x 8960 x 4 = 18 MB)


def wider(m: QWeight) -> bool:
    """Whether a matrix holds more bytes a weight than Q4_0 would (and its rows are whole Q4_0 blocks)."""
    return reencoded_bytes(m.rows, m.cols, m.nbytes) < m.nbytes


def layer_matrices(weights: Weights) -> list[QWeight]:
    return [m for l in weights.layers for m in (*l.qkv, *l.o, *l.gate_up, *l.down)]


def reencode(weights: Weights, threads: int | None = None) -> Weights:
    """`weights` with every wider layer matrix (wider) as Q4_0 blocks in new memory; the rest as they were."""
    from ..cpu import lowbit, quant

    done: dict[int, QWeight] = {}
    for m in layer_matrices(weights):
        if wider(m) and id(m) not in done:
            data = np.empty(expected_bytes(Q4_0, m.rows, m.cols), dtype=np.uint8)
            row_bytes = expected_bytes(Q4_0, 1, m.cols)
            for first in range(0, m.rows, CHUNK_ROWS):
                rows = np.arange(first, min(first + CHUNK_ROWS, m.rows))
                data[first * row_bytes:(rows[-1] + 1) * row_bytes] = lowbit.quantize_q4_0(
                    quant.embed(m, rows).numpy(), threads)
            done[id(m)] = QWeight(Q4_0, data, m.rows, m.cols)
            if not m.data.flags.writeable:   # the file's map: its pages read here leave the process (resident.py)
                resident.release(m.data)

    def swap(ms: list[QWeight]) -> list[QWeight]:
        return [done.get(id(m), m) for m in ms]

    layers = [replace(l, qkv=swap(l.qkv), o=swap(l.o), gate_up=swap(l.gate_up), down=swap(l.down))
              for l in weights.layers]
    return replace(weights, layers=layers)


def describe(before: Weights, after: Weights) -> str:
    """The kernels sentence's part on the re-encoding ("" where nothing was re-encoded)."""
    old, new = layer_matrices(before), layer_matrices(after)
    changed = sorted({m.name for m, n in zip(old, new) if n is not m})
    if not changed:
        return ""
    read, types = (sum(m.nbytes for m in old) / 1e6, sum(m.nbytes for m in new) / 1e6), "/".join(changed)
    return (f"its {types} layers re-encoded to Q4_0 in memory: a step reads {read[1]:.0f} MB of layers "
            f"instead of {read[0]:.0f}; --draft-quant q8 keeps the file's")
