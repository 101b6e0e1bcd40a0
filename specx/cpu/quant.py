"""Y = X · Wᵀ on the CPU with W in its GGUF block format (quant.c), for the lean decoder.

Two activation modes:
- "f32": exact. Each weight is decoded to gguf's own float32 value in registers and multiplied into the
  float32 rows of X, so results are within float rounding of `qweight.reference` (dequantize, float64).
- "q8": each row of X is quantized alone, per 32 values, to int8 with one float scale (as ggml's Q8_0),
  and the blocks' dot products are exact integers; the block results are combined in float32 in one fixed
  order (quant.c). Not exact: its error is that of rounding X to 8 bits (quant_ref.py computes the same
  numbers in numpy, bit for bit). Float weights (F32/F16/BF16) always run the f32 path.

Both keep a row's result bit-identical whatever other rows share the call and whatever the thread count
(speculation is lossless only so). q8 results are also bit-identical across the AVX-512, AVX2 and portable
builds; f32 results agree across builds within float rounding.

The C source ships with the package and is compiled once per machine (cpu/build.py); the build matches the
CPU (AVX-512 with F/BW/VL, else AVX2+FMA+F16C, with VNNI where the CPU has it, else portable C), falling
back to the next one if compiling fails. Every size and type is checked here before the C code runs.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import re
import subprocess
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import torch

from . import build, kernels
from .qweight import QWeight, check
from .quant_prefetch import PREFETCH_WAYS, prefetch_choice

SOURCE = Path(__file__).with_name("quant.c")
# the SIMD builds compile as quant.c's units at once (build.py); the portable one, a second's work, as one
UNITS = int(re.search(r"^#define SPX_UNITS (\d+)", SOURCE.read_text(), re.MULTILINE).group(1))
PARTS = ("quant_blocks.h", "quant_simd.h", "quant_avx512.h", "quant_avx2.h", "quant_amx.h")   # included by quant.c: their hash joins the options
FLAGS = ("-O3", "-fopenmp", "-ffp-contract=off", "-shared", "-fPIC")
MODES = ("f32", "q8")
_MODE_IDS = {mode: i for i, mode in enumerate(MODES)}   # quant.c's mode numbers
# build name -> (CPU flags it needs, compiler flags); VNNI is added where the CPU has it (VNNI_FLAGS)
BUILDS = {
    "avx512": (("avx512f", "avx512bw", "avx512vl", "avx2", "fma", "f16c"),
               ("-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx2", "-mfma", "-mf16c")),
    "avx2": (("avx2", "fma", "f16c"), ("-mavx2", "-mfma", "-mf16c")),
    "portable": ((), ()),
}
VNNI_FLAGS = {"avx512": ("avx512_vnni", "-mavx512vnni"), "avx2": ("avx_vnni", "-mavxvnni")}
# the AVX-512 VNNI build adds VBMI where the CPU has it (byte permutes gather the 32-value types' values; the
# same bits), so the tests' builds with and without VNNI also run both gathers on such a CPU
VBMI_FLAGS = ("avx512vbmi", "-mavx512vbmi")
# the AVX-512 build adds AMX-INT8 (quant_amx.h: q8 calls of AMX_TYPES of many rows, the same bits) where the CPU
# has it, the compiler takes these flags and the kernel grants the tile state
AMX_FLAGS = (("amx_tile", "amx_int8"), ("-mamx-tile", "-mamx-int8"))
AMX_ENV = "SPECX_AMX"   # 0: never use AMX (benchmarks and tests compare both ways)
AMX_TYPES = ("Q4_K", "Q6_K", "Q8_0", "Q5_0")   # the weight types quant_amx.h runs
_state: dict[str, object] = {}


@dataclass(frozen=True)
class Library:
    """One loaded build of quant.c."""

    name: str
    vnni: bool
    lib: ctypes.CDLL
    path: Path
    amx: bool = False   # built with AMX and granted the tile state here
    vbmi: bool = False  # built with VBMI (the 32-value types' byte gathers)

    def matmul(self, x, weights: Sequence[QWeight], mode: str = "f32", out=None):
        """See the module-level `matmul`."""
        group, n = _segments(weights, x, mode, out)
        m = x.shape[0]
        if out is None:
            out = torch.empty(m, n, dtype=torch.float32)
        if m and n:
            types, data, rows = group
            status = self.lib.spx_matmul(x.data_ptr(), m, x.shape[1], len(types), types, data, rows,
                                         out.data_ptr(), _MODE_IDS[mode], torch.get_num_threads())
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

    def prefetch(self, nbytes: int, l2: bool = False) -> tuple[int, bool]:
        """Prefetch weights `nbytes` ahead of the reads into L1 (0: not at all) and, with `l2`, twice as far
        ahead into L2 (the setting is the loaded library's, shared by every Library of the same build); results
        are the same either way. Returns the previous setting, (nbytes, l2)."""
        was_l2 = bool(self.lib.spx_set_prefetch_l2(int(l2)))
        return int(self.lib.spx_set_prefetch(int(nbytes))), was_l2

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
        """Which of these weight types' prompt passes run on AMX ("" when none)."""
        amx = [t for t in AMX_TYPES if t in types]
        if mode != "q8" or not amx or not self.amx_on():
            return ""
        return f"prompt passes ({self.amx_min_rows()}+ tokens) of its {'/'.join(amx)} on AMX-INT8"

    def describe(self, detail: bool = False) -> str:
        """The build and its weight prefetching; `detail`: with what the timing measured (specx env)."""
        prefetch = _state.get("prefetch") if _state.get("lib") is self else None
        ahead = f"; {prefetch.sentence() if detail else prefetch.short()}" if prefetch else ""
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


def variants() -> list[str]:
    """The builds this CPU can run, best first."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ["portable"]
    flags = cpu_flags()
    return [name for name, (needs, _) in BUILDS.items() if all(f in flags for f in needs)]


def first_build(compiler: str) -> build.Spec | None:
    """The build this machine loads first (kernels.ahead compiles it beside the others on a first run)."""
    return _specs(variants()[0], compiler)[0]


def _specs(name: str, compiler: str, vnni: bool | None = None, amx: bool | None = None) -> list[build.Spec]:
    """Build `name` with VNNI and VBMI where the CPU has them (or as `vnni` says): with AMX first, then without,
    where AMX applies (or as `amx` says)."""
    _, options = BUILDS[name]
    if vnni is None:
        vnni = name in VNNI_FLAGS and VNNI_FLAGS[name][0] in cpu_flags()
    if amx is None:
        amx = amx_cpu() and name == "avx512"
    vbmi = vnni and name == "avx512" and VBMI_FLAGS[0] in cpu_flags()
    options = (FLAGS + options + ((VNNI_FLAGS[name][1],) if vnni else ()) + ((VBMI_FLAGS[1],) if vbmi else ())
               + (f"-DSPX_PARTS={parts_hash()}",))
    tag = f"quant-{name}{'-vnni' if vnni else ''}{'-vbmi' if vbmi else ''}"
    units = UNITS if name != "portable" else 1
    plain = build.Spec(tag, SOURCE, compiler, options, units)
    return ([build.Spec(f"{tag}-amx", SOURCE, compiler, options + AMX_FLAGS[1], units)] if amx else []) + [plain]


def load(name: str, vnni: bool | None = None, amx: bool | None = None) -> Library:
    """Compile (once per machine) and load one build, with VNNI where the CPU has it (or as `vnni` says, for
    tests: a VNNI build needs a CPU with VNNI), and AMX likewise (AVX-512 only; a compiler that refuses its
    flags gives the build without it). OSError when compiling fails. AMX is on when the kernel grants the
    tile state and SPECX_AMX is not 0 (Library.use_amx)."""
    compiler = build.c_compiler()
    if not compiler:
        raise OSError("no C compiler found (install gcc, or set CC)")
    specs = _specs(name, compiler, vnni, amx)
    path = None
    if len(specs) > 1:   # with AMX first
        try:
            path = build.build_spec(specs[0])
        except (OSError, subprocess.SubprocessError):
            path = None   # this compiler has no AMX: the build without it
    path = path or build.build_spec(specs[-1])
    lib = build.load(path)
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
    lib.spx_matmul.argtypes = [p, i64, i64, i32, p, p, p, p, i32, i32]
    lib.spx_matmul.restype = ctypes.c_int
    lib.spx_dequantize_rows.argtypes = [i32, p, i64, p, i64, p]
    lib.spx_dequantize_rows.restype = None
    lib.spx_stream_sum.argtypes = [p, i64, i32]
    lib.spx_stream_sum.restype = ctypes.c_uint64
    lib.spx_build.restype = ctypes.c_int
    lib.spx_set_xspan.argtypes = [ctypes.c_int64]
    lib.spx_set_xspan.restype = ctypes.c_int64
    lib.spx_set_prefetch.argtypes = [ctypes.c_int64]
    lib.spx_set_prefetch.restype = ctypes.c_int64
    lib.spx_set_prefetch_l2.argtypes = [ctypes.c_int32]
    lib.spx_set_prefetch_l2.restype = ctypes.c_int
    lib.spx_set_decoded.argtypes = [ctypes.c_int32]
    lib.spx_set_decoded.restype = ctypes.c_int32
    lib.spx_set_amx.argtypes = [ctypes.c_int32]
    lib.spx_set_amx.restype = ctypes.c_int
    lib.spx_amx_init.restype = ctypes.c_int
    lib.spx_amx_min_rows.restype = ctypes.c_int
    granted = bool(lib.spx_build() & 8) and lib.spx_amx_init() == 0
    out = Library(name, bool(lib.spx_build() & 4), lib, path, granted, bool(lib.spx_build() & 16))
    out.use_amx(os.environ.get(AMX_ENV, "").strip() != "0")
    return out


def amx_cpu() -> bool:
    """Whether this CPU has AMX-INT8 (x86-64 only)."""
    return platform.machine().lower() in ("x86_64", "amd64") and all(f in cpu_flags() for f in AMX_FLAGS[0])


def parts_hash() -> str:
    """A hash of the headers quant.c includes: build.py keys a build by quant.c, its options and the compiler,
    so this option makes a changed header a new build."""
    digest = hashlib.sha256(b"".join(SOURCE.with_name(part).read_bytes() for part in PARTS))
    return digest.hexdigest()[:16]


def cpu_flags() -> set[str]:
    """The CPU's feature flags (/proc/cpuinfo); without it, what torch's CPU capability implies."""
    if "flags" not in _state:
        flags: set[str] = set()
        try:
            for line in Path("/proc/cpuinfo").read_text().splitlines():
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
        except OSError:
            pass
        if not flags:
            capability = torch.backends.cpu.get_cpu_capability()
            if capability in ("AVX2", "AVX512"):
                flags |= {"avx2", "fma", "f16c"}
            if capability == "AVX512":
                flags |= {"avx512f", "avx512bw", "avx512vl"}
        _state["flags"] = flags
    return _state["flags"]


def l1_data_bytes() -> int:
    """The first CPU's level-1 data cache in bytes, as Linux reports it (0 when it does not)."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (index / "level").read_text().strip() == "1" and (index / "type").read_text().strip() == "Data":
                size = (index / "size").read_text().strip().upper()
                return int(size[:-1]) * {"K": 1 << 10, "M": 1 << 20}[size[-1]] if size[-1] in "KM" else int(size)
        except (OSError, ValueError):
            continue
    return 0


def xspan_bytes(l1: int) -> int:
    """quant.c's XSPAN for an L1 data cache of `l1` bytes: the activations of a span take half of it, and a call
    is cut where they would take more than three quarters (the weights' stream and the sums share the rest).
    On a 48 KiB L1 the 1.5B fixture's 3-row forward then cuts its FFN down rows (40 KB of activations): 0.92×
    its time uncut, the other row counts unchanged (benchmarks/results/2026-11-27-attention); 16, 24 and 32 KiB
    spans gave the same 5-row forwards (2026-11-27-xspan). Unknown (0): quant.c's own, half of the smallest
    L1 data cache of a CPU that runs these builds (32 KiB)."""
    return l1 // 2 if l1 else -1


def _default() -> Library:
    lib = _library()
    if lib is None:
        raise RuntimeError(f"specx's GGUF kernels are not available: {why_not()}")
    return lib


def _library() -> Library | None:
    if "lib" not in _state:
        kernels.ahead()
        _state["lib"], _state["why"] = None, "no build could be compiled"
        for name in variants():
            try:
                lib = load(name)
                _state["prefetch"] = prefetch_choice(lib)
                lib.prefetch(*PREFETCH_WAYS[_state["prefetch"].pick])
                lib.xspan(xspan_bytes(l1_data_bytes()))
                _state["lib"], _state["why"] = lib, ""
                break
            except (OSError, subprocess.SubprocessError) as e:
                text = str(e).strip()
                _state["why"] = f"building it failed ({text.splitlines()[-1] if text else type(e).__name__})"
    return _state["lib"]


_groups: dict[tuple[int, ...], tuple] = {}   # id()s of a weight group -> weak refs to it, its ctypes arrays
_GROUPS_MAX = 4096


def _segments(weights: Sequence[QWeight], x, mode: str, out) -> tuple[tuple, int]:
    """Check the call (ValueError before any C runs) and return the group's ctypes arrays and Σ rows."""
    if mode not in _MODE_IDS:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    if not isinstance(x, torch.Tensor) or x.dtype != torch.float32 or x.dim() != 2 or not x.is_cpu:
        raise ValueError("x must be a 2-D float32 tensor on the CPU")
    if not x.is_contiguous():
        raise ValueError("x must be contiguous")
    weights = tuple(weights)
    if not weights:
        raise ValueError("matmul needs at least one weight")
    key = tuple(id(w) for w in weights)
    entry = _groups.get(key)
    if entry is None or any(ref() is not w for ref, w in zip(entry[0], weights)):
        for w in weights:
            if not isinstance(w, QWeight):
                raise ValueError(f"weights must be QWeight, not {type(w).__name__}")
            check(w)
        if len({w.cols for w in weights}) > 1:
            raise ValueError(f"fused weights must share cols, not {sorted({w.cols for w in weights})}")
        n = len(weights)
        arrays = ((ctypes.c_int32 * n)(*(w.type for w in weights)),
                  (ctypes.c_void_p * n)(*(w.data.ctypes.data for w in weights)),
                  (ctypes.c_int64 * n)(*(w.rows for w in weights)))
        if len(_groups) >= _GROUPS_MAX:
            _groups.clear()
        refs = tuple(weakref.ref(w) for w in weights)
        entry = _groups[key] = (refs, arrays, sum(w.rows for w in weights), weights[0].cols)
    _, arrays, n, cols = entry
    if x.shape[1] != cols:
        raise ValueError(f"x has {x.shape[1]} columns, the weights {cols}")
    if out is not None and (not isinstance(out, torch.Tensor) or out.dtype != torch.float32
                            or tuple(out.shape) != (x.shape[0], n) or not out.is_contiguous() or not out.is_cpu):
        raise ValueError(f"out must be a contiguous float32 CPU tensor of shape ({x.shape[0]}, {n})")
    return arrays, n


def stream_read(lib: Library, buffer: np.ndarray, threads: int) -> int:
    """Read `buffer` (uint8, a multiple of 256 bytes) once with `threads` threads; its sum (so no read is
    optimised away). Timed by benchmarks/quant_kernels.py as this machine's read bandwidth."""
    return int(lib.lib.spx_stream_sum(buffer.ctypes.data, buffer.size, threads))
