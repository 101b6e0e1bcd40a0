"""The kernel libraries specx's decoder loads, compiled together on a machine's first run.

Each library is compiled on its first use (cpu/build.py). specx's decoder loads three: quant.c, attention.c and
layers.c. Compiled one after another on their first uses they kept a machine's first run waiting for their sum,
with cores idle in the smaller ones; now the first of them a process asks for compiles each one's first build at
once (benchmarks/results/2026-11-30-units). rowgemm.c, the float32 path of transformers' models, compiles alone
when such a model first needs it."""
from __future__ import annotations

import subprocess

from . import build

_state: dict = {}   # asked: this process has looked for missing builds (once)


def ahead() -> None:
    """Compile, all at once, the first build of each library that the kernel cache lacks: once a process, and
    cheap where none is missing. A build that fails here is left to its library, which reports it or falls back."""
    if _state.get("asked"):
        return
    _state["asked"] = True
    compiler = build.c_compiler()
    if not compiler:
        return
    from . import attention, layers, quant_build

    specs = [quant_build.first_build(compiler), attention.first_build(compiler), layers.first_build(compiler)]
    try:
        build.build_ahead(specs)
    except (OSError, subprocess.SubprocessError):
        pass
