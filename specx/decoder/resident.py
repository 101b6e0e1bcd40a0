"""The matrices every forward reads whole, copied from the file's map into anonymous memory on 2 MiB pages.

Why: a forward streams every layer matrix, and through the file's map each 4 KiB page is a TLB entry; the
kernels then wait on page walks (nested ones under a hypervisor), not on memory. On 2 MiB pages a 1-token step
of the 1.5B fixture ran 1.4× faster in the same process (benchmarks/results/2026-11-27-hugepages). The copy
is the file's bytes (no conversion), made only where the kernel hands out transparent huge pages on request
(with plain 4 KiB pages a copy is as slow as the map), and each source range leaves the process once copied,
so the resident size stays the weights' bytes. An untied embedding is read by rows (filerows.py) and stays out.
The copy is made only where the memory plan keeps the whole model in RAM (the lean decoder on a CPU). Where the
kernel build runs packed matrices (cpu/packing.py: AVX-512 and AVX2, the q8 mode), the copy packs the layers' Q4_0,
Q4_K and Q6_K matrices instead of copying their bytes as they are: the same number of bytes, a pass over them either
way; such a build gets the copy on plain pages too (`copies`)."""
from __future__ import annotations

import ctypes
import mmap
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..cpu import packing
from ..cpu.qweight import PACK_ROWS, QWeight
from .weights import Weights

ENV = "SPECX_WEIGHTS"             # "map": keep reading the file's map (benchmarks compare both ways)
HUGE = 2 << 20                    # a transparent huge page on x86-64 and arm64 (4 KiB base pages)
ALIGN = 64                        # each matrix starts on a cache line, as the kernels' loads prefer
CHUNK = 16 << 20                  # copied and released at a time: the peak resident size exceeds the weights'
                                  # bytes by at most COPIERS of these (the 1.5B fixture's output layer is 191 MB)
COPIERS = 4                       # threads copying (at most one per CPU): a fresh page's first touch stalls its
                                  # CPU in a virtual machine, and the stalls overlap across CPUs
THP_SETTING = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def offered(setting: str) -> bool:
    """Whether a transparent_hugepage/enabled setting ("always [madvise] never") gives huge pages to a
    region that asks for them."""
    chosen = setting[setting.find("[") + 1:setting.find("]")] if "[" in setting else ""
    return chosen in ("always", "madvise")


def _mapped() -> bool:
    return os.environ.get(ENV, "").strip().lower() == "map"


def wanted() -> bool:
    """Whether this machine gets the copy: huge pages on request, and SPECX_WEIGHTS is not "map"."""
    if _mapped() or not hasattr(mmap, "MADV_HUGEPAGE"):
        return False
    try:
        return offered(THP_SETTING.read_text())
    except OSError:
        return False


def copies(packs: bool) -> bool:
    """Whether the lean decoder copies a model's matrices: where huge pages are offered (`wanted`), and with a
    kernel build that packs them as they are copied (`packs`: cpu/packing.py) on plain pages too, where the packed
    kernels gain more than the copy costs (the AVX2 build's 1.5B forwards 0.5-0.6× the time of its file-layout
    kernels: benchmarks/results/2026-12-01-avx2). Never with SPECX_WEIGHTS=map."""
    return wanted() or (packs and not _mapped())


def describe() -> str:
    """The kernels sentence's part on where the weights are read from, once copied."""
    if wanted():
        return "its layers copied to 2 MiB pages (fewer TLB misses than through the file's map)"
    return "its layers copied from the file's map (this kernel offers no huge pages)"


def copy_in(weights: Weights, output: bool = True, pack=None) -> Weights:
    """`weights` with every layer matrix and the output layer in one huge-page region (a tied output layer is
    also the embedding, which then comes along); vectors are copies already, an untied embedding stays mapped
    and read by rows. `output` False: an untied output layer stays mapped too (a drafter's VocabTrim copies the
    rows it scores, vocabtrim.DraftHead, and reads the context's few others from the file); a tied one is the
    embedding, looked up every token, and is copied still. `pack`: a loaded kernel build that runs packed
    matrices (cpu/packing.py): the matrices it can pack are packed as they are copied, the output layer's too
    (its rows, looked up or trimmed, are unpacked as they are read: quant.embed, quant.unpack_rows)."""
    output = output or weights.output is weights.embed
    layers = [m for l in weights.layers for m in (*l.qkv, *l.o, *l.gate_up, *l.down)]
    packed = {id(m) for m in layers + [weights.output] if pack is not None and packing.packable(m, pack)}
    whole = layers + ([weights.output] if output else [])
    block, at, moved = region(sum(_padded(m.nbytes) for m in whole)), 0, {}
    for m in whole:
        if id(m) not in moved:
            moved[id(m)] = (m, block[at:at + m.nbytes])
            at += _padded(m.nbytes)
    chunks = [_chunk(src, dst, pack if id(src) in packed else None, i)
              for src, dst in moved.values() for i in range(0, src.nbytes, _step(src, id(src) in packed))]
    with ThreadPoolExecutor(min(COPIERS, os.cpu_count() or 1)) as pool:
        list(pool.map(_copy, chunks))
    moved = {key: QWeight(packing.FILE_TYPES[src.type], dst, src.rows, src.cols) if key in packed
             else replace(src, data=dst) for key, (src, dst) in moved.items()}

    def layer(l):
        return replace(l, qkv=[moved[id(m)] for m in l.qkv], o=[moved[id(m)] for m in l.o],
                       gate_up=[moved[id(m)] for m in l.gate_up], down=[moved[id(m)] for m in l.down])

    output = moved[id(weights.output)] if output else weights.output
    embed = output if weights.embed is weights.output else weights.embed
    return replace(weights, embed=embed, layers=[layer(l) for l in weights.layers], output=output)


class Move:
    """copy_in(weights) on a thread, so that the copy overlaps other loading (the tokenizer): faulting in fresh
    memory is slow in a virtual machine, whose host backs a guest page only when it is first touched.
    `result()` waits and returns the moved weights, or `weights` as they were if memory could not be had."""

    def __init__(self, weights: Weights, output: bool = True, pack=None):
        self._weights, self._output, self._pack, self._moved = weights, output, pack, None
        self._thread = threading.Thread(target=self._run, name="specx-weights-to-huge-pages", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._moved = copy_in(self._weights, self._output, self._pack)
        except (OSError, MemoryError, ValueError):
            self._moved = None

    def result(self) -> Weights:
        self._thread.join()
        return self._moved or self._weights


def _padded(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def region(nbytes: int) -> np.ndarray:
    """`nbytes` of anonymous memory starting on a huge-page boundary, asked to be backed by huge pages."""
    size = (nbytes + 2 * HUGE - 1) // HUGE * HUGE   # one page more, to start on a boundary
    m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        m.madvise(mmap.MADV_HUGEPAGE)
    except (OSError, AttributeError):   # a kernel without THP: plain pages, the same bytes
        pass
    whole = np.frombuffer(m, dtype=np.uint8)   # keeps the map alive as long as a view of it lives
    skip = -whole.ctypes.data % HUGE
    return whole[skip:skip + nbytes]


def _step(m, packed: bool) -> int:
    """Bytes copied at a time: CHUNK, or for a matrix to pack the whole tiles of 16 rows nearest it (a tile's
    packed bytes take the place of its rows' bytes)."""
    if not packed:
        return CHUNK
    tile = PACK_ROWS * (m.nbytes // m.rows)
    return max(1, CHUNK // tile) * tile


class Chunk(NamedTuple):
    """Bytes copied at a time: from `src` to `dst`, or, with `pack` (a kernel build), the rows `rows` (whose
    bytes `src` holds) packed into `dst`."""

    src: np.ndarray
    dst: np.ndarray
    pack: object = None
    rows: QWeight | None = None


def _chunk(src, dst: np.ndarray, pack, at: int) -> Chunk:
    n = _step(src, pack is not None)
    part = src.data[at:at + n]
    if pack is None:
        return Chunk(part, dst[at:at + n])
    return Chunk(part, dst[at:at + n], pack, QWeight(src.type, part, part.size // (src.nbytes // src.rows), src.cols))


def _copy(chunk: Chunk) -> None:
    """Copy (or pack) one chunk. Where the source is a read-only view (a file's map), its whole pages then leave
    this process (they stay in the page cache; a later read maps them again); writable memory is never released,
    as that would zero it."""
    if chunk.pack is None:
        np.copyto(chunk.dst, chunk.src)
    else:
        packing.pack(chunk.pack, chunk.rows, chunk.dst)
    if not chunk.src.flags.writeable:
        release(chunk.src)


_PAGE = mmap.PAGESIZE
_libc = None


def release(view: np.ndarray) -> None:
    """madvise(MADV_DONTNEED) over the whole pages inside `view`, a read-only view of a file map: the process
    drops its mappings of them (a later read maps them again from the page cache). Best effort."""
    global _libc
    start = -(-view.ctypes.data // _PAGE) * _PAGE
    end = (view.ctypes.data + view.nbytes) // _PAGE * _PAGE
    if end <= start or not hasattr(mmap, "MADV_DONTNEED"):
        return
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    _libc.madvise(start, end - start, mmap.MADV_DONTNEED)
