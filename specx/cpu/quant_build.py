"""Which build of quant.c this CPU runs, and how each build is compiled (quant.py loads them).

The builds match the CPU: AVX-512 with F/BW/VL, else AVX2+FMA+F16C, each with VNNI (and the AVX-512 one with VBMI
and AMX-INT8) where the CPU has it, else portable C. The SIMD builds compile as quant.c's units at once
(build.Spec.units); the portable one, a second's work, as one."""
from __future__ import annotations

import ctypes
import platform
import re
from pathlib import Path

import torch

from . import build

SOURCE = Path(__file__).with_name("quant.c")
UNITS = int(re.search(r"^#define SPX_UNITS (\d+)", SOURCE.read_text(), re.MULTILINE).group(1))
FLAGS = ("-O3", "-fopenmp", "-ffp-contract=off", "-shared", "-fPIC")
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
_state: dict[str, object] = {}   # flags: the CPU's (cpu_flags)


def variants() -> list[str]:
    """The builds this CPU can run, best first."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ["portable"]
    flags = cpu_flags()
    return [name for name, (needs, _) in BUILDS.items() if all(f in flags for f in needs)]


def first_build(compiler: str) -> build.Spec | None:
    """The build this machine loads first (kernels.ahead compiles it beside the others on a first run)."""
    return specs(variants()[0], compiler)[0]


def specs(name: str, compiler: str, vnni: bool | None = None, amx: bool | None = None) -> list[build.Spec]:
    """Build `name` with VNNI and VBMI where the CPU has them (or as `vnni` says): with AMX first, then without,
    where AMX applies (or as `amx` says)."""
    _, options = BUILDS[name]
    if vnni is None:
        vnni = name in VNNI_FLAGS and VNNI_FLAGS[name][0] in cpu_flags()
    if amx is None:
        amx = amx_cpu() and name == "avx512"
    vbmi = vnni and name == "avx512" and VBMI_FLAGS[0] in cpu_flags()
    options = (FLAGS + options + ((VNNI_FLAGS[name][1],) if vnni else ()) + ((VBMI_FLAGS[1],) if vbmi else ()))
    tag = f"quant-{name}{'-vnni' if vnni else ''}{'-vbmi' if vbmi else ''}"
    units = UNITS if name != "portable" else 1
    plain = build.Spec(tag, SOURCE, compiler, options, units)
    return ([build.Spec(f"{tag}-amx", SOURCE, compiler, options + AMX_FLAGS[1], units)] if amx else []) + [plain]


def amx_cpu() -> bool:
    """Whether this CPU has AMX-INT8 (x86-64 only)."""
    return platform.machine().lower() in ("x86_64", "amd64") and all(f in cpu_flags() for f in AMX_FLAGS[0])


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


def declare(lib: ctypes.CDLL) -> None:
    """Declare the argument and result types of a loaded build's exported functions (quant.c's spx_*), so that
    ctypes passes 64-bit sizes and pointers as such."""
    p, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
    lib.spx_matmul.argtypes = [p, i64, i64, i32, p, p, p, p, i32, i32]
    lib.spx_matmul.restype = ctypes.c_int
    lib.spx_dequantize_rows.argtypes = [i32, p, i64, p, i64, p]
    for pack in (lib.spx_pack_q40, lib.spx_pack_q4k, lib.spx_pack_q6k):
        pack.argtypes, pack.restype = [p, i64, i64, p], ctypes.c_int
    lib.spx_dequantize_rows.restype = None
    lib.spx_unpack_rows.argtypes, lib.spx_unpack_rows.restype = [i32, p, i64, i64, p, i64, p], ctypes.c_int
    lib.spx_stream_sum.argtypes = [p, i64, i32]
    lib.spx_stream_sum.restype = ctypes.c_uint64
    lib.spx_build.restype = ctypes.c_int
    lib.spx_set_xspan.argtypes = [ctypes.c_int64]
    lib.spx_set_xspan.restype = ctypes.c_int64
    lib.spx_set_prefetch.argtypes = [ctypes.c_int64]
    lib.spx_set_prefetch.restype = ctypes.c_int64
    lib.spx_set_prefetch_one.argtypes = [ctypes.c_int64]
    lib.spx_set_prefetch_one.restype = ctypes.c_int64
    lib.spx_set_prefetch_l2.argtypes = [ctypes.c_int32]
    lib.spx_set_prefetch_l2.restype = ctypes.c_int
    lib.spx_set_decoded.argtypes = [ctypes.c_int32]
    lib.spx_set_decoded.restype = ctypes.c_int32
    lib.spx_set_amx.argtypes = [ctypes.c_int32]
    lib.spx_set_amx.restype = ctypes.c_int
    lib.spx_amx_init.restype = ctypes.c_int
    lib.spx_amx_min_rows.restype = ctypes.c_int
