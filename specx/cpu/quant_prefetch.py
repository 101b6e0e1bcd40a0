"""Whether the GGUF block kernels prefetch weights ahead of their reads, into L1 only or into L2 too: timed once per
machine on what a 1.5B model's forward reads (it never changes a result, only the speed)."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np
import torch

from .qweight import QWeight
from .quant_ref import random_weight

if TYPE_CHECKING:
    from .quant import Library

PREFETCH_ENV = "SPECX_QUANT_PREFETCH"   # 1 or 0: prefetch (into L1 and L2) or not, instead of timing (prefetch_choice)
PREFETCH_BYTES = 2048   # L1 distance (L2: twice it), timed against none: 1-2 KB was best on the AVX-512 dev machine
PREFETCH_LAYERS = 6     # 1.5B-shaped layers the prefetch timing reads in turn (prefetch_stack): 180 MB
PREFETCH_SAVED = ".prefetch3.json"   # the saved pick (3: timed again on the layer stack)

PREFETCH_WAYS = {"off": (0, False), "into L1": (PREFETCH_BYTES, False), "into L1 and L2": (PREFETCH_BYTES, True)}

ONE_ROW_ENV = "SPECX_QUANT_PREFETCH_ONE"   # bytes ahead for calls of one row, instead of timing (one_row_choice)
ONE_ROW_WAYS = {"as far as other calls": None, "8 KB ahead": 8192, "16 KB ahead": 16384}   # the incumbent first
ONE_ROW_SAVED = ".prefetch-one.json"


def prefetch_choices(lib: Library):
    """(prefetch_choice, one_row_choice) for `lib`, timing (where a machine has not yet) on one stack of layers."""
    stack = _stack()
    way = prefetch_choice(lib, stack)
    return way, (one_row_choice(lib, stack) if PREFETCH_WAYS[way.pick][0] else None)


def _stack():
    """The timings' workload: prefetch_stack, built once for the choices that need it (and only if one does)."""
    from . import timed

    built: list = []

    def weights():
        if not built:
            built.append(prefetch_stack(np.random.default_rng(0)))
        return built[0]
    return timed.Workload(f"{PREFETCH_LAYERS} Q4_K_M layers of a 1.5B model", weights)


def one_row_choice(lib: Library, stack=None):
    """How far ahead a call of one row prefetches (ONE_ROW_WAYS; None: as far as the others, PREFETCH_BYTES). A
    one-row call (decoding a token, a drafter's step) waits on memory: on the Zen 4 dev CPU 8-16 KB ahead made the
    1.5B's 1-token forward 6-11% faster and the 0.5B drafter's step 4% (2-row and 5-row forwards gained 0-2% and
    nothing, so they keep their distance; benchmarks/results/2026-11-30-prefetch); the Xeon dev machine had found
    1-2 KB best at one thread (2026-11-26-quant-kernels). So it is timed once per machine on the prefetch stack at
    one row, the current distance the incumbent, unless SPECX_QUANT_PREFETCH_ONE gives the bytes."""
    from . import timed

    value = os.environ.get(ONE_ROW_ENV, "").strip()
    if value.isdigit():
        return timed.Choice("one-row prefetching", f"{int(value)} bytes ahead", source=ONE_ROW_ENV, rows=(1,))

    def way(nbytes: int | None):
        def make(layers):
            def run(x):
                lib.prefetch_one(nbytes)
                _read(lib, layers, x.shape[0])
            return run
        return make

    return timed.choose("one-row prefetching", lib.path.with_suffix(ONE_ROW_SAVED),
                        {name: way(nbytes) for name, nbytes in ONE_ROW_WAYS.items()},
                        workload=stack or _stack(), rows=(1,))


def _read(lib: Library, layers, rows: int) -> None:
    """One pass over the stack's layers, as a forward of `rows` tokens reads them."""
    for weights in layers:
        for w in weights:
            lib.matmul(_activations(rows, w.cols), [w], "q8")


def one_row_bytes(pick: str) -> int | None:
    """The bytes ahead a one_row_choice pick stands for (None: as far as other calls)."""
    return ONE_ROW_WAYS[pick] if pick in ONE_ROW_WAYS else int(pick.split()[0])   # "N bytes ahead": ONE_ROW_ENV


_INPUTS: dict[tuple[int, int], torch.Tensor] = {}


def _activations(rows: int, cols: int) -> torch.Tensor:
    """The same inputs for every way: rows of the model's width, and the down projection's wider ones."""
    if (rows, cols) not in _INPUTS:
        _INPUTS[rows, cols] = torch.randn(rows, cols, generator=torch.Generator().manual_seed(cols))
    return _INPUTS[rows, cols]


def prefetch_choice(lib: Library, stack=None):
    """Whether to prefetch weights ahead of the reads, into L1 only or into L2 too (PREFETCH_WAYS): it never
    changes a result, only the speed. On the AVX-512 dev machine prefetching into L1 made the 1.5B's linear
    layers 1.3-1.5x faster at 1 and 5 rows (one thread, benchmarks/results/2026-11-26-quant-kernels), and
    adding L2 another 6-8% (2 threads, 2026-11-27-five-rows); rowgemm's L2 prefetching slowed a Zen 1
    machine. So it is timed once per machine (cpu/timed.py), unless SPECX_QUANT_PREFETCH says, on what a
    forward reads: PREFETCH_LAYERS layers shaped and typed as the 1.5B fixture's (prefetch_stack), in turn.
    One Q4_K 8960x1536 layer, timed before, told the ways apart by less than its noise on a Zen 4 and picked
    "off" there, where whole forwards of the 1.5B ran 1.1-1.2x (1 row) to 1.5x (2 rows) slower than "into L1
    and L2"; the stack picked "into L1 and L2", the fastest way for whole forwards of 1-3 rows, in every one of
    11 timings there, by 25-40% (benchmarks/results/2026-11-29-prefetch).
    The AVX-512 build's incumbent is "into L1 and L2": a challenger must beat it clearly."""
    from . import timed

    value = os.environ.get(PREFETCH_ENV, "").strip()
    if value in ("0", "1"):
        return timed.Choice("weight prefetching", {"1": "into L1 and L2", "0": "off"}[value], source=PREFETCH_ENV)

    def way(nbytes: int, l2: bool):
        def make(layers):
            def run(x):
                lib.prefetch(nbytes, l2)
                _read(lib, layers, x.shape[0])
            return run
        return make

    order = sorted(PREFETCH_WAYS, key=lambda name: name != "into L1 and L2") if lib.name == "avx512" else \
        list(PREFETCH_WAYS)   # the incumbent first
    return timed.choose("weight prefetching", lib.path.with_suffix(PREFETCH_SAVED),
                        {name: way(*PREFETCH_WAYS[name]) for name in order}, workload=stack or _stack())


def prefetch_stack(rng: np.random.Generator) -> list[list[QWeight]]:
    """PREFETCH_LAYERS layers of random blocks as a 1.5B Q4_K_M model holds them (Qwen2.5-1.5B's shapes: the
    fused QKV, the attention output and the fused gate/up in Q4_K over its width of 1536, the down projection
    in Q6_K over 8960): about 30 MB each, together more than a last-level cache, so each is read from memory."""
    width, hidden, qkv = 1536, 8960, 2048
    return [[random_weight("Q4_K", qkv, width, rng, extreme=False),
             random_weight("Q4_K", width, width, rng, extreme=False),
             random_weight("Q4_K", 2 * hidden, width, rng, extreme=False),
             random_weight("Q6_K", width, hidden, rng, extreme=False)] for _ in range(PREFETCH_LAYERS)]
