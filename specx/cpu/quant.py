"""Y = X · Wᵀ on the CPU with W in its GGUF block format (quant.c), for the lean decoder.

Two activation modes:
- "f32": exact. Each weight is decoded to gguf's own float32 value in registers and multiplied into the
  float32 rows of X, so results are within float rounding of `qweight.reference` (dequantize, float64).
- "q8": each row of X is quantized alone, per 32 values, to int8 with one float scale (as ggml's Q8_0),
  and the blocks' dot products are exact integers; the block results are combined in float32 in one fixed
  order (quant.c). Where the build's kernels gain by it (`Library.q8_groups`: the AVX-512 builds, whose packed
  Q4_K kernel then costs a verify's or a prompt's rows about a fifth less, and AMX's prompt passes on packed tiles
  need no float step inside a group: quant_amx_packed.h; the AVX2 builds, whose packed kernels run 0.5-0.8× the
  time of their per-32 ones: benchmarks/results/2026-12-01-avx2), Q4_K and Q6_K weights take the row quantized
  per 256 values instead (one scale a group, as ggml's Q8_K), so that a group's block sums are scaled and added as
  integers before its float steps (Q4_K two, Q6_K one); the quality guard holds on every fixture, and the kernels
  sentence says which. Not exact: its error is that of rounding X to 8 bits (quant_ref.py computes the same
  numbers in numpy, bit for bit, either way).
  Float weights (F32/F16/BF16) always run the f32 path.

Both keep a row's result bit-identical whatever other rows share the call and whatever the thread count
(speculation is lossless only so). q8 results are also bit-identical across the AVX-512, AVX2 and portable
builds for the same `groups` (every build computes both); f32 results agree across builds within float rounding.

The C source ships with the package and is compiled once per machine (cpu/build.py); the build matches the
CPU (quant_build.py: AVX-512 with F/BW/VL, else AVX2+FMA+F16C, with VNNI where the CPU has it, else portable C),
falling back to the next one if compiling fails. Every size and type is checked before the C code runs
(quant_call.py).
"""
from __future__ import annotations

import ctypes
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from ..errors import UsageError
from . import build, kernels, packing, quant_build, quant_call
from .qweight import BLOCKS, PACKED, QWeight, check
from .quant_build import (  # noqa: F401  (the build's names tests and benchmarks read here)
    AMX_FLAGS, BUILDS, SOURCE, VBMI_FLAGS, VNNI_FLAGS, amx_cpu, cpu_flags, l1_data_bytes, variants, xspan_bytes)
from .quant_prefetch import PREFETCH_WAYS, one_row_bytes, prefetch_choices

MODES = ("f32", "q8")
GROUP_TYPES = ("Q4_K", "Q6_K")   # q8 with groups: activations per 256 values (quant.c's KIND_G, KIND_G6); others per 32
_Q8_GROUPS = 2            # quant.c's MODE_Q8K: q8 with groups
_MODE_IDS = {mode: i for i, mode in enumerate(MODES)}   # quant.c's mode numbers
AMX_ENV = "SPECX_AMX"   # 0: never use AMX (benchmarks and tests compare both ways)
BUILD_ENV = "SPECX_QUANT_BUILD"   # avx2, avx2-novnni or portable: a lesser build than this CPU's best (benchmarks
                                  # stand in for an AVX2-only CPU; the same q8 numbers either way)
# the weight types AMX runs: Q8_0 and Q5_0 in the file's layout, per 32 values (quant_amx.h; Q4_K and Q6_K too where
# a call asks for that arithmetic), Q4_K and Q6_K packed, with groups (quant_amx_packed.h: the AVX-512 build's q8)
AMX_TYPES = ("Q4_K", "Q6_K", "Q8_0", "Q5_0")
AMX_PACKED = ("Q4_K", "Q6_K")
_state: dict[str, object] = {}


def q8_words(types: str, groups: bool) -> str:
    """The q8 mode in the kernels sentence, for a model whose matrices are `types` ("Q4_K/Q6_K")."""
    grouped = [t for t in types.split("/") if t in GROUP_TYPES and groups]
    if grouped and len(grouped) == len(types.split("/")):
        return "int8 activations per 256 values (integer group sums; --quant none: float32)"
    group = f"per 256 into {'/'.join(grouped)} layers: integer group sums; " if grouped else ""
    return f"int8 activations per 32 values ({group}--quant none: float32)"


@dataclass(frozen=True)
class Library:
    """One loaded build of quant.c."""

    name: str
    vnni: bool
    lib: ctypes.CDLL
    path: Path
    amx: bool = False   # built with AMX and granted the tile state here
    vbmi: bool = False  # built with VBMI (the 32-value types' byte gathers)

    def q8_groups(self) -> bool:
        """Whether this build's q8 mode runs Q4_K and Q6_K with activations per 256 values (quant.c's MODE_Q8K):
        the AVX-512 and AVX2 builds, whose packed kernels gain by it, on AMX too (quant_amx_packed.h, the same
        bits)."""
        return self.lib.spx_build() & 3 in (1, 2)

    def mode_id(self, mode: str, groups: bool | None = None) -> int:
        """quant.c's mode number for `mode` ("q8" with groups as this build runs it, or as `groups` says)."""
        if mode not in _MODE_IDS:
            raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
        grouped = self.q8_groups() if groups is None else groups
        return _Q8_GROUPS if mode == "q8" and grouped else _MODE_IDS[mode]

    def matmul(self, x, weights: Sequence[QWeight], mode: str = "f32", out=None, groups: bool | None = None):
        """See the module-level `matmul`; `groups` (tests, benchmarks): q8's arithmetic for Q4_K and Q6_K, per
        256 values (True) or per 32 (False) whatever this build would run."""
        code = self.mode_id(mode, groups)
        group, n = quant_call.arrays(weights, x, out)
        m = x.shape[0]
        if out is None:
            out = torch.empty(m, n, dtype=torch.float32)
        if m and n:
            types, data, rows = group
            status = self.lib.spx_matmul(x.data_ptr(), m, x.shape[1], len(types), types, data, rows,
                                         out.data_ptr(), code, torch.get_num_threads())
            if status == 1:
                raise MemoryError(f"quantizing {m} rows of {x.shape[1]} values: out of memory")
            if status:
                raise ValueError(f"the {self.name} kernels refused the weights (status {status})")
        return out

    def embed(self, w: QWeight, ids):
        """See the module-level `embed`."""
        check(w)
        ids = torch.as_tensor(ids, dtype=torch.int64).reshape(-1).contiguous()
        if len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= w.rows):
            raise ValueError(f"token ids must lie in [0, {w.rows})")
        out = torch.empty(len(ids), w.cols, dtype=torch.float32)
        if len(ids):
            self.lib.spx_dequantize_rows(w.type, w.data.ctypes.data, w.cols, ids.data_ptr(), len(ids),
                                         out.data_ptr())
        return out

    def unpack_rows(self, w: QWeight, ids) -> QWeight:
        """Rows `ids` of a packed matrix as the file holds them (a copy of their blocks)."""
        ids = np.ascontiguousarray(np.asarray(ids, dtype=np.int64).reshape(-1))
        out = np.empty(len(ids) * (w.nbytes // w.rows if w.rows else 0), np.uint8)
        if self.lib.spx_unpack_rows(w.type, w.data.ctypes.data, w.rows, w.cols, ids.ctypes.data, len(ids),
                                    out.ctypes.data):
            raise IndexError(f"row ids outside 0..{w.rows - 1} (or {w.name} not packed)")
        return QWeight(BLOCKS[PACKED[w.type]][0], out, len(ids), w.cols)

    def prefetch(self, nbytes: int, l2: bool = False) -> tuple[int, bool]:
        """Prefetch weights `nbytes` ahead of the reads into L1 (0: not at all) and, with `l2`, twice as far
        ahead into L2 (the setting is the loaded library's, shared by every Library of the same build); results
        are the same either way. Returns the previous setting, (nbytes, l2)."""
        was_l2 = bool(self.lib.spx_set_prefetch_l2(int(l2)))
        return int(self.lib.spx_set_prefetch(int(nbytes))), was_l2

    def prefetch_one(self, nbytes: int | None) -> int | None:
        """How far ahead calls of one row prefetch (None: as far as the others; prefetching off keeps them off);
        results are the same either way. Returns the previous setting."""
        was = int(self.lib.spx_set_prefetch_one(-1 if nbytes is None else int(nbytes)))
        return None if was < 0 else was

    def xspan(self, nbytes: int) -> int:
        """Cut q8 calls of several rows over long weight rows into spans of groups whose activations fit
        `nbytes` (quant.c's XSPAN; 0: never cut; the setting is the loaded library's); results are the same
        either way. Returns the previous setting."""
        return int(self.lib.spx_set_xspan(int(nbytes)))

    def decode_once(self, on: bool | None = None) -> bool:
        """Whether q8 calls of more than 8 rows decode each tile of weights once for all their rows (quant.c's
        DECODED, in the AVX-512 and AVX2 builds) rather than once per 8 rows; results are the same either way. `on`
        sets it (None: unchanged; the setting is the loaded library's). Returns the previous setting, False
        where this build has no such path."""
        return self.lib.spx_set_decoded(-1 if on is None else int(on)) == 1

    def use_amx(self, on: bool) -> bool:
        """Run q8 calls of AMX_TYPES with at least `amx_min_rows()` rows on AMX (where this build has it; the
        same bits either way, only the speed differs; the setting is the loaded library's, shared by every
        Library of the same build). Returns the previous setting."""
        return bool(self.lib.spx_set_amx(int(on and self.amx)))

    def amx_on(self) -> bool:
        """Whether q8 calls of many rows run on AMX now."""
        return bool(self.lib.spx_set_amx(-1))

    def amx_min_rows(self) -> int:
        """The fewest rows a call needs to run on AMX (quant_amx.h's AMX_MIN_ROWS)."""
        return int(self.lib.spx_amx_min_rows())

    def prompt_note(self, types: Sequence[str], mode: str) -> str:
        """Which of these weight types' prompt passes run on AMX ("" when none): Q4_K and Q6_K where this build
        packs them (cpu/packing.py)."""
        amx = [t for t in AMX_TYPES if t in types and (t not in AMX_PACKED or packing.builds(self))]
        if mode != "q8" or not amx or not self.amx_on():
            return ""
        return f"prompt passes ({self.amx_min_rows()}+ tokens) of its {'/'.join(amx)} on AMX-INT8"

    def describe(self, detail: bool = False) -> str:
        """The build and its weight prefetching; `detail`: with what the timing measured (specx env)."""
        mine = _state.get("lib") is self
        choices = [c for c in (_state.get("prefetch"), _state.get("prefetch_one")) if mine and c is not None]
        ahead = "".join(f"; {c.sentence() if detail else c.short()}" for c in choices)
        extras = " and ".join(name for name, on in (("VNNI", self.vnni), ("VBMI", self.vbmi), ("AMX-INT8", self.amx_on()))
                              if on)
        return f"specx GGUF block kernels ({self.name} build{' with ' + extras if extras else ''}{ahead})"


def matmul(x, weights: Sequence[QWeight], mode: str = "f32", out=None):
    """x (M, cols) float32, contiguous, on the CPU; weights: one or more QWeight of the same `cols` (a fused
    projection, possibly of different types) → (M, Σ rows) float32, the segments side by side (into `out`
    when given: (M, Σ rows) float32 contiguous). One C call for the whole group; the threads
    (torch.get_num_threads()) split all its output rows."""
    return _default().matmul(x, weights, mode, out)


def embed(w: QWeight, ids):
    """Rows `ids` of w dequantized to gguf's float32 values: (len(ids), cols) float32 (an embedding lookup)."""
    return _default().embed(w, ids)


def unpack_rows(w: QWeight, ids) -> QWeight:
    """Rows `ids` of a packed matrix as the file holds them (a copy of their blocks)."""
    return _default().unpack_rows(w, ids)


def prompt_note(types: Sequence[str], mode: str) -> str:
    """Which of these weight types' prompt passes run on AMX here ("" when none): for the kernels line."""
    lib = _library()
    return lib.prompt_note(types, mode) if lib else ""


def available() -> bool:
    """Whether a build is compiled and loaded here (compiles on first use)."""
    return _library() is not None


def why_not() -> str:
    """Why no build is available ("" when one is)."""
    _library()
    return str(_state.get("why", ""))


def modes() -> tuple[str, ...]:
    """The activation modes the loaded build has (both, in every build)."""
    return MODES if available() else ()


def describe(detail: bool = False) -> str:
    """One sentence: which build is loaded, and its weight prefetching (`detail`: with the timings)."""
    lib = _library()
    return lib.describe(detail) if lib else f"GGUF block kernels unavailable: {why_not()}"


def load(name: str, vnni: bool | None = None, amx: bool | None = None) -> Library:
    """Compile (once per machine) and load one build, with VNNI where the CPU has it (or as `vnni` says, for
    tests: a VNNI build needs a CPU with VNNI), and AMX likewise (AVX-512 only; a compiler that refuses its
    flags gives the build without it). OSError when compiling fails. AMX is on when the kernel grants the
    tile state and SPECX_AMX is not 0 (Library.use_amx)."""
    compiler = build.c_compiler()
    if not compiler:
        raise OSError("no C compiler found (install gcc, or set CC)")
    specs = quant_build.specs(name, compiler, vnni, amx)
    path = None
    if len(specs) > 1:   # with AMX first
        try:
            path = build.build_spec(specs[0])
        except (OSError, subprocess.SubprocessError):
            path = None   # this compiler has no AMX: the build without it
    path = path or build.build_spec(specs[-1])
    return opened(path)


def opened(path) -> Library:
    """A compiled build at `path`, its functions declared (load's last step; benchmarks open an older build with it)."""
    lib = build.load(path)
    quant_build.declare(lib)
    name = ("portable", "avx2", "avx512")[lib.spx_build() & 3]
    granted = bool(lib.spx_build() & 8) and lib.spx_amx_init() == 0
    out = Library(name, bool(lib.spx_build() & 4), lib, path, granted, bool(lib.spx_build() & 16))
    out.use_amx(os.environ.get(AMX_ENV, "").strip() != "0")
    return out


def _default() -> Library:
    lib = _library()
    if lib is None:
        raise RuntimeError(f"specx's GGUF kernels are not available: {why_not()}")
    return lib


def _library() -> Library | None:
    if "lib" not in _state:
        kernels.ahead()
        _state["lib"], _state["why"] = None, "no build could be compiled"
        for name, vnni in _choices():
            try:
                lib = load(name, vnni)
                _state["prefetch"], _state["prefetch_one"] = prefetch_choices(lib)
                lib.prefetch(*PREFETCH_WAYS[_state["prefetch"].pick])
                if _state["prefetch_one"] is not None:
                    lib.prefetch_one(one_row_bytes(_state["prefetch_one"].pick))
                lib.xspan(xspan_bytes(l1_data_bytes()))
                _state["lib"], _state["why"] = lib, ""
                break
            except (OSError, subprocess.SubprocessError) as e:
                text = str(e).strip()
                _state["why"] = f"building it failed ({text.splitlines()[-1] if text else type(e).__name__})"
    return _state["lib"]


def _choices() -> list[tuple[str, bool | None]]:
    """The builds to try, best first: this CPU's, or from the one SPECX_QUANT_BUILD names (UsageError for a
    name this CPU cannot run)."""
    chosen = os.environ.get(BUILD_ENV, "").strip().lower()
    builds = variants()
    if not chosen:
        return [(name, None) for name in builds]
    name, _, novnni = chosen.partition("-")
    if name not in builds or novnni not in ("", "novnni") or (novnni and name == "portable"):
        raise UsageError(f"{BUILD_ENV}={chosen!r} names no build this CPU runs",
                         f"use one of {', '.join(builds)} (or avx2-novnni, avx512-novnni), or unset it")
    return [(n, False if novnni and n == name else None) for n in builds[builds.index(name):]]


def stream_read(lib: Library, buffer: np.ndarray, threads: int) -> int:
    """Read `buffer` (uint8, a multiple of 256 bytes) once with `threads` threads; its sum (so no read is
    optimised away). Timed by benchmarks/quant_kernels.py as this machine's read bandwidth."""
    return int(lib.lib.spx_stream_sum(buffer.ctypes.data, buffer.size, threads))
