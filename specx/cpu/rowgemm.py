"""specx's row-exact float32 linear for the CPU: y = x @ weight.T + bias, where a row's result never
depends on the other rows (rowgemm.c says how, and why it is fast for the handful of rows a
verification forward has). The C source ships with the package and is compiled once per machine with
the system's C compiler into the user cache dir; `available()` says whether that worked (an x86-64 CPU
with AVX2 and FMA, a C compiler with OpenMP); the caller falls back to PyTorch's kernels otherwise.
"""
from __future__ import annotations

import ctypes
import os
import platform
import subprocess
from pathlib import Path

import torch

from . import build
from . import timed

SOURCE = Path(__file__).with_name("rowgemm.c")
FLAGS = ("-O3", "-mavx2", "-mfma", "-mf16c", "-fopenmp", "-ffp-contract=off", "-shared", "-fPIC")
WIDE_FLAGS = ("-mavx512f", "-mavx512vl")   # 32 vector registers for the same 256-bit arithmetic: larger blocks
PREFETCH_ENV = "SPECX_ROWGEMM_PREFETCH"     # 1 or 0: prefetch or not, instead of timing both (prefetch_choice)
_state: dict[str, object] = {}


def available() -> bool:
    """Whether the kernel is built and loaded here (builds it on first use; ~1 s)."""
    return _library() is not None


def why_not() -> str:
    """Why the kernel is not available ("" when it is)."""
    _library()
    return str(_state.get("why", ""))


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None) -> torch.Tensor:
    """x (…, K) float32 on the CPU, weight (N, K) float32 or float16, bias (N,) float32 or None → (…, N)."""
    lib = _library()
    if lib is None:
        raise RuntimeError(f"specx's CPU kernel is not available: {why_not()}")
    rows = x.reshape(-1, weight.shape[1])
    if rows.dtype != torch.float32 or not rows.is_contiguous():
        rows = rows.float().contiguous()
    return _run(lib, rows, weight, bias, _state["prefetch_flag"]).reshape(*x.shape[:-1], weight.shape[0])


def _run(lib, rows: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, prefetch: int) -> torch.Tensor:
    """One call of the loaded library on contiguous float32 rows (prefetch: 1 or 0)."""
    n, k = weight.shape
    out = torch.empty(rows.shape[0], n, dtype=torch.float32)
    run = lib.spx_linear_f16 if weight.dtype == torch.float16 else lib.spx_linear
    if run(rows.data_ptr(), rows.shape[0], k, weight.data_ptr(), n, None if bias is None else bias.data_ptr(),
           out.data_ptr(), torch.get_num_threads(), prefetch):
        raise MemoryError(f"specx's CPU kernel could not allocate {4 * 3 * k} bytes per thread")
    return out


def build_id() -> str:
    """Which build of the kernel is loaded and how it runs (a hash of its source, flags and compiler, and
    "+prefetch" when it prefetches; "" when none is loaded): costs measured on one do not describe
    another (policy/measured.py keys them by it)."""
    if _library() is None:
        return ""
    return str(_state["build"]) + ("+prefetch" if prefetches() else "")


def prefetches() -> bool:
    """Whether the loaded kernel prefetches each thread's next weights into L2 (prefetch_choice)."""
    return _library() is not None and bool(_state["prefetch_flag"])


def prefetching():
    """How the loaded kernel reads ahead (a timed.Choice, with its sentence), or None when none is loaded."""
    return _state["prefetch"] if _library() is not None else None


def _library():
    if "lib" not in _state:
        _state["lib"], _state["why"] = _load()
    return _state["lib"]


def _load():
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None, f"it needs an x86-64 CPU (this is {platform.machine()})"
    capability = torch.backends.cpu.get_cpu_capability()
    if capability not in ("AVX2", "AVX512"):
        return None, "it needs a CPU with AVX2 and FMA"
    compiler = c_compiler()
    if not compiler:
        return None, "no C compiler found (install gcc, or set CC)"
    tries = [True, False] if capability == "AVX512" else [False]
    for wide in tries:   # a compiler without AVX-512 flags still builds the AVX2 kernel
        try:
            lib, path = build.library("rowgemm", SOURCE, compiler, flags(wide))   # checked, rebuilt once if bad
            _declare(lib)
            _state["build"] = path.stem.removeprefix("rowgemm-")
            _state["prefetch"] = prefetch_choice(lib, path)
            _state["prefetch_flag"] = int(_state["prefetch"].pick == "on")   # read by every linear call
            return lib, ""
        except build.Untrusted as e:   # the same folder for every build: no point trying the next
            return None, f"not loaded: {e}"
        except (OSError, subprocess.SubprocessError) as e:
            why = f"building it failed ({str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__})"
    return None, why


def c_compiler() -> str | None:
    """$CC (split as a shell would), else cc, else gcc: the first that exists (cpu/build.py)."""
    return build.c_compiler()


def flags(wide: bool) -> tuple[str, ...]:
    """The compiler flags: AVX2 and FMA, plus AVX-512VL's 32 registers (larger blocks, same results) when wide."""
    return FLAGS + WIDE_FLAGS if wide else FLAGS


def _open(path: Path) -> ctypes.CDLL:
    return _declare(build.load(path))


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    """The C signatures of the library's two entry points."""
    p, i64 = ctypes.c_void_p, ctypes.c_int64
    for run in (lib.spx_linear, lib.spx_linear_f16):
        run.argtypes = [p, i64, i64, p, i64, p, p, ctypes.c_int, ctypes.c_int]
        run.restype = ctypes.c_int
    return lib


def prefetch_choice(lib, path: Path):
    """Whether to prefetch weights into L2: it never changes a result, only the speed, and machines
    disagree. On the AVX-512 dev machine (Zen 4) it made one 8960x1536 layer 1.3x faster at 1 row and
    1.8x at 5; on a Zen 1 machine (AVX2) the whole 1.5B float32 target 1.09-1.16x slower at 1 and 5 tokens
    (paired, benchmarks/results/2026-11-25-zen1). So it is timed once per machine (timed.py), unless
    SPECX_ROWGEMM_PREFETCH says."""
    value = os.environ.get(PREFETCH_ENV, "").strip()
    forced = ({"1": "on", "0": "off"}[value], PREFETCH_ENV) if value in ("0", "1") else None

    def way(on: bool) -> timed.Make:
        return lambda w: lambda x: _run(lib, x, w, None, int(on))

    return timed.choose("L2 prefetching", path.with_suffix(".prefetch.json"), {"off": way(False), "on": way(True)},
                        forced)


def _build(compiler: str, options: tuple[str, ...] = FLAGS) -> Path:
    """Compile into the kernel cache once per (source, flags, compiler) (cpu/build.py)."""
    return build.build("rowgemm", SOURCE, compiler, options)
